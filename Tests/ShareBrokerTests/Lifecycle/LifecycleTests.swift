import ShareBroker
import Testing
import ShareBrokerTesting

@Suite("Lifecycle, delegate and acknowledgments")
struct LifecycleTests {
    @Test("properties are not readable before ready; the first policy makes ready and owes no acknowledgment")
    func readiness() throws {
        let fixture = try Fixture()
        #expect(throws: ShareBrokerError.notReady) { try fixture.broker.policy() }
        let outcome = try fixture.broker.applyReporting(PolicyUpdate(auth: .authorized, openIn: .authorized, print: .authorized))
        #expect(outcome.changes == [.ready])
        #expect(outcome.acknowledgments.isEmpty)
        #expect(fixture.delegate.calls == ["ready"])
        #expect(fixture.sink.acknowledgments.isEmpty)
        let policy = try fixture.broker.policy()
        #expect(policy.authState == .authorized)
        #expect(policy.printPolicy == .authorized)
    }

    @Test("fields the first policy leaves out take their most restrictive value")
    func restrictiveDefaults() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized))
        let p = try fixture.broker.policy()
        #expect(p.openInPolicy == .unauthorized)
        #expect(p.pasteboardPolicy == .unauthorized)
        #expect(p.printPolicy == .unauthorized)
        #expect(p.secureFileIOPolicy == .required)
        #expect(p.logLevel == .status)
        #expect(p.dragAndDropPolicy == .noApps)
        #expect(p.managedBrowserRequired == false)
        #expect(p.config.isEmpty)
        #expect(!p.copyEnabled)
        #expect(!p.openInEnabled)
    }

    @Test("start is required first, and only once")
    func startRules() throws {
        let broker = ShareBroker(appID: "com.acme.notes", platform: try .embedded(entitling: "com.acme.notes"))
        #expect(throws: ShareBrokerError.notStarted) { try broker.apply(PolicyUpdate(auth: .authorized)) }
        #expect(throws: ShareBrokerError.notStarted) { try broker.updateDevice(DeviceApp(id: "x")) }
        try broker.start(delegate: MinimalDelegate())
        #expect(throws: ShareBrokerError.alreadyStarted) { try broker.start(delegate: MinimalDelegate()) }
    }

    @Test("each changed value invokes its callback in order and reports its acknowledgment")
    func changesAndAcks() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized))
        fixture.delegate.answer("openIn", with: .error("viewer is missing"))
        let outcome = try fixture.broker.applyReporting(PolicyUpdate(
            authMessage: "Welcome", openIn: .whitelist(["com.acme.viewer"]), pasteboard: .secureCopy, print: .authorized,
            secureFileIO: .optional, logLevel: .info, dragAndDrop: .allApps, managedBrowserRequired: true, config: ["k": "v"]))
        #expect(outcome.changes == [.auth, .config, .openIn, .pasteboard, .print, .secureFileIO, .logLevel])
        #expect(outcome.acknowledgments.map(\.kind) == [.auth, .config, .openIn, .pasteboard, .print, .secureFileIO])
        #expect(outcome.acknowledgments.first { $0.kind == .openIn }?.state == .error)
        #expect(outcome.acknowledgments.first { $0.kind == .openIn }?.message == "viewer is missing")
        #expect(fixture.sink.acknowledgments == outcome.acknowledgments)
        // The same update again changes nothing and owes nothing.
        let again = try fixture.broker.applyReporting(PolicyUpdate(
            authMessage: "Welcome", openIn: .whitelist(["com.acme.viewer"]), pasteboard: .secureCopy))
        #expect(again.changes.isEmpty)
        #expect(again.acknowledgments.isEmpty)
    }

    @Test("authStateChanged fires when only the message changes")
    func authMessageOnly() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .unauthorized, authMessage: "Passcode required"))
        let outcome = try fixture.broker.applyReporting(PolicyUpdate(authMessage: "Device out of compliance"))
        #expect(outcome.changes == [.auth])
        #expect(try fixture.broker.policy().authMessage == "Device out of compliance")
    }

    @Test("a callback the app does not implement is acknowledged as unsupported automatically")
    func unsupportedAutomatically() throws {
        let fixture = try Fixture(implementing: [.print], ready: PolicyUpdate(auth: .authorized))
        let outcome = try fixture.broker.applyReporting(PolicyUpdate(openIn: .authorized, print: .authorized))
        let states = Dictionary(uniqueKeysWithValues: outcome.acknowledgments.map { ($0.kind, $0.state) })
        #expect(states == [.openIn: .unsupported, .print: .applied])
        #expect(fixture.delegate.calls == ["print"])
    }

    @Test("an authorization acknowledgment may never be unsupported: it is reported as an error that says so")
    func authNeverUnsupported() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized))
        fixture.delegate.answer("auth", with: .unsupported)
        let outcome = try fixture.broker.applyReporting(PolicyUpdate(auth: .unauthorized))
        let ack = try #require(outcome.acknowledgments.first)
        #expect(ack.kind == .auth)
        #expect(ack.state == .error)
        #expect(ack.message.contains("unsupported"))
    }

    @Test("log level and secure services take no acknowledgment")
    func noAckKinds() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized))
        let level = try fixture.broker.applyReporting(PolicyUpdate(logLevel: .debug))
        #expect(level.changes == [.logLevel])
        #expect(level.acknowledgments.isEmpty)
        let services = try fixture.broker.setSecureServices(.unavailable)
        #expect(services.changes == [.secureServices])
        #expect(services.acknowledgments.isEmpty)
        #expect(try fixture.broker.policy().secureServices == .unavailable)
    }

    @Test("retire wipes, resets policies to defaults, erases the config, and announces only the auth change")
    func retire() throws {
        final class Eraser: SensitiveDataEraser, @unchecked Sendable {
            let wipeName: String
            let fails: Bool
            var erased = false
            init(_ name: String, fails: Bool = false) { wipeName = name; self.fails = fails }
            func eraseSensitiveData() throws {
                struct Refused: Error {}
                if fails { throw Refused() }
                erased = true
            }
        }
        let keys = Eraser("keys")
        let stuck = Eraser("files", fails: true)
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, openIn: .authorized, pasteboard: .authorized,
                                                      print: .authorized, config: ["secret": "s3cr3t"]),
                                  configuration: ShareBroker.Configuration(erasers: [keys, stuck]))
        let outcome = try fixture.broker.applyReporting(PolicyUpdate(auth: .retired, authMessage: "Retired by admin", openIn: .authorized))
        #expect(outcome.wiped)
        #expect(outcome.changes == [.auth])
        #expect(outcome.acknowledgments.map(\.kind) == [.auth])
        #expect(keys.erased)
        #expect(fixture.sink.wipeReports == [WipeReport(erased: ["keys", "sharebroker.keys", "sharebroker.pasteboard", "sharebroker.secure-files"],
                                                        failed: ["files": "Refused()"])])
        let p = try fixture.broker.policy()
        #expect(p.authState == .retired)
        #expect(p.openInPolicy == .unauthorized)
        #expect(p.printPolicy == .unauthorized)
        #expect(p.config.isEmpty)
        #expect(!fixture.broker.decideOpenIn(target: "x", via: .documentInteraction).allowed)
    }

    @Test("generations increase with every swap")
    func generations() throws {
        let fixture = try Fixture()
        let g0 = fixture.broker.currentSnapshot.generation
        let o1 = try fixture.broker.applyReporting(PolicyUpdate(auth: .authorized))
        let o2 = try fixture.broker.applyReporting(PolicyUpdate(print: .authorized))
        #expect(o1.generation == g0 + 1)
        #expect(o2.generation == g0 + 2)
        #expect(fixture.broker.currentSnapshot.generation == o2.generation)
    }
}
