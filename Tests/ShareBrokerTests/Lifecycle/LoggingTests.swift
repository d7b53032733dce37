import Logging
import ShareBroker
import Synchronization
import Testing
import ShareBrokerTesting

/// A swift-log back end that keeps every record it is given.
final class CapturingLog: Sendable {
    struct Record: Sendable {
        let level: Logger.Level
        let text: String
    }

    let records = Mutex<[Record]>([])

    var logger: Logger {
        Logger(label: "sharebroker-test") { _ in Handler(log: self) }
    }

    var all: [Record] { records.withLock { $0 } }

    struct Handler: LogHandler {
        let log: CapturingLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let meta = (event.metadata ?? [:]).merging(metadata) { a, _ in a }
            let text = "\(event.message) \(meta.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))"
            log.records.withLock { $0.append(Record(level: event.level, text: text)) }
        }
    }
}

@Suite("Logging and the log level")
struct LoggingTests {
    static let secret = "TOP-SECRET-PAYLOAD-4711"

    func broker(_ log: CapturingLog) throws -> (ShareBroker, RecordingDelegate) {
        let broker = ShareBroker(appID: "com.acme.notes", platform: try .embedded(entitling: "com.acme.notes"),
                                 configuration: ShareBroker.Configuration(logger: log.logger))
        let delegate = RecordingDelegate()
        try broker.start(delegate: delegate)
        return (broker, delegate)
    }

    @Test("the policy's log level governs the library's own logging, and reaches the app")
    func levelGoverns() throws {
        let log = CapturingLog()
        let (broker, delegate) = try broker(log)
        try broker.apply(PolicyUpdate(auth: .authorized, openIn: .unauthorized, logLevel: .error))
        _ = try broker.openIn([1], named: "a.pdf", target: "x")
        #expect(log.all.allSatisfy { $0.level >= .error }, "nothing below error at level error: \(log.all.map(\.text))")
        delegate.reset()
        let outcome = try broker.applyReporting(PolicyUpdate(logLevel: .info))
        #expect(outcome.changes == [.logLevel])
        #expect(delegate.calls == ["logLevel"])
        _ = try broker.openIn([1], named: "a.pdf", target: "x")
        #expect(log.all.contains { $0.level == .info && $0.text.contains("blocked openIn") && $0.text.contains("rule=openInUnauthorized") })
    }

    @Test("at no level does the library log payloads, document contents, names of documents or keys")
    func neverLogsContent() throws {
        let log = CapturingLog()
        let (broker, _) = try broker(log)
        try broker.apply(PolicyUpdate(auth: .authorized, openIn: .whitelist(["com.acme.viewer"]), pasteboard: .secureCopy,
                                      logLevel: .debug, config: ["token": Self.secret]))
        let document = (name: "\(Self.secret).pdf", bytes: Array(Self.secret.utf8))
        _ = try broker.openIn(document.bytes, named: document.name, target: "com.acme.viewer")
        _ = try broker.openIn(document.bytes, named: document.name, target: "org.example.sheets")
        try broker.copyResult(.text(Self.secret))
        _ = broker.paste()
        try broker.apply(PolicyUpdate(pasteboard: .authorized))
        try broker.copyResult(.text(Self.secret))
        try broker.apply(PolicyUpdate(pasteboard: .unauthorized))
        try broker.copyResult(.text(Self.secret))
        _ = try broker.openURL("mailto:\(Self.secret)@acme.com")
        try broker.apply(PolicyUpdate(auth: .retired, authMessage: "bye"))
        let records = log.all
        #expect(records.count > 5, "the debug level should have logged something")
        for record in records {
            #expect(!record.text.contains("SECRET"), "logged content: \(record.text)")
        }
    }
}
