import ShareBroker
import Synchronization
import ShareBrokerTesting

/// A delegate that implements a chosen set of optional callbacks, records every invocation and
/// answers acknowledgments as told.
final class RecordingDelegate: ShareBrokerDelegate {
    enum Callback: String, CaseIterable, Sendable {
        case config, openIn, openInBlocked, openURLBlocked, dragAndDrop, pasteboard, copyBlocked, print
        case secureServices, secureFileIO, logLevel, openFromBlocked
    }

    private let implemented: Set<Callback>
    private let log = Mutex<[String]>([])
    private let answers = Mutex<[String: Acknowledgment]>([:])

    init(implementing: Set<Callback> = Set(Callback.allCases)) {
        implemented = implementing
    }

    var calls: [String] { log.withLock { $0 } }
    func reset() { log.withLock { $0.removeAll() } }
    func answer(_ name: String, with ack: Acknowledgment) { answers.withLock { $0[name] = ack } }

    private func record(_ name: String) { log.withLock { $0.append(name) } }
    private func ack(_ name: String) -> Acknowledgment {
        record(name)
        return answers.withLock { $0[name] } ?? .applied
    }

    func appConnectIsReady() { record("ready") }
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { ack("auth") }
    func configChanged(to config: [String: String]) -> Acknowledgment {
        implemented.contains(.config) ? ack("config") : .unsupported
    }
    func openInPolicyChanged(to policy: OpenInPolicy, whitelist: Set<String>) -> Acknowledgment {
        implemented.contains(.openIn) ? ack("openIn") : .unsupported
    }
    func openInAttemptedWhenBlocked(policy: OpenInPolicy) {
        if implemented.contains(.openInBlocked) { record("openInBlocked") }
    }
    func openURLAttemptedWhenUnauthorized(url: String) {
        if implemented.contains(.openURLBlocked) { record("openURLBlocked") }
    }
    func openFromAttemptedWhenBlocked(source: String?, policy: OpenFromPolicy) {
        if implemented.contains(.openFromBlocked) { record("openFromBlocked:\(source ?? "?")") }
    }
    func dragAndDropAttemptedToNonAppConnectApp() {
        if implemented.contains(.dragAndDrop) { record("dragAndDrop") }
    }
    func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment {
        implemented.contains(.pasteboard) ? ack("pasteboard") : .unsupported
    }
    func copyAttemptedWhenUnauthorized(policy: PasteboardPolicy) {
        if implemented.contains(.copyBlocked) { record("copyBlocked") }
    }
    func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment {
        implemented.contains(.print) ? ack("print") : .unsupported
    }
    func secureServicesAvailabilityChanged(to availability: SecureServicesAvailability) {
        if implemented.contains(.secureServices) { record("secureServices") }
    }
    func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment {
        implemented.contains(.secureFileIO) ? ack("secureFileIO") : .unsupported
    }
    func logLevelChanged(to level: LogLevel) {
        if implemented.contains(.logLevel) { record("logLevel") }
    }
}

/// A delegate that implements only the two required callbacks.
final class MinimalDelegate: ShareBrokerDelegate {
    private let log = Mutex<[String]>([])
    var calls: [String] { log.withLock { $0 } }
    func appConnectIsReady() { log.withLock { $0.append("ready") } }
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment {
        log.withLock { $0.append("auth") }
        return .applied
    }
}

/// A broker with an in-memory platform, started, and (unless `ready` is false) made ready.
struct Fixture {
    let broker: ShareBroker
    let delegate: RecordingDelegate
    let outbox: InMemoryOutbox
    let sink: RecordingReportSink
    let opener: RecordingURLOpener
    let pasteboard: InMemoryPasteboard
    let custodian: InProcessKeyCustodian

    init(implementing: Set<RecordingDelegate.Callback> = Set(RecordingDelegate.Callback.allCases),
         manifest: AppManifest = AppManifest(), apps: [DeviceApp] = [], ready: PolicyUpdate? = nil,
         configuration: ShareBroker.Configuration = ShareBroker.Configuration()) throws {
        outbox = InMemoryOutbox()
        sink = RecordingReportSink()
        opener = RecordingURLOpener()
        pasteboard = InMemoryPasteboard()
        custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes"])
        var configuration = configuration
        configuration.manifest = manifest
        broker = ShareBroker(appID: "com.acme.notes", device: DeviceApps(apps),
                             platform: Platform(outbox: outbox, urlOpener: opener, reportSink: sink,
                                                pasteboard: pasteboard, secureServices: custodian),
                             configuration: configuration)
        delegate = RecordingDelegate(implementing: implementing)
        try broker.start(delegate: delegate)
        if let ready {
            try broker.apply(ready)
            delegate.reset()
        }
    }
}
