/// Moving a key ring between a key custodian and an app in another process: the narrow,
/// explicit way key bytes leave and enter guarded memory.
extension KeyRing {
    /// One key while ``KeyRing/exportKeys(_:)`` lends it: its id and its 32 bytes, valid only
    /// inside the closure.
    public typealias LentKey = (id: UInt32, bytes: UnsafeRawBufferPointer)

    /// Lends `body` every key of this ring, current first, then newest to oldest, for a key
    /// custodian to persist or to send to an entitled app.
    ///
    /// The pointers are valid only inside `body`, and point into guarded memory: copy what you
    /// need into a buffer you zero afterwards (`sodium_memzero`), never into a `String`, and
    /// never log it. No other API returns key bytes.
    /// - Throws: ``SealingError/wiped`` if the ring (or one of its keys) was wiped.
    public func exportKeys<R>(_ body: ([LentKey]) -> R) throws(SealingError) -> R {
        guard !isWiped else { throw .wiped }
        return try Self.lend(ArraySlice([current] + previous), lent: [], body)
    }

    private static func lend<R>(_ boxes: ArraySlice<KeyBox>, lent: [LentKey],
                                _ body: ([LentKey]) -> R) throws(SealingError) -> R {
        guard let box = boxes.first else { return body(lent) }
        return try box.withKey { (key) throws(SealingError) -> R in
            try lend(boxes.dropFirst(),
                     lent: lent + [(box.id, UnsafeRawBufferPointer(start: key, count: GroupKey.byteCount))], body)
        }
    }

    /// A ring made of keys delivered by a custodian (``exportKeys(_:)`` on its side): the first
    /// seals, the others (newest first) open only. Each key is copied into guarded memory; zero
    /// your buffers afterwards.
    ///
    /// - Throws: ``SealingError/invalidKeyLength`` if there is no key, a key is not 32 bytes, or
    ///   two keys share an id; ``SealingError/sodiumInitFailed``; ``SealingError/outOfSecureMemory``.
    ///
    /// `retiredAt` holds, for each key after the first, when it stopped being current (Unix
    /// seconds; ``KeyRing/retiredAt`` on the custodian's side); a missing time counts as 0, so
    /// that key opens no version 2 item (fail closed).
    public convenience init(importing keys: [LentKey], retiredAt: [UInt64] = []) throws(SealingError) {
        try Sodium.ensureInitialized()
        guard !keys.isEmpty, Set(keys.map(\.id)).count == keys.count else { throw .invalidKeyLength }
        var boxes: [KeyBox] = []
        boxes.reserveCapacity(keys.count)
        for key in keys {
            boxes.append(KeyBox(key: try GroupKey(id: key.id, importing: key.bytes), nonces: .shared))
        }
        self.init(current: boxes[0], previous: Array(boxes.dropFirst()), retiredAt: retiredAt)
    }
}
