/// The rule that made a decision. Payload-free, so a decision costs no allocation; the
/// human-readable explanation is rendered only when someone asks (`Decision/explanation`).
public enum DecisionRule: String, Sendable, Hashable, CaseIterable {
    /// The first policy has not arrived: everything fails closed.
    case notReady
    /// The user is not authorized (or the app is retired): everything fails closed.
    case notAuthorized
    /// The Open In policy is authorized.
    case openInAuthorized
    /// The Open In policy is unauthorized.
    case openInUnauthorized
    /// The target is in the whitelist.
    case inWhitelist
    /// The target is not in the whitelist.
    case notInWhitelist
    /// Under a whitelist the activity-sheet channel cannot tell which app the user picks.
    case activitySheetUnderWhitelist
    /// Native mail is whitelisted: the whitelist holds both mail ids.
    case nativeMailWhitelisted
    /// Native mail is not whitelisted: the whitelist lacks one of the two mail ids.
    case nativeMailNotWhitelisted
    /// `MI_AC_DISABLE_SCHEME_BLOCKING` lets `mailto:` open native mail.
    case schemeBlockingDisabled
    /// An installed, authorized AppConnect mail app takes a blocked `mailto:`.
    case appConnectMailApp
    /// No app on the device opens the URL's scheme.
    case noHandler
    /// The print policy allows printing.
    case printAuthorized
    /// The print policy blocks printing.
    case printUnauthorized
    /// Drag and drop is allowed to all apps.
    case dragAndDropAll
    /// Drag and drop is allowed to authorized AppConnect apps, and the target is one.
    case dragAndDropAppConnectTarget
    /// Drag and drop is allowed to authorized AppConnect apps only, and the target is not one.
    case dragAndDropNotAppConnectTarget
    /// Drag and drop is blocked to every app.
    case dragAndDropNone
}

/// A decision and the rule that made it.
public struct Decision: Sendable, Hashable {
    /// Whether the transfer may happen.
    public var allowed: Bool
    /// The rule that decided.
    public var rule: DecisionRule
    /// The generation of the snapshot the decision read: proof it read exactly one.
    public var generation: UInt64

    /// Creates a decision.
    public init(allowed: Bool, rule: DecisionRule, generation: UInt64) {
        self.allowed = allowed
        self.rule = rule
        self.generation = generation
    }

    /// Renders the reason for `target` under `snapshot`, for people: the simulator's `why`.
    public func explanation(target: String?, snapshot: PolicySnapshot) -> String {
        let verdict = allowed ? "allowed" : "blocked"
        let who = target.map { "target \($0)" } ?? "the target"
        let count = snapshot.openInWhitelist.count
        let whitelist = "the whitelist of \(count) app\(count == 1 ? "" : "s")"
        let reason: String
        switch rule {
        case .notReady: reason = "no policy has arrived yet, so every transfer fails closed"
        case .notAuthorized:
            reason = "the user is \(snapshot.authState == .retired ? "retired" : "not authorized"), so every transfer fails closed"
        case .openInAuthorized: reason = "the Open In policy is authorized"
        case .openInUnauthorized: reason = "the Open In policy is unauthorized"
        case .inWhitelist: reason = "\(who) is in \(whitelist); the whitelist is matched exactly"
        case .notInWhitelist: reason = "\(who) is not in \(whitelist); the whitelist is matched exactly"
        case .activitySheetUnderWhitelist:
            reason = "under a whitelist the activity sheet cannot tell which app the user picks, so it is always blocked"
        case .nativeMailWhitelisted:
            reason = "native mail is whitelisted: the whitelist holds \(snapshot.device.nativeMail.ids.count == 2 ? "both" : "all of") \(snapshot.device.nativeMail.listed)"
        case .nativeMailNotWhitelisted:
            reason = "native mail counts as whitelisted only when the whitelist holds \(snapshot.device.nativeMail.ids.count == 2 ? "both" : "all of") \(snapshot.device.nativeMail.listed)"
        case .schemeBlockingDisabled:
            reason = "\(ServerConfigKey.disableSchemeBlocking) lets mailto: open native mail"
        case .appConnectMailApp: reason = "an authorized AppConnect mail app takes the mailto: URL"
        case .noHandler: reason = "no app on the device opens this URL scheme"
        case .printAuthorized: reason = "the print policy is authorized"
        case .printUnauthorized: reason = "the print policy is unauthorized"
        case .dragAndDropAll: reason = "drag and drop is allowed to all apps"
        case .dragAndDropAppConnectTarget: reason = "\(who) is an authorized AppConnect app"
        case .dragAndDropNotAppConnectTarget:
            reason = "drag and drop is allowed to authorized AppConnect apps only, and \(who) is not one"
        case .dragAndDropNone: reason = "drag and drop is blocked to every app"
        }
        return "\(verdict): \(reason)"
    }
}
