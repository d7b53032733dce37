import Glibc
import ShareBroker
@testable import ShareBrokerLinux
import Testing
import ShareBrokerCrypto
import ShareBrokerPOSIX

/// What a Wayland copy offers and what a paste makes of what it read, without a compositor.
@Suite("Wayland representations: what a copy offers, what a paste reads")
struct WaylandRepresentationsTests {
    @Test("a sealed copy offers the sealed set and the placeholder under the text types only, as on X11")
    func sealedOffer() throws {
        let ring = try KeyRing.generate()
        let text = PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal(Array("secret text".utf8), itemType: PasteboardItem.textType))
        let png = PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal([0x89, 0x50, 0x4e, 0x47], itemType: "public.png"))
        let offers = try WaylandRepresentations.offers(for: [text, png], placeholder: "nope")
        #expect(offers.first?.mimeType == SealedSet.targetName)
        #expect(try SealedSet.decode(offers.first?.bytes ?? []) == [text.bytes, png.bytes])
        #expect(Set(offers.dropFirst().map(\.mimeType)) == Set(DesktopOffer.textTargets + DesktopOffer.passwordManagerHintTargets))
        #expect(offers.dropFirst().allSatisfy { $0.bytes == Array("nope".utf8) || DesktopOffer.passwordManagerHintTargets.contains($0.mimeType) })
        #expect(offers.suffix(2).map(\.mimeType) == DesktopOffer.passwordManagerHintTargets)
        #expect(offers.suffix(2).allSatisfy { $0.bytes == Array("secret".utf8) }, "the clipboard-manager hint says secret")
        #expect(!offers.contains { $0.mimeType == "image/png" }, "a non-text representation is offered only sealed")
        let x11 = try DesktopOffer.offer(for: [text, png], placeholder: "nope").targets
        #expect(offers == x11.map { WaylandRepresentations.Offer(mimeType: $0.name, bytes: $0.bytes) }, "the same offer as the X11 adapter's")
    }

    @Test("clear items are offered under their MIME types; a sealed item mixed with clear ones is refused")
    func clearOffer() throws {
        let offers = try WaylandRepresentations.offers(for: [
            .text("hello"), PasteboardItem(type: "public.html", bytes: [1]), PasteboardItem(type: "image/png", bytes: [2]),
        ], placeholder: "p")
        #expect(Set(offers.map(\.mimeType)) == Set(DesktopOffer.textTargets + ["text/html", "image/png"] + DesktopOffer.passwordManagerHintTargets))
        #expect(offers.first { $0.mimeType == "text/plain" }?.bytes == Array("hello".utf8))
        let ring = try KeyRing.generate()
        let sealed = PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal([1, 2, 3], itemType: PasteboardItem.textType))
        #expect(throws: WaylandPasteboardError.self) { try WaylandRepresentations.offers(for: [sealed, .text("clear")], placeholder: "p") }
        #expect(throws: WaylandPasteboardError.self) {
            try WaylandRepresentations.offers(for: [PasteboardItem(type: "com.acme.private", bytes: [4])], placeholder: "p")
        }
    }

    @Test("a paste reads the sealed set and the best text type; else one known type")
    func readOrder() {
        #expect(DesktopOffer.typesToRead(from: ["TEXT", SealedSet.targetName, "text/plain"]) == [SealedSet.targetName, "text/plain"])
        #expect(DesktopOffer.typesToRead(from: ["STRING", "text/plain;charset=utf-8"]) == ["text/plain;charset=utf-8"])
        #expect(DesktopOffer.typesToRead(from: ["x-special/gnome", "image/png"]) == ["image/png"])
        #expect(DesktopOffer.typesToRead(from: ["SAVE_TARGETS", "x-special/gnome"]) == [])
    }

    @Test("a sealed set reads as its envelopes then the placeholder; a broken set is an error, never the placeholder")
    func readItems() throws {
        let set = SealedSet.encode([[1, 2, 3], [4]])
        let items = try DesktopOffer.items(from: [(SealedSet.targetName, set), ("text/plain", Array("placeholder".utf8))])
        #expect(items == [PasteboardItem(type: PasteboardItem.sealedType, bytes: [1, 2, 3]),
                          PasteboardItem(type: PasteboardItem.sealedType, bytes: [4]), .text("placeholder")])
        for cut in 0..<set.count {
            #expect(throws: SealedSet.DecodingError.self, "cut at \(cut)") {
                try DesktopOffer.items(from: [(SealedSet.targetName, Array(set.prefix(cut))), ("text/plain", Array("p".utf8))])
            }
        }
        #expect(try DesktopOffer.items(from: [("STRING", [0x63, 0x61, 0x66, 0xE9])]) == [.text("café")], "Latin-1 STRING")
        #expect(try DesktopOffer.items(from: [("STRING", Array("café".utf8))]) == [.text("café")], "UTF-8 STRING as wl-copy serves it")
        #expect(try DesktopOffer.items(from: [("image/png", [9])]) == [PasteboardItem(type: "public.png", bytes: [9])])
    }

    @Test("ext data-control is bound when offered, wlr is the fallback; with neither the error names both and the way out")
    func dataControlChoice() {
        #expect(DataControlProtocol.preferred(among: [.ext, .wlr]) == .ext)
        #expect(DataControlProtocol.preferred(among: [.ext]) == .ext)
        #expect(DataControlProtocol.preferred(among: [.wlr]) == .wlr)
        #expect(DataControlProtocol.preferred(among: []) == nil)
        #expect(DataControlProtocol.ext.interfaceName == "ext_data_control_manager_v1")
        #expect(DataControlProtocol.wlr.interfaceName == "zwlr_data_control_manager_v1")
        let message = WaylandPasteboardError.noDataControl.description
        for words in ["ext_data_control_manager_v1", "zwlr_data_control_manager_v1", "DISPLAY", "Xwayland", "--pasteboard"] {
            #expect(message.contains(words), "the message says \(words)")
        }
    }

    @Test("no compositor: a clear error, no crash")
    func noCompositor() {
        #expect(throws: WaylandPasteboardError.self) {
            _ = try WaylandPasteboard(configuration: .init(display: "/nonexistent/wayland-sharebroker-test"))
        }
    }
}

