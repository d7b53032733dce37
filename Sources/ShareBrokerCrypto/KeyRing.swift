#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSodium
import Synchronization

/// An item opened from a sealed envelope: its type and its plaintext.
///
/// Its descriptions and mirror show the type and the byte count, never the bytes, so logging
/// an opened item does not leak it.
public struct OpenedItem: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable {
    /// The pasteboard type the item was sealed with (authenticated).
    public let itemType: String
    /// The plaintext (authenticated).
    public var plaintext: [UInt8]
    /// When the item was sealed, in Unix seconds (wall clock, authenticated); `nil` for a
    /// legacy (version 1) item, which carries no time.
    public let sealedAt: UInt64?
    /// The id of the app that sealed the item (authenticated; empty if the sealer named none);
    /// `nil` for a legacy (version 1) item. Only an app holding the group key could have
    /// written it: it is what the sealing process claimed, vouched for by the key.
    public let sealer: String?

    /// Creates an opened item.
    public init(itemType: String, plaintext: [UInt8], sealedAt: UInt64? = nil, sealer: String? = nil) {
        self.itemType = itemType
        self.plaintext = plaintext
        self.sealedAt = sealedAt
        self.sealer = sealer
    }

    /// Zeroes the plaintext's memory (`sodium_memzero`) and empties it. Call when done with it.
    public mutating func zeroPlaintext() {
        plaintext.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
        plaintext.removeAll()
    }

    /// The type and the byte count; never the plaintext.
    public var description: String {
        "OpenedItem(itemType: \(itemType), \(plaintext.count) bytes, sealer: \(sealer ?? "-"), sealedAt: \(sealedAt.map(String.init) ?? "-"))"
    }
    /// Same as ``description``: the type and the byte count, never the plaintext.
    public var debugDescription: String { description }
    /// A mirror with the type and the byte count only, so `dump` does not print the plaintext.
    public var customMirror: Mirror {
        Mirror(self, children: ["itemType": itemType, "byteCount": plaintext.count, "sealer": sealer as Any,
                                "sealedAt": sealedAt as Any], displayStyle: .struct)
    }
}

/// The wall clock that seal times and key retirement times are read from: Unix seconds (UTC).
///
/// A wall clock, not a monotonic one: a seal time must be comparable across processes (the
/// agent retires a key, apps seal and open) and across reboots (a sealed item can outlive a
/// reboot in the host pasteboard file); `CLOCK_MONOTONIC` and `CLOCK_BOOTTIME` restart at every
/// boot. Only root can set the wall clock; see `docs/THREAT-MODEL.md` for what setting it does.
///
/// Read at the last timer tick (`CLOCK_REALTIME_COARSE` on Linux: the same clock, behind by at
/// most one tick, a few milliseconds, and several times cheaper to read than the precise one,
/// which every copy and paste pays): seal times and ages are whole seconds, and every process
/// reads it the same way.
public enum SealClock {
    /// Now, in whole Unix seconds (0 if the clock reads before 1970).
    public static func now() -> UInt64 {
        var spec = timespec()
        #if os(Linux)
        if clock_gettime(CLOCK_REALTIME_COARSE, &spec) != 0 { clock_gettime(CLOCK_REALTIME, &spec) }
        #else
        clock_gettime(CLOCK_REALTIME, &spec)
        #endif
        return spec.tv_sec > 0 ? UInt64(spec.tv_sec) : 0
    }
}

