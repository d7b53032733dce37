/// Flatpak's rules for an application id (flatpak's `flatpak_is_valid_name`, which
/// xdg-desktop-portal also applies): at least three elements separated by `.`, each starting with
/// a letter or `_` (or `-` in the last element), made of letters,
/// digits and `_` (and `-` in the last element only), at most 255 bytes in all.
public enum FlatpakAppID {
    /// Whether `id` is a valid Flatpak application id.
    public static func isValid(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 3 else { return false }
        for (index, element) in elements.enumerated() {
            let last = index == elements.count - 1
            guard let first = element.first else { return false }
            guard isLetter(first) || first == UInt8(ascii: "_") || (last && first == UInt8(ascii: "-")) else { return false }
            for byte in element {
                guard isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "_") || (last && byte == UInt8(ascii: "-")) else { return false }
            }
        }
        return true
    }

    private static func isLetter(_ b: UInt8) -> Bool { (b >= 65 && b <= 90) || (b >= 97 && b <= 122) }
    private static func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }
}
