import Foundation
import PropertyBased
import ShareBroker
@testable import ShareBrokerLinux
import Testing
import ShareBrokerCrypto
import ShareBrokerTesting

/// The X11 clipboard adapter against a private Xvfb and the real `xclip` / `xsel`.
@Suite("X11 clipboard against Xvfb, xclip and xsel", .serialized, .enabled(if: X11Tools.available, X11Tools.skipReason))
struct X11ClipboardTests {
    static let secret = "Q3 merger plan: acquire Initech for 41 million, announce on the 14th"
    static let html = "<p><b>Q3 merger plan</b>: acquire Initech for 41 million</p>"
    static let notes = "com.acme.notes"
    static let viewer = "com.acme.viewer"

    static func representations(_ text: String = secret, html: String = html) -> [PasteboardItem] {
        [.text(text), PasteboardItem(type: "public.html", bytes: Array(html.utf8))]
    }

    /// Everything an unmanaged client can read of the clipboard and primary selections.
    static func everythingReadable(on display: XvfbDisplay) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        out["clipboard"] = try display.xclipOut()
        out["clipboard TARGETS"] = try display.xclipOut(target: "TARGETS")
        out["clipboard text/html"] = try display.xclipOut(target: "text/html")
        out["clipboard STRING"] = try display.xclipOut(target: "STRING")
        out["clipboard sealed"] = try display.xclipOut(target: SealedSet.targetName)
        out["primary"] = try display.xclipOut("primary")
        out["primary text/html"] = try display.xclipOut("primary", target: "text/html")
        out["xsel -b"] = try display.xselOut("-b")
        out["xsel -p"] = try display.xselOut("-p")
        return out
    }

    @Test("each policy: xclip and xsel read the clear item, the placeholder and sealed bytes, or the previous contents")
    func policies() throws {
        for policy in [PasteboardPolicy.authorized, .secureCopy, .unauthorized] {
            let display = try XvfbDisplay()
            let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
            try display.xclipIn("what was there before")
            try display.xclipIn("selected before", selection: "primary")
            let app = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: policy)
            let result = try app.broker.copyResult(Self.representations())
            let seen = try Self.everythingReadable(on: display)
            let placeholder = Array(ServerConfigKey.defaultClipboardPlaceholder.utf8)
            if policy != .unauthorized {
                // Every managed offer tells clipboard managers (KeePassXC, Klipper, CopyQ) to keep it out of their history.
                for hint in DesktopOffer.passwordManagerHintTargets {
                    #expect(try display.xclipOut(target: hint) == Array("secret".utf8), "\(policy): \(hint)")
                    #expect(try display.xclipOut("primary", target: hint) == Array("secret".utf8), "\(policy): primary \(hint)")
                }
                // TEXT is answered in the encoding actually sent (ICCCM 2.7.1), never with the type TEXT.
                let reader = try SelectionReader(display: display.name, limit: 1 << 20)
                let text = try reader.convert(reader.conn.atom("CLIPBOARD"), target: reader.conn.atom("TEXT"), timeout: .seconds(2))
                #expect(text?.type == reader.conn.atom("UTF8_STRING"), "\(policy): TEXT's property type")
                #expect(text?.bytes == (policy == .authorized ? Array(Self.secret.utf8) : placeholder), "\(policy): TEXT's bytes")
            }
            switch policy {
            case .authorized:
                #expect(result.action == .writeClear)
                #expect(seen["clipboard"] == Array(Self.secret.utf8))
                #expect(seen["clipboard text/html"] == Array(Self.html.utf8))
                #expect(seen["xsel -b"] == Array(Self.secret.utf8))
                #expect(seen["primary"] == Array(Self.secret.utf8))
                #expect(seen["clipboard sealed"]?.isEmpty == true)
                #expect(String(decoding: seen["clipboard TARGETS"] ?? [], as: UTF8.self).contains("UTF8_STRING"))
            case .secureCopy:
                #expect(result.action == .writeSealed)
                for key in ["clipboard", "clipboard text/html", "clipboard STRING", "primary", "primary text/html", "xsel -b", "xsel -p"] {
                    #expect(seen[key] == placeholder, "\(key) must read exactly the placeholder")
                }
                let own = app.pasteboard.read().items
                #expect(own.count == 2 && own.allSatisfy { $0.type == PasteboardItem.sealedType })
                #expect(seen["clipboard sealed"] == SealedSet.encode(own.map(\.bytes)), "the sealed target is exactly the sealed set")
                let targets = String(decoding: seen["clipboard TARGETS"] ?? [], as: UTF8.self)
                #expect(targets.contains(SealedSet.targetName) && targets.contains("UTF8_STRING") && targets.contains("text/html"))
                #expect(!targets.contains("image/png"))
            case .unauthorized:
                #expect(result.action == .blocked)
                #expect(seen["clipboard"] == Array("what was there before".utf8))
                #expect(seen["xsel -b"] == Array("what was there before".utf8))
                #expect(seen["primary"] == Array("selected before".utf8))
                #expect(!app.pasteboard.ownsClipboard)
            }
            if policy != .authorized {
                for (key, bytes) in seen {
                    #expect(!bytes.containsRun(of: Array(Self.secret.utf8)), "\(key) leaks plaintext under \(policy)")
                    #expect(!bytes.containsRun(of: Array(Self.html.utf8)), "\(key) leaks HTML under \(policy)")
                }
            }
            app.pasteboard.close(handOffTimeout: .zero)
        }
    }

    @Test("property: no 8-byte run of a random SecureCopy text is readable by xclip or xsel")
    func noPlaintextRuns() async throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .secureCopy,
                                    config: [ServerConfigKey.clipboardPlaceholder: "Pasting is managed by Acme IT."])
        defer { app.pasteboard.close(handOffTimeout: .zero) }
        let placeholder = Array("Pasting is managed by Acme IT.".utf8)
        await propertyCheck(count: 12, input: Gen.character(in: " "..."\u{04FF}").string(of: 8...300)) { text in
            do {
                let plaintext = Array(text.utf8)
                let result = try app.broker.copyResult(Self.representations(text, html: "<i>\(text)</i>"))
                #expect(result.action == .writeSealed)
                let seen = try Self.everythingReadable(on: display)
                #expect(seen["clipboard"] == placeholder, "the configured placeholder")
                for (key, bytes) in seen {
                    #expect(!bytes.containsRun(of: plaintext), "\(key) leaks an 8-byte run")
                }
                #expect(app.broker.paste() == .text(text), "the owner itself still pastes its item")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test("a second managed app pastes a SecureCopy item; a retired or unregistered app does not; the retired owner lets go")
    func secondApp() throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes, Self.viewer])
        let notes = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .secureCopy)
        let viewer = try ManagedX11App(Self.viewer, display: display, custodian: custodian, policy: .authorized)
        let stranger = try ManagedX11App("com.example.stranger", display: display, custodian: custodian, policy: .authorized)
        defer { [notes, viewer, stranger].forEach { $0.pasteboard.close(handOffTimeout: .zero) } }
        #expect(try notes.broker.copyResult(Self.representations()).action == .writeSealed)
        #expect(viewer.broker.paste() == .text(Self.secret), "an entitled app opens the sealed target")
        let placeholder = PasteboardItem.text(ServerConfigKey.defaultClipboardPlaceholder)
        #expect(stranger.broker.paste() == placeholder, "an app the custodian does not entitle pastes the placeholder, as unmanaged apps do")
        try viewer.broker.apply(PolicyUpdate(auth: .retired))
        #expect(viewer.broker.paste() == placeholder, "a retired app pastes the placeholder, not the item")
        // Only the sealed representations: nothing opens without the keys.
        let sealedOnly = try viewer.pasteboard.readSelection("CLIPBOARD").filter { $0.type == PasteboardItem.sealedType }
        #expect(sealedOnly.count == 2)
        #expect(PasteboardReader.readable(sealedOnly, keyRing: nil) == nil)
        // The owner is retired: it releases the clipboard it still owns.
        try notes.broker.apply(PolicyUpdate(auth: .retired))
        #expect(!notes.pasteboard.ownsClipboard)
        #expect(try display.xclipOut().isEmpty, "nobody owns the clipboard after the retire")
    }

    @Test("retire leaves alone a clipboard another app copied to since")
    func retireAfterOtherCopy() throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let notes = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .secureCopy)
        defer { notes.pasteboard.close(handOffTimeout: .zero) }
        #expect(try notes.broker.copyResult(.text(Self.secret)).action == .writeSealed)
        try display.xclipIn("someone else's text")
        try notes.broker.apply(PolicyUpdate(auth: .retired))
        #expect(try display.xclipOut() == Array("someone else's text".utf8))
    }

    @Test("xclip -i content pastes into a managed app in the clear")
    func pasteFromUnmanaged() throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .secureCopy)
        defer { app.pasteboard.close(handOffTimeout: .zero) }
        try display.xclipIn("public lunch menu: soup")
        #expect(app.broker.paste() == .text("public lunch menu: soup"))
        #expect(try app.pasteboard.readSelection("CLIPBOARD") == [.text("public lunch menu: soup")])
    }

    @Test("16 MiB round-trips through INCR to xclip and to a second managed app")
    func incr() throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes, Self.viewer])
        let big = [UInt8](unsafeUninitializedCapacity: 16 << 20) { buffer, count in
            let fd = open("/dev/urandom", O_RDONLY)
            var done = 0
            while fd >= 0 && done < buffer.count {
                let n = read(fd, buffer.baseAddress! + done, buffer.count - done)
                if n <= 0 { break }
                done += n
            }
            close(fd)
            count = done
        }
        let item = PasteboardItem(type: PasteboardItem.textType, bytes: big)
        let clear = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .authorized)
        #expect(try clear.broker.copyResult(item).action == .writeClear)
        #expect(try display.run(X11Tools.xclip, ["-o", "-selection", "clipboard"], timeout: .seconds(30)).output == big, "xclip reads 16 MiB through INCR")
        clear.pasteboard.close(handOffTimeout: .zero)
        let sealed = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .secureCopy)
        let viewer = try ManagedX11App(Self.viewer, display: display, custodian: custodian, policy: .authorized)
        defer { [sealed, viewer].forEach { $0.pasteboard.close(handOffTimeout: .zero) } }
        #expect(try sealed.broker.copyResult(item).action == .writeSealed)
        #expect(viewer.broker.paste() == item, "16 MiB sealed, through INCR, opened by the second app")
    }

    @Test("a requestor that stops reading mid-transfer does not hang the owner")
    func stalledRequestor() throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .authorized,
                                    transferTimeout: .milliseconds(700))
        defer { app.pasteboard.close(handOffTimeout: .zero) }
        let big = [UInt8](repeating: UInt8(ascii: "z"), count: 16 << 20)
        #expect(try app.broker.copyResult(PasteboardItem(type: PasteboardItem.textType, bytes: big)).action == .writeClear)
        // A reader that starts an INCR transfer and then stops.
        guard let xclip = X11Tools.xclip else { return }
        let stalled = try display.start(xclip, ["-o", "-selection", "clipboard"])
        defer { stalled.kill() }
        let started = Date()
        while app.pasteboard.activeTransfers == 0 && Date().timeIntervalSince(started) < 5 { usleep(1_000) }
        stalled.signal(SIGSTOP)
        #expect(app.pasteboard.activeTransfers == 1, "the transfer started")
        // The owner keeps serving others and keeps copying meanwhile.
        let start = ContinuousClock.now
        #expect(try display.xclipOut(target: "TARGETS").isEmpty == false)
        #expect(try app.broker.copyResult(.text("next item")).action == .writeClear)
        #expect(try display.xclipOut() == Array("next item".utf8))
        #expect(ContinuousClock.now - start < .seconds(3))
        // And drops the stalled transfer after its timeout.
        let waitStart = Date()
        while app.pasteboard.activeTransfers > 0 && Date().timeIntervalSince(waitStart) < 5 { usleep(10_000) }
        #expect(app.pasteboard.activeTransfers == 0, "the stalled transfer was dropped")
    }

    @Test("secure services down: the copy fails and the clipboard keeps its previous owner and contents")
    func servicesDown() throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .secureCopy)
        defer { app.pasteboard.close(handOffTimeout: .zero) }
        try display.xclipIn("what was there before")
        let targetsBefore = try display.xclipOut(target: "TARGETS")
        custodian.setAvailability(.unavailable)
        try app.broker.setSecureServices(.unavailable)
        let result = try app.broker.copyResult(Self.representations())
        #expect(result.action == .blocked)
        #expect(!app.pasteboard.ownsClipboard)
        #expect(try display.xclipOut() == Array("what was there before".utf8))
        #expect(try display.xclipOut(target: "TARGETS") == targetsBefore, "still xclip's offer")
    }

    @Test("owner exits: a clipboard manager keeps the item sealed; without one it is gone")
    func ownerExits() throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes, Self.viewer])
        let manager = try TestClipboardManager(display: display.name)
        let notes = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .secureCopy)
        #expect(try notes.broker.copyResult(Self.representations()).action == .writeSealed)
        let sealedSet = try display.xclipOut(target: SealedSet.targetName)
        #expect(notes.pasteboard.close(), "the manager confirmed SAVE_TARGETS")
        #expect(manager.saved.names.withLock { $0 }.contains(SealedSet.targetName))
        #expect(try display.xclipOut(target: SealedSet.targetName) == sealedSet, "the manager serves the sealed set")
        #expect(try display.xclipOut() == Array(ServerConfigKey.defaultClipboardPlaceholder.utf8))
        for (key, bytes) in try Self.everythingReadable(on: display) {
            #expect(!bytes.containsRun(of: Array(Self.secret.utf8)), "\(key) leaks after the hand-off")
        }
        let viewer = try ManagedX11App(Self.viewer, display: display, custodian: custodian, policy: .authorized)
        #expect(viewer.broker.paste() == .text(Self.secret), "the saved item still opens for a managed app")
        viewer.pasteboard.close(handOffTimeout: .zero)
        manager.stop()

        // Without a manager: the item goes with its owner.
        let other = try XvfbDisplay()
        let lonely = try ManagedX11App(Self.notes, display: other, custodian: custodian, policy: .secureCopy)
        #expect(try lonely.broker.copyResult(.text(Self.secret)).action == .writeSealed)
        #expect(try other.xclipOut() == Array(ServerConfigKey.defaultClipboardPlaceholder.utf8))
        #expect(!lonely.pasteboard.close(handOffTimeout: .milliseconds(300)), "no manager to hand off to")
        #expect(try other.xclipOut().isEmpty && other.xclipOut(target: SealedSet.targetName).isEmpty)
    }
}

