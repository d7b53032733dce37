import ShareBroker
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
            html.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            plain.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
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
                #expect(throws: ShareBrokerError.self) {
                    try fixture.broker.copyResult(types.map { BorrowedRepresentation(type: $0, bytes: raw) })
                }
            }
        }
        #expect(fixture.pasteboard.read().items == [.text("kept")])
    }
}
