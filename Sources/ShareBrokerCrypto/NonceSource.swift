import CSodium
import Synchronization

/// One nonce prefix and the counter that runs under it.
///
/// A 24-byte XChaCha20 nonce is `prefix (16 random bytes) || counter (8 bytes, big-endian)`.
/// The prefix is drawn from the OS once per epoch; the counter is an atomic increment. An epoch
/// ends after ``NonceSource/itemsPerPrefix`` nonces or in a fork child; the next epoch draws a
/// fresh prefix.
///
/// Epochs are immutable apart from the counter and are never freed while their
/// ``NonceSource`` lives (each one keeps its predecessor), so a reader may use one without
/// retaining it.
package final class NonceEpoch: Sendable {
    /// The 16 random prefix bytes, as two words in memory order.
    package let prefix: (UInt64, UInt64)
    /// The ``ForkGeneration`` (plus simulated forks) this epoch was drawn in.
    package let forkGeneration: UInt64
    /// Position of this epoch in its source, starting at 1; newer epochs have larger serials.
    package let serial: UInt64
    /// The next counter value to hand out.
    package let counter = Atomic<UInt64>(0)
    /// The epoch this one replaced, kept alive for readers that still hold it unretained.
    package let previous: NonceEpoch?

    package init(prefix: (UInt64, UInt64), forkGeneration: UInt64, serial: UInt64, previous: NonceEpoch?) {
        self.prefix = prefix
        self.forkGeneration = forkGeneration
        self.serial = serial
        self.previous = previous
    }

    /// Writes the 24-byte nonce for `counter` to `destination`.
    @inline(__always)
    package func writeNonce(counter: UInt64, to destination: UnsafeMutableRawPointer) {
        destination.storeBytes(of: prefix.0, as: UInt64.self)
        destination.storeBytes(of: prefix.1, toByteOffset: 8, as: UInt64.self)
        destination.storeBytes(of: counter.bigEndian, toByteOffset: 16, as: UInt64.self)
    }
}

/// A reserved nonce: an epoch (unretained; see ``NonceEpoch``) and a counter value that no
/// other caller received under that epoch.
package struct NonceReservation {
    /// The epoch; valid while the ``NonceSource`` that issued it lives.
    package let epoch: Unmanaged<NonceEpoch>
    /// The counter value, below ``NonceSource/itemsPerPrefix``.
    package let counter: UInt64
}

/// Hands out unique 24-byte nonces without a system call per nonce: a random prefix drawn from
/// the OS (`randombytes_buf`) once per epoch, then an atomic 64-bit counter.
///
/// * Uniqueness: within an epoch, the atomic increment never hands out a value twice; epochs
///   differ by their 128-bit random prefixes (two prefixes collide with probability about
///   `E² / 2¹²⁹` over `E` epochs across every process holding the key).
/// * Fork: a fork child inherits the parent's epoch and counter. The `pthread_atfork` child
///   handler bumps ``ForkGeneration``; an epoch drawn in another generation is never used, so
///   the child draws a fresh prefix before its first nonce.
/// * Rotation of the prefix: after ``itemsPerPrefix`` nonces (2³² by default) a new prefix is
///   drawn, which also bounds how much data is sealed under one cached HChaCha20 subkey.
/// * No lock anywhere, so a fork taken while another thread was inside cannot deadlock the child.
package final class NonceSource: @unchecked Sendable {
    /// The process-wide source every key ring uses unless a test supplies its own.
    package static let shared = NonceSource(itemsPerPrefix: 1 << 32)

    /// How many nonces one prefix serves before a new one is drawn.
    package let itemsPerPrefix: UInt64
    /// The current epoch, holding one retain; `nil` until the first nonce.
    private let head = Atomic<Unmanaged<NonceEpoch>?>(nil)
    /// Forks simulated by tests, added to the real ``ForkGeneration``.
    private let simulatedForks = Atomic<UInt64>(0)

    /// Creates a source whose prefixes each serve `itemsPerPrefix` nonces (at least 1).
    package init(itemsPerPrefix: UInt64) {
        self.itemsPerPrefix = max(1, itemsPerPrefix)
    }

    deinit {
        head.load(ordering: .acquiring)?.release()
    }

    /// The generation an epoch must have been drawn in to be usable now.
    @inline(__always)
    private var generation: UInt64 {
        ForkGeneration.current &+ simulatedForks.load(ordering: .relaxed)
    }

    /// Reserves the next nonce. No system call except when a new prefix is drawn.
    @inline(__always)
    package func reserve() -> NonceReservation {
        while true {
            let generation = self.generation
            let current = head.load(ordering: .acquiring)
            if let current {
                let counter: UInt64? = current._withUnsafeGuaranteedRef { epoch in
                    guard epoch.forkGeneration == generation else { return nil }
                    let value = epoch.counter.wrappingAdd(1, ordering: .relaxed).oldValue
                    return value < itemsPerPrefix ? value : nil
                }
                if let counter {
                    return NonceReservation(epoch: current, counter: counter)
                }
            }
            advance(from: current, generation: generation)
        }
    }

    /// Installs a fresh epoch if `old` is still current (another thread may have done it).
    private func advance(from old: Unmanaged<NonceEpoch>?, generation: UInt64) {
        var prefix: (UInt64, UInt64) = (0, 0)
        withUnsafeMutablePointer(to: &prefix) { randombytes_buf(UnsafeMutableRawPointer($0), 16) }
        let previous = old?.takeUnretainedValue()
        let fresh = Unmanaged.passRetained(NonceEpoch(
            prefix: prefix, forkGeneration: generation, serial: (previous?.serial ?? 0) &+ 1, previous: previous))
        let (exchanged, _) = head.compareExchange(
            expected: old, desired: fresh, ordering: .acquiringAndReleasing)
        if exchanged {
            old?.release() // the new epoch's `previous` keeps it alive
        } else {
            fresh.release() // never published
        }
    }

    /// Makes the next reservation behave as in a fork child (tests only).
    package func simulateFork() {
        simulatedForks.wrappingAdd(1, ordering: .relaxed)
    }
}
