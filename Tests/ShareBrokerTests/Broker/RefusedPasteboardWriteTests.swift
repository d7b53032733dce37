import ShareBroker
import ShareBrokerTesting
import Testing

/// A pasteboard whose platform refuses every write while `refusing` is set (a full disk, a lost
/// display connection), delegating to an in-memory one otherwise.
private final class RefusingPasteboard: Pasteboard {
    struct Refused: Error, CustomStringConvertible {
        var description: String { "the display connection is gone" }
    }

    let inner = InMemoryPasteboard()
    let refusing: Bool

    init(refusing: Bool) { self.refusing = refusing }

    func read() -> (items: [PasteboardItem], changeCount: Int) { inner.read() }

    func write(_ items: [PasteboardItem]) throws -> Int {
        if refusing { throw Refused() }
        return inner.write(items)
    }

    func clear(ifChangeCount changeCount: Int) -> Bool { inner.clear(ifChangeCount: changeCount) }
}

@Suite("A refused pasteboard write")
struct RefusedPasteboardWriteTests {
    @Test("is reported by the copy that caused it, and nothing is recorded as this app's write",
          arguments: [PasteboardPolicy.authorized, .secureCopy])
    func reportedByTheCopy(policy: PasteboardPolicy) throws {
        let pasteboard = RefusingPasteboard(refusing: true)
        _ = pasteboard.inner.write([.text("someone else's item")])
        var platform = try Platform.embedded(entitling: "com.acme.notes")
        platform.pasteboard = pasteboard
        let broker = ShareBroker(appID: "com.acme.notes", platform: platform)
        try broker.start(delegate: RecordingDelegate())
        try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: policy))

        let error = #expect(throws: ShareBrokerError.self) { try broker.copyResult(.text("quarterly numbers")) }
        guard case .pasteboardWriteFailed(let reason)? = error else {
            Issue.record("expected pasteboardWriteFailed, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("display connection"))
        #expect(pasteboard.read().items == [.text("someone else's item")])

        // A retire clears only what this app wrote: nothing, so the other app's item stays.
        try broker.apply(PolicyUpdate(auth: .retired))
        #expect(pasteboard.read().items == [.text("someone else's item")])
    }

    @Test("a write the platform accepts is recorded, so a retire clears it")
    func acceptedWriteIsRecorded() throws {
        let pasteboard = RefusingPasteboard(refusing: false)
        var platform = try Platform.embedded(entitling: "com.acme.notes")
        platform.pasteboard = pasteboard
        let broker = ShareBroker(appID: "com.acme.notes", platform: platform)
        try broker.start(delegate: RecordingDelegate())
        try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: .authorized))
        #expect(try broker.copyResult(.text("quarterly numbers")).action == .writeClear)
        #expect(pasteboard.read().items == [.text("quarterly numbers")])
        try broker.apply(PolicyUpdate(auth: .retired))
        #expect(pasteboard.read().items.isEmpty)
    }
}
