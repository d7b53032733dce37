import Foundation
import PropertyBased
import ShareBroker
@testable import ShareBrokerLinux
import Testing

/// A managed app on a real Wayland desktop: the broker over ``WaylandPasteboard``, read and
/// written by wl-clipboard (`wl-copy`, `wl-paste`) on a headless sway each test starts itself.
@Suite("Wayland clipboard: end to end with sway and wl-clipboard",
       .enabled(if: SwayHeadless.unavailableReason == nil,
                Comment(rawValue: SwayHeadless.unavailableReason ?? "")))
struct WaylandClipboardTests {
    static let secret = "the secret merger plan, Q3: buy ACME at 41"
    static let previous = "what the clipboard held before"
    static let placeholder = WaylandPasteboard.Configuration.defaultPlaceholder
    static let sealedMime = "application/x-sharebroker-sealed"
    static let textTypes = ["text/plain;charset=utf-8", "text/plain", "UTF8_STRING", "STRING", "TEXT"]

    /// One managed app: a broker whose general pasteboard is a Wayland selection.
    struct App {
        let broker: ShareBroker
        let pasteboard: WaylandPasteboard
        let delegate = QuietDelegate()

        init(_ appID: String, sway: SwayHeadless, custodian: InProcessKeyCustodian,
             policy: PasteboardPolicy = .secureCopy, auth: AuthState = .authorized,
             selection: WaylandPasteboard.Selection = .clipboard, transferTimeout: Duration = .seconds(5)) throws {
            pasteboard = try WaylandPasteboard(configuration: .init(display: sway.display, selection: selection,
                                                                    transferTimeout: transferTimeout))
            broker = ShareBroker(appID: appID, platform: Platform(
                outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: RecordingReportSink(),
                pasteboard: pasteboard, secureServices: custodian))
            try broker.start(delegate: delegate)
            try broker.apply(PolicyUpdate(auth: auth, pasteboard: policy))
        }
    }

    final class QuietDelegate: ShareBrokerDelegate {
        func appConnectIsReady() {}
        func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
    }

    static func custodian(_ apps: [String] = ["com.acme.notes", "com.acme.sheets"]) throws -> InProcessKeyCustodian {
        try InProcessKeyCustodian(entitledAppIDs: apps)
    }

    /// Sets the clipboard from outside with wl-copy and waits until the compositor shows it.
    static func outsideCopy(_ text: String, sway: SwayHeadless, primary: Bool = false) throws {
        try sway.copy(Array(text.utf8), primary ? ["--primary"] : [])
        for _ in 0..<100 {
            if try sway.paste(primary ? ["--primary", "--no-newline"] : ["--no-newline"]).output == Array(text.utf8) { return }
            usleep(50_000)
        }
        throw SwayHeadless.HarnessError("wl-copy's content never appeared")
    }

