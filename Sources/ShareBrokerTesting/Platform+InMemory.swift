import ShareBroker
import ShareBrokerCrypto

extension Platform {
    /// The embedded defaults: in-memory hand-overs and pasteboard, a recording URL opener and
    /// report sink, and an in-process key custodian that entitles `appID`.
    /// - Throws: ``SealingError`` when libsodium cannot start or cannot allocate key memory.
    public static func embedded(entitling appID: String) throws(SealingError) -> Platform {
        Platform(outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: RecordingReportSink(),
                 pasteboard: InMemoryPasteboard(),
                 secureServices: try InProcessKeyCustodian(entitledAppIDs: [appID]))
    }
}
