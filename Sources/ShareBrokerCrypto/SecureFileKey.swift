import CSodium

/// The keys of one secure file (`Sources/ShareBroker/SecureFiles`), derived from the app's file
/// key (format version 2) or, for legacy version 1 files, the group key, and the file's random
/// 32-byte id, in guarded memory; and the chunk and header cryptography that uses them.
/// `docs/FORMATS.md` ("Secure files") gives the construction byte by byte.
///
/// Derivation (every intermediate on the stack, zeroed after use):
///
/// ```
/// master    = crypto_kdf_derive_from_key(32, 1, "SBfile02", fileKey)     // version 2
///           = crypto_kdf_derive_from_key(32, 1, "SBfile01", groupKey)    // version 1 (legacy)
/// root      = crypto_generichash(32, fileID, key: master)          // BLAKE2b-256, keyed
/// chunkKey  = crypto_kdf_derive_from_key(32, 1, "SBfchunk", root)
/// headerKey = crypto_kdf_derive_from_key(32, 2, "SBfheadr", root)
/// ```
///
/// `chunkKey` and `headerKey` live in one 64-byte `sodium_malloc` allocation, read-only once
/// written; ``zero()`` zeroes it and makes it inaccessible, and `deinit` frees it (libsodium
/// zeroes it first). The type is a class owned by one reader or writer, which is not shared
/// across threads.
package final class SecureFileKey {
    /// Size of a file id.
    package static let fileIDByteCount = 32
    /// Size of the header MAC.
    package static let macByteCount = 32
    /// Bytes ``sealChunk(aad:plaintext:isFinal:into:)`` adds to a chunk's plaintext: the
    /// 24-byte secretstream header and the 17-byte secretstream overhead.
    package static let chunkOverhead = SecretStream.headerByteCount + SecretStream.overhead

    private static let keyStorageByteCount = 2 * SecretStream.keyByteCount

    /// The derivation context of a format version 2 file (under the app's file key).
    package static let fileKeyContext: StaticString = "SBfile02"
    /// The derivation context of a format version 1 file (under a group key; legacy, read only).
    package static let groupKeyContext: StaticString = "SBfile01"

    /// The id of the key (file key, or group key for version 1) the file is sealed under.
    package let keyID: UInt32
    /// The key's box, to notice a wipe.
    private let box: KeyBox
    /// `chunkKey || headerKey` (64 bytes of `sodium_malloc` memory).
    private let storage: UnsafeMutableRawPointer
    /// Whether ``zero()`` ran (the memory is then inaccessible and must not be touched).
    private(set) var isZeroed = false

    /// How a chunk's secretstream tag reads.
    package enum ChunkTag {
        /// `TAG_MESSAGE`: a chunk that is not the last.
        case message
        /// `TAG_FINAL`: the file's last chunk.
        case final
        /// Any other tag (this library never writes one).
        case other
    }

    /// Derives the keys of the file `fileID` (32 bytes) from the key in `box`, under `context`
    /// (``fileKeyContext`` or ``groupKeyContext``).
    ///
    /// - Throws: ``SealingError/wiped`` if the key was wiped; ``SealingError/outOfSecureMemory``.
    package init(box: KeyBox, fileID: UnsafeRawPointer, context: StaticString) throws(SealingError) {
        let storage = try SecureMemory.allocate(byteCount: Self.keyStorageByteCount)
        do {
            try box.withKey { (groupKey) throws(SealingError) in
                SecretStream.withDerivedKey(from: groupKey, id: 1, context: context) { master in
                    var root: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
                    withUnsafeMutablePointer(to: &root) { root in
                        let rootBytes = UnsafeMutableRawPointer(root)
                        defer { sodium_memzero(rootBytes, SecretStream.keyByteCount) }
                        _ = crypto_generichash(
                            rootBytes.assumingMemoryBound(to: UInt8.self), SecretStream.keyByteCount,
                            fileID.assumingMemoryBound(to: UInt8.self), UInt64(Self.fileIDByteCount),
                            master, SecretStream.keyByteCount)
                        SecretStream.derive(from: rootBytes, id: 1, context: "SBfchunk", into: storage)
                        SecretStream.derive(from: rootBytes, id: 2, context: "SBfheadr",
                                            into: storage + SecretStream.keyByteCount)
                    }
                }
            }
        } catch {
            SecureMemory.free(storage)
            throw error
        }
        SecureMemory.makeReadOnly(storage)
        self.keyID = box.id
        self.box = box
        self.storage = storage
    }

    deinit {
        SecureMemory.free(storage)
    }

    /// Whether the group key this file key came from was wiped (retire), or this key was zeroed.
    /// Callers check it before every use and call ``zero()`` when it turns true.
    package var isRevoked: Bool { isZeroed || box.isWiped }

    /// Zeroes both keys now and makes their memory inaccessible. Idempotent.
    package func zero() {
        guard !isZeroed else { return }
        isZeroed = true
        SecureMemory.zeroAndLock(storage, byteCount: Self.keyStorageByteCount)
    }

    private var chunkKey: UnsafeRawPointer { UnsafeRawPointer(storage) }
    private var headerKey: UnsafeRawPointer { UnsafeRawPointer(storage + SecretStream.keyByteCount) }

    // MARK: Header

    /// Writes the 32-byte header MAC, `BLAKE2b-256(key: headerKey, header)`, to `out`.
    /// Call only while ``isRevoked`` is false.
    package func headerMAC(_ header: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) {
        _ = crypto_generichash(
            out.assumingMemoryBound(to: UInt8.self), Self.macByteCount,
            header.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(header.count),
            headerKey.assumingMemoryBound(to: UInt8.self), SecretStream.keyByteCount)
    }

    /// Whether `mac` (32 bytes) is the header MAC of `header`, compared in constant time.
    /// Call only while ``isRevoked`` is false.
    package func verifyHeaderMAC(_ header: UnsafeRawBufferPointer, mac: UnsafeRawPointer) -> Bool {
        var expected: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutablePointer(to: &expected) { expected in
            let raw = UnsafeMutableRawPointer(expected)
            defer { sodium_memzero(raw, Self.macByteCount) }
            headerMAC(header, into: raw)
            return sodium_memcmp(raw, mac, Self.macByteCount) == 0
        }
    }

    // MARK: Chunks

    /// Seals one chunk as a stream of one message: `init_push` (a fresh random 24-byte header)
    /// then `push(plaintext, ad: aad, tag: isFinal ? FINAL : MESSAGE)`.
    ///
    /// Writes `header (24) || ciphertext (plaintext.count + 17)` to `out` and returns the
    /// number of bytes written (`plaintext.count + chunkOverhead`). `out` must not overlap the
    /// inputs. Call only while ``isRevoked`` is false.
    package func sealChunk(aad: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer, isFinal: Bool,
                   into out: UnsafeMutableRawPointer) -> Int {
        SecretStream.withState { state in
            SecretStream.initPush(state, header: out, key: chunkKey)
            return SecretStream.headerByteCount + SecretStream.push(
                state, into: out + SecretStream.headerByteCount, message: plaintext, aad: aad,
                tag: isFinal ? SecretStream.tagFinal : SecretStream.tagMessage)
        }
    }

    /// Verifies one sealed chunk (`header (24) || ciphertext`, as written by
    /// ``sealChunk(aad:plaintext:isFinal:into:)``) with associated data `aad` and, only if it
    /// is authentic, decrypts it into `out` (`sealed.count - chunkOverhead` bytes; may be `nil`
    /// for an empty chunk).
    ///
    /// Returns the plaintext length and the tag, or `nil` if the chunk is not authentic under
    /// this key and `aad` (nothing is written to `out` then). Call only while ``isRevoked`` is
    /// false.
    package func openChunk(aad: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer,
                   into out: UnsafeMutableRawPointer?) -> (count: Int, tag: ChunkTag)? {
        guard sealed.count >= Self.chunkOverhead, let base = sealed.baseAddress else { return nil }
        return SecretStream.withState { state -> (count: Int, tag: ChunkTag)? in
            guard SecretStream.initPull(state, header: base, key: chunkKey) else { return nil }
            let ciphertext = UnsafeRawBufferPointer(rebasing: sealed[SecretStream.headerByteCount...])
            guard let pulled = SecretStream.pull(state, into: out, ciphertext: ciphertext, aad: aad) else {
                return nil
            }
            let tag: ChunkTag = pulled.tag == SecretStream.tagMessage ? .message
                : pulled.tag == SecretStream.tagFinal ? .final : .other
            return (pulled.count, tag)
        }
    }
}

