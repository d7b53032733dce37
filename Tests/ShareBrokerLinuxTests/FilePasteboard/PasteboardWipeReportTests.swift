import Foundation
import ShareBroker
import ShareBrokerLinux
import ShareBrokerTesting
import Testing

/// Issue 29, item 9: a retire reports the pasteboard step as done only when it knows what the
/// app's processes wrote to a pasteboard that outlives them.
@Suite("pasteboard wipe report")
struct PasteboardWipeReportTests {
    final class Delegate: ShareBrokerDelegate {
        func appConnectIsReady() {}
        func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
    }

    /// A broker of `com.acme.notes` over the file pasteboard at `path`, with a state folder or none.
    static func broker(pasteboard path: String, state: String?, custodian: InProcessKeyCustodian,
                       sink: RecordingReportSink) throws -> ShareBroker {
        let platform = Platform(outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: sink,
                                pasteboard: try FilePasteboard(path: path), secureServices: custodian)
        let broker = ShareBroker(appID: "com.acme.notes", device: DeviceApps(), platform: platform,
                                 configuration: ShareBroker.Configuration(stateDirectory: state))
        try broker.start(delegate: Delegate())
        try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        return broker
    }

    @Test("Without a state folder, a process that wrote nothing is retired while an earlier process's sealed item is on the pasteboard: the report says the pasteboard step failed and why, never that it was erased; with a state folder the item is found and erased")
    func honestReport() throws {
        let folder = NSTemporaryDirectory() + "sbt-pbwipe-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes"])

        for withState in [false, true] {
            let pasteboardPath = folder + "/pasteboard-\(withState)"
            let state = withState ? folder + "/state" : nil
            // An earlier process of the app copies.
            let earlier = try Self.broker(pasteboard: pasteboardPath, state: state, custodian: custodian, sink: RecordingReportSink())
            _ = try earlier.copy(.text("the earlier process's secret"))
            // This process, a new one, wrote nothing; it is retired.
            let sink = RecordingReportSink()
            let current = try Self.broker(pasteboard: pasteboardPath, state: state, custodian: custodian, sink: sink)
            try current.apply(PolicyUpdate(auth: .retired))
            let report = try #require(sink.wipeReports.last)
            if withState {
                #expect(report.erased.contains("sharebroker.pasteboard"))
                #expect(try FilePasteboard(path: pasteboardPath).read().items.isEmpty, "the earlier item was erased")
            } else {
                #expect(!report.erased.contains("sharebroker.pasteboard"), "\(report)")
                #expect(report.failed["sharebroker.pasteboard"]?.contains("earlier process") == true, "\(report)")
                #expect(try !FilePasteboard(path: pasteboardPath).read().items.isEmpty, "the item is still there, as reported")
            }
        }
    }
}
