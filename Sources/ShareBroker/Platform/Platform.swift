/// The platform adapters the library talks to. The real ones are in ShareBrokerLinux; the
/// in-memory and recording ones in ShareBrokerTesting, so the same core runs in a unit test, the
/// simulator, a benchmark and a host process.
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

    /// Creates a platform from its adapters.
    public init(outbox: any Outbox, urlOpener: any URLOpener, reportSink: any ServerReportSink,
                pasteboard: any Pasteboard, secureServices: any SecureServices) {
        self.outbox = outbox
        self.urlOpener = urlOpener
        self.reportSink = reportSink
        self.pasteboard = pasteboard
        self.secureServices = secureServices
    }
}
