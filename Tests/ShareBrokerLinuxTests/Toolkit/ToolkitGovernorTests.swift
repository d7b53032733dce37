import Foundation
import ShareBroker
@testable import ShareBrokerInterpose
import ShareBrokerLinux
import ShareBrokerTesting
import Synchronization
import Testing

/// The decision the GOT hooks ask for each attempt of a toolkit to take a selection, over a real
/// broker (in-memory platform): what is allowed, what is refused, and that a burst is reported once.
@Suite("The toolkit clipboard governor's decisions")
struct ToolkitGovernorTests {
    /// A delegate counting copyAttemptedWhenUnauthorized.
    final class CountingDelegate: ShareBrokerDelegate, Sendable {
        let attempts = Mutex(0)
        func appConnectIsReady() {}
        func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
        func copyAttemptedWhenUnauthorized(policy: PasteboardPolicy) { attempts.withLock { $0 += 1 } }
    }

    static func broker(_ policy: PasteboardPolicy?, custodian: InProcessKeyCustodian) throws
        -> (ShareBroker, RecordingReportSink, CountingDelegate) {
        let sink = RecordingReportSink()
        let broker = ShareBroker(appID: "com.example.notes", platform: Platform(
            outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: sink,
            pasteboard: InMemoryPasteboard(), secureServices: custodian))
        let delegate = CountingDelegate()
        try broker.start(delegate: delegate)
        if let policy { try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: policy)) }
        return (broker, sink, delegate)
    }

    @Test("authorized: allowed, nothing reported")
    func authorized() throws {
        let (broker, sink, delegate) = try Self.broker(.authorized, custodian: try InProcessKeyCustodian(entitledAppIDs: ["com.example.notes"]))
        let governor = ToolkitClipboardGovernor { broker }
        #expect(governor.allows(.clipboard))
        #expect(governor.allows(.primary))
        #expect(sink.blockedAttempts.isEmpty)
        #expect(delegate.attempts.withLock { $0 } == 0)
    }

    @Test("unauthorized: refused; a burst on one selection is one blocked attempt, each selection its own")
    func unauthorizedBurst() throws {
        let (broker, sink, delegate) = try Self.broker(.unauthorized, custodian: try InProcessKeyCustodian(entitledAppIDs: ["com.example.notes"]))
        let governor = ToolkitClipboardGovernor { broker }
        // A drag: PRIMARY taken again and again.
        for _ in 0..<50 { #expect(!governor.allows(.primary)) }
        #expect(!governor.allows(.clipboard))
        #expect(!governor.allows(.clipboard))
        #expect(sink.blockedAttempts.count == 2)
        #expect(sink.blockedAttempts.allSatisfy { $0.action == .copy && $0.rule == "pasteboardUnauthorized" })
        #expect(delegate.attempts.withLock { $0 } == 2)
    }

    @Test("SecureCopy: refused (no plaintext), with and without secure services; no policy yet: refused")
    func secureCopyAndNotReady() throws {
        let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.example.notes"])
        let (broker, _, _) = try Self.broker(.secureCopy, custodian: custodian)
        #expect(!ToolkitClipboardGovernor { broker }.allows(.clipboard))
        let (waiting, _, _) = try Self.broker(nil, custodian: custodian)
        #expect(!ToolkitClipboardGovernor { waiting }.allows(.clipboard))
    }

    @Test("a broker that is gone refuses every attempt")
    func brokerGone() {
        #expect(!ToolkitClipboardGovernor { nil }.allows(.clipboard))
        #expect(!ToolkitClipboardGovernor { nil }.allows(.primary))
    }
}