/// The group's keys: the current one, which seals, and recent ones kept for opening only, so
/// that rotating does not make items sealed a moment ago unreadable.
///
/// ```swift
/// let ring = try KeyRing.generate()
/// let sealed = try ring.seal(Array("hello".utf8), itemType: "public.utf8-plain-text")
/// let item = try ring.open(sealed)            // item.itemType, item.plaintext
/// let next = try ring.rotated()               // seals with a new key, still opens `sealed`
/// ```
///
/// Sealing writes a versioned envelope (``EnvelopeFormat``; `docs/FORMATS.md`) with
/// XChaCha20-Poly1305-IETF. Nonces are a random per-process prefix and an atomic counter: no
/// system call per item, safe across threads and forks. Items over
/// ``EnvelopeFormat/chunkingThreshold`` are sealed in chunks with
/// `crypto_secretstream_xchacha20poly1305`, so memory stays at one output buffer.
///
/// A ring is immutable apart from ``wipe()``; rings made by ``rotated(keepingRecent:)`` share
/// the keys they have in common with this one (one copy of each secret per process). Neither
/// the description nor the mirror shows key bytes, only key ids.
public final class KeyRing: Sendable, CustomStringConvertible, CustomReflectable {
    /// The key that seals.
    package let current: KeyBox
    /// Older keys, newest first, kept for opening.
    package let previous: [KeyBox]
    /// When each of ``previous`` stopped being current (Unix seconds), in the same order; 0
    /// when the time is unknown (a ring from an older custodian), which opens no version 2 item.
    public let retiredAt: [UInt64]
    private let wipedFlag = Atomic<Bool>(false)

    /// When each key became current (Unix seconds), current first then as ``previous``; `nil`
    /// when the ring does not know (its oldest key, or a ring of one key). A key becomes current
    /// exactly when the one before it is retired, so this is the next older key's ``retiredAt``.
    public var activatedAt: [UInt64?] {
        (0...previous.count).map(activation(ofKeyAt:))
    }

    /// How long after a key's retirement a version 2 item sealed under it still opens, in
    /// seconds (and how long before its activation one may claim to be sealed): the time a rotated ring takes to reach every app (milliseconds on one machine)
    /// and the rounding of both times to whole seconds. A deauthorized app that kept the key can
    /// forge items for at most this long after the rotation.
    public static let retiredKeyGraceSeconds: UInt64 = 5

    package init(current: KeyBox, previous: [KeyBox], retiredAt: [UInt64] = []) {
        self.current = current
        self.previous = previous
        self.retiredAt = previous.indices.map { $0 < retiredAt.count ? retiredAt[$0] : 0 }
    }

    /// A ring of one fresh random key with a random 32-bit id.
    ///
    /// - Throws: ``SealingError/sodiumInitFailed``, ``SealingError/outOfSecureMemory``.
    public static func generate() throws(SealingError) -> KeyRing {
        try generate(nonces: .shared)
    }

    /// A ring of one fresh key whose nonces come from `nonces` (tests use small sources).
    package static func generate(nonces: NonceSource) throws(SealingError) -> KeyRing {
        try Sodium.ensureInitialized()
        let key = try GroupKey.generate(id: randombytes_random())
        return KeyRing(current: KeyBox(key: key, nonces: nonces), previous: [])
    }

    /// A ring whose current (and only) key is `key`, for custodians that receive keys from
    /// elsewhere. Add older keys with ``rotated(to:keepingRecent:)``, oldest first.
    ///
    /// - Throws: ``SealingError/sodiumInitFailed``.
    public convenience init(current key: consuming GroupKey) throws(SealingError) {
        try Sodium.ensureInitialized()
        self.init(current: KeyBox(key: key, nonces: .shared), previous: [])
    }

    /// The id of the key that seals.
    public var currentKeyID: UInt32 { current.id }

    /// Every key id this ring holds, current first, then newest to oldest.
    public var keyIDs: [UInt32] { [current.id] + previous.map(\.id) }

    /// Whether ``wipe()`` was called on this ring.
    public var isWiped: Bool { wipedFlag.load(ordering: .acquiring) }

    /// A new ring whose current key is fresh (random bytes, random id unused in this ring);
    /// this ring's current key and up to `keepingRecent` keys in all (newest first) are kept for
    /// opening. `keepingRecent` below zero counts as zero. This ring is unchanged.
    ///
    /// - Throws: ``SealingError/wiped`` if this ring was wiped; ``SealingError/outOfSecureMemory``.
    /// The key that was current is recorded as retired at `now` (default: ``SealClock/now()``);
    /// it opens only version 2 items sealed by then (plus ``retiredKeyGraceSeconds``).
    public func rotated(keepingRecent: Int = 4, at now: UInt64 = SealClock.now()) throws(SealingError) -> KeyRing {
        guard !isWiped else { throw .wiped }
        let taken = Set(keyIDs)
        var id = randombytes_random()
        while taken.contains(id) { id = randombytes_random() }
        return try rotated(to: GroupKey.generate(id: id), keepingRecent: keepingRecent, at: now)
    }

