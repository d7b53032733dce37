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
    /// The Open From policy is authorized: any app may send documents in.
    case openFromAuthorized
    /// The Open From policy is unauthorized: no app may send documents in.
    case openFromUnauthorized
    /// The source app is in the Open From whitelist.
    case sourceInOpenFromWhitelist
    /// The source app is not in the Open From whitelist.
    case sourceNotInOpenFromWhitelist
    /// Under an Open From whitelist a document whose source the platform cannot name is refused.
    case unknownSourceUnderWhitelist
    /// Pasting into unmanaged content is not restricted.
    case pasteIntoUnmanagedContent
    /// The paste-in policy lets clear items of any app be pasted.
    case pasteInAnyApp
    /// Under paste-in from managed apps only, the clear item is this app's own.
    case pasteInOwnItem
    /// Under paste-in from managed apps only, a clear item another app wrote reads as nothing.
    case pasteInFromOtherApp
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
        case .openFromAuthorized: reason = "the Open From policy is authorized: any app may send documents in"
        case .openFromUnauthorized: reason = "the Open From policy is unauthorized: no app may send documents in"
        case .sourceInOpenFromWhitelist, .sourceNotInOpenFromWhitelist:
            let from = target.map { "source \($0)" } ?? "the source"
            let n = snapshot.openFromWhitelist.count
            reason = "\(from) is\(rule == .sourceInOpenFromWhitelist ? "" : " not") in the Open From whitelist of \(n) app"
                + "\(n == 1 ? "" : "s"); the whitelist is matched exactly"
        case .unknownSourceUnderWhitelist:
            reason = "under an Open From whitelist a document whose source app is unknown is refused"
        case .pasteIntoUnmanagedContent: reason = "pasting into unmanaged content is not restricted"
        case .pasteInAnyApp: reason = "the paste-in policy lets clear items of any app be pasted"
        case .pasteInOwnItem: reason = "the clear item is this app's own, and managed apps may paste in"
        case .pasteInFromOtherApp:
            reason = "paste-in is from managed apps only: a clear item another app wrote is not pasted into managed content"
        }
        return "\(verdict): \(reason)"
    }
}
