import Dispatch
import Foundation
import ShareBroker
import Synchronization
import Testing

/// A copy of representations borrowed from the caller's buffer (``BorrowedRepresentation``, what
/// the C interface's `sb_copy` passes) decides and writes exactly as a copy of owned
/// ``PasteboardItem``s, and keeps nothing of the caller's buffer once it returns.
@Suite("Copying borrowed bytes")
struct BorrowedCopyTests {
    static let texts = ["hi", "the borrowed plan", String(repeating: "👨‍👩‍👧‍👦", count: 6), ""]

    @Test("the same action, rule and pasteboard contents as the owned item, at every level and exception",
          arguments: [PasteboardPolicy.authorized, .unauthorized, .secureCopy], [0, 5])
    func sameAsOwned(pasteboard: PasteboardPolicy, exception: Int) throws {
        let update = PolicyUpdate(auth: .authorized, pasteboard: pasteboard, clipboardExceptionLength: exception)
        let owned = try Fixture(ready: update)
        let borrowed = try Fixture(ready: update)
        for text in Self.texts {
            let item = PasteboardItem.text(text)
            let expected = try owned.broker.copyResult(item)
            var buffer = Array(text.utf8)
            let result = try buffer.withUnsafeBytes { bytes in
                try borrowed.broker.copyResult(BorrowedRepresentation(type: item.type, bytes: bytes))
            }
            #expect(result == expected, "\(pasteboard) N=\(exception) \(text.debugDescription)")
            // The caller reuses its buffer: the pasteboard holds its own bytes (clear) or an
            // envelope sealed from the bytes as they were (sealed).
            for index in buffer.indices { buffer[index] = 0x58 }
            #expect(borrowed.broker.paste() == owned.broker.paste(), "\(pasteboard) N=\(exception) \(text.debugDescription)")
            if expected.action == .writeClear {
                #expect(borrowed.pasteboard.read().items == [item])
            }
        }
    }

    @Test("several borrowed representations: sealed one by one in order, or written in the clear as owned items")
    func representations() throws {
        for pasteboard in [PasteboardPolicy.authorized, .secureCopy] {
            let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: pasteboard))
            var html = Array("<b>plan</b>".utf8)
            var plain = Array("plan".utf8)
            let result = try html.withUnsafeBytes { htmlBytes in
                try plain.withUnsafeBytes { plainBytes in
                    try fixture.broker.copyResult([BorrowedRepresentation(type: "text/html", bytes: htmlBytes),
                                                   BorrowedRepresentation(type: PasteboardItem.textType, bytes: plainBytes)])
                }
            }
            #expect(result.action == (pasteboard == .authorized ? .writeClear : .writeSealed))
            for index in html.indices { html[index] = 0 }
            for index in plain.indices { plain[index] = 0 }
            #expect(fixture.broker.paste() == PasteboardItem(type: "text/html", bytes: Array("<b>plan</b>".utf8)))
            #expect(fixture.pasteboard.read().items.count == 2)
        }
    }

    @Test("borrowed representations are checked as owned ones: duplicate, empty or sealed types change nothing")
    func invalid() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .authorized))
        try fixture.broker.copyResult(PasteboardItem.text("kept"))
        let bytes: [UInt8] = [1, 2, 3]
        for types in [["a", "a"], [""], [PasteboardItem.sealedType]] {
            bytes.withUnsafeBytes { raw in
                _ = #expect(throws: ShareBrokerError.self) {
                    try fixture.broker.copyResult(types.map { BorrowedRepresentation(type: $0, bytes: raw) })
                }
            }
        }
        #expect(fixture.pasteboard.read().items == [.text("kept")])
    }
    #if !SHAREBROKER_TSAN
    /// A caller rewriting its buffer while the copy runs (a hostile or racy C app) between text
    /// within the short-text exception and longer text of the same byte length: whatever it
    /// does, what goes out in the clear is text the rule counted, never the longer text. (Left out
    /// of ThreadSanitizer builds: the race on the caller's buffer is the test.)
    @Test("a buffer rewritten during the copy never gets long text out in the clear under the short-text rule")
    func shortTextRuleWritesWhatItCounted() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy, clipboardExceptionLength: 2))
        let short = Array("e\u{301}e\u{301}".utf8) // 6 bytes, 2 characters: in the clear
        let long = Array("abcdef".utf8)               // 6 bytes, 6 characters: sealed
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: short.count, alignment: 8)
        defer { buffer.deallocate() }
        short.withUnsafeBytes { buffer.copyMemory(from: $0) }
        let stop = Atomic<Bool>(false)
        let rewrites = Atomic<Int>(0)
        let finished = DispatchSemaphore(value: 0)
        // The rewriting thread gets the buffer's address (the race is the point of the test). A
        // thread of its own: the shared dispatch pool can be busy with other tests for seconds.
        let address = UInt(bitPattern: buffer.baseAddress)
        let count = buffer.count
        let rewriter = Thread {
            let buffer = UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: address), count: count)
            var flip = false
            while !stop.load(ordering: .relaxed) {
                short.withUnsafeBytes { shortBytes in
                    long.withUnsafeBytes { longBytes in
                        let source = flip ? shortBytes : longBytes
                        // Byte by byte, so a reader can also see a mix of the two.
                        for index in 0..<source.count { buffer[index] = source[index] }
                    }
                }
                flip.toggle()
                rewrites.add(1, ordering: .relaxed)
            }
            finished.signal()
        }
        rewriter.start()
        defer {
            stop.store(true, ordering: .relaxed)
            finished.wait()
        }
        while rewrites.load(ordering: .relaxed) == 0 { sched_yield() }
        var clear = 0
        var sealed = 0
        var leaked: [PasteboardItem] = []
        // At least 20,000 copies, and on until both outcomes were seen (at most 400,000).
        var copies = 0
        while copies < 20_000 || (clear == 0 || sealed == 0) && copies < 400_000 {
            copies += 1
            let result = try fixture.broker.copyResult(BorrowedRepresentation(type: PasteboardItem.textType,
                                                                              bytes: UnsafeRawBufferPointer(buffer)))
            switch result.action {
            case .writeClear:
                clear += 1
                leaked += fixture.pasteboard.read().items.filter { ($0.characterCount(limit: 2) ?? 3) > 2 }
            case .writeSealed: sealed += 1
            case .blocked: Issue.record("blocked: \(result.decision.rule)")
            }
        }
        #expect(leaked.isEmpty, "\(leaked.count) copies wrote more than 2 characters in the clear, e.g. \(leaked.prefix(1))")
        // Both outcomes happened: the rewrites did reach the copies.
        #expect(clear > 0 && sealed > 0, "clear \(clear), sealed \(sealed)")
    }
    #endif
}