    @Test("each policy: wl-paste reads the real text, the placeholder, or the previous contents",
          arguments: [PasteboardPolicy.authorized, .secureCopy, .unauthorized])
    func policies(policy: PasteboardPolicy) throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        try Self.outsideCopy(Self.previous, sway: sway)
        let app = try App("com.acme.notes", sway: sway, custodian: Self.custodian(), policy: policy)
        let result = try app.broker.copy(.text(Self.secret))
        let pasted = try sway.paste(["--no-newline"]).output
        let types = try sway.paste(["--list-types"]).output
        let listed = String(decoding: types, as: UTF8.self).split(separator: "\n").map(String.init)
        switch policy {
        case .authorized:
            #expect(result.action == .writeClear)
            #expect(pasted == Array(Self.secret.utf8))
            #expect(Set(listed) == Set(Self.textTypes))
        case .secureCopy:
            #expect(result.action == .writeSealed)
            #expect(pasted == Array(Self.placeholder.utf8))
            #expect(Set(listed) == Set([Self.sealedMime] + Self.textTypes))
            for type in Self.textTypes {
                #expect(try sway.paste(["--no-newline", "--type", type]).output == Array(Self.placeholder.utf8), "\(type)")
            }
            let sealed = try sway.paste(["--no-newline", "--type", Self.sealedMime]).output
            #expect(!sealed.isEmpty)
            #expect(!sharesRun(sealed, Array(Self.secret.utf8)))
            // The sealed bytes are the envelope: the group's ring opens them to the secret.
            let ring = try Self.custodianRing(app)
            let opened = try ring.open(sealed)
            #expect(opened.plaintext == Array(Self.secret.utf8))
        default:
            #expect(result.action == .blocked)
            #expect(pasted == Array(Self.previous.utf8), "the previous owner keeps the clipboard")
            #expect(listed.contains("text/plain"))
        }
    }

    static func custodianRing(_ app: App) throws -> KeyRing {
        guard let custodian = app.broker.platform.secureServices as? InProcessKeyCustodian else {
            throw SwayHeadless.HarnessError("not an in-process custodian")
        }
        return try custodian.keyRing(for: "com.acme.notes")
    }

    @Test("the primary selection is governed like the clipboard", arguments: [PasteboardPolicy.secureCopy, .unauthorized])
    func primary(policy: PasteboardPolicy) throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        try Self.outsideCopy(Self.previous, sway: sway, primary: true)
        let app = try App("com.acme.notes", sway: sway, custodian: Self.custodian(), policy: policy, selection: .primary)
        try app.broker.copy(.text(Self.secret))
        let pasted = try sway.paste(["--primary", "--no-newline"]).output
        #expect(pasted == Array((policy == .secureCopy ? Self.placeholder : Self.previous).utf8))
        let sealed = try sway.paste(["--primary", "--no-newline", "--type", Self.sealedMime])
        if policy == .secureCopy {
            #expect(!sharesRun(sealed.output, Array(Self.secret.utf8)))
            #expect(!sealed.output.isEmpty)
        }
        #expect(try sway.paste(["--no-newline"]).output != Array(Self.secret.utf8), "the clipboard is untouched")
    }

    @Test("under SecureCopy no 8-byte run of any copied text reaches wl-paste")
    func noPlaintextRun() async throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        let app = try App("com.acme.notes", sway: sway, custodian: Self.custodian(), policy: .secureCopy)
        await propertyCheck(count: 25, input: Gen.letterOrNumber.string(of: 8...600)) { text in
            let plaintext = Array(text.utf8)
            guard (try? app.broker.copy(.text(text)))?.action == .writeSealed else {
                Issue.record("the copy was not sealed")
                return
            }
            for arguments in [["--no-newline"], ["--no-newline", "--type", "text/plain"], ["--no-newline", "--type", Self.sealedMime]] {
                guard let output = try? sway.paste(arguments).output else {
                    Issue.record("wl-paste \(arguments) failed")
                    continue
                }
                #expect(!output.isEmpty)
                #expect(!sharesRun(output, plaintext), "plaintext run under \(arguments)")
            }
        }
    }

    @Test("wl-copy content pastes into a managed app in the clear, whatever its copy policy")
    func outsideContentPastes() throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        let app = try App("com.acme.notes", sway: sway, custodian: Self.custodian(), policy: .secureCopy)
        try Self.outsideCopy("public lunch menu", sway: sway)
        #expect(app.broker.paste() == .text("public lunch menu"))
        try sway.copy(Array("<b>bold</b>".utf8), ["--type", "text/html"])
        for _ in 0..<100 where app.broker.paste()?.type != "public.html" { usleep(50_000) }
        #expect(app.broker.paste() == PasteboardItem(type: "public.html", bytes: Array("<b>bold</b>".utf8)))
    }

    @Test("a second managed app pastes a SecureCopy item; an unregistered or retired one does not")
    func secondManagedApp() throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        let custodian = try Self.custodian()
        let notes = try App("com.acme.notes", sway: sway, custodian: custodian)
        let sheets = try App("com.acme.sheets", sway: sway, custodian: custodian)
        let stranger = try App("com.other.app", sway: sway, custodian: custodian)
        #expect(try notes.broker.copy(.text(Self.secret)).action == .writeSealed)
        #expect(sheets.broker.paste() == .text(Self.secret))
        #expect(stranger.broker.paste() == nil, "an app without the group keys reads nothing")
        #expect(notes.broker.paste() == .text(Self.secret))
        // Retire: the selection this app still owns is released.
        try notes.broker.apply(PolicyUpdate(auth: .retired))
        #expect(notes.broker.paste() == nil)
        let after = try sway.paste(["--no-newline"])
        #expect(after.output.isEmpty, "nothing stays on the clipboard after retire")
        #expect(sheets.broker.paste() == nil)
    }

    @Test("retire leaves a clipboard someone else set since alone")
    func retireLeavesOthers() throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        let app = try App("com.acme.notes", sway: sway, custodian: Self.custodian())
        try app.broker.copy(.text(Self.secret))
        try Self.outsideCopy("newer, from another app", sway: sway)
        try app.broker.apply(PolicyUpdate(auth: .retired))
        #expect(try sway.paste(["--no-newline"]).output == Array("newer, from another app".utf8))
    }

    @Test("secure services down: the copy fails and the clipboard keeps its owner and contents")
    func servicesDown() throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        try Self.outsideCopy(Self.previous, sway: sway)
        let custodian = try Self.custodian()
        let app = try App("com.acme.notes", sway: sway, custodian: custodian)
        custodian.setAvailability(.unavailable)
        try app.broker.setSecureServices(.unavailable)
        #expect(try app.broker.copy(.text(Self.secret)).action == .blocked)
        #expect(try sway.paste(["--no-newline"]).output == Array(Self.previous.utf8))
        #expect(Set(String(decoding: try sway.paste(["--list-types"]).output, as: UTF8.self).split(separator: "\n").map(String.init))
                    .isDisjoint(with: [Self.sealedMime]))
    }

    @Test("16 MiB items round-trip: in the clear to wl-paste, sealed to a second managed app")
    func largeItems() throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        var generator = SystemRandomNumberGenerator()
        let big = (0..<(16 << 20)).map { _ in UInt8.random(in: 0x20...0x7e, using: &generator) }
        let custodian = try Self.custodian()
        let clear = try App("com.acme.notes", sway: sway, custodian: custodian, policy: .authorized)
        #expect(try clear.broker.copy(PasteboardItem(type: PasteboardItem.textType, bytes: big)).action == .writeClear)
        let pasted = try sway.paste(["--no-newline", "--type", "text/plain"])
        #expect(pasted.output.count == big.count)
        #expect(pasted.output == big)
        try clear.broker.apply(PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        let reader = try App("com.acme.sheets", sway: sway, custodian: custodian)
        #expect(try clear.broker.copy(PasteboardItem(type: PasteboardItem.textType, bytes: big)).action == .writeSealed)
        #expect(reader.broker.paste()?.bytes == big)
        #expect(try sway.paste(["--no-newline"]).output == Array(Self.placeholder.utf8))
    }

    @Test("a reader that stops reading does not hang the owner, and is dropped after the timeout")
    func stalledReader() throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        let custodian = try Self.custodian()
        let owner = try App("com.acme.notes", sway: sway, custodian: custodian, policy: .authorized,
                            transferTimeout: .milliseconds(500))
        let big = [UInt8](repeating: 0x61, count: 4 << 20)
        try owner.broker.copy(PasteboardItem(type: PasteboardItem.textType, bytes: big))
        // A reader that asks for the data and never reads: it holds the pipe's read end.
        let stalled = try WaylandPasteboard(configuration: .init(display: sway.display))
        let reading: WaylandConnection.Reading = try stalledReading(stalled)
        guard case .transfers(let pipes) = reading, let pipe = pipes.first else {
            Issue.record("no transfer started")
            return
        }
        // Meanwhile the owner copies again, promptly, and other readers are served.
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            try owner.broker.copy(.text("next"))
        }
        #expect(elapsed < .seconds(2))
        #expect(try sway.paste(["--no-newline"]).output == Array("next".utf8))
        // The stalled transfer was abandoned: the pipe ends early (EOF after what fit in it).
        usleep(1_500_000)
        let result = readAllAndClose(pipe.fd, limit: big.count + 1, idleTimeout: .seconds(2))
        guard case .complete(let got) = result else {
            Issue.record("the stalled transfer was not closed by the owner: \(result)")
            return
        }
        #expect(got.count < big.count, "the owner gave up instead of waiting for the reader")
    }

    private func stalledReading(_ pasteboard: WaylandPasteboard) throws -> WaylandConnection.Reading {
        try pasteboard.connectionForTests.perform("read", timeout: .seconds(5)) { connection, completion in
            connection.startReading(completion: completion)
        }
    }

    @Test("the owner closes: the selection is gone from the clipboard")
    func ownerExits() throws {
        let sway = try SwayHeadless.start()
        defer { sway.stop() }
        var app: App? = try App("com.acme.notes", sway: sway, custodian: Self.custodian())
        try app?.broker.copy(.text(Self.secret))
        #expect(try sway.paste(["--no-newline"]).output == Array(Self.placeholder.utf8))
        app?.pasteboard.close()
        app = nil
        var output: [UInt8] = [0]
        for _ in 0..<50 {
            output = try sway.paste(["--no-newline"]).output
            if output.isEmpty { break }
            usleep(50_000)
        }
        #expect(output.isEmpty)
    }
}