    /// A new ring whose current key is `key` (delivered by a custodian); this ring's keys are
    /// kept as in ``rotated(keepingRecent:)``, except any with `key`'s id, which it replaces.
    ///
    /// - Throws: ``SealingError/wiped`` if this ring was wiped.
    /// The key that was current is recorded as retired at `now`.
    public func rotated(to key: consuming GroupKey, keepingRecent: Int = 4,
                        at now: UInt64 = SealClock.now()) throws(SealingError) -> KeyRing {
        guard !isWiped else { throw .wiped }
        let newID = key.id
        let kept = zip([current] + previous, [now] + retiredAt).filter { $0.0.id != newID }.prefix(max(0, keepingRecent))
        return KeyRing(current: KeyBox(key: key, nonces: current.nonces), previous: kept.map(\.0),
                       retiredAt: kept.map(\.1))
    }

    // MARK: Sealing

    /// Seals `plaintext` as an item of `itemType` (a pasteboard type such as
    /// `public.utf8-plain-text`) under the current key, returning the envelope.
    ///
    /// - Throws: ``SealingError/tooLarge(size:limit:)`` over ``EnvelopeFormat/maxPlaintextSize``;
    ///   ``SealingError/itemTypeTooLong(length:limit:)``; ``SealingError/wiped``;
    ///   ``SealingError/outOfSecureMemory``.
    ///
    /// The envelope (version 2) binds, in its authenticated header, `sealer` (the sealing app's
    /// id, at most ``EnvelopeFormat/maxSealerLength`` UTF-8 bytes; empty names nobody) and
    /// `sealedAt` (Unix seconds; default now).
    public func seal(_ plaintext: [UInt8], itemType: String, sealer: String = "",
                     sealedAt: UInt64 = SealClock.now()) throws(SealingError) -> [UInt8] {
        let result: Result<[UInt8], SealingError> = plaintext.withUnsafeBytes { bytes in
            Result { () throws(SealingError) -> [UInt8] in
                try seal(bytes, itemType: itemType, sealer: sealer, sealedAt: sealedAt)
            }
        }
        return try result.get()
    }

    /// Seals the bytes in `plaintext` as an item of `itemType`; see ``seal(_:itemType:)-([UInt8],_)``.
    /// The bytes are only read.
    public func seal(_ plaintext: UnsafeRawBufferPointer, itemType: String, sealer: String = "",
                     sealedAt: UInt64 = SealClock.now()) throws(SealingError) -> [UInt8] {
        guard plaintext.count <= EnvelopeFormat.maxPlaintextSize else {
            throw .tooLarge(size: plaintext.count, limit: EnvelopeFormat.maxPlaintextSize)
        }
        let utf8 = itemType.utf8
        guard utf8.count <= EnvelopeFormat.maxItemTypeLength else {
            throw .itemTypeTooLong(length: utf8.count, limit: EnvelopeFormat.maxItemTypeLength)
        }
        guard sealer.utf8.count <= EnvelopeFormat.maxSealerLength else {
            throw .sealerTooLong(length: sealer.utf8.count, limit: EnvelopeFormat.maxSealerLength)
        }
        return try Self.withUTF8(itemType) { (type) throws(SealingError) -> [UInt8] in
            try Self.withUTF8(sealer) { (sealerBytes) throws(SealingError) -> [UInt8] in
                try seal(plaintext, typeBytes: type, sealerBytes: sealerBytes, sealedAt: sealedAt)
            }
        }
    }

    /// Runs `body` with the UTF-8 bytes of `string`, without a copy for native strings.
    @inline(__always)
    private static func withUTF8<R>(_ string: String,
                                    _ body: (UnsafeRawBufferPointer) throws(SealingError) -> R) throws(SealingError) -> R {
        let contiguous = string.utf8.withContiguousStorageIfAvailable { bytes in
            Result { () throws(SealingError) -> R in try body(UnsafeRawBufferPointer(bytes)) }
        }
        if let contiguous { return try contiguous.get() }
        let copy = Array(string.utf8)
        let result: Result<R, SealingError> = copy.withUnsafeBytes { bytes in
            Result { () throws(SealingError) -> R in try body(bytes) }
        }
        return try result.get()
    }