extension KeyRing {
    /// The keys of a format version 1 file (legacy: derived from a group key; this library no
    /// longer writes them) `fileID` under this ring's current key. Tests use it to make v1 files.
    ///
    /// - Throws: ``SealingError/wiped``; ``SealingError/outOfSecureMemory``.
    package func secureFileKey(forWritingFileID fileID: UnsafeRawPointer) throws(SealingError) -> SecureFileKey {
        guard !isWiped else { throw .wiped }
        return try SecureFileKey(box: current, fileID: fileID, context: SecureFileKey.groupKeyContext)
    }

    /// The keys of the existing format version 1 file `fileID` sealed under group key `keyID`.
    ///
    /// - Throws: ``SealingError/unknownKey(id:)`` if this ring does not hold `keyID`;
    ///   ``SealingError/wiped``; ``SealingError/outOfSecureMemory``.
    package func secureFileKey(keyID: UInt32, fileID: UnsafeRawPointer) throws(SealingError) -> SecureFileKey {
        guard !isWiped else { throw .wiped }
        let box = current.id == keyID ? current : previous.first { $0.id == keyID }
        guard let box else { throw .unknownKey(id: keyID) }
        return try SecureFileKey(box: box, fileID: fileID, context: SecureFileKey.groupKeyContext)
    }
}

