/// What the app does with a desktop notification it is about to post.
@usableFromInline
package enum NotificationAction: String, Sendable, Hashable, CaseIterable {
    /// Post it as the app wrote it.
    case post
    /// Post ``NotificationDecision/genericText`` instead of the app's title and body: the
    /// notification tells the user there is something new, without organization data.
    case postGeneric
    /// Post nothing.
    case blocked
}

/// The rules of a notification decision.
@usableFromInline
package enum NotificationRule: String, Sendable, Hashable, CaseIterable {
    /// Unmanaged content (a personal identity) is not restricted.
    case unmanagedContent
    /// No policy yet: fail closed.
    case notReady
    /// The user is not authorized: fail closed.
    case notAuthorized
    /// The notification policy is allow.
    case notificationsAllowed
    /// The notification policy is blockOrgData: generic text only.
    case orgDataBlocked
    /// The notification policy is block.
    case notificationsBlocked

    /// The explanation for people (the simulator's `why`).
    package var explanation: String {
        switch self {
        case .unmanagedContent: "posted: unmanaged content is not restricted"
        case .notReady: "blocked: no policy has arrived yet, so no notification is posted"
        case .notAuthorized: "blocked: the user is not authorized, so no notification is posted"
        case .notificationsAllowed: "posted: the notification policy is allow"
        case .orgDataBlocked:
            "generic: the notification policy is blockOrgData; the app posts generic text instead of its title and body"
        case .notificationsBlocked: "blocked: the notification policy is block; nothing is posted"
        }
    }
}

/// A notification decision and the rule that made it.
@usableFromInline
package struct NotificationDecision: Sendable, Hashable {
    /// The text a notification shows under ``NotificationPolicy/blockOrgData``, in place of the
    /// app's title and body. It names no app, account, sender or content.
    package static let genericText = "You have new content. Open the app to see it."

    /// Post, post generic text, or post nothing.
    @usableFromInline package var action: NotificationAction
    /// Why.
    package var rule: NotificationRule
    /// The generation of the snapshot the decision read.
    package var generation: UInt64

    /// Creates a decision.
    @usableFromInline package init(action: NotificationAction, rule: NotificationRule, generation: UInt64) {
        self.action = action
        self.rule = rule
        self.generation = generation
    }
}

/// What the app may show in a notification: its own text, the generic text, or nothing, with
/// the decision (``ShareBroker/notification(title:body:)`` answers the text only).
package struct NotificationContent: Sendable, Hashable {
    /// The title to post; `nil` when nothing may be posted.
    package var title: String?
    /// The body to post; `nil` when there is none or nothing may be posted.
    package var body: String?
    /// The decision, with its rule and generation.
    package var decision: NotificationDecision

    /// Whether anything may be posted.
    package var mayPost: Bool { decision.action != .blocked }
}

extension TransferRules {
    /// Whether and with what text a notification may be posted.
    /// - Parameter managed: whether the notification is about content of the managed identity.
    @inlinable
    package static func notification(managed: Bool, in policy: PolicySnapshot) -> NotificationDecision {
        guard managed else {
            return NotificationDecision(action: .post, rule: .unmanagedContent, generation: policy.generation)
        }
        guard policy.isReady else { return NotificationDecision(action: .blocked, rule: .notReady, generation: policy.generation) }
        guard policy.authState == .authorized else {
            return NotificationDecision(action: .blocked, rule: .notAuthorized, generation: policy.generation)
        }
        switch policy.notificationPolicy {
        case .allow: return NotificationDecision(action: .post, rule: .notificationsAllowed, generation: policy.generation)
        case .blockOrgData:
            return NotificationDecision(action: .postGeneric, rule: .orgDataBlocked, generation: policy.generation)
        case .block: return NotificationDecision(action: .blocked, rule: .notificationsBlocked, generation: policy.generation)
        }
    }
}

extension ShareBroker {
    /// Decides a notification without posting anything: what ``notification(title:body:)`` will
    /// answer. Content is managed unless the current identity is unmanaged. Never allocates.
    @inlinable
    package func decideNotification() -> NotificationDecision {
        let snapshot = currentSnapshot
        return TransferRules.notification(managed: snapshot.identity == .managed, in: snapshot)
    }

    /// Asks before posting a desktop notification; post what this returns, and nothing when it
    /// is `nil`.
    ///
    /// Under ``NotificationPolicy/allow`` (and for unmanaged content) the app's own title and
    /// body come back; under ``NotificationPolicy/blockOrgData`` the title is a
    /// generic text ("You have new content. Open the app to see it.") and there is no body; under ``NotificationPolicy/block``,
    /// before the first policy and while the user is not authorized, nothing may be posted and
    /// the attempt is reported to the server (the rule, never the text).
    public func notification(title: String, body: String? = nil) -> (title: String, body: String?)? {
        let content = notificationContent(title: title, body: body)
        guard let title = content.title else { return nil }
        return (title, content.body)
    }

    /// ``notification(title:body:)`` with the decision (the simulator and tests read its rule).
    package func notificationContent(title: String, body: String? = nil) -> NotificationContent {
        let decision = decideNotification()
        switch decision.action {
        case .post:
            return NotificationContent(title: title, body: body, decision: decision)
        case .postGeneric:
            return NotificationContent(title: NotificationDecision.genericText, body: nil, decision: decision)
        case .blocked:
            reportBlocked(.notification, target: nil, rule: decision.rule.rawValue, generation: decision.generation)
            return NotificationContent(title: nil, body: nil, decision: decision)
        }
    }
}