/// The pipe transfers both directions use, without a compositor.
@Suite("Wayland pipe transfers: bounded in size and time, a vanished reader ends the serving")
struct WaylandTransferTests {
    static func pipePair() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw HarnessError("pipe failed") }
        return (fds[0], fds[1])
    }

    @Test("a reader that closes its end ends the serving at once (EPIPE, no SIGPIPE)")
    func vanishedReader() async throws {
        let (readEnd, writeEnd) = try Self.pipePair()
        close(readEnd)
        let served = await withCheckedContinuation { continuation in
            // As the adapter starts a transfer: a thread of its own with SIGPIPE blocked.
            DetachedThread.start(name: "test-transfer") {
                blockSIGPIPE()
                continuation.resume(returning: serveAndClose(writeEnd, [UInt8](repeating: 1, count: 1 << 20), idleTimeout: .seconds(5)))
            }
        }
        #expect(!served)
    }

    @Test("a reader that stops reading is dropped after the idle timeout")
    func stalledReader() throws {
        let (readEnd, writeEnd) = try Self.pipePair()
        defer { close(readEnd) }
        let start = ContinuousClock.now
        #expect(!serveAndClose(writeEnd, [UInt8](repeating: 1, count: 1 << 20), idleTimeout: .milliseconds(200)))
        #expect(ContinuousClock.now - start < .seconds(3))
    }

    @Test("reading stops at the size limit, the idle timeout and the deadline")
    func boundedRead() throws {
        var (readEnd, writeEnd) = try Self.pipePair()
        #expect(write(writeEnd, [UInt8](repeating: 7, count: 100), 100) == 100)
        close(writeEnd)
        #expect(readAllAndClose(readEnd, limit: 99, idleTimeout: .seconds(1)) == .tooLarge)

        (readEnd, writeEnd) = try Self.pipePair()
        #expect(write(writeEnd, [UInt8](repeating: 7, count: 100), 100) == 100)
        close(writeEnd)
        #expect(readAllAndClose(readEnd, limit: 100, idleTimeout: .seconds(1)) == .complete([UInt8](repeating: 7, count: 100)))

        (readEnd, writeEnd) = try Self.pipePair()
        defer { close(writeEnd) }
        let start = ContinuousClock.now
        #expect(readAllAndClose(readEnd, limit: 100, idleTimeout: .seconds(5), deadline: .now + .milliseconds(200)) == .timedOut)
        #expect(ContinuousClock.now - start < .seconds(3), "the deadline wins over the idle timeout")
    }
}
