/// What a copy does.
public enum CopyAction: String, Sendable, Hashable {
    /// Write the item in the clear: every app can read it.
    case writeClear
    /// Seal the item so only authorized managed apps can read it.
    case writeSealed
    /// Write nothing; the pasteboard keeps what it had.
    case blocked
}

/// A copy decision and the rule that made it.
@usableFromInline
package struct CopyDecision: Sendable, Hashable {
    /// Clear, sealed, or blocked.
    @usableFromInline package var action: CopyAction
    /// Why.
    package var rule: CopyRule
    /// Whether the app's `copyAttemptedWhenUnauthorized` callback is owed.
    package var notifiesApp: Bool
    /// The generation of the snapshot the decision read.
    package var generation: UInt64

    /// Creates a decision.
    @usableFromInline package init(action: CopyAction, rule: CopyRule, notifiesApp: Bool, generation: UInt64) {
        self.action = action
        self.rule = rule
        self.notifiesApp = notifiesApp
        self.generation = generation
    }
}

/// The rules of a copy decision.
@usableFromInline
package enum CopyRule: String, Sendable, Hashable, CaseIterable {
    /// Unmanaged content is not restricted.
    case unmanagedContent
    /// No policy yet: fail closed.
    case notReady
    /// The user is not authorized: fail closed.
    case notAuthorized
    /// The pasteboard policy is authorized.
    case pasteboardAuthorized
    /// Plain text of at most ``PolicySnapshot/clipboardExceptionLength`` characters: written in
    /// the clear whatever the pasteboard policy.
    case shortTextException
    /// The pasteboard policy is unauthorized.
    case pasteboardUnauthorized
    /// SecureCopy with secure services available: sealed.
    case secureCopy
    /// SecureCopy without secure services: nothing can be sealed, so nothing is written.
    case secureServicesUnavailable
    /// Secure services said available but handed no keys: fail closed.
    case noKeys

    /// The explanation for people (the simulator's `why`).
    package var explanation: String {
        switch self {
        case .unmanagedContent: "written: unmanaged content is not restricted"
        case .notReady: "blocked: no policy has arrived yet, so nothing is written"
        case .notAuthorized: "blocked: the user is not authorized, so nothing is written"
        case .pasteboardAuthorized: "written: the pasteboard policy is authorized; every app can read it"
        case .shortTextException:
            "written: plain text this short is exempt from the pasteboard policy (the character-count exception); every app can read it"
        case .pasteboardUnauthorized: "blocked: the pasteboard policy is unauthorized; the pasteboard keeps what it had"
        case .secureCopy: "encrypted: SecureCopy seals the item so only authorized managed apps can read it"
        case .secureServicesUnavailable:
            "blocked: SecureCopy needs secure services, which are unavailable; nothing is written"
        case .noKeys: "blocked: secure services handed out no keys; nothing is written"
        }
    }
}

extension TransferRules {
    /// Whether and how content may be copied to the general pasteboard.
    /// - Parameter managed: whether the content belongs to the managed identity.
    @inlinable
    package static func copy(managed: Bool, in policy: PolicySnapshot) -> CopyDecision {
        copy(managed: managed, characters: nil, in: policy)
    }

    /// Whether and how content may be copied to the general pasteboard.
    /// - Parameters:
    ///   - managed: whether the content belongs to the managed identity.
    ///   - characters: for plain text, its length in characters (grapheme clusters) or any
    ///     number above ``PolicySnapshot/clipboardExceptionLength`` when it is longer (see
    ///     ``PasteboardItem/characterCount(limit:)``); `nil` for anything else. Text no longer than
    ///     the exception follows the authorized rule (written in the clear) whatever the level.
    @inlinable
    package static func copy(managed: Bool, characters: Int?, in policy: PolicySnapshot) -> CopyDecision {
        guard managed else { return CopyDecision(action: .writeClear, rule: .unmanagedContent, notifiesApp: false, generation: policy.generation) }
        guard policy.isReady else { return CopyDecision(action: .blocked, rule: .notReady, notifiesApp: false, generation: policy.generation) }
        guard policy.authState == .authorized else {
            return CopyDecision(action: .blocked, rule: .notAuthorized, notifiesApp: true, generation: policy.generation)
        }
        if policy.pasteboardPolicy != .authorized, let characters, characters <= policy.clipboardExceptionLength {
            return CopyDecision(action: .writeClear, rule: .shortTextException, notifiesApp: false, generation: policy.generation)
        }
        switch policy.pasteboardPolicy {
        case .authorized: return CopyDecision(action: .writeClear, rule: .pasteboardAuthorized, notifiesApp: false, generation: policy.generation)
        case .unauthorized: return CopyDecision(action: .blocked, rule: .pasteboardUnauthorized, notifiesApp: true, generation: policy.generation)
        case .secureCopy:
            return policy.secureServices == .available
                ? CopyDecision(action: .writeSealed, rule: .secureCopy, notifiesApp: false, generation: policy.generation)
                : CopyDecision(action: .blocked, rule: .secureServicesUnavailable, notifiesApp: false, generation: policy.generation)
        }
    }
}
