#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A moment as the offline timers measure it: the time since boot, counting suspend
/// (`CLOCK_BOOTTIME`), with the boot it belongs to, and the wall clock for the one case the
/// boot clock cannot cover (a reboot in between).
package struct BootInstant: Sendable, Hashable {
    /// Identifies the boot (`/proc/sys/kernel/random/boot_id`); ``sinceBoot`` values compare only
    /// within one boot.
    package var bootID: String
    /// Time since boot, suspend included: neither setting the wall clock nor suspending stops it.
    package var sinceBoot: Duration
    /// The wall clock (`CLOCK_REALTIME`) since 1970, used only across a reboot.
    package var wallClock: Duration

    /// Creates an instant.
    package init(bootID: String, sinceBoot: Duration, wallClock: Duration) {
        self.bootID = bootID
        self.sinceBoot = sinceBoot
        self.wallClock = wallClock
    }

    /// How long ago `earlier` was. Within one boot, the boot clock alone decides, so a wall-clock
    /// change does nothing. Across a reboot the time before it is unknown: the larger of the time
    /// since this boot and the wall-clock difference, never less than the time since this boot.
    package func elapsed(since earlier: BootInstant) -> Duration {
        if bootID == earlier.bootID { return max(sinceBoot - earlier.sinceBoot, .zero) }
        return max(sinceBoot, wallClock - earlier.wallClock)
    }
}

/// Where the offline timers read the time. ``SystemBootClock`` is the real one; tests and the
/// simulator inject their own.
package protocol BootClock: Sendable {
    /// The current moment.
    func now() -> BootInstant
    /// The time since boot alone (``BootInstant/sinceBoot`` of ``now()``): the one reading a
    /// check within one boot needs.
    func sinceBoot() -> Duration
}

extension BootClock {
    /// ``now()``'s ``BootInstant/sinceBoot``.
    package func sinceBoot() -> Duration { now().sinceBoot }
}

