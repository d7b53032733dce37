import ShareBroker
import Testing
import ShareBrokerCrypto

@Suite("Copying several representations of one item")
struct MultiRepresentationCopyTests {
    static let text = PasteboardItem.text("the secret merger plan, Q3")
    static let html = PasteboardItem(type: "public.html", bytes: Array("<b>the secret merger plan</b>, Q3".utf8))

    @Test("the policy decides once for all representations", arguments: [PasteboardPolicy.unauthorized, .authorized, .secureCopy])
    func together(policy: PasteboardPolicy) throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: policy))
        fixture.pasteboard.write([.text("before")])
        let result = try fixture.broker.copyResult([Self.text, Self.html])
        let items = fixture.pasteboard.read().items
        switch policy {
        case .authorized:
            #expect(result.action == .writeClear)
            #expect(items == [Self.text, Self.html])
        case .secureCopy:
            #expect(result.action == .writeSealed)
            #expect(items.count == 2 && items.allSatisfy { $0.type == PasteboardItem.sealedType })
            #expect(items.map { EnvelopeFormat.itemType(ofEnvelope: $0.bytes) } == [PasteboardItem.textType, "public.html"])
            let ring = try fixture.custodian.keyRing(for: "com.acme.notes")
            #expect(try items.map { try ring.open($0.bytes).plaintext } == [Self.text.bytes, Self.html.bytes])
            #expect(fixture.broker.paste() == Self.text, "a paste reads the first representation")
        case .unauthorized:
            #expect(result.action == .blocked)
            #expect(items == [.text("before")], "none of them is written")
        }
    }

    @Test("no representations, duplicate types, a sealed type or too many bytes together are refused, nothing written")
    func refused() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .authorized))
        fixture.pasteboard.write([.text("before")])
        #expect(throws: ShareBrokerError.invalidRepresentations(count: 0)) { try fixture.broker.copyResult([PasteboardItem]()) }
        #expect(throws: ShareBrokerError.invalidRepresentations(count: 2)) { try fixture.broker.copyResult([Self.text, Self.text]) }
        let many = (0...SealedSet.maxEnvelopes).map { PasteboardItem(type: "text/x-\($0)", bytes: [1]) }
        #expect(throws: ShareBrokerError.invalidRepresentations(count: many.count)) { try fixture.broker.copyResult(many) }
        #expect(throws: ShareBrokerError.invalidItemType) {
            try fixture.broker.copyResult([Self.text, PasteboardItem(type: PasteboardItem.sealedType, bytes: [1])])
        }
        let half = [UInt8](repeating: 7, count: EnvelopeFormat.maxPlaintextSize / 2 + 1)
        #expect(throws: ShareBrokerError.itemTooLarge(size: half.count * 2, limit: EnvelopeFormat.maxPlaintextSize)) {
            try fixture.broker.copyResult([PasteboardItem(type: "text/a", bytes: half), PasteboardItem(type: "text/b", bytes: half)])
        }
        #expect(fixture.pasteboard.read().items == [.text("before")])
    }
}
