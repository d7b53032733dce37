import ShareBroker
import Synchronization

/// The app under test as the simulator plays it: implements the callbacks the `start` line
/// names, records each invocation, and answers acknowledgments as the `ackWith` of the current
/// line says (applied by default).
final class SimulatedApp: ShareBrokerDelegate {
    /// The optional callback names of the contract.
    static let optionalCallbacks: Set<String> = [
        "configChanged", "openInPolicyChanged", "openInAttemptedWhenBlocked",
        "openURLAttemptedWhenUnauthorized", "dragAndDropToNonAppConnectApp", "pasteboardPolicyChanged",
        "copyAttemptedWhenUnauthorized", "printPolicyChanged", "secureServicesAvailabilityChanged",
        "secureFileIOPolicyChanged", "logLevelChanged", "willResignActive", "didBecomeActive",
        "openFromAttemptedWhenBlocked",
    ]

    private struct State {
        var notifications: [String] = []
        var answers: [AcknowledgedKind: Acknowledgment] = [:]
    }

    let implements: Set<String>
    private let state = Mutex(State())

    init(implements: Set<String>) {
        self.implements = implements
    }

    /// Starts a new line: forgets earlier notifications and sets how to answer.
    func begin(answers: [AcknowledgedKind: Acknowledgment] = [:]) {
        state.withLock { $0 = State(notifications: [], answers: answers) }
    }

    /// The callbacks invoked since ``begin(answers:)``.
    var notifications: [String] { state.withLock { $0.notifications } }

    private func invoked(_ name: String) -> Bool {
        let required = name == "appConnectIsReady" || name == "authStateChanged"
        guard required || implements.contains(name) else { return false }
        state.withLock { $0.notifications.append(name) }
        return true
    }

    private func answer(_ name: String, _ kind: AcknowledgedKind) -> Acknowledgment {
        guard invoked(name) else { return .unsupported }
        return state.withLock { $0.answers[kind] } ?? .applied
    }

    func appConnectIsReady() { _ = invoked("appConnectIsReady") }
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { answer("authStateChanged", .auth) }
    func configChanged(to config: [String: String]) -> Acknowledgment { answer("configChanged", .config) }
    func openInPolicyChanged(to policy: OpenInPolicy, whitelist: Set<String>) -> Acknowledgment {
        answer("openInPolicyChanged", .openIn)
    }
    func openInAttemptedWhenBlocked(policy: OpenInPolicy) { _ = invoked("openInAttemptedWhenBlocked") }
    func openURLAttemptedWhenUnauthorized(url: String) { _ = invoked("openURLAttemptedWhenUnauthorized") }
    func openFromAttemptedWhenBlocked(source: String?, policy: OpenFromPolicy) { _ = invoked("openFromAttemptedWhenBlocked") }
    func dragAndDropAttemptedToNonAppConnectApp() { _ = invoked("dragAndDropToNonAppConnectApp") }
    func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment {
        answer("pasteboardPolicyChanged", .pasteboard)
    }
    func copyAttemptedWhenUnauthorized(policy: PasteboardPolicy) { _ = invoked("copyAttemptedWhenUnauthorized") }
    func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment { answer("printPolicyChanged", .print) }
    func secureServicesAvailabilityChanged(to availability: SecureServicesAvailability) {
        _ = invoked("secureServicesAvailabilityChanged")
    }
    func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment {
        answer("secureFileIOPolicyChanged", .secureFileIO)
    }
    func logLevelChanged(to level: LogLevel) { _ = invoked("logLevelChanged") }
    func willResignActive() { _ = invoked("willResignActive") }
    func didBecomeActive() { _ = invoked("didBecomeActive") }
}
