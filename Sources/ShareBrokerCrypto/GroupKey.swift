#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSodium
import Synchronization

/// One 32-byte XChaCha20-Poly1305 group key and its id, in guarded memory.
///
/// The bytes live in `sodium_malloc` memory (guard pages, a canary, `mlock` where the limit
/// allows), made read-only once written. The type is move-only: a key cannot be copied by
/// accident, and dropping it frees the memory, which libsodium zeroes first. Being
/// non-copyable, it cannot be printed, interpolated, dumped or logged at all; there is no API
/// that returns its bytes.
///
/// Apps get keys inside a ``KeyRing`` from a `SecureServices` custodian; this type is public
/// so that a custodian which receives keys from elsewhere (a daemon client) can import them
/// with ``init(id:importing:)``.
public struct GroupKey: ~Copyable, @unchecked Sendable {
    /// Key size in bytes.
    public static let byteCount = 32

    /// The key's id, written into every envelope it seals. Not secret.
    public let id: UInt32
    /// `byteCount` bytes of `sodium_malloc` memory, read-only after init (no access after wipe).
    private let storage: UnsafeMutableRawPointer

    private init(id: UInt32, storage: UnsafeMutableRawPointer) {
        self.id = id
        self.storage = storage
    }

    /// A fresh random key (`randombytes_buf`, from the OS) with the given id.
    public static func generate(id: UInt32) throws(SealingError) -> GroupKey {
        let storage = try SecureMemory.allocate(byteCount: byteCount)
        crypto_aead_xchacha20poly1305_ietf_keygen(storage.assumingMemoryBound(to: UInt8.self))
        SecureMemory.makeReadOnly(storage)
        return GroupKey(id: id, storage: storage)
    }

    /// Copies a key delivered by a custodian into guarded memory.
    ///
    /// The caller should zero its own copy (`sodium_memzero`) afterwards.
    /// - Throws: ``SealingError/invalidKeyLength`` unless `bytes` is exactly 32 bytes;
    ///   ``SealingError/outOfSecureMemory``.
    public init(id: UInt32, importing bytes: UnsafeRawBufferPointer) throws(SealingError) {
        guard bytes.count == Self.byteCount, let source = bytes.baseAddress else { throw .invalidKeyLength }
        let storage = try SecureMemory.allocate(byteCount: Self.byteCount)
        storage.copyMemory(from: source, byteCount: Self.byteCount)
        SecureMemory.makeReadOnly(storage)
        self.init(id: id, storage: storage)
    }

    /// Copies a key delivered by a custodian into guarded memory; see
    /// ``init(id:importing:)-(_,UnsafeRawBufferPointer)``. Zero the array afterwards.
    public init(id: UInt32, importing bytes: [UInt8]) throws(SealingError) {
        guard bytes.count == Self.byteCount else { throw .invalidKeyLength }
        let storage = try SecureMemory.allocate(byteCount: Self.byteCount)
        let copied = bytes.withUnsafeBytes { source -> Bool in
            guard let base = source.baseAddress else { return false }
            storage.copyMemory(from: base, byteCount: Self.byteCount)
            return true
        }
        guard copied else {
            SecureMemory.free(storage)
            throw .invalidKeyLength
        }
        SecureMemory.makeReadOnly(storage)
        self.init(id: id, storage: storage)
    }

    /// Runs `body` with the key bytes (32). Callers must hold a ``KeyBox`` reader slot.
    @inline(__always)
    package func withKeyBytes<R, E: Error>(_ body: (UnsafeRawPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawPointer(storage))
    }

    /// Zeroes the key now and makes its memory inaccessible. The memory is freed at deinit.
    package func zero() {
        SecureMemory.zeroAndLock(storage, byteCount: Self.byteCount)
    }

    deinit {
        SecureMemory.free(storage)
    }
}

/// A cached HChaCha20 subkey for one (key, nonce epoch) pair, in guarded memory.
///
/// Entries form a chain, newest first; each keeps the older ones alive so that a reader holding
/// an unretained reference never sees one freed. The chain has one entry per epoch the key
/// sealed under (epochs change every 2³² items or in a fork child), and is freed with the key.
package final class SubkeyEntry: @unchecked Sendable {
    /// The epoch whose prefix derived this subkey (strong: its identity must stay unique).
    package let epoch: NonceEpoch
    /// `HChaCha20(key, epoch.prefix)`, 32 bytes of `sodium_malloc` memory, read-only.
    package let bytes: UnsafeMutableRawPointer
    /// The entry this one replaced.
    package let older: SubkeyEntry?

    package init(epoch: NonceEpoch, bytes: UnsafeMutableRawPointer, older: SubkeyEntry?) {
        self.epoch = epoch
        self.bytes = bytes
        self.older = older
    }

    /// Zeroes this entry and every older one.
    package func zeroChain() {
        var entry: SubkeyEntry? = self
        while let current = entry {
            SecureMemory.zeroAndLock(current.bytes, byteCount: XChaCha20Poly1305.keyByteCount)
            entry = current.older
        }
    }

    deinit {
        SecureMemory.free(bytes)
    }
}

