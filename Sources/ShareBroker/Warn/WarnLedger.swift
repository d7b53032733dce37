/// What the broker remembers of past answers: time-limited proceeds per exit and target, and the
/// proceeds counted in each exit's rate window. Pure: times are given (monotonic nanoseconds),
/// so it is tested without waiting.
package struct WarnLedger: Sendable {
    private struct Key: Hashable, Sendable {
        var exit: WarnExit
        var target: String
    }

    private struct Grant: Sendable {
        var until: UInt64
        var reasonCode: String?
    }

    private struct Window: Sendable {
        var start: UInt64
        var count: Int
    }

    /// The most remembered proceeds; the one ending soonest makes room.
    package static let maxGrants = 256

    private var grants: [Key: Grant] = [:]
    private var windows: [WarnExit: Window] = [:]

    /// Nothing remembered.
    package init() {}

    private static func nanoseconds(minutes: Int) -> UInt64 { UInt64(max(minutes, 0)) &* 60_000_000_000 }

    /// The reason code of a proceed for `exit` and `target` still in force at `now` (the
    /// outer optional: whether one is), dropping expired ones.
    package mutating func remembered(_ exit: WarnExit, target: String?, at now: UInt64) -> String?? {
        let key = Key(exit: exit, target: target ?? "")
        guard let grant = grants[key] else { return nil }
        guard now < grant.until else {
            grants[key] = nil
            return nil
        }
        return .some(grant.reasonCode)
    }

    /// Whether `exit` has used up its proceeds for the window in force at `now`.
    package mutating func isRateLimited(_ exit: WarnExit, limit: WarnRateLimit?, at now: UInt64) -> Bool {
        guard let limit else { return false }
        guard let window = windows[exit] else { return false }
        if now >= window.start &+ Self.nanoseconds(minutes: limit.minutes) {
            windows[exit] = nil
            return false
        }
        return window.count >= limit.proceeds
    }

    /// Records a user's proceed at `now`: counted in the rate window, and remembered for the
    /// settings' proceed lifetime.
    package mutating func recordProceed(_ exit: WarnExit, target: String?, reasonCode: String?,
                                        settings: WarnSettings, at now: UInt64) {
        if let limit = settings.rateLimit {
            if var window = windows[exit], now < window.start &+ Self.nanoseconds(minutes: limit.minutes) {
                window.count += 1
                windows[exit] = window
            } else {
                windows[exit] = Window(start: now, count: 1)
            }
        }
        guard settings.proceedLifetimeMinutes > 0 else { return }
        if grants.count >= Self.maxGrants {
            grants = grants.filter { now < $0.value.until }
            if grants.count >= Self.maxGrants, let soonest = grants.min(by: { $0.value.until < $1.value.until }) {
                grants[soonest.key] = nil
            }
        }
        grants[Key(exit: exit, target: target ?? "")] = Grant(
            until: now &+ Self.nanoseconds(minutes: settings.proceedLifetimeMinutes), reasonCode: reasonCode)
    }
}