    /// Seals with raw type bytes (not checked for UTF-8: tests use this to forge types).
    package func seal(_ plaintext: UnsafeRawBufferPointer, typeBytes: UnsafeRawBufferPointer,
                      sealerBytes: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                      sealedAt: UInt64 = SealClock.now()) throws(SealingError) -> [UInt8] {
        guard plaintext.count <= EnvelopeFormat.maxPlaintextSize else {
            throw .tooLarge(size: plaintext.count, limit: EnvelopeFormat.maxPlaintextSize)
        }
        guard typeBytes.count <= EnvelopeFormat.maxItemTypeLength else {
            throw .itemTypeTooLong(length: typeBytes.count, limit: EnvelopeFormat.maxItemTypeLength)
        }
        guard sealerBytes.count <= EnvelopeFormat.maxSealerLength else {
            throw .sealerTooLong(length: sealerBytes.count, limit: EnvelopeFormat.maxSealerLength)
        }
        guard !wipedFlag.load(ordering: .relaxed) else { throw .wiped }
        let box = current
        let keyID = box.id
        if plaintext.count > EnvelopeFormat.chunkingThreshold {
            return try box.withKey { (key) throws(SealingError) -> [UInt8] in
                try ChunkedSealing.seal(key: key, keyID: keyID, typeBytes: typeBytes, sealedAt: sealedAt,
                                        sealerBytes: sealerBytes, plaintext: plaintext)
            }
        }
        let headerLength = EnvelopeFormat.headerLength(itemTypeLength: typeBytes.count, sealerLength: sealerBytes.count)
        let total = headerLength + plaintext.count + EnvelopeFormat.tagLength
        return try box.withKey { (key) throws(SealingError) -> [UInt8] in
            let reservation = box.nonces.reserve()
            return try box.withSubkey(key: key, epoch: reservation.epoch) { (subkey) throws(SealingError) -> [UInt8] in
                try Self.makeBytes(count: total) { out in
                    let nonceOffset = EnvelopeHeader.write(kind: .singleShot, keyID: keyID, typeBytes: typeBytes,
                                                                          sealedAt: sealedAt, sealerBytes: sealerBytes, to: out)
                    reservation.epoch._withUnsafeGuaranteedRef {
                        $0.writeNonce(counter: reservation.counter, to: out + nonceOffset)
                    }
                    XChaCha20Poly1305.seal(
                        subkey: subkey, nonceTail: out + nonceOffset + XChaCha20Poly1305.prefixByteCount,
                        aad: UnsafeRawBufferPointer(start: out, count: headerLength),
                        plaintext: plaintext, into: out + headerLength)
                }
            }
        }
    }

