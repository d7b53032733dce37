/// What a copy reads of one representation: its type and its bytes, either owned
/// (``PasteboardItem``, what Swift callers pass) or borrowed from the caller's buffer for the
/// length of the call (``BorrowedRepresentation``, the C interface). A sealed copy seals straight
/// from the bytes, so a borrowed representation is never copied into an array of its own; only a
/// copy in the clear makes owned items (``ownedItem``), since the pasteboard keeps what it is given.
package protocol CopyRepresentation {
    /// The type id.
    var type: String { get }
    /// How many bytes it has.
    var byteCount: Int { get }
    /// Calls `body` with the bytes, valid only during the call.
    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R
    /// The representation as an item the pasteboard can keep: what a copy in the clear writes,
    /// and what the short-text exception counts (so the text counted is the text written).
    var ownedItem: PasteboardItem { get }
}

extension PasteboardItem: CopyRepresentation {
    @inlinable package var byteCount: Int { bytes.count }

    @inlinable
    package func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = bytes.withUnsafeBytes { raw in Result { () throws(E) -> R in try body(raw) } }
        return try result.get()
    }

    @inlinable package var ownedItem: PasteboardItem { self }
}

/// A representation whose bytes belong to the caller and stay valid, unchanged, until the copy
/// that reads them returns (the C interface's `sb_copy`: the bytes are the caller's buffer).
package struct BorrowedRepresentation: CopyRepresentation {
    package let type: String
    /// The caller's bytes (`count` 0 may have a nil base address).
    package let bytes: UnsafeRawBufferPointer

    /// A representation of `type` over `bytes`, which must outlive the copy it is passed to.
    package init(type: String, bytes: UnsafeRawBufferPointer) {
        self.type = type
        self.bytes = bytes
    }

    package var byteCount: Int { bytes.count }

    @inline(__always)
    package func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(bytes)
    }

    package var ownedItem: PasteboardItem { PasteboardItem(type: type, bytes: Array(bytes)) }
}
