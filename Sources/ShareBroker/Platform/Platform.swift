/// The platform adapters the library talks to. Every one has an embedded default, so the same
/// core runs in a unit test, the simulator, a benchmark and a host process.
public struct Platform: Sendable {
    /// Where files handed to other apps go.
    public var outbox: any Outbox
    /// How allowed URLs are opened.
    public var urlOpener: any URLOpener
    /// Where acknowledgments and blocked attempts are reported.
    public var reportSink: any ServerReportSink

    /// Creates a platform from its adapters.
    public init(outbox: any Outbox, urlOpener: any URLOpener, reportSink: any ServerReportSink) {
        self.outbox = outbox
        self.urlOpener = urlOpener
        self.reportSink = reportSink
    }

    /// The embedded defaults: in-memory hand-overs, a recording URL opener and report sink.
    public static func embedded() -> Platform {
        Platform(outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: RecordingReportSink())
    }
}
