import ShareBrokerCrypto
import Synchronization

/// Holds the current ``PolicySnapshot``. Readers take the whole snapshot in one atomic step;
/// the lifecycle, the only writer, replaces it whole. No reader can see half an update.
///
/// It also keeps the group key ring the custodian last handed the broker (``CachedKeyRing``),
/// under the same lock, so a copy or a paste reads the snapshot and the ring in one critical
/// section.
package final class PolicyStore: Sendable {
    private struct State {
        var snapshot: PolicySnapshot
        var keyRing: CachedKeyRing?
    }

    private let current: Mutex<State>

    /// Starts from `initial`.
    package init(initial: PolicySnapshot) {
        current = Mutex(State(snapshot: initial, keyRing: nil))
    }

    /// The snapshot in force now.
    @inline(__always)
    package var snapshot: PolicySnapshot { current.withLock { $0.snapshot } }

    /// Installs `next`. Only the lifecycle calls this.
    func install(_ next: PolicySnapshot) {
        current.withLock { $0.snapshot = next }
    }

    /// The snapshot in force now and the cached ring if it was fetched at custodian generation
    /// `generation` (else `nil`), in one critical section.
    @inline(__always)
    func snapshot(withKeyRingAt generation: UInt64) -> (snapshot: PolicySnapshot, keyRing: KeyRing?) {
        current.withLock { state in
            (state.snapshot, state.keyRing?.generation == generation ? state.keyRing?.ring : nil)
        }
    }

    /// Replaces the cached ring (`nil` forgets it).
    func cacheKeyRing(_ keyRing: CachedKeyRing?) {
        current.withLock { $0.keyRing = keyRing }
    }
}

/// A group ring handed out by the custodian and the custodian's generation when it was asked.
struct CachedKeyRing: Sendable {
    let generation: UInt64
    let ring: KeyRing
}
