import PropertyBased
import ShareBroker
import Testing
import ShareBrokerCrypto

@Suite("SecureCopy: copy and paste")
struct CopyTests {
    static let secret = "the secret merger plan, Q3"

    @Test("copy answers what it wrote: clear, sealed, or nothing")
    func copyAnswersItsAction() throws {
        let clear = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .authorized))
        #expect(try clear.broker.copy(.text("a")) == .writeClear)
        let sealed = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        #expect(try sealed.broker.copy([.text("b"), PasteboardItem(type: "public.html", bytes: Array("<b>b</b>".utf8))]) == .writeSealed)
        let blocked = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .unauthorized))
        #expect(try blocked.broker.copy(.text("c")) == .blocked)
        #expect(blocked.pasteboard.read().items.isEmpty)
    }

    /// The seeds' pasteboard table: policy x secure services x callback implemented.
    @Test("every row of the pasteboard table", arguments: [PasteboardPolicy.unauthorized, .authorized, .secureCopy],
          [SecureServicesAvailability.available, .unavailable])
    func pasteboardTable(policy: PasteboardPolicy, services: SecureServicesAvailability) throws {
        for implemented in [true, false] {
            let fixture = try Fixture(implementing: implemented ? [.copyBlocked] : [],
                                      ready: PolicyUpdate(auth: .authorized, pasteboard: policy))
            if services == .unavailable {
                fixture.custodian.setAvailability(.unavailable)
                try fixture.broker.setSecureServices(.unavailable)
            }
            fixture.pasteboard.write([.text("what was there before")])
            let before = fixture.pasteboard.read()
            let result = try fixture.broker.copyResult(.text(Self.secret))
            let after = fixture.pasteboard.read()
            let snapshot = try fixture.broker.policy()
            switch (policy, services) {
            case (.authorized, _):
                #expect(result.action == .writeClear)
                #expect(after.items == [.text(Self.secret)])
                #expect(snapshot.copyEnabled)
            case (.secureCopy, .available):
                #expect(result.action == .writeSealed)
                #expect(after.items.count == 1)
                #expect(after.items.first?.type == PasteboardItem.sealedType)
                #expect(after.items.first?.bytes != Array(Self.secret.utf8))
                #expect(fixture.broker.paste() == .text(Self.secret))
                #expect(snapshot.copyEnabled)
            case (.secureCopy, .unavailable):
                #expect(result.action == .blocked)
                #expect(result.decision.rule == .secureServicesUnavailable)
                #expect(after == before, "nothing may be written")
                #expect(fixture.delegate.calls.isEmpty, "a SecureCopy blocked for lack of secure services has no callback")
                #expect(!snapshot.copyEnabled)
            case (.unauthorized, _):
                #expect(result.action == .blocked)
                #expect(after == before, "the pasteboard keeps what it had")
                #expect(fixture.delegate.calls == (implemented ? ["copyBlocked"] : []))
                #expect(!snapshot.copyEnabled)
            }
        }
    }

    @Test("copies fail closed before ready and while the user is not authorized")
    func failClosed() throws {
        let notReady = try Fixture()
        #expect(try notReady.broker.copyResult(.text(Self.secret)).action == .blocked)
        #expect(notReady.pasteboard.read().items.isEmpty)
        let unauthorized = try Fixture(ready: PolicyUpdate(auth: .unauthorized, pasteboard: .authorized))
        #expect(try unauthorized.broker.copyResult(.text(Self.secret)).action == .blocked)
        #expect(unauthorized.pasteboard.read().items.isEmpty)
    }

    @Test("secure services going down and coming back")
    func servicesFlap() throws {
        let fixture = try Fixture(implementing: [.secureServices],
                                  ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        #expect(try fixture.broker.copyResult(.text(Self.secret)).action == .writeSealed)
        fixture.custodian.setAvailability(.unavailable)
        let down = try fixture.broker.setSecureServices(.unavailable)
        #expect(down.changes == [.secureServices])
        #expect(fixture.broker.paste() == nil, "a sealed item cannot be read without secure services")
        let sealed = fixture.pasteboard.read()
        #expect(try fixture.broker.copyResult(.text("another")).action == .blocked)
        #expect(fixture.pasteboard.read() == sealed)
        // Clear content (written by someone else) stays readable while secure services are down.
        fixture.pasteboard.write([.text("public lunch menu")])
        #expect(fixture.broker.paste() == .text("public lunch menu"))
        fixture.custodian.setAvailability(.available)
        try fixture.broker.setSecureServices(.available)
        #expect(try fixture.broker.copyResult(.text(Self.secret)).action == .writeSealed)
        #expect(fixture.broker.paste() == .text(Self.secret))
    }

    @Test("the custodian handing out no keys despite 'available' fails closed with nothing written")
    func noKeys() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        fixture.custodian.setAvailability(.unavailable)  // the snapshot still says available
        let result = try fixture.broker.copyResult(.text(Self.secret))
        #expect(result.action == .blocked)
        #expect(result.decision.rule == .noKeys)
        #expect(fixture.pasteboard.read().items.isEmpty)
    }

    @Test("another app reads a sealed item only with the group keys")
    func otherApps() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        fixture.custodian.entitle(appID: "com.acme.viewer")
        try fixture.broker.copyResult(PasteboardItem(type: "public.png", bytes: [0x89, 0x50, 0x4E, 0x47, 1, 2, 3]))
        let items = fixture.pasteboard.read().items
        let viewerRing = try fixture.custodian.keyRing(for: "com.acme.viewer")
        #expect(PasteboardReader.readable(items, keyRing: viewerRing) == PasteboardItem(type: "public.png", bytes: [0x89, 0x50, 0x4E, 0x47, 1, 2, 3]))
        #expect(PasteboardReader.readable(items, keyRing: nil) == nil)
        #expect(throws: ShareBrokerError.notEntitled("org.example.sheets")) {
            try fixture.custodian.keyRing(for: "org.example.sheets")
        }
        let stranger = try KeyRing.generate()
        #expect(PasteboardReader.readable(items, keyRing: stranger) == nil)
    }

    @Test("retire removes the app's own pasteboard items and its keys; later items of other apps stay")
    func retireTakesBackItems() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        try fixture.broker.copyResult(.text(Self.secret))
        #expect(!fixture.pasteboard.read().items.isEmpty)
        let outcome = try fixture.broker.applyReporting(PolicyUpdate(auth: .retired))
        #expect(outcome.wiped)
        #expect(fixture.pasteboard.read().items.isEmpty)
        #expect(fixture.sink.wipeReports.last?.erased.contains("sharebroker.pasteboard") == true)
        #expect(throws: ShareBrokerError.notEntitled("com.acme.notes")) {
            try fixture.custodian.keyRing(for: "com.acme.notes")
        }
        #expect(fixture.broker.paste() == nil)

        let other = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .authorized))
        try other.broker.copyResult(.text(Self.secret))
        other.pasteboard.write([.text("someone else's later copy")])
        try other.broker.apply(PolicyUpdate(auth: .retired))
        #expect(other.pasteboard.read().items == [.text("someone else's later copy")])
    }

    @Test("rotation does not make items sealed a moment ago unreadable")
    func rotation() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        try fixture.broker.copyResult(.text(Self.secret))
        try fixture.custodian.revoke(appID: "org.example.gone")
        #expect(fixture.broker.paste() == .text(Self.secret))
    }

    @Test("unmanaged content is written in the clear: an unmanaged identity, or an unmanaged web view")
    func unmanagedContent() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .unauthorized))
        let eula = try fixture.broker.webViews.declare("eula", policy: .unmanaged)
        let docs = try fixture.broker.webViews.declare("docs", policy: .currentIdentity)
        #expect(try fixture.broker.copyResult(.text("license text"), fromWebView: eula).action == .writeClear)
        #expect(try fixture.broker.copyResult(.text(Self.secret), fromWebView: docs).action == .blocked)
        #expect(fixture.pasteboard.read().items == [.text("license text")])
        try fixture.broker.setIdentity(.unmanaged)
        #expect(try fixture.broker.copyResult(.text("personal note")).action == .writeClear)
        // A handle of another broker's web views names no web view of this one: nothing is written.
        let foreign = try WebViewHierarchy().declare("docs")
        #expect(throws: ShareBrokerError.foreignHandle) {
            try fixture.broker.copyResult(.text("x"), fromWebView: foreign)
        }
        #expect(fixture.pasteboard.read().items == [.text("personal note")])
    }

    @Test("a huge item or a bad type is refused before anything is written")
    func badItems() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .authorized))
        let huge = PasteboardItem(type: "public.data", bytes: [UInt8](repeating: 7, count: EnvelopeFormat.maxPlaintextSize + 1))
        #expect(throws: ShareBrokerError.itemTooLarge(size: huge.bytes.count, limit: EnvelopeFormat.maxPlaintextSize)) {
            try fixture.broker.copyResult(huge)
        }
        #expect(throws: ShareBrokerError.invalidItemType) { try fixture.broker.copyResult(PasteboardItem(type: "", bytes: [1])) }
        #expect(throws: ShareBrokerError.invalidItemType) {
            try fixture.broker.copyResult(PasteboardItem(type: PasteboardItem.sealedType, bytes: [1]))
        }
        #expect(fixture.pasteboard.read().items.isEmpty)
    }

    @Test("under SecureCopy or Unauthorized no 8-byte run of the plaintext ever reaches the pasteboard")
    func noPlaintextOnPasteboard() async throws {
        await propertyCheck(count: 150, input: Gen<UInt8>.value().array(of: 8...2048), Gen.bool) { plaintext, secure in
            guard let fixture = try? Fixture(ready: PolicyUpdate(auth: .authorized,
                                                                 pasteboard: secure ? .secureCopy : .unauthorized)) else {
                Issue.record("fixture")
                return
            }
            _ = try? fixture.broker.copyResult(PasteboardItem(type: "public.data", bytes: plaintext))
            for item in fixture.pasteboard.read().items {
                #expect(!DummyFilePropertyTests.sharesRun(item.bytes, plaintext), "plaintext run on the pasteboard")
            }
        }
    }
}
