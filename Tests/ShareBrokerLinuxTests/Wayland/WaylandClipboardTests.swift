import Foundation
import PropertyBased
import ShareBroker
@testable import ShareBrokerLinux
import Testing
import ShareBrokerCrypto
import ShareBrokerTesting

/// The Wayland clipboard adapter against a headless sway each test starts itself and the real
/// `wl-copy` / `wl-paste` (wl-clipboard).
@Suite("Wayland clipboard against a headless sway and wl-clipboard", .serialized, .enabled(if: WaylandTools.available, WaylandTools.skipReason))
struct WaylandClipboardTests {
    static let secret = "Q3 merger plan: acquire Initech for 41 million, announce on the 14th"
    static let html = "<p><b>Q3 merger plan</b>: acquire Initech for 41 million</p>"
    static let notes = "com.acme.notes"
    static let viewer = "com.acme.viewer"
    static let placeholder = Array(ServerConfigKey.defaultClipboardPlaceholder.utf8)

    static func representations(_ text: String = secret, html: String = html) -> [PasteboardItem] {
        [.text(text), PasteboardItem(type: "public.html", bytes: Array(html.utf8))]
    }

    /// Everything an unmanaged client can read of the clipboard and the primary selection.
    static func everythingReadable(on sway: SwayHeadless) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        out["clipboard"] = try sway.pasted()
        out["clipboard types"] = Array(try sway.types().joined(separator: "\n").utf8)
        out["clipboard text/html"] = try sway.pasted(["--type", "text/html"])
        out["clipboard STRING"] = try sway.pasted(["--type", "STRING"])
        out["clipboard text/plain"] = try sway.pasted(["--type", "text/plain"])
        out["clipboard sealed"] = try sway.pasted(["--type", SealedSet.targetName])
        out["primary"] = try sway.pasted(["--primary"])
        out["primary types"] = Array(try sway.types(["--primary"]).joined(separator: "\n").utf8)
        out["primary text/html"] = try sway.pasted(["--primary", "--type", "text/html"])
        out["primary sealed"] = try sway.pasted(["--primary", "--type", SealedSet.targetName])
        return out
    }

    @Test("each policy: wl-paste reads the clear item, the placeholder and sealed bytes, or the previous contents",
          arguments: [PasteboardPolicy.authorized, .secureCopy, .unauthorized])
    func policies(policy: PasteboardPolicy) throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        try sway.copy(Array("what was there before".utf8))
        try sway.copy(Array("selected before".utf8), primary: true)
        let app = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: policy)
        defer { app.pasteboard.close() }
        #expect(app.pasteboard.governsPrimary, "sway offers data-control version 2 (primary selection)")
        #expect(app.pasteboard.dataControlProtocol == .wlr, "sway 1.7 offers only wlr data-control: the fallback is bound")
        let result = try app.broker.copyResult(Self.representations())
        let seen = try Self.everythingReadable(on: sway)
        let types = Set(String(decoding: seen["clipboard types"] ?? [], as: UTF8.self).split(separator: "\n").map(String.init))
        if policy != .unauthorized {
            // Every managed offer tells clipboard managers (KeePassXC, Klipper, CopyQ, cliphist) to keep it out of their history.
            for hint in DesktopOffer.passwordManagerHintTargets {
                #expect(try sway.pasted(["--type", hint]) == Array("secret".utf8), "\(policy): \(hint)")
                #expect(try sway.pasted(["--primary", "--type", hint]) == Array("secret".utf8), "\(policy): primary \(hint)")
            }
        }
        switch policy {
        case .authorized:
            #expect(result.action == .writeClear)
            #expect(seen["clipboard"] == Array(Self.secret.utf8))
            #expect(seen["clipboard text/html"] == Array(Self.html.utf8))
            #expect(seen["primary"] == Array(Self.secret.utf8))
            #expect(seen["clipboard sealed"]?.isEmpty == true)
            #expect(types == Set(DesktopOffer.textTargets + ["text/html"] + DesktopOffer.passwordManagerHintTargets))
        case .secureCopy:
            #expect(result.action == .writeSealed)
            for key in ["clipboard", "clipboard text/html", "clipboard STRING", "clipboard text/plain", "primary", "primary text/html"] {
                #expect(seen[key] == Self.placeholder, "\(key) must read exactly the placeholder")
            }
            let own = app.pasteboard.read().items.filter { $0.type == PasteboardItem.sealedType }
            #expect(own.count == 2)
            #expect(seen["clipboard sealed"] == SealedSet.encode(own.map(\.bytes)), "the sealed type is exactly the sealed set")
            #expect(seen["primary sealed"] == seen["clipboard sealed"])
            #expect(types == Set([SealedSet.targetName, "text/html"] + DesktopOffer.textTargets + DesktopOffer.passwordManagerHintTargets))
            #expect(!types.contains("image/png"))
            // The sealed set opens, with the group's keys, to exactly what was copied.
            let ring = try custodian.keyRing(for: Self.notes)
            let opened = try SealedSet.decode(seen["clipboard sealed"] ?? []).map { try ring.open($0) }
            #expect(opened.map(\.itemType) == [PasteboardItem.textType, "public.html"])
            #expect(opened.map(\.plaintext) == [Array(Self.secret.utf8), Array(Self.html.utf8)])
        case .unauthorized:
            #expect(result.action == .blocked)
            #expect(seen["clipboard"] == Array("what was there before".utf8))
            #expect(seen["primary"] == Array("selected before".utf8))
            #expect(!types.contains(SealedSet.targetName))
            #expect(!app.pasteboard.ownsClipboard)
        }
        if policy != .authorized {
            for (key, bytes) in seen {
                #expect(!bytes.containsRun(of: Array(Self.secret.utf8)), "\(key) leaks plaintext under \(policy)")
                #expect(!bytes.containsRun(of: Array(Self.html.utf8)), "\(key) leaks HTML under \(policy)")
            }
        }
    }

    @Test("property: no 8-byte run of a random SecureCopy text is readable by wl-paste")
    func noPlaintextRuns() async throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .secureCopy,
                                        config: [ServerConfigKey.clipboardPlaceholder: "Pasting is managed by Acme IT."])
        defer { app.pasteboard.close() }
        let placeholder = Array("Pasting is managed by Acme IT.".utf8)
        await propertyCheck(count: 10, input: Gen.character(in: " "..."\u{04FF}").string(of: 8...300)) { text in
            do {
                let plaintext = Array(text.utf8)
                let result = try app.broker.copyResult(Self.representations(text, html: "<i>\(text)</i>"))
                #expect(result.action == .writeSealed)
                let seen = try Self.everythingReadable(on: sway)
                #expect(seen["clipboard"] == placeholder, "the configured placeholder")
                #expect(seen["primary"] == placeholder, "the configured placeholder")
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
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes, Self.viewer])
        let notes = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .secureCopy)
        let viewer = try ManagedWaylandApp(Self.viewer, sway: sway, custodian: custodian, policy: .authorized)
        let stranger = try ManagedWaylandApp("com.example.stranger", sway: sway, custodian: custodian, policy: .authorized)
        defer { [notes, viewer, stranger].forEach { $0.pasteboard.close() } }
        #expect(try notes.broker.copyResult(Self.representations()).action == .writeSealed)
        #expect(viewer.broker.paste() == .text(Self.secret), "an entitled app opens the sealed set")
        let placeholder = PasteboardItem.text(ServerConfigKey.defaultClipboardPlaceholder)
        #expect(stranger.broker.paste() == placeholder, "an app the custodian does not entitle pastes the placeholder, as unmanaged apps do")
        try viewer.broker.apply(PolicyUpdate(auth: .retired))
        #expect(viewer.broker.paste() == placeholder, "a retired app pastes the placeholder, not the item")
        // Only the sealed representations: nothing opens without the keys.
        let sealedOnly = try viewer.pasteboard.readSelection().filter { $0.type == PasteboardItem.sealedType }
        #expect(sealedOnly.count == 2)
        #expect(PasteboardReader.readable(sealedOnly, keyRing: nil) == nil)
        #expect(try viewer.pasteboard.readSelection(.primary).filter { $0.type == PasteboardItem.sealedType } == sealedOnly,
                "the primary selection carries the same sealed set")
        // The owner is retired: it releases the selections it still owns.
        try notes.broker.apply(PolicyUpdate(auth: .retired))
        #expect(!notes.pasteboard.ownsClipboard)
        #expect(try sway.types().isEmpty, "nobody offers the clipboard after the retire")
        #expect(try sway.types(["--primary"]).isEmpty, "nor the primary selection")
    }

    @Test("retire leaves alone a clipboard another app copied to since")
    func retireAfterOtherCopy() throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let notes = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .secureCopy)
        defer { notes.pasteboard.close() }
        #expect(try notes.broker.copyResult(.text(Self.secret)).action == .writeSealed)
        try sway.copy(Array("someone else's text".utf8))
        #expect(!notes.pasteboard.ownsClipboard)
        try notes.broker.apply(PolicyUpdate(auth: .retired))
        #expect(try sway.pasted() == Array("someone else's text".utf8))
    }

    @Test("wl-copy content pastes into a managed app in the clear")
    func pasteFromUnmanaged() throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .secureCopy)
        defer { app.pasteboard.close() }
        try sway.copy(Array("public lunch menu: soup".utf8))
        #expect(app.broker.paste() == .text("public lunch menu: soup"))
        #expect(try app.pasteboard.readSelection() == [.text("public lunch menu: soup")])
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        try sway.copy(png, type: "image/png")
        #expect(app.broker.paste() == PasteboardItem(type: "public.png", bytes: png))
        try sway.copy(Array("middle click".utf8), primary: true)
        #expect(try app.pasteboard.readSelection(.primary) == [.text("middle click")])
    }

    @Test("16 MiB round-trips to wl-paste in the clear and sealed to a second managed app")
    func largeItems() throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes, Self.viewer])
        let big = randomBytes(16 << 20)
        let item = PasteboardItem(type: PasteboardItem.textType, bytes: big)
        let clear = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .authorized)
        #expect(try clear.broker.copyResult(item).action == .writeClear)
        #expect(try sway.paste(["--no-newline", "--type", "text/plain"], timeout: .seconds(20)).output == big, "wl-paste reads 16 MiB")
        clear.pasteboard.close()
        let sealed = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .secureCopy)
        let viewer = try ManagedWaylandApp(Self.viewer, sway: sway, custodian: custodian, policy: .authorized)
        defer { [sealed, viewer].forEach { $0.pasteboard.close() } }
        #expect(try sealed.broker.copyResult(item).action == .writeSealed)
        #expect(viewer.broker.paste() == item, "16 MiB sealed, through a pipe, opened by the second app")
    }

    @Test("a reader that stops reading mid-transfer does not hang the owner")
    func stalledReader() throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .authorized,
                                        transferTimeout: .milliseconds(700))
        defer { app.pasteboard.close() }
        let big = [UInt8](repeating: UInt8(ascii: "z"), count: 16 << 20)
        #expect(try app.broker.copyResult(PasteboardItem(type: PasteboardItem.textType, bytes: big)).action == .writeClear)
        // wl-paste starts reading, then stops (its own output is never read, and it is stopped).
        guard let wlPaste = WaylandTools.wlPaste else { return }
        let stalled = try sway.start(wlPaste, ["--no-newline", "--type", "text/plain"])
        defer { stalled.kill() }
        let started = ContinuousClock.now
        while app.pasteboard.activeTransfers == 0 && ContinuousClock.now - started < .seconds(5) { usleep(1_000) }
        stalled.signal(SIGSTOP)
        #expect(app.pasteboard.activeTransfers == 1, "the transfer started")
        // The owner keeps serving others and keeps copying meanwhile.
        let start = ContinuousClock.now
        #expect(try !sway.types().isEmpty)
        #expect(try app.broker.copyResult(.text("next item")).action == .writeClear)
        #expect(try sway.pasted() == Array("next item".utf8))
        #expect(ContinuousClock.now - start < .seconds(3))
        // And drops the stalled transfer after its timeout.
        let waitStart = ContinuousClock.now
        while app.pasteboard.activeTransfers > 0 && ContinuousClock.now - waitStart < .seconds(5) { usleep(10_000) }
        #expect(app.pasteboard.activeTransfers == 0, "the stalled transfer was dropped")
    }

    @Test("secure services down: the copy fails and the clipboard keeps its previous owner and contents")
    func servicesDown() throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .secureCopy)
        defer { app.pasteboard.close() }
        try sway.copy(Array("what was there before".utf8))
        try sway.copy(Array("selected before".utf8), primary: true)
        let typesBefore = try sway.types()
        custodian.setAvailability(.unavailable)
        try app.broker.setSecureServices(.unavailable)
        let result = try app.broker.copyResult(Self.representations())
        #expect(result.action == .blocked)
        #expect(!app.pasteboard.ownsClipboard)
        #expect(try sway.pasted() == Array("what was there before".utf8))
        #expect(try sway.types() == typesBefore, "still wl-copy's offer")
        #expect(try sway.pasted(["--primary"]) == Array("selected before".utf8))
    }

    @Test("the owner exits: without a clipboard manager the item is gone, and nothing plaintext was left")
    func ownerExits() throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .secureCopy)
        #expect(try app.broker.copyResult(.text(Self.secret)).action == .writeSealed)
        #expect(try sway.pasted() == Self.placeholder)
        app.pasteboard.close()
        var types = ["?"]
        let deadline = ContinuousClock.now + .seconds(3)
        while !types.isEmpty && ContinuousClock.now < deadline {
            types = try sway.types()
            if !types.isEmpty { usleep(20_000) }
        }
        #expect(types.isEmpty, "the compositor dropped the selection with its client")
        #expect(try sway.types(["--primary"]).isEmpty)
        #expect(throws: WaylandPasteboardError.closed, "a closed pasteboard refuses writes, saying why") {
            try app.pasteboard.write([.text("late")])
        }
    }

    @Test("the owner exits with a clipboard manager running: the item survives sealed, and still opens for a managed app")
    func ownerExitsWithManager() throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes, Self.viewer])
        let notes = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .secureCopy)
        #expect(try notes.broker.copyResult(Self.representations()).action == .writeSealed)
        // A clipboard manager (what wl-clip-persist or clipman do over data-control): it saves
        // every type the owner offers and, once the owner is gone, offers the saved bytes itself.
        var saved: [WaylandRepresentations.Offer] = []
        for type in try sway.types() { saved.append(.init(mimeType: type, bytes: try sway.pasted(["--type", type]))) }
        notes.pasteboard.close()
        let manager = try WaylandPasteboard(configuration: .init(display: sway.display))
        defer { manager.close() }
        let toKeep = saved
        let _: Int = try manager.connectionForTests.perform("keep", timeout: .seconds(5)) { connection, completion in
            connection.setSelection(toKeep, completion: completion)
        }
        #expect(Set(saved.map(\.mimeType)) == Set([SealedSet.targetName, "text/html"] + DesktopOffer.textTargets
                                                    + DesktopOffer.passwordManagerHintTargets),
                "the manager saw only the sealed set and the placeholders")
        let seen = try Self.everythingReadable(on: sway)
        #expect(seen["clipboard"] == Self.placeholder)
        #expect(!(seen["clipboard sealed"] ?? []).isEmpty)
        for (key, bytes) in seen {
            #expect(!bytes.containsRun(of: Array(Self.secret.utf8)), "\(key) leaks after the owner exited")
        }
        let viewer = try ManagedWaylandApp(Self.viewer, sway: sway, custodian: custodian, policy: .authorized)
        defer { viewer.pasteboard.close() }
        #expect(viewer.broker.paste() == .text(Self.secret), "the saved item still opens for a managed app")
    }

    @Test("a hostile owner: a forged or broken sealed set pastes nothing; an owner that never writes does not hang the paste")
    func hostileOwner() throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .authorized)
        defer { app.pasteboard.close() }
        // A well-formed set whose envelope was sealed under a key the group does not hold.
        let foreign = try KeyRing.generate().seal(Array("planted".utf8), itemType: PasteboardItem.textType)
        try sway.copy(SealedSet.encode([foreign]), type: SealedSet.targetName)
        #expect(try app.pasteboard.readSelection().count == 1, "the forged set decodes to one envelope")
        #expect(app.broker.paste() == nil, "and does not open")
        try sway.copy(Array(SealedSet.encode([foreign]).dropLast()), type: SealedSet.targetName)
        #expect(throws: WaylandPasteboardError.self, "a truncated set is a broken transfer") { try app.pasteboard.readSelection() }
        #expect(app.pasteboard.read().items.isEmpty)
        #expect(app.broker.paste() == nil)
        // An owner that takes the clipboard and then never answers (wl-copy, stopped).
        guard let wlCopy = WaylandTools.wlCopy else { return }
        let stopped = try sway.start(wlCopy, ["--foreground"], input: Array("stuck".utf8))
        defer { stopped.kill() }
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, try sway.pasted() != Array("stuck".utf8) { usleep(10_000) }
        stopped.signal(SIGSTOP)
        let reader = try WaylandPasteboard(configuration: .init(display: sway.display, readTimeout: .milliseconds(300)))
        defer { reader.close() }
        let start = ContinuousClock.now
        #expect(reader.read().items.isEmpty, "nothing arrives from a stopped owner")
        #expect(ContinuousClock.now - start < .seconds(2), "the paste gave up after its read timeout")
        stopped.signal(SIGCONT)
    }

    @Test("the compositor goes away: writes fail saying why, reads are empty, nothing crashes")
    func compositorGone() throws {
        let sway = try SwayHeadless()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
        let app = try ManagedWaylandApp(Self.notes, sway: sway, custodian: custodian, policy: .authorized)
        defer { app.pasteboard.close() }
        #expect(try app.broker.copyResult(.text("before")).action == .writeClear)
        sway.stop()
        let deadline = ContinuousClock.now + .seconds(3)
        var refusal: WaylandPasteboardError?
        while refusal == nil && ContinuousClock.now < deadline {
            do {
                try app.pasteboard.write([.text("after")])
                usleep(20_000)
            } catch {
                refusal = error
            }
        }
        guard case .connectionLost = refusal else {
            Issue.record("expected connectionLost, got \(String(describing: refusal))")
            return
        }
        // The broker reports the same refusal to the copy that caused it.
        let failedCopy = #expect(throws: ShareBrokerError.self) { try app.broker.copyResult(.text("after")) }
        if case .pasteboardWriteFailed? = failedCopy {} else {
            Issue.record("expected pasteboardWriteFailed, got \(String(describing: failedCopy))")
        }
        #expect(app.pasteboard.read().items.isEmpty)
        #expect(!app.pasteboard.ownsClipboard)
    }
}