extension FileKeyRing {
    /// The keys of a new format version 2 file `fileID` under this ring's newest generation.
    ///
    /// - Throws: ``SealingError/wiped``; ``SealingError/outOfSecureMemory``.
    package func secureFileKey(forWritingFileID fileID: UnsafeRawPointer) throws(SealingError) -> SecureFileKey {
        guard !isWiped else { throw .wiped }
        return try SecureFileKey(box: boxes[0], fileID: fileID, context: SecureFileKey.fileKeyContext)
    }

    /// The keys of the existing format version 2 file `fileID` sealed under file key `keyID`.
    ///
    /// - Throws: ``SealingError/unknownKey(id:)`` if this ring does not hold `keyID` (the file
    ///   belongs to another app, or its keys were dropped); ``SealingError/wiped``;
    ///   ``SealingError/outOfSecureMemory``.
    package func secureFileKey(keyID: UInt32, fileID: UnsafeRawPointer) throws(SealingError) -> SecureFileKey {
        guard !isWiped else { throw .wiped }
        guard let box = box(for: keyID) else { throw .unknownKey(id: keyID) }
        return try SecureFileKey(box: box, fileID: fileID, context: SecureFileKey.fileKeyContext)
    }
}

extension SecureMemory {
    /// Zeroes `byteCount` bytes at `pointer` (`sodium_memzero`: not optimized away). Used for
    /// plaintext scratch buffers, which are ordinary memory, not `sodium_malloc`.
    package static func zero(_ pointer: UnsafeMutableRawPointer?, byteCount: Int) {
        guard let pointer, byteCount > 0 else { return }
        sodium_memzero(pointer, byteCount)
    }

    /// Fills `buffer` with random bytes from the OS (`randombytes_buf`).
    ///
    /// - Throws: ``SealingError/sodiumInitFailed``.
    package static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) throws(SealingError) {
        try Sodium.ensureInitialized()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }
}
