/// The kinds of policy change an app acknowledges back to the server.
public enum AcknowledgedKind: String, Sendable, CaseIterable, Hashable {
    /// `authStateApplied`: may never be ``PolicyState/unsupported``.
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

/// How the app answers one policy change: what its callback returns.
public struct Acknowledgment: Sendable, Hashable {
    /// Applied, error, or unsupported.
    public var state: PolicyState
    /// Why; reported to the server log. Typically empty when applied.
    public var message: String

    /// Creates an acknowledgment.
    public init(_ state: PolicyState, message: String = "") {
        self.state = state
        self.message = message
    }

    /// The app applied the change.
    public static let applied = Acknowledgment(.applied)
    /// The app does not support this policy. Not allowed for authorization.
    public static let unsupported = Acknowledgment(.unsupported)
    /// The app tried and failed, and says why.
    public static func error(_ message: String) -> Acknowledgment { Acknowledgment(.error, message: message) }
}

/// One acknowledgment as the server receives it.
public struct AcknowledgmentRecord: Sendable, Hashable {
    /// Which policy it answers.
    public var kind: AcknowledgedKind
    /// Applied, error, or unsupported.
    public var state: PolicyState
    /// The app's message, or the library's when it had to correct the answer.
    public var message: String
    /// The snapshot generation the acknowledgment answers.
    public var generation: UInt64

    /// Creates a record.
    public init(kind: AcknowledgedKind, state: PolicyState, message: String, generation: UInt64) {
        self.kind = kind
        self.state = state
        self.message = message
        self.generation = generation
    }
}
