/// One item on the general pasteboard: a type id and bytes.
public struct PasteboardItem: Sendable, Hashable {
    /// Plain text, UTF-8.
    public static let textType = "public.utf8-plain-text"
    /// The type of a sealed (SecureCopy) item; its real type is inside the envelope.
    public static let sealedType = "org.sharebroker.sealed"

    /// The type id, e.g. ``textType`` or `public.png`.
    public var type: String
    /// The bytes any app on the device can read.
    public var bytes: [UInt8]

    /// Creates an item.
    public init(type: String, bytes: [UInt8]) {
        self.type = type
        self.bytes = bytes
    }

    /// A UTF-8 text item.
    public static func text(_ string: String) -> PasteboardItem {
        PasteboardItem(type: textType, bytes: Array(string.utf8))
    }

    /// For a plain-text item (``textType``), its length in characters, counted no further than
    /// `limit + 1`: the exact count when it is at most `limit`, else `limit + 1`. `nil` for any
    /// other type.
    ///
    /// Characters are grapheme clusters, what Swift's `String.count` counts and what a reader
    /// sees as one character: `"e\u{301}"` (e and a combining accent) and a family emoji of
    /// seven scalars are one character each. As one character can hold any number of combining
    /// marks, the count is bounded in code points too: text of more than
    /// ``maxScalarsPerCharacter`` Unicode scalars per character of `limit` counts as `limit + 1`
    /// (longer than the limit), and so does text that is not valid UTF-8.
    public func characterCount(limit: Int) -> Int? {
        guard type == Self.textType else { return nil }
        let limit = max(limit, 0)
        let over = limit == .max ? limit : limit + 1
        let (maxScalars, overflow) = limit.multipliedReportingOverflow(by: Self.maxScalarsPerCharacter)
        // A scalar is at most 4 bytes: more bytes than that cannot fit, and need no decoding.
        if !overflow, maxScalars <= Int.max / 4, bytes.count > maxScalars * 4 { return over }
        guard let text = String(validating: bytes, as: UTF8.self) else { return over }
        if !overflow {
            var scalars = 0
            for _ in text.unicodeScalars {
                scalars += 1
                if scalars > maxScalars { return over }
            }
        }
        var count = 0
        for _ in text {
            count += 1
            if count > limit { break }
        }
        return count
    }

    /// The most Unicode scalars (code points) a character may hold for the character-count
    /// exception: 8, enough for every emoji sequence (a family or a tag flag has 7) and accented
    /// letters, not for a character stacked with thousands of combining marks.
    public static let maxScalarsPerCharacter = 8
}

/// The general pasteboard that every app on the device can read. The policy governs writes only.
package protocol Pasteboard: Sendable {
    /// What is on the pasteboard now, and its change count.
    func read() -> (items: [PasteboardItem], changeCount: Int)
    /// Replaces the contents; returns the new change count.
    ///
    /// - Throws: the adapter's own error when the platform refused the write; the pasteboard
    ///   then keeps exactly what it had, and the copy that asked reports
    ///   ``ShareBrokerError/pasteboardWriteFailed(reason:)``.
    @discardableResult
    func write(_ items: [PasteboardItem]) throws -> Int
    /// Replaces the contents with one item (what most copies write), as `write([item])` does;
    /// the default is exactly that. An adapter that can keep one item without building an array
    /// implements it (the in-memory pasteboard replaces its item in place).
    func write(_ item: PasteboardItem) throws -> Int
    /// Empties the pasteboard only if nobody wrote to it since `changeCount`; returns whether it did.
    @discardableResult
    func clear(ifChangeCount changeCount: Int) -> Bool
    /// Names the pasteboard's storage when its items and change counts outlive the processes that
    /// wrote them (a file); `nil` when they do not (memory, a desktop clipboard served by its
    /// writer). With a name, the broker keeps the change count of the app's last write next to
    /// its wipe journal, so a retire after a restart still takes back what an earlier run wrote.
    var persistentIdentity: String? { get }
}

extension Pasteboard {
    /// `nil`: the items do not outlive the process that wrote them.
    package var persistentIdentity: String? { nil }

    /// Writes `[item]`.
    package func write(_ item: PasteboardItem) throws -> Int {
        try write([item])
    }
}
