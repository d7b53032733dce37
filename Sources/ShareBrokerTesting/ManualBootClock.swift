import ShareBroker
import Synchronization

/// A ``BootClock`` that moves only when told: the boot clock, the wall clock and the boot id
/// separately, for tests and the simulator of the offline timers.
package final class ManualBootClock: BootClock {
    private let state: Mutex<BootInstant>

    /// Starts at `sinceBoot` after boot `bootID`, with the wall clock at `wallClock` since 1970.
    package init(bootID: String = "boot-1", sinceBoot: Duration = .seconds(1_000),
                wallClock: Duration = .seconds(1_700_000_000)) {
        state = Mutex(BootInstant(bootID: bootID, sinceBoot: sinceBoot, wallClock: wallClock))
    }

    package func now() -> BootInstant { state.withLock { $0 } }

    /// Time passes (suspended or not): both clocks move by `d`.
    package func advance(_ d: Duration) { state.withLock { $0.sinceBoot += d; $0.wallClock += d } }

    /// Someone sets the wall clock by `d` (negative: back); the boot clock does not move.
    package func setWallClock(by d: Duration) { state.withLock { $0.wallClock += d } }

    /// The device was switched off for `off` and has been up for `up` since: a new boot id. (A
    /// real reboot ends the process; a broker made before this call keeps reading the boot clock.)
    package func reboot(off: Duration, up: Duration) {
        state.withLock { $0 = BootInstant(bootID: $0.bootID + "'", sinceBoot: up, wallClock: $0.wallClock + off + up) }
    }
}