func randomBytes(_ count: Int) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        var done = 0
        let fd = open("/dev/urandom", O_RDONLY)
        while fd >= 0, done < buffer.count, let base = buffer.baseAddress {
            let n = read(fd, base + done, buffer.count - done)
            if n <= 0 { break }
            done += n
        }
        if fd >= 0 { close(fd) }
        initialized = done
    }
}

/// `sharebroker copy|paste --pasteboard wayland` (unmanaged: no agent) against a headless sway.
@Suite("sharebroker copy and paste on Wayland", .enabled(if: WaylandTools.available, WaylandTools.skipReason),
       .enabled(if: sharebrokerTool != nil, "build the sharebroker product before swift test"))
struct WaylandCommandLineTests {
    @Test("copy serves the Wayland clipboard until another app copies; paste reads wl-copy's text; the default follows WAYLAND_DISPLAY")
    func copyAndPaste() throws {
        guard let tool = sharebrokerTool else { return }
        let sway = try SwayHeadless()
        defer { sway.stop() }
        // WAYLAND_DISPLAY set and DISPLAY not: the default is wayland.
        let copier = try sway.start(tool, ["copy", "--unmanaged"], input: Array("from the command line".utf8))
        defer { copier.kill() }
        var seen: [UInt8] = []
        // Generous: the whole suite runs in parallel (other compositors, the agent demos), and a
        // debug build of the tool takes its time to start; a passing run returns at once.
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            seen = try sway.pasted()
            if !seen.isEmpty { break }
            usleep(20_000)
        }
        #expect(seen == Array("from the command line".utf8))
        #expect(try sway.pasted(["--primary"]) == Array("from the command line".utf8))
        #expect(!copier.wait(timeout: .milliseconds(100)), "the copier keeps serving while it owns the clipboard")
        try sway.copy(Array("from wl-copy".utf8))
        #expect(copier.wait(timeout: .seconds(10)), "the copier exits once another app copied")
        #expect(copier.status == 0)
        let paste = try sway.start(tool, ["paste", "--unmanaged", "--pasteboard", "wayland"])
        let output = paste.readAll(until: .now + .seconds(5))
        #expect(paste.wait(timeout: .seconds(5)) && paste.status == 0)
        #expect(output == Array("from wl-copy".utf8))
        let broken = try Child(tool, ["paste", "--unmanaged", "--pasteboard", "wayland"],
                               environment: ["PATH": "/usr/bin:/bin", "WAYLAND_DISPLAY": "/nonexistent/wayland-0"], input: nil)
        #expect(broken.wait(timeout: .seconds(5)) && broken.status == 74, "no compositor: a setup failure (EX_IOERR), not a crash")
    }
}
