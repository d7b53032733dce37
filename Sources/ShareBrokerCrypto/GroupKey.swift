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

/// The HChaCha20 subkeys of the last few nonce prefixes this key opened items under that another
/// process sealed: a paste of the next item a peer app seals under the same epoch skips the
/// ~120 ns derivation, as an item this process sealed does (``KeyBox/cachedSubkey(prefix:)``).
///
/// Four slots of (prefix, subkey) in one `sodium_malloc` block, allocated at the first insert,
/// replaced round-robin, zeroed by ``KeyBox/wipe()`` and freed (zeroed) with the box. Used for
/// opening only: nothing is ever sealed under a peer's prefix. A prefix is remembered only after
/// an item under it authenticated, so forged envelopes cannot fill the table.
///
/// The table is guarded by a try-lock (one atomic flag): a reader that finds it taken derives the
/// subkey on the stack instead of waiting, so a thread preempted while holding it (or gone in a
/// fork child) never blocks another. ``KeyBox/wipe()`` touches the table only once the gate has
/// drained every reader, and every use is inside a reader slot.
package final class PeerSubkeys: @unchecked Sendable {
    /// Slots in the table.
    package static let slotCount = 4
    private static let slotSize = XChaCha20Poly1305.prefixByteCount + XChaCha20Poly1305.keyByteCount

    private let busy = Atomic<Bool>(false)
    // Read and written only by the holder of `busy` (or by wipe and deinit, with no reader left).
    private var table: UnsafeMutableRawPointer?
    private var used = 0
    private var next = 0

    package init() {}

    deinit {
        if let table { SecureMemory.free(table) }
    }

    @inline(__always)
    private func tryLock() -> Bool {
        busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
    }

    @inline(__always)
    private func unlock() {
        busy.store(false, ordering: .releasing)
    }

    /// Copies the subkey of `prefix` (16 bytes) into `out` (32 bytes) if the table holds it.
    @inline(__always)
    package func lookup(prefix: UnsafeRawPointer, into out: UnsafeMutableRawPointer) -> Bool {
        guard tryLock() else { return false }
        defer { unlock() }
        guard let table else { return false }
        let first = prefix.loadUnaligned(as: UInt64.self)
        let second = prefix.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        var slot = 0
        while slot < used {
            let entry = table + slot * Self.slotSize
            if entry.loadUnaligned(as: UInt64.self) == first
                && entry.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == second {
                out.copyMemory(from: entry + XChaCha20Poly1305.prefixByteCount,
                               byteCount: XChaCha20Poly1305.keyByteCount)
                return true
            }
            slot += 1
        }
        return false
    }

    /// Remembers `subkey` (32 bytes) as the subkey of `prefix` (16 bytes), replacing the oldest
    /// slot when all are used. Does nothing if the table is busy or cannot be allocated.
    package func remember(prefix: UnsafeRawPointer, subkey: UnsafeRawPointer) {
        guard tryLock() else { return }
        defer { unlock() }
        if table == nil {
            table = try? SecureMemory.allocate(byteCount: Self.slotCount * Self.slotSize)
        }
        guard let table else { return }
        let entry = table + next * Self.slotSize
        entry.copyMemory(from: prefix, byteCount: XChaCha20Poly1305.prefixByteCount)
        (entry + XChaCha20Poly1305.prefixByteCount).copyMemory(from: subkey, byteCount: XChaCha20Poly1305.keyByteCount)
        used = max(used, next + 1)
        next = (next + 1) % Self.slotCount
    }

    /// Zeroes every slot and makes the table inaccessible. Only ``KeyBox/wipe()`` calls this,
    /// once no reader is inside.
    fileprivate func zero() {
        if let table { SecureMemory.zeroAndLock(table, byteCount: Self.slotCount * Self.slotSize) }
        used = 0
        busy.store(true, ordering: .releasing) // never used again: lookups miss, inserts stop
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
    /// Subkeys of prefixes other processes sealed under, for opening their items.
    package let peerSubkeys = PeerSubkeys()

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
        peerSubkeys.zero()
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

    /// Runs `body` with `HChaCha20(key, prefix)` for opening an item sealed under the 16-byte
    /// `prefix`: from the peer table if it holds the prefix, else derived on the stack. When
    /// `body` answers `true` (the item authenticated) the derived subkey is remembered for the
    /// next item under that prefix. The stack copy is zeroed afterwards. Call only from inside
    /// ``withKey(_:)``.
    @inline(__always)
    package func withOpeningSubkey(key: UnsafeRawPointer, prefix: UnsafeRawPointer,
                                   _ body: (UnsafeRawPointer) throws(SealingError) -> Bool) throws(SealingError) -> Bool {
        var subkey: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return try withUnsafeMutablePointer(to: &subkey) { (subkey) throws(SealingError) -> Bool in
            let raw = UnsafeMutableRawPointer(subkey)
            defer { sodium_memzero(raw, XChaCha20Poly1305.keyByteCount) }
            let remembered = peerSubkeys.lookup(prefix: prefix, into: raw)
            if !remembered {
                XChaCha20Poly1305.hchacha20(key: key, input: prefix, into: raw)
            }
            let authentic = try body(UnsafeRawPointer(raw))
            if authentic && !remembered {
                peerSubkeys.remember(prefix: prefix, subkey: UnsafeRawPointer(raw))
            }
            return authentic
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
