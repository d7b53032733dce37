/// Desktop app ids: the reverse-DNS name of a `.desktop` file without the suffix, which is also a
/// Flatpak app id (`org.gnome.TextEditor`). Ids are matched exactly, case included.
public enum DesktopAppID {
    /// The longest id accepted (the desktop entry specification's D-Bus name limit).
    public static let maxLength = 255

    /// Whether `id` is a well-formed desktop app id: 1...255 bytes of ASCII letters, digits, `.`,
    /// `_` and `-`, no `..`, not starting with `.` or `-`. Nothing else is passed to GIO, so an id
    /// can never name a path.
    public static func isValid(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty, bytes.count <= maxLength else { return false }
        if bytes[0] == UInt8(ascii: ".") || bytes[0] == UInt8(ascii: "-") { return false }
        var previousDot = false
        for byte in bytes {
            let isDot = byte == UInt8(ascii: ".")
            if isDot && previousDot { return false }
            previousDot = isDot
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                continue
            default:
                return false
            }
        }
        return true
    }

    /// The id GIO reports (`org.example.App.desktop`) without its suffix.
    static func fromGIO(_ desktopID: String) -> String {
        desktopID.hasSuffix(".desktop") ? String(desktopID.dropLast(8)) : desktopID
    }
}
