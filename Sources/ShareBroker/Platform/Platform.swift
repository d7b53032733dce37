/// The platform adapters the library talks to: where hand-overs go, how URLs open, where
/// reports go, the general pasteboard and the key custodian. An app gets one already built:
/// `ManagedApp.attach(_:delegate:)` (module ShareBrokerLinux) wires the real ones, and
/// `Platform.embedded(entitling:)` (module ShareBrokerTesting) the in-memory and recording ones,
/// so the same core runs in a unit test, the simulator, a benchmark and a host process. The
/// adapter protocols are the package's own (package access).
public struct Platform: Sendable {
    /// Where files handed to other apps go.
    package var outbox: any Outbox
    /// How allowed URLs are opened.
    package var urlOpener: any URLOpener
    /// Where acknowledgments and blocked attempts are reported.
    package var reportSink: any ServerReportSink
    /// The general pasteboard every app on the device can read.
    package var pasteboard: any Pasteboard
    /// The key custodian that hands out the group key ring.
    package var secureServices: any SecureServices

    /// Creates a platform from its adapters.
    package init(outbox: any Outbox, urlOpener: any URLOpener, reportSink: any ServerReportSink,
                pasteboard: any Pasteboard, secureServices: any SecureServices) {
        self.outbox = outbox
        self.urlOpener = urlOpener
        self.reportSink = reportSink
        self.pasteboard = pasteboard
        self.secureServices = secureServices
    }
}