/// A ``GroupKey`` shared by the key rings that hold it, with its subkey cache and the gate that
/// lets ``wipe()`` zero it without racing a seal or open in progress.
///
/// Rings made by ``KeyRing/rotated(keepingRecent:)`` share boxes with the ring they came from,
/// so one copy of each secret exists in the process and wiping any ring that holds a key wipes
/// it for every ring.
///
/// The gate is one atomic word: bits 0-31 count readers inside, bit 32 says "wiped" (no new
/// readers), bit 33 says "zeroed", bits 34-63 hold the fork generation the count belongs to.
/// Readers that were inside when the process forked do not exist in the child, so a count from
/// another generation is treated as zero.
package final class KeyBox: @unchecked Sendable {
    /// The key's id.
    package let id: UInt32
    /// The key (read only through ``withKey(_:)``).
    private let key: GroupKey
    /// Where this key's nonces come from; one source per box keeps the subkey cache monotonic.
    package let nonces: NonceSource
    private let gate = Atomic<UInt64>(0)
    /// Newest cached subkey (holding one retain), or `nil`.
    private let subkeys = Atomic<Unmanaged<SubkeyEntry>?>(nil)

    private static let readerMask: UInt64 = 0xFFFF_FFFF
    private static let wipedBit: UInt64 = 1 << 32
    private static let zeroedBit: UInt64 = 1 << 33
    private static let generationShift: UInt64 = 34

    package init(key: consuming GroupKey, nonces: NonceSource) {
        self.id = key.id
        self.key = key
        self.nonces = nonces
    }

    deinit {
        subkeys.load(ordering: .acquiring)?.release()
    }

    /// Whether ``wipe()`` has begun.
    package var isWiped: Bool { gate.load(ordering: .acquiring) & Self.wipedBit != 0 }

    private static func generationTag() -> UInt64 {
        ForkGeneration.current & (UInt64.max >> generationShift)
    }

    /// Enters as a reader and runs `body` with the key bytes, unless the box is wiped.
    @inline(__always)
    package func withKey<R>(_ body: (UnsafeRawPointer) throws(SealingError) -> R) throws(SealingError) -> R {
        let generation = Self.generationTag()
        var state = gate.load(ordering: .relaxed)
        while true {
            guard state & Self.wipedBit == 0 else { throw .wiped }
            let readers = (state >> Self.generationShift) == generation ? state & Self.readerMask : 0
            let desired = (generation << Self.generationShift) | (state & Self.zeroedBit) | (readers + 1)
            let (exchanged, original) = gate.weakCompareExchange(
                expected: state, desired: desired, successOrdering: .acquiring, failureOrdering: .relaxed)
            if exchanged { break }
            state = original
        }
        defer { leave(generation: generation) }
        return try key.withKeyBytes(body)
    }

    private func leave(generation: UInt64) {
        var state = gate.load(ordering: .relaxed)
        while true {
            // A count from another generation was already discarded: nothing to give back.
            guard state >> Self.generationShift == generation, state & Self.readerMask > 0 else { return }
            let (exchanged, original) = gate.weakCompareExchange(
                expected: state, desired: state - 1, successOrdering: .releasing, failureOrdering: .relaxed)
            if exchanged { return }
            state = original
        }
    }

    /// Stops new readers, waits for readers inside to leave, then zeroes the key and every
    /// cached subkey. Returns once the secrets are zeroed, whichever thread zeroes them.
    package func wipe() {
        let generation = Self.generationTag()
        var state = gate.load(ordering: .acquiring)
        // Claim the wipe, or learn that someone else (in this generation) has.
        while true {
            let sameGeneration = state >> Self.generationShift == generation
            if sameGeneration && state & Self.wipedBit != 0 {
                waitUntilZeroed()
                return
            }
            if !sameGeneration && state & Self.zeroedBit != 0 { return }
            let readers = sameGeneration ? state & Self.readerMask : 0
            let desired = (generation << Self.generationShift) | Self.wipedBit | readers
            let (exchanged, original) = gate.weakCompareExchange(
                expected: state, desired: desired, successOrdering: .acquiringAndReleasing,
                failureOrdering: .acquiring)
            if exchanged { break }
            state = original
        }
        // Wait for the readers inside (a seal of the largest item takes milliseconds).
        while gate.load(ordering: .acquiring) & Self.readerMask != 0 {
            _ = sched_yield()
        }
        key.zero()
        subkeys.load(ordering: .acquiring)?._withUnsafeGuaranteedRef { $0.zeroChain() }
        gate.bitwiseOr(Self.zeroedBit, ordering: .releasing)
    }

    private func waitUntilZeroed() {
        while gate.load(ordering: .acquiring) & Self.zeroedBit == 0 {
            _ = sched_yield()
        }
    }

    /// Runs `body` with `HChaCha20(key, epoch.prefix)` from the cache, computing and caching it
    /// if the epoch is newer than the cached one. Call only from inside ``withKey(_:)``.
    @inline(__always)
    package func withSubkey<R>(key: UnsafeRawPointer, epoch: Unmanaged<NonceEpoch>,
                       _ body: (UnsafeRawPointer) throws(SealingError) -> R) throws(SealingError) -> R {
        let target = epoch.toOpaque()
        while true {
            let cached = subkeys.load(ordering: .acquiring)
            if let cached {
                // Entries live until the box is freed, and the caller holds the box.
                let (entryEpoch, bytes) = cached._withUnsafeGuaranteedRef {
                    (Unmanaged.passUnretained($0.epoch), UnsafeRawPointer($0.bytes))
                }
                if entryEpoch.toOpaque() == target {
                    return try body(bytes)
                }
                let stale = epoch._withUnsafeGuaranteedRef { epoch in
                    entryEpoch._withUnsafeGuaranteedRef { epoch.serial <= $0.serial }
                }
                if stale {
                    // A reservation from an epoch older than the cache's (a thread raced an
                    // epoch change): derive on the stack rather than thrash the cache.
                    let prefix = epoch._withUnsafeGuaranteedRef { $0.prefix }
                    return try withUnsafePointer(to: prefix) { (prefix) throws(SealingError) -> R in
                        try XChaCha20Poly1305.withSubkey(key: key, nonce: UnsafeRawPointer(prefix), body)
                    }
                }
            }
            try install(key: key, epoch: epoch, replacing: cached)
        }
    }

    /// The cached subkey if it was derived from the 16-byte `prefix` (an item this process
    /// sealed under its current epoch), else `nil`. Call only from inside ``withKey(_:)``; the
    /// pointer stays valid while the box lives.
    @inline(__always)
    package func cachedSubkey(prefix: UnsafeRawPointer) -> UnsafeRawPointer? {
        guard let cached = subkeys.load(ordering: .acquiring) else { return nil }
        return cached._withUnsafeGuaranteedRef { entry in
            // The prefix is two words in memory order: two loads, not a byte-wise generic compare.
            let cachedPrefix = entry.epoch.prefix
            let matches = prefix.loadUnaligned(as: UInt64.self) == cachedPrefix.0
                && prefix.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == cachedPrefix.1
            return matches ? UnsafeRawPointer(entry.bytes) : nil
        }
    }

    private func install(key: UnsafeRawPointer, epoch: Unmanaged<NonceEpoch>,
                         replacing cached: Unmanaged<SubkeyEntry>?) throws(SealingError) {
        let bytes = try SecureMemory.allocate(byteCount: XChaCha20Poly1305.keyByteCount)
        let epochObject = epoch.takeUnretainedValue()
        withUnsafePointer(to: epochObject.prefix) { prefix in
            XChaCha20Poly1305.hchacha20(key: key, input: UnsafeRawPointer(prefix), into: bytes)
        }
        SecureMemory.makeReadOnly(bytes)
        let entry = Unmanaged.passRetained(
            SubkeyEntry(epoch: epochObject, bytes: bytes, older: cached?.takeUnretainedValue()))
        let (exchanged, _) = subkeys.compareExchange(
            expected: cached, desired: entry, ordering: .acquiringAndReleasing)
        if exchanged {
            cached?.release() // the new entry's `older` keeps it alive
        } else {
            entry.release() // never published; frees (and zeroes) its memory
        }
    }
}
