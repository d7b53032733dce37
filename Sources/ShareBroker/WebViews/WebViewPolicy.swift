/// Whose content the user is looking at: the app's current identity.
///
/// Managed content follows the server's policies; unmanaged content (a personal account) is not
/// restricted. The identity can change at any time, so every decision takes the identity that is
/// current when it is made. An AppConnect-style app starts ``managed``: see ``initial``.
///
/// Raw values are the names the simulator contract uses (`"managed"`, `"unmanaged"`).
public enum ManagedIdentity: String, Sendable, Hashable, CaseIterable {
    /// A managed (organizational) identity: its content follows the policies.
    case managed
    /// An unmanaged (personal) identity: its content is not restricted.
    case unmanaged

    /// The identity an AppConnect-style app has when it starts: ``managed``.
    public static var initial: ManagedIdentity { .managed }
}

/// The policy an app sets on a viewer (a web view or a container of web views), after Intune's
/// `IntuneMAMWebViewPolicy`.
///
/// A policy set on a node applies to it and to every descendant, present and future, unless a
/// nearer node sets its own. ``unset`` is the state of every node nobody set a policy on: it
/// decides nothing, so setting it on a node removes that node's own policy and the node inherits
/// again. Raw values are Intune's.
public enum WebViewPolicy: Int32, Sendable, Hashable, CaseIterable {
    /// No policy of its own (Intune's `Unset`, the default): the nearest ancestor with a policy
    /// decides, and with none, `TreatAllWebViewsAsUnmanaged`.
    case unset = 0
    /// Cut, copy and paste count as done by an unmanaged identity, whatever the current identity
    /// and `TreatAllWebViewsAsUnmanaged` (Intune's `Unmanaged`).
    case unmanaged = 1
    /// Cut, copy and paste count as done by the current identity, overriding
    /// `TreatAllWebViewsAsUnmanaged` (Intune's `CurrentIdentity`).
    case currentIdentity = 2
    /// Like ``currentIdentity``, and while the current identity is managed the page may neither
    /// receive file uploads nor pastes (Intune's `CurrentIdentityBlockUpload`).
    case currentIdentityBlockUpload = 3

    /// The policy's name as the simulator contract spells it (`"currentIdentity"`, ...).
    public var name: String {
        switch self {
        case .unset: "unset"
        case .unmanaged: "unmanaged"
        case .currentIdentity: "currentIdentity"
        case .currentIdentityBlockUpload: "currentIdentityBlockUpload"
        }
    }

    /// The policy named `name` (exactly as ``name`` spells it), or `nil` for any other string.
    public init?(name: String) {
        guard let policy = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = policy
    }

    /// What this policy, as a web view's effective policy, makes of the current identity.
    ///
    /// - Parameters:
    ///   - currentIdentity: the app's identity at the moment of the decision.
    ///   - treatAllWebViewsAsUnmanaged: the manifest setting; it decides only ``unset``.
    /// - Returns: the web view's effective identity, and whether uploads and pastes into the
    ///   page are blocked (only ``currentIdentityBlockUpload`` under a managed identity).
    @inlinable
    public func effectiveIdentity(
        currentIdentity: ManagedIdentity, treatAllWebViewsAsUnmanaged: Bool
    ) -> (identity: ManagedIdentity, blocksUploadAndPaste: Bool) {
        switch self {
        case .unset:
            (treatAllWebViewsAsUnmanaged ? .unmanaged : currentIdentity, false)
        case .unmanaged:
            (.unmanaged, false)
        case .currentIdentity:
            (currentIdentity, false)
        case .currentIdentityBlockUpload:
            (currentIdentity, currentIdentity == .managed)
        }
    }
}
