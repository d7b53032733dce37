/// The platform adapters the library talks to. Every one has an embedded default, so the same
/// core runs in a unit test, the simulator, a benchmark and a host process.
public struct Platform: Sendable {
    /// Where files handed to other apps go.
    public var outbox: any Outbox
    /// How allowed URLs are opened.
    public var urlOpener: any URLOpener
    /// Where acknowledgments and blocked attempts are reported.
    public var reportSink: any ServerReportSink
    /// The general pasteboard every app on the device can read.
    public var pasteboard: any Pasteboard
    /// The key custodian that hands out the group key ring.
    public var secureServices: any SecureServices
    /// Where ``ShareBroker/displayMessage(_:)`` shows a message (a development aid).
    public var messagePresenter: any MessagePresenter

    /// Creates a platform from its adapters.
    public init(outbox: any Outbox, urlOpener: any URLOpener, reportSink: any ServerReportSink,
                pasteboard: any Pasteboard, secureServices: any SecureServices,
                messagePresenter: any MessagePresenter = RecordingMessagePresenter()) {
        self.outbox = outbox
        self.urlOpener = urlOpener
        self.reportSink = reportSink
        self.pasteboard = pasteboard
        self.secureServices = secureServices
        self.messagePresenter = messagePresenter
    }

    /// The embedded defaults: in-memory hand-overs and pasteboard, a recording URL opener and
    /// report sink, and an in-process key custodian that entitles `appID`.
    /// - Throws: ``SealingError`` when libsodium cannot start or cannot allocate key memory.
    public static func embedded(entitling appID: String) throws(SealingError) -> Platform {
        Platform(outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: RecordingReportSink(),
                 pasteboard: InMemoryPasteboard(),
                 secureServices: try InProcessKeyCustodian(entitledAppIDs: [appID]))
    }
}
