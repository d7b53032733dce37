import ShareBrokerCrypto

/// A warned copy's representations while the user decides: their bytes in one guarded
/// `sodium_malloc` allocation (ShareBrokerCrypto's ``SecureMemory``), zeroed and freed when the
/// question ends (``release()``) or, at the latest, when the hold is destroyed. The types are
/// kept as strings (they are not content).
package final class HeldCopy: Sendable {
    private let types: [String]
    private let lengths: [Int]
    /// The allocation's address (a pointer is not Sendable), 0 once released.
    private let storage: Mutex<UInt>

    /// Copies `representations` into protected memory.
    /// - Throws: ``SealingError/outOfSecureMemory`` when the allocation fails.
    package init<Items: Collection>(_ representations: Items) throws(SealingError) where Items.Element: CopyRepresentation {
        types = representations.map(\.type)
        lengths = representations.map(\.byteCount)
        let total = lengths.reduce(0, +)
        let storage = try SecureMemory.allocate(byteCount: max(total, 1))
        var offset = 0
        for item in representations {
            item.withBytes { (bytes: UnsafeRawBufferPointer) in
                if let base = bytes.baseAddress, bytes.count > 0 {
                    (storage + offset).copyMemory(from: base, byteCount: bytes.count)
                }
                offset += bytes.count
            }
        }
        self.storage = Mutex(UInt(bitPattern: storage))
    }

    deinit {
        release()
    }

    /// Whether the bytes are still held (tests: a released hold holds nothing).
    package var isHeld: Bool { storage.withLock { $0 != 0 } }

    /// The representations as items, for the write after a proceed; empty after ``release()``.
    package func items() -> [PasteboardItem] {
        storage.withLock { address in
            guard let storage = UnsafeMutableRawPointer(bitPattern: address) else { return [] }
            var out: [PasteboardItem] = []
            var offset = 0
            for (type, length) in zip(types, lengths) {
                let bytes = [UInt8](UnsafeRawBufferPointer(start: storage + offset, count: length))
                out.append(PasteboardItem(type: type, bytes: bytes))
                offset += length
            }
            return out
        }
    }

    /// Zeroes and frees the bytes (sodium_free zeroes before it frees). Idempotent.
    package func release() {
        storage.withLock { address in
            guard let pointer = UnsafeMutableRawPointer(bitPattern: address) else { return }
            SecureMemory.free(pointer)
            address = 0
        }
    }
}
