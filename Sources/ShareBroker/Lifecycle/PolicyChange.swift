/// A delegate callback the library invoked for a change, in the order it invoked them.
package enum PolicyChange: String, Sendable, Hashable, CaseIterable {
    /// ``ShareBrokerDelegate/appConnectIsReady()``.
    case ready = "appConnectIsReady"
    /// ``ShareBrokerDelegate/authStateChanged(to:message:)``.
    case auth = "authStateChanged"
    /// ``ShareBrokerDelegate/configChanged(to:)``.
    case config = "configChanged"
    /// ``ShareBrokerDelegate/openInPolicyChanged(to:whitelist:)``.
    case openIn = "openInPolicyChanged"
    /// ``ShareBrokerDelegate/pasteboardPolicyChanged(to:)``.
    case pasteboard = "pasteboardPolicyChanged"
    /// ``ShareBrokerDelegate/printPolicyChanged(to:)``.
    case print = "printPolicyChanged"
    /// ``ShareBrokerDelegate/secureFileIOPolicyChanged(to:)``.
    case secureFileIO = "secureFileIOPolicyChanged"
    /// ``ShareBrokerDelegate/logLevelChanged(to:)``.
    case logLevel = "logLevelChanged"
    /// ``ShareBrokerDelegate/secureServicesAvailabilityChanged(to:)``.
    case secureServices = "secureServicesAvailabilityChanged"

    /// The acknowledgment this change owes, if any.
    package var acknowledgedKind: AcknowledgedKind? {
        switch self {
        case .auth: .auth
        case .config: .config
        case .openIn: .openIn
        case .pasteboard: .pasteboard
        case .print: .print
        case .secureFileIO: .secureFileIO
        case .ready, .logLevel, .secureServices: nil
        }
    }
}

/// What one update did: the callbacks invoked, the acknowledgments reported, whether it wiped
/// (``ShareBroker/applyReporting(_:)``).
package struct UpdateOutcome: Sendable, Hashable {
    /// The callbacks the library invoked, in order.
    package var changes: [PolicyChange]
    /// The acknowledgments reported to the server for this update, in order.
    package var acknowledgments: [AcknowledgmentRecord]
    /// Whether the update retired the app and wiped its sensitive data.
    package var wiped: Bool
    /// The generation of the snapshot the update installed.
    package var generation: UInt64

    /// Creates an outcome.
    package init(changes: [PolicyChange] = [], acknowledgments: [AcknowledgmentRecord] = [],
                wiped: Bool = false, generation: UInt64) {
        self.changes = changes
        self.acknowledgments = acknowledgments
        self.wiped = wiped
        self.generation = generation
    }
}
