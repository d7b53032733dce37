import Synchronization

/// Holds the current ``PolicySnapshot``. Readers take the whole snapshot in one atomic step;
/// the lifecycle, the only writer, replaces it whole. No reader can see half an update.
package final class PolicyStore: Sendable {
    private let current: Mutex<PolicySnapshot>

    /// Starts from `initial`.
    package init(initial: PolicySnapshot) {
        current = Mutex(initial)
    }

    /// The snapshot in force now.
    @inline(__always)
    package var snapshot: PolicySnapshot { current.withLock { $0 } }

    /// Installs `next`. Only the lifecycle calls this.
    func install(_ next: PolicySnapshot) {
        current.withLock { $0 = next }
    }
}