/// The offer and the sealed-set codec, without a display.
@Suite("X11 offer and sealed set")
struct X11OfferTests {
    @Test("a sealed copy offers the sealed set and placeholders for its text representations only")
    func sealedOffer() throws {
        let ring = try KeyRing.generate()
        let text = PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal(Array("secret text".utf8), itemType: PasteboardItem.textType))
        let png = PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal([0x89, 0x50, 0x4e, 0x47], itemType: "public.png"))
        let offer = try DesktopOffer.offer(for: [text, png], placeholder: "nope")
        let names = offer.targets.map(\.name)
        #expect(names.first == SealedSet.targetName)
        #expect(Set(names) == Set([SealedSet.targetName] + DesktopOffer.textTargets + DesktopOffer.passwordManagerHintTargets))
        for target in offer.targets.dropFirst() where !DesktopOffer.passwordManagerHintTargets.contains(target.name) {
            #expect(target.bytes == Array("nope".utf8))
        }
        #expect(try SealedSet.decode(offer.targets[0].bytes) == [text.bytes, png.bytes])
        let onlyImage = try DesktopOffer.offer(for: [png], placeholder: "nope")
        #expect(onlyImage.targets.map(\.name) == [SealedSet.targetName] + DesktopOffer.passwordManagerHintTargets,
                "no placeholder without a text representation")
    }

    @Test("a sealed item mixed with clear ones is refused")
    func mixed() throws {
        let ring = try KeyRing.generate()
        let sealed = PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal([1, 2, 3], itemType: PasteboardItem.textType))
        #expect(throws: DesktopOffer.Unsupported.self) { try DesktopOffer.offer(for: [sealed, .text("clear")], placeholder: "p") }
    }

    @Test("truncated, oversized or padded sealed sets are refused")
    func sealedSetDecoding() throws {
        let set = SealedSet.encode([[1, 2, 3], [4]])
        #expect(try SealedSet.decode(set) == [[1, 2, 3], [4]])
        for cut in 0..<set.count {
            #expect(throws: SealedSet.DecodingError.self) { try SealedSet.decode(Array(set[0..<cut])) }
        }
        #expect(throws: SealedSet.DecodingError.self) { try SealedSet.decode(set + [0]) }
        #expect(throws: SealedSet.DecodingError.self) { try SealedSet.decode(SealedSet.magic + [1, 0, 0]) }
        #expect(throws: SealedSet.DecodingError.tooLarge(size: SealedSet.maxSize + 1)) {
            try SealedSet.decode([UInt8](repeating: 0, count: SealedSet.maxSize + 1))
        }
    }
}