/// `CLOCK_BOOTTIME` (monotonic, counts suspend), the kernel's boot id, and `CLOCK_REALTIME`.
package struct SystemBootClock: BootClock {
    private let bootID: String

    /// Reads the boot id once (it cannot change while the process lives).
    package init() {
        bootID = Self.readBootID() ?? "unknown-boot"
    }

    package func now() -> BootInstant {
        BootInstant(bootID: bootID, sinceBoot: Self.read(Self.bootClock), wallClock: Self.read(CLOCK_REALTIME))
    }

    package func sinceBoot() -> Duration { Self.read(Self.bootClock) }

    /// Nanoseconds since boot, suspend included, without building a `Duration`.
    static func bootNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(bootClock, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    #if canImport(Glibc)
    private static let bootClock = CLOCK_BOOTTIME
    #else
    private static let bootClock = CLOCK_MONOTONIC
    #endif

    private static func read(_ clock: clockid_t) -> Duration {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return .seconds(Int64(ts.tv_sec)) + .nanoseconds(Int64(ts.tv_nsec))
    }

    private static func readBootID() -> String? {
        guard let bytes = try? DurableFiles.contents(of: "/proc/sys/kernel/random/boot_id") else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        return text.isEmpty ? nil : text
    }
}

/// How long the app may go without the management agent confirming its policy (AppConnect's
/// offline grace; Intune's `periodOfflineBeforeAccessCheck` and `periodOfflineBeforeWipeIsEnforced`).
package struct OfflinePolicy: Sendable, Hashable {
    /// After this long without a confirmation every transfer fails closed and the app is told
    /// (``AuthState/unauthorized`` with a message) until the next confirmation; `nil`: no limit.
    package var accessCheckAfter: Duration?
    /// After this long the app retires itself and wipes; `nil`: never.
    package var wipeAfter: Duration?

    /// Creates a policy; `nil` means no limit.
    package init(accessCheckAfter: Duration? = nil, wipeAfter: Duration? = nil) {
        self.accessCheckAfter = accessCheckAfter
        self.wipeAfter = wipeAfter
    }

    /// No timers: the behaviour from before they existed (the default).
    package static let unlimited = OfflinePolicy()

    /// The largest period a document or the simulator can give: 10 years, in seconds.
    package static let maxSeconds = 315_360_000

    /// The periods in whole seconds, 0 meaning no limit (the form of documents, the simulator and
    /// the agent protocol).
    package init(accessCheckSeconds: Int, wipeSeconds: Int) {
        accessCheckAfter = accessCheckSeconds > 0 ? .seconds(accessCheckSeconds) : nil
        wipeAfter = wipeSeconds > 0 ? .seconds(wipeSeconds) : nil
    }

    /// ``accessCheckAfter`` in whole seconds, 0 for no limit.
    package var accessCheckSeconds: Int { accessCheckAfter.map { Int($0.components.seconds) } ?? 0 }
    /// ``wipeAfter`` in whole seconds, 0 for no limit.
    package var wipeSeconds: Int { wipeAfter.map { Int($0.components.seconds) } ?? 0 }
}

/// What ``ShareBroker/checkOfflineTimers()`` found.
package enum OfflineState: Sendable, Hashable {
    /// No timers, no confirmation yet, or within the access-check period.
    case confirmed(elapsed: Duration?)
    /// Past the access-check period: transfers fail closed until the next confirmation.
    case accessCheckDue(elapsed: Duration)
    /// Past the wipe period: the app was retired and wiped.
    case wiped(elapsed: Duration)
}

/// The offline timers' state: the clock, where the last confirmation is kept, the last
/// confirmation (in memory and in a file, so a restart does not reset the timers), and the
/// server's authorization while the timers hold it back. One lock guards all of it, so a check
/// costs one lock, one snapshot load and one clock reading.
///
/// The file (`offline-confirmation` in the folder given) holds three lines: the boot id, the
/// nanoseconds since boot and the wall-clock nanoseconds since 1970 of the last confirmation. It
/// is replaced atomically and durably (temporary file, fsync, rename, fsync of the folder).
struct OfflineTimers: Sendable {
    let clock: any BootClock
    let path: String?
    var last: BootInstant?
    /// Whether ``last`` was made in the current boot (then the boot clock alone measures).
    var thisBoot = false
    var heldBack: (auth: AuthState, message: String)?
    /// Whether ``clock`` is the system clock, read directly on the check's fast path.
    let isSystemClock: Bool
    /// What the check needs of the snapshot, copied after every update (see
    /// `ShareBroker.refreshOfflineTimers()`): whether the timers apply at all, and the periods in
    /// nanoseconds (`Int64.max`: no limit).
    var active = false
    var accessCheckNanoseconds = Int64.max
    var wipeNanoseconds = Int64.max
    /// ``last``'s boot clock in nanoseconds.
    var lastNanoseconds: Int64 = 0

    init(clock: any BootClock, directory: String?) throws(WipeFileError) {
        self.clock = clock
        isSystemClock = clock is SystemBootClock
        path = directory.map { $0 + "/offline-confirmation" }
        if let directory, let path {
            try DurableFiles.makeDirectories(directory)
            if let bytes = try DurableFiles.contents(of: path) {
                let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
                if lines.count == 3, let since = Int64(lines[1]), let wall = Int64(lines[2]) {
                    last = BootInstant(bootID: lines[0], sinceBoot: .nanoseconds(since), wallClock: .nanoseconds(wall))
                } else {
                    // Unreadable: count from the start of this boot (the shortest time the app can
                    // prove), never from now.
                    let now = clock.now()
                    last = BootInstant(bootID: now.bootID, sinceBoot: .zero, wallClock: now.wallClock - now.sinceBoot)
                }
                thisBoot = last?.bootID == clock.now().bootID
                lastNanoseconds = last.map { Self.nanoseconds($0.sinceBoot) } ?? 0
            }
        }
    }

    /// The fast check: `nil` when the timers do not apply (no confirmation, not ready, retired,
    /// no periods) or the last confirmation is of another boot; otherwise the nanoseconds since it
    /// and whether a period is over. One boot-clock reading, integers only.
    func quickElapsed() -> (nanoseconds: Int64, overdue: Bool)? {
        guard active, thisBoot, last != nil else { return nil }
        let now = isSystemClock ? SystemBootClock.bootNanoseconds() : Self.nanoseconds(clock.sinceBoot())
        let elapsed = max(now &- lastNanoseconds, 0)
        return (elapsed, elapsed > accessCheckNanoseconds || elapsed > wipeNanoseconds)
    }

    /// The time since the last confirmation, and the confirmation's boot-clock reading (which
    /// tells a later confirmation apart); `nil` before the first one.
    func elapsed() -> (elapsed: Duration, token: Duration)? {
        guard let last else { return nil }
        let elapsed = thisBoot ? max(clock.sinceBoot() - last.sinceBoot, .zero) : clock.now().elapsed(since: last)
        return (elapsed, last.sinceBoot)
    }

    /// Writes a confirmation made at `now` to `path`, durably.
    static func save(_ now: BootInstant, to path: String) throws(WipeFileError) {
        let text = "\(now.bootID)\n\(nanoseconds(now.sinceBoot))\n\(nanoseconds(now.wallClock))\n"
        try DurableFiles.writeAtomically(Array(text.utf8), to: path)
    }

    static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}

extension ShareBroker {
    /// Turns on the offline timers of ``OfflinePolicy``: time comes from `clock` (the real one
    /// counts suspend and ignores wall-clock changes), and the last confirmation is kept in
    /// `directory` (a folder of the app's that survives restarts; `nil` keeps it in memory only,
    /// so a restart starts the count again at the first policy). Call before ``start(delegate:)``.
    ///
    /// A confirmation is every policy the server delivers (``apply(_:)``) and every
    /// ``confirmPolicy()``. The app calls ``checkOfflineTimers()`` periodically (and when it
    /// comes to the foreground): the check tells the app and wipes. Every action also reads the
    /// clock, so a transfer past a period fails closed even before the next check.
    ///
    /// - Throws: ``WipeFileError`` when the folder cannot be made or the saved confirmation cannot
    ///   be read; check the folder's owner and permissions.
    package func enableOfflineTimers(clock: any BootClock = SystemBootClock(), directory: String?) throws(WipeFileError) {
        let timers = try OfflineTimers(clock: clock, directory: directory)
        offlineTimers.withLock { $0 = timers }
        refreshOfflineTimers()
    }

    /// Records a confirmation now: in memory, then in the file. Returns the authorization the
    /// timers held back (taken, when `release`), or `nil`, and the error of a save that failed
    /// (the confirmation still counts in memory); does nothing without timers.
    func recordConfirmation(release: Bool) -> (held: (auth: AuthState, message: String)?, saveError: WipeFileError?) {
        let recorded = offlineTimers.withLock { slot -> (now: BootInstant, path: String?, held: (auth: AuthState, message: String)?)? in
            guard var timers = slot else { return nil }
            let now = timers.clock.now()
            timers.last = now
            timers.thisBoot = true
            timers.lastNanoseconds = OfflineTimers.nanoseconds(now.sinceBoot)
            let held = timers.heldBack
            timers.heldBack = nil
            slot = timers
            return (now, timers.path, held)
        }
        guard let recorded else { return (nil, nil) }
        var saveError: WipeFileError?
        if let path = recorded.path {
            do {
                try OfflineTimers.save(recorded.now, to: path)
            } catch {
                saveError = error
            }
        }
        return (release ? recorded.held : nil, saveError)
    }

    /// The management agent confirmed that the policy in force still holds (a check-in without
    /// changes). Restarts the offline timers and, if they had held transfers back, gives the
    /// server's authorization back (the app is told through
    /// ``ShareBrokerDelegate/authStateChanged(to:message:)``).
    ///
    /// - Throws: ``ShareBrokerError/offlineTimers(_:)`` when the confirmation could not be saved
    ///   in the folder (it still counts until the app restarts); check the folder's space and
    ///   permissions.
    ///
    /// A wipe is terminal: after one (by the timers or by the server) a confirmation gives
    /// nothing back; only the server sending a new authorization (``apply(_:)``) does.
    package func confirmPolicy() throws(ShareBrokerError) {
        let (held, saveError) = recordConfirmation(release: true)
        if let held, store.snapshot.authState != .retired {
            try applyUnconfirmed(PolicyUpdate(auth: held.auth, authMessage: held.message))
        }
        if let saveError { throw .offlineTimers(reason: saveError.description) }
    }

    /// Applies what the offline timers say now: past ``OfflinePolicy/accessCheckAfter`` the user
    /// becomes unauthorized with a message saying why and what to do (every transfer fails
    /// closed; the next confirmation gives the server's state back); past
    /// ``OfflinePolicy/wipeAfter`` the app is retired and wiped, as if the server had retired it.
    @discardableResult
    package func checkOfflineTimers() throws(ShareBrokerError) -> OfflineState {
        // The common case: within the periods, in the boot of the last confirmation.
        if let quick = offlineTimers.withLock({ $0?.quickElapsed() }), !quick.overdue {
            return .confirmed(elapsed: .nanoseconds(quick.nanoseconds))
        }
        guard let (elapsed, token) = offlineTimers.withLock({ $0?.elapsed() }) else { return .confirmed(elapsed: nil) }
        let snapshot = store.snapshot
        guard snapshot.isReady, snapshot.authState != .retired else { return .confirmed(elapsed: nil) }
        let policy = snapshot.offlinePolicy
        let overdue = (policy.wipeAfter.map { elapsed > $0 } ?? false) || (policy.accessCheckAfter.map { elapsed > $0 } ?? false)
        guard overdue else { return .confirmed(elapsed: elapsed) }
        // A confirmation that arrived while this check ran wins over it.
        if offlineTimers.withLock({ $0?.last?.sinceBoot }) != token { return .confirmed(elapsed: .zero) }
        if let wipe = policy.wipeAfter, elapsed > wipe {
            // The retire forgets what the timers held back: a wipe is terminal.
            try applyUnconfirmed(PolicyUpdate(auth: .retired, authMessage: Self.wipeMessage(elapsed: elapsed, allowed: wipe)))
            return .wiped(elapsed: elapsed)
        }
        if let check = policy.accessCheckAfter, elapsed > check {
            if snapshot.authState == .authorized {
                offlineTimers.withLock { $0?.heldBack = (snapshot.authState, snapshot.authMessage) }
                try applyUnconfirmed(PolicyUpdate(auth: .unauthorized,
                                                  authMessage: Self.accessCheckMessage(elapsed: elapsed, allowed: check)))
            }
            return .accessCheckDue(elapsed: elapsed)
        }
        return .confirmed(elapsed: elapsed)
    }

    /// `snapshot` as an action sees it now: past the wipe period retired, past the access-check
    /// period not authorized (with the message the next check gives), else `snapshot` itself. A
    /// transfer past a period so fails closed at once; the state changes, the app is told and the
    /// data is wiped only by ``checkOfflineTimers()`` (an action may run inside a callback, under
    /// the update lock, where it cannot apply anything). One lock and one clock reading, only
    /// while the timers are armed (``offlineTimersArmed``).
    func offlineAdjusted(_ snapshot: PolicySnapshot) -> PolicySnapshot {
        let policy = snapshot.offlinePolicy
        guard snapshot.isOperational, policy != .unlimited else { return snapshot }
        let overdue: Duration? = offlineTimers.withLock { timers in
            guard let timers else { return nil }
            if let quick = timers.quickElapsed() { return quick.overdue ? .nanoseconds(quick.nanoseconds) : nil }
            return timers.elapsed()?.elapsed
        }
        guard let elapsed = overdue else { return snapshot }
        if let wipe = policy.wipeAfter, elapsed > wipe {
            return snapshot.heldOffline(.retired, message: Self.wipeMessage(elapsed: elapsed, allowed: wipe))
        }
        if let check = policy.accessCheckAfter, elapsed > check {
            return snapshot.heldOffline(.unauthorized, message: Self.accessCheckMessage(elapsed: elapsed, allowed: check))
        }
        return snapshot
    }

    /// What the user is told past the wipe period.
    static func wipeMessage(elapsed: Duration, allowed: Duration) -> String {
        "The management agent has not confirmed this app's policy for \(describe(elapsed)), "
            + "longer than the \(describe(allowed)) allowed offline: the app's data was wiped. "
            + "Connect to the management agent and enroll the app again."
    }

    /// What the user is told past the access-check period.
    static func accessCheckMessage(elapsed: Duration, allowed: Duration) -> String {
        "The management agent has not confirmed this app's policy for \(describe(elapsed)), "
            + "longer than the \(describe(allowed)) allowed offline: transfers are blocked. "
            + "Connect to the management agent to continue."
    }

    /// Copies what the fast check needs from the snapshot in force (after every update).
    func refreshOfflineTimers() {
        let snapshot = store.snapshot
        offlineTimers.withLock { slot in
            guard var timers = slot else { return }
            let policy = snapshot.offlinePolicy
            timers.active = snapshot.isReady && snapshot.authState != .retired && policy != .unlimited
            if snapshot.authState == .retired { timers.heldBack = nil }
            offlineTimersArmed.store(timers.active, ordering: .relaxed)
            timers.accessCheckNanoseconds = policy.accessCheckAfter.map(OfflineTimers.nanoseconds) ?? .max
            timers.wipeNanoseconds = policy.wipeAfter.map(OfflineTimers.nanoseconds) ?? .max
            slot = timers
        }
    }

    /// Whole seconds, minutes, hours or days, for messages.
    static func describe(_ d: Duration) -> String {
        let s = d.components.seconds
        if s >= 86_400 && s % 86_400 == 0 { return "\(s / 86_400) day\(s == 86_400 ? "" : "s")" }
        if s >= 3_600 && s % 3_600 == 0 { return "\(s / 3_600) hour\(s == 3_600 ? "" : "s")" }
        if s >= 60 && s % 60 == 0 { return "\(s / 60) minute\(s == 60 ? "" : "s")" }
        return "\(s) second\(s == 1 ? "" : "s")"
    }
}
