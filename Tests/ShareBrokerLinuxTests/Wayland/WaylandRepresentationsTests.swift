import ShareBroker
@testable import ShareBrokerLinux
import Testing

@Suite("Wayland representations: what a copy offers, what a paste reads")
struct WaylandRepresentationsTests {
    let placeholder = Array("placeholder".utf8)

    @Test("a sealed item is offered as the envelope plus a placeholder per text type, nothing else")
    func sealedOffer() {
        let sealed = PasteboardItem(type: PasteboardItem.sealedType, bytes: [1, 2, 3])
        let offers = WaylandRepresentations.offers(for: [.text("secret"), sealed, PasteboardItem(type: "public.html", bytes: [9])],
                                                   placeholder: placeholder)
        #expect(offers.first == .init(mimeType: WaylandRepresentations.sealedMimeType, bytes: [1, 2, 3]))
        #expect(offers.dropFirst().map(\.mimeType) == WaylandRepresentations.textMimeTypes)
        #expect(offers.dropFirst().allSatisfy { $0.bytes == placeholder })
        #expect(!offers.contains { $0.bytes == Array("secret".utf8) || $0.bytes == [9] })
    }

    @Test("clear items are offered under their MIME types, the first item winning a shared type")
    func clearOffer() {
        let offers = WaylandRepresentations.offers(for: [
            .text("hello"), PasteboardItem(type: "public.html", bytes: [1]), PasteboardItem(type: "image/png", bytes: [2]),
            PasteboardItem(type: "text/plain", bytes: [3]), PasteboardItem(type: "com.acme.private", bytes: [4]),
        ], placeholder: placeholder)
        #expect(offers.map(\.mimeType) == WaylandRepresentations.textMimeTypes + ["text/html", "image/png"])
        #expect(offers.first?.bytes == Array("hello".utf8))
    }

    @Test("a paste reads the sealed type first, then the best text type")
    func readOrder() {
        #expect(WaylandRepresentations.typesToRead(from: ["TEXT", "application/x-sharebroker-sealed", "text/plain"])
                == ["application/x-sharebroker-sealed", "text/plain"])
        #expect(WaylandRepresentations.typesToRead(from: ["STRING", "text/plain;charset=utf-8"]) == ["text/plain;charset=utf-8"])
        #expect(WaylandRepresentations.typesToRead(from: ["x-special/gnome", "image/png"]) == ["image/png"])
        #expect(WaylandRepresentations.typesToRead(from: ["SAVE_TARGETS"]) == [])
        #expect(WaylandRepresentations.itemType(forMimeType: "application/x-sharebroker-sealed") == PasteboardItem.sealedType)
        #expect(WaylandRepresentations.itemType(forMimeType: "UTF8_STRING") == PasteboardItem.textType)
    }

    @Test("no compositor: a clear error, no crash")
    func noCompositor() {
        #expect(throws: WaylandPasteboardError.self) {
            _ = try WaylandPasteboard(configuration: .init(display: "/nonexistent/wayland-sharebroker-test"))
        }
    }
}