    /// Returns a `count`-byte array filled by `fill`: small envelopes are built on the stack
    /// and copied once (cheaper than a fresh array's set-up on Linux), large ones in place.
    @inline(__always)
    package static func makeBytes(count: Int, _ fill: (UnsafeMutableRawPointer) -> Void) throws(SealingError) -> [UInt8] {
        if count <= 1024 {
            return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) {
                (buffer) throws(SealingError) -> [UInt8] in
                guard let base = buffer.baseAddress else { throw .outOfSecureMemory }
                fill(base)
                return [UInt8](UnsafeRawBufferPointer(buffer))
            }
        }
        return try [UInt8](unsafeUninitializedCapacity: count) { (buffer, initialized) throws(SealingError) in
            guard let base = buffer.baseAddress else { throw .outOfSecureMemory }
            fill(UnsafeMutableRawPointer(base))
            initialized = count
        }
    }

    /// Returns a `count`-byte array of plaintext written by `fill`. Up to 1 KiB the plaintext
    /// is written to the stack, copied once into the array and the stack zeroed
    /// (`sodium_memzero`, whether `fill` succeeded or threw): the array's set-up through
    /// `init(unsafeUninitializedCapacity:)` looks up generic metadata on every call on Linux,
    /// which costs more than the copy at these sizes. Larger ones are written in place.
    @inline(__always)
    package static func makeSecretBytes(count: Int, _ fill: (UnsafeMutableRawPointer) throws(SealingError) -> Void)
        throws(SealingError) -> [UInt8] {
        if count <= 1024 {
            return try withUnsafeTemporaryAllocation(byteCount: max(count, 1), alignment: 8) {
                (buffer) throws(SealingError) -> [UInt8] in
                guard let base = buffer.baseAddress else { throw .outOfSecureMemory }
                defer { sodium_memzero(base, buffer.count) }
                try fill(base)
                return [UInt8](UnsafeRawBufferPointer(start: base, count: count))
            }
        }
        return try [UInt8](unsafeUninitializedCapacity: count) { (buffer, initialized) throws(SealingError) in
            guard let base = buffer.baseAddress else { throw .outOfSecureMemory }
            try fill(UnsafeMutableRawPointer(base))
            initialized = count
        }
    }

    // MARK: Opening

    /// Opens an envelope sealed under any key this ring holds.
    ///
    /// Checks, in order: size (before reading a byte), magic, version, kind, length of every
    /// header field, key id, authenticity of the whole item (header included), then whether the
    /// key may vouch for it: the current key opens every authentic item; a retired (previous)
    /// key opens only a version 2 item whose authenticated seal time is at most
    /// ``retiredKeyGraceSeconds`` after the key's retirement (``retiredAt``). Anything else
    /// sealed under a retired key could have been sealed by an app that kept the key after it
    /// lost its entitlement, so it is refused: ``SealingError/sealedAfterKeyRetired(keyID:sealedAt:retiredAt:)``
    /// for a version 2 item, ``SealingError/legacyItemUnderRetiredKey(keyID:)`` for a version 1
    /// item (it carries no time to check).
    ///
    /// - Throws: ``SealingError/tooLarge(size:limit:)``, ``SealingError/badMagic``,
    ///   ``SealingError/unsupportedVersion(_:)``, ``SealingError/unsupportedKind(_:)``,
    ///   ``SealingError/truncated``, ``SealingError/unknownKey(id:)``,
    ///   ``SealingError/authenticationFailed``, ``SealingError/invalidItemType``,
    ///   ``SealingError/invalidSealer``, ``SealingError/wiped``,
    ///   ``SealingError/sealedAfterKeyRetired(keyID:sealedAt:retiredAt:)``,
    ///   ``SealingError/legacyItemUnderRetiredKey(keyID:)``.
    public func open(_ envelope: [UInt8]) throws(SealingError) -> OpenedItem {
        guard envelope.count <= EnvelopeFormat.maxEnvelopeSize else {
            throw .tooLarge(size: envelope.count, limit: EnvelopeFormat.maxEnvelopeSize)
        }
        let result: Result<OpenedItem, SealingError> = envelope.withUnsafeBytes { bytes in
            Result { () throws(SealingError) -> OpenedItem in try open(bytes) }
        }
        return try result.get()
    }

    /// Opens the envelope in `envelope`; see ``open(_:)-([UInt8])``. The bytes are only read.
    public func open(_ envelope: UnsafeRawBufferPointer) throws(SealingError) -> OpenedItem {
        guard envelope.count <= EnvelopeFormat.maxEnvelopeSize else {
            throw .tooLarge(size: envelope.count, limit: EnvelopeFormat.maxEnvelopeSize)
        }
        guard !wipedFlag.load(ordering: .relaxed) else { throw .wiped }
        let header = try EnvelopeHeader.parse(envelope)
        // The current key (nearly every item) is passed borrowed: `current` is a constant of this
        // ring, which the caller keeps alive for the call, so its box needs no retain here.
        if current.id == header.keyID {
            return try open(envelope, header: header, box: current, activatedAt: activation(ofKeyAt: 0), retiredAt: nil)
        }
        guard let index = previous.firstIndex(where: { $0.id == header.keyID }) else { throw .unknownKey(id: header.keyID) }
        return try open(envelope, header: header, box: previous[index], activatedAt: activation(ofKeyAt: index + 1),
                        retiredAt: retiredAt[index])
    }

    /// When the key at `index` (0: current, then ``previous``) became current, if known.
    private func activation(ofKeyAt index: Int) -> UInt64? {
        index < retiredAt.count && retiredAt[index] > 0 ? retiredAt[index] : nil
    }

    /// The open of an envelope whose header parsed, under `box` (retired at `retired`, `nil` for
    /// the current key).
    private func open(_ envelope: UnsafeRawBufferPointer, header: EnvelopeHeader, box: KeyBox,
                      activatedAt activated: UInt64?, retiredAt retired: UInt64?) throws(SealingError) -> OpenedItem {
        guard let base = envelope.baseAddress else { throw .truncated }
        let aad = UnsafeRawBufferPointer(start: base, count: header.length)
        let body = UnsafeRawBufferPointer(rebasing: envelope[header.length...])
        let nonce = base + header.nonceOffset
        var plaintext: [UInt8]
        switch header.kind {
        case .singleShot:
            guard body.count >= EnvelopeFormat.tagLength else { throw .truncated }
            let count = body.count - EnvelopeFormat.tagLength
            guard count <= EnvelopeFormat.maxPlaintextSize else {
                throw .tooLarge(size: count, limit: EnvelopeFormat.maxPlaintextSize)
            }
            plaintext = try box.withKey { (key) throws(SealingError) -> [UInt8] in
                // Items this process sealed under its current prefix reuse the cached subkey;
                // items of another process, the subkey of their prefix if one authenticated before.
                let cached = box.cachedSubkey(prefix: nonce)
                let nonceTail = nonce + XChaCha20Poly1305.prefixByteCount
                return try Self.makeSecretBytes(count: count) { (out) throws(SealingError) in
                    let authentic = if let cached {
                        XChaCha20Poly1305.open(subkey: cached, nonceTail: nonceTail, aad: aad, ciphertext: body, into: out)
                    } else {
                        try box.withOpeningSubkey(key: key, prefix: nonce) { (subkey) throws(SealingError) -> Bool in
                            XChaCha20Poly1305.open(subkey: subkey, nonceTail: nonceTail, aad: aad, ciphertext: body, into: out)
                        }
                    }
                    guard authentic else { throw .authenticationFailed }
                }
            }
        case .chunked:
            plaintext = try box.withKey { (key) throws(SealingError) -> [UInt8] in
                try ChunkedSealing.open(key: key, header: aad, nonce: nonce, body: body)
            }
        }
        if let activated, let sealedAt = header.sealedAt, sealedAt &+ Self.retiredKeyGraceSeconds < activated {
            // Authentic, but it claims a time before its key existed: the time is the sealer's
            // choice (a ring's holder back-dating an item to before a rotation), not the seal's.
            plaintext.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
            throw .sealedBeforeKeyActivated(keyID: header.keyID, sealedAt: sealedAt, activatedAt: activated)
        }
        if let retired {
            // Authentic, under a key that is no longer current: only what was sealed before the
            // key's retirement (and a version 1 item has no time to tell).
            let refusal: SealingError? = if let sealedAt = header.sealedAt {
                sealedAt > retired &+ Self.retiredKeyGraceSeconds
                    ? .sealedAfterKeyRetired(keyID: header.keyID, sealedAt: sealedAt, retiredAt: retired) : nil
            } else {
                .legacyItemUnderRetiredKey(keyID: header.keyID)
            }
            if let refusal {
                plaintext.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
                throw refusal
            }
        }
        guard let itemType = Self.decodeWellKnownItemType(UnsafeRawBufferPointer(rebasing: envelope[header.itemTypeRange]))
                ?? Self.decodeItemType(UnsafeRawBufferPointer(rebasing: envelope[header.itemTypeRange])) else {
            plaintext.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
            throw .invalidItemType
        }
        var sealer: String?
        if header.sealedAt != nil {
            guard let decoded = Self.decodeItemType(UnsafeRawBufferPointer(rebasing: envelope[header.sealerRange])) else {
                plaintext.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
                throw .invalidSealer
            }
            sealer = decoded
        }
        return OpenedItem(itemType: itemType, plaintext: plaintext, sealedAt: header.sealedAt, sealer: sealer)
    }

    /// The item types most items carry (the pasteboard's plain text, HTML and images, by their
    /// UTI and MIME names), as literals: an item of one of these types opens without allocating
    /// a String for its type (longer than 15 bytes, a decoded one would be on the heap).
    private static let wellKnownItemTypes: [String] = [
        "public.utf8-plain-text", "public.html", "public.png", "public.jpeg", "public.plain-text",
        "text/plain;charset=utf-8", "text/html", "image/png", "image/jpeg", "text/plain",
    ]

    /// The well-known item type spelled by `bytes` (the literal itself, which copying never
    /// allocates), or `nil`.
    package static func decodeWellKnownItemType(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let base = bytes.baseAddress else { return nil }
        for candidate in wellKnownItemTypes where candidate.utf8.count == bytes.count {
            let same = candidate.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
                guard let candidateBase = utf8.baseAddress else { return false }
                return memcmp(candidateBase, base, bytes.count) == 0
            }
            if same == true { return candidate }
        }
        return nil
    }

    /// The item type as a `String`, or `nil` if the bytes are not valid UTF-8.
    ///
    /// Decoding repairs invalid UTF-8 by inserting U+FFFD where the input is invalid, so the
    /// bytes are valid exactly when decoding gives them back unchanged. (This specializes fully;
    /// `String(validating:as:)` does a generic metadata lookup per call on Linux.)
    package static func decodeItemType(_ bytes: UnsafeRawBufferPointer) -> String? {
        let typed = bytes.assumingMemoryBound(to: UInt8.self)
        // ASCII (every app id and item type in practice) is valid UTF-8 as it is: decoded
        // without the round-trip comparison.
        var high: UInt8 = 0
        for byte in typed { high |= byte }
        if high < 0x80 { return String(decoding: typed, as: UTF8.self) }
        let decoded = String(decoding: typed, as: UTF8.self)
        guard decoded.utf8.count == typed.count else { return nil }
        let same = decoded.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            guard let decodedBase = utf8.baseAddress, let typedBase = typed.baseAddress else { return typed.isEmpty }
            return memcmp(decodedBase, typedBase, typed.count) == 0
        }
        return (same ?? decoded.utf8.elementsEqual(typed)) ? decoded : nil
    }

    /// Whether `bytes` start with the envelope magic (a cheap check; nothing is authenticated).
    public static func isSealedEnvelope(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { isSealedEnvelope($0) }
    }

    /// Whether the bytes in `bytes` start with the envelope magic (nothing is authenticated).
    public static func isSealedEnvelope(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 4, let base = bytes.baseAddress else { return false }
        return base.loadUnaligned(as: UInt32.self) == EnvelopeFormat.magicWord
    }

    // MARK: Wiping

    /// Zeroes every key this ring holds, now; afterwards ``seal(_:itemType:)-([UInt8],_)`` and
    /// ``open(_:)-([UInt8])`` throw ``SealingError/wiped``.
    ///
    /// Keys are shared with the rings this one was rotated from or into; they are zeroed for
    /// those rings too (a wipe erases the secret from the process). Seals and opens already in
    /// progress finish first; the call returns once every key is zeroed. Key ids stay readable.
    public func wipe() {
        wipedFlag.store(true, ordering: .releasing)
        current.wipe()
        for box in previous { box.wipe() }
    }

    /// The key ids and whether the ring is wiped; never key bytes.
    public var description: String {
        let previousIDs = previous.map { KeyIDFormat.hex($0.id) }.joined(separator: ", ")
        return "KeyRing(current: \(KeyIDFormat.hex(current.id)), previous: [\(previousIDs)]\(isWiped ? ", wiped" : ""))"
    }

    /// A mirror with the key ids and the wiped flag only, so `dump` shows no key material.
    public var customMirror: Mirror {
        Mirror(self, children: ["keyIDs": keyIDs.map(KeyIDFormat.hex), "isWiped": isWiped], displayStyle: .class)
    }
}
