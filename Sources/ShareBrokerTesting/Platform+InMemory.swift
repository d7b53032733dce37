import ShareBroker
import ShareBrokerCrypto

extension Platform {
    /// The embedded defaults: in-memory hand-overs and pasteboard, a recording URL opener and
    /// report sink, and an in-process key custodian that entitles `appID`.
    /// - Throws: ``SealingError`` when libsodium cannot start or cannot allocate key memory.
    public static func embedded(entitling appID: String) throws(SealingError) -> Platform {
        embedded(custodian: try InProcessKeyCustodian(entitledAppIDs: [appID]))
    }

    /// The embedded defaults around a custodian that several brokers share (apps of one key
    /// group in one process: tests, benchmarks, the simulator): an in-memory pasteboard of this
    /// platform's own, and in-memory hand-overs, a recording URL opener and a recording report
    /// sink; or, when `records` is false, a hand-over, URL opener and report sink that keep
    /// nothing (a benchmark's loop then allocates no record per call).
    public static func embedded(custodian: InProcessKeyCustodian, records: Bool = true) -> Platform {
        if records {
            return Platform(outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: RecordingReportSink(),
                            pasteboard: InMemoryPasteboard(), secureServices: custodian)
        }
        let discarding = DiscardingAdapters()
        return Platform(outbox: discarding, urlOpener: discarding, reportSink: discarding,
                        pasteboard: InMemoryPasteboard(), secureServices: custodian)
    }
}

/// Hand-overs, URL opens and reports that are dropped (``Platform/embedded(custodian:records:)``
/// with `records: false`). A hand-over answers a constant path, so the call allocates nothing.
final class DiscardingAdapters: Outbox, URLOpener, ServerReportSink {
    func handOver(name: String, bytes: [UInt8]) throws(ShareBrokerError) -> String {
        "/dev/null"
    }

    func open(_ url: String, in handler: String) {}
    func acknowledged(_ record: AcknowledgmentRecord) {}
    func blockedAttempt(_ record: BlockedAttemptRecord) {}
    func wiped(_ report: WipeReport) {}
}
