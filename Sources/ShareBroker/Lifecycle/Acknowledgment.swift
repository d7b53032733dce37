/// The kinds of policy change an app acknowledges back to the server.
package enum AcknowledgedKind: String, Sendable, CaseIterable, Hashable {
    /// `authStateApplied`: may never be ``Acknowledgment/unsupported``.
    case auth
    /// `configApplied`.
    case config
    /// `openInPolicyApplied`.
    case openIn
    /// `pasteboardPolicyApplied`.
    case pasteboard
    /// `printPolicyApplied`.
    case print
    /// `secureFileIOPolicyApplied`.
    case secureFileIO
}

/// How the app answers one policy change: what its callback returns (AppConnect's
/// `ACPolicyState` with its message).
public enum Acknowledgment: Sendable, Hashable {
    /// The app applied the change.
    case applied
    /// The app does not support this policy. Not allowed for authorization (reported as an error).
    case unsupported
    /// The app tried and failed, and says why (reported to the server log).
    case error(String)

    /// The `ACPolicyState` code: 0 unsupported, 1 applied, 2 error (the wire's and the C
    /// interface's `SB_POLICY_STATE_*`).
    package var state: PolicyState {
        switch self {
        case .applied: .applied
        case .unsupported: .unsupported
        case .error: .error
        }
    }

    /// The app's message: empty unless ``error(_:)``.
    package var message: String {
        if case .error(let message) = self { return message }
        return ""
    }

    /// The acknowledgment of `state` with `message` (kept only for an error).
    package init(_ state: PolicyState, message: String = "") {
        switch state {
        case .applied: self = .applied
        case .unsupported: self = .unsupported
        case .error: self = .error(message)
        }
    }
}

/// One acknowledgment as the server receives it.
package struct AcknowledgmentRecord: Sendable, Hashable {
    /// Which policy it answers.
    package var kind: AcknowledgedKind
    /// The answer: the app's, or the library's when it had to correct it.
    package var acknowledgment: Acknowledgment
    /// The snapshot generation the acknowledgment answers.
    package var generation: UInt64

    /// Applied, error, or unsupported (the code).
    package var state: PolicyState { acknowledgment.state }
    /// The message (empty unless an error).
    package var message: String { acknowledgment.message }

    /// Creates a record.
    package init(kind: AcknowledgedKind, acknowledgment: Acknowledgment, generation: UInt64) {
        self.kind = kind
        self.acknowledgment = acknowledgment
        self.generation = generation
    }
}
