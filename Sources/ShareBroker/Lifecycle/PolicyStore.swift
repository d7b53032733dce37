import ShareBrokerCrypto
import Synchronization

/// Holds the current ``PolicySnapshot``. Readers take the whole snapshot in one atomic step;
/// the lifecycle, the only writer, replaces it whole. No reader can see half an update.
///
/// It also keeps the group key ring the custodian last handed the broker (``CachedKeyRing``),
/// in the same immutable record as the snapshot (``State``), so a copy or a paste reads the
/// snapshot and the ring in one critical section and holds them with one reference.
package final class PolicyStore: Sendable {
    /// The snapshot in force and the cached ring, together. Immutable: installing a snapshot or
    /// caching a ring swaps in a new record (rare: a policy update, a custodian generation), so a
    /// reader holding a record holds both of its parts alive and unchanged.
    final class State: Sendable {
        let snapshot: PolicySnapshot
        let keyRing: CachedKeyRing?

        init(snapshot: PolicySnapshot, keyRing: CachedKeyRing?) {
            self.snapshot = snapshot
            self.keyRing = keyRing
        }

        /// The cached ring if it was fetched at custodian generation `generation`, else `nil`.
        @inline(__always)
        func keyRing(at generation: UInt64) -> KeyRing? {
            keyRing?.generation == generation ? keyRing?.ring : nil
        }

        /// ``keyRing(at:)`` without a retain, for a caller that keeps this record alive while it
        /// uses the ring (the record holds it as a constant).
        @inline(__always)
        func unretainedKeyRing(at generation: UInt64) -> Unmanaged<KeyRing>? {
            guard let keyRing, keyRing.generation == generation else { return nil }
            return .passUnretained(keyRing.ring)
        }
    }

    private let current: Mutex<State>

    /// Starts from `initial`.
    package init(initial: PolicySnapshot) {
        current = Mutex(State(snapshot: initial, keyRing: nil))
    }

    /// The snapshot in force now.
    @inline(__always)
    package var snapshot: PolicySnapshot { current.withLock { $0.snapshot } }

    /// The snapshot in force now and the cached ring, as one record (one lock, one retain).
    @inline(__always)
    var state: State { current.withLock { $0 } }

    /// Installs `next`. Only the lifecycle calls this.
    func install(_ next: PolicySnapshot) {
        current.withLock { $0 = State(snapshot: next, keyRing: $0.keyRing) }
    }

    /// Replaces the cached ring (`nil` forgets it).
    func cacheKeyRing(_ keyRing: CachedKeyRing?) {
        current.withLock { state in
            guard keyRing != nil || state.keyRing != nil else { return }
            state = State(snapshot: state.snapshot, keyRing: keyRing)
        }
    }
}

/// A group ring handed out by the custodian and the custodian's generation when it was asked.
struct CachedKeyRing: Sendable {
    let generation: UInt64
    let ring: KeyRing
}
