#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSodium
import Synchronization

/// One-time libsodium initialization, and the fork hook that the nonce state depends on.
///
/// `sodium_init` is idempotent and thread-safe; the Swift `static let` runs it exactly once.
/// The same initializer registers a `pthread_atfork` child handler that bumps
/// ``ForkGeneration``, so every piece of per-process state (nonce prefixes, in-flight reader
/// counts) is re-drawn or reset in a fork child before the child can use it.
package enum Sodium {
    /// The result of `sodium_init` (0 first time, 1 already done, -1 failure).
    private static let initResult: Int32 = {
        let result = sodium_init()
        if result >= 0 {
            ForkGeneration.registerChildHandler()
        }
        return result
    }()

    /// Initializes libsodium once per process; throws ``SealingError/sodiumInitFailed`` if it cannot.
    @inline(__always)
    package static func ensureInitialized() throws(SealingError) {
        try check(initResult: initResult)
    }

    /// Maps a `sodium_init` result to success or ``SealingError/sodiumInitFailed``.
    package static func check(initResult: Int32) throws(SealingError) {
        guard initResult >= 0 else { throw .sodiumInitFailed }
    }
}

/// A process-wide counter that changes in every fork child, before the child runs any code of
/// its own.
///
/// Two detectors feed it:
/// * a `pthread_atfork` child handler (one relaxed atomic add: async-signal-safe, no allocation,
///   no lock), for every `fork` made through the C library;
/// * a canary word in a page marked `MADV_WIPEONFORK`, which the kernel zeroes in every child of
///   any kind (a raw `clone` or `fork` system call that skips the C library's handlers, a VM
///   snapshot restored twice with the kernel's wipe-on-fork semantics): a reader that finds it
///   zero re-arms it and bumps the counter. One load and a predictable branch per read.
///
/// Readers compare the value they recorded with the current one; a difference means "this is a
/// fork child: whatever you cached about the parent's nonces or threads is void".
package enum ForkGeneration {
    private static let value = Atomic<UInt64>(0)
    private static let registered = Atomic<Bool>(false)

    /// The canary word (`nil` when the kernel has no `MADV_WIPEONFORK`, before Linux 4.14: the
    /// `pthread_atfork` handler is then the only detector). Mapped once, never unmapped.
    nonisolated(unsafe) private static let canary: UnsafeMutablePointer<UInt64>? = {
        let size = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard size > 0 else { return nil }
        let page = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let page, page != MAP_FAILED else { return nil }
        // MADV_WIPEONFORK (Linux 4.14+; not exported by Glibc's Swift module).
        guard madvise(page, size, 18) == 0 else {
            munmap(page, size)
            return nil
        }
        let word = page.bindMemory(to: UInt64.self, capacity: 1)
        sb_fork_canary_arm(word)
        return word
    }()

    /// The current generation (relaxed: only equality with an earlier load matters, and the
    /// child handler runs before any thread of the child could load it).
    @inline(__always)
    package static var current: UInt64 {
        if let canary, sb_fork_canary_load(canary) == 0 { noticeUnannouncedFork(canary) }
        return value.load(ordering: .relaxed)
    }

    /// The generation as the `pthread_atfork` handler alone counts it (tests show what the
    /// canary adds).
    package static var announced: UInt64 { value.load(ordering: .relaxed) }

    /// Whether the wipe-on-fork canary is armed in this process.
    package static var hasCanary: Bool { canary != nil }

    /// A child the `pthread_atfork` handler did not see: bump once, whoever re-arms first.
    @inline(never)
    private static func noticeUnannouncedFork(_ canary: UnsafeMutablePointer<UInt64>) {
        if sb_fork_canary_rearm(canary) == 1 { value.wrappingAdd(1, ordering: .relaxed) }
    }

    /// Registers the `pthread_atfork` child handler once per process, and arms the canary.
    package static func registerChildHandler() {
        _ = value.load(ordering: .relaxed) // initialize the global before the handler can run
        _ = canary
        guard registered.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            return
        }
        _ = pthread_atfork(nil, nil, { ForkGeneration.childDidFork() })
    }

    /// Runs in the fork child (and from tests that simulate one).
    package static func childDidFork() {
        value.wrappingAdd(1, ordering: .relaxed)
        if let canary { sb_fork_canary_arm(canary) }
    }
}

/// Guarded allocations for secrets: `sodium_malloc` (guard pages, canary, `mlock` where the
/// limit allows, zeroed by `sodium_free`).
package enum SecureMemory {
    /// Allocates `byteCount` bytes of guarded memory, or throws ``SealingError/outOfSecureMemory``.
    package static func allocate(byteCount: Int) throws(SealingError) -> UnsafeMutableRawPointer {
        try Sodium.ensureInitialized()
        guard byteCount >= 0, let pointer = sodium_malloc(byteCount) else { throw .outOfSecureMemory }
        return pointer
    }

    /// Makes the allocation read-only (writes fault). Done once after a secret is written,
    /// never per seal.
    package static func makeReadOnly(_ pointer: UnsafeMutableRawPointer) {
        _ = sodium_mprotect_readonly(pointer)
    }

    /// Zeroes `byteCount` bytes of an allocation, whatever its protection, and leaves it
    /// inaccessible: a use after wipe faults instead of silently using a zero key.
    package static func zeroAndLock(_ pointer: UnsafeMutableRawPointer, byteCount: Int) {
        _ = sodium_mprotect_readwrite(pointer)
        sodium_memzero(pointer, byteCount)
        _ = sodium_mprotect_noaccess(pointer)
    }

    /// Frees an allocation (libsodium zeroes it first), whatever its protection.
    package static func free(_ pointer: UnsafeMutableRawPointer) {
        _ = sodium_mprotect_readwrite(pointer)
        sodium_free(pointer)
    }
}
