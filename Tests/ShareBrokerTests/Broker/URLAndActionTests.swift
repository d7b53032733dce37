import ShareBroker
import Testing

@Suite("URLs, mail, print and drag and drop")
struct URLAndActionTests {
    static let mailApps = [DeviceApp(id: WellKnownApp.nativeMail, schemes: ["mailto"]),
                           DeviceApp(id: "org.example.sheets", schemes: ["sheets"])]
    static let bothMail: Set<String> = [WellKnownApp.nativeMail, WellKnownApp.mailActivity]

    @Test("mailto: follows the native mail rules")
    func mailto() throws {
        let cases: [(PolicyUpdate, URLDecision.Outcome, String?, Bool)] = [
            (PolicyUpdate(auth: .authorized, openIn: .authorized), .opened, WellKnownApp.nativeMail, false),
            (PolicyUpdate(auth: .authorized, openIn: .unauthorized), .blocked, nil, true),
            (PolicyUpdate(auth: .authorized, openIn: .whitelist(["com.acme.viewer"])), .blocked, nil, true),
            (PolicyUpdate(auth: .authorized, openIn: .whitelist([WellKnownApp.nativeMail])), .blocked, nil, true),
            (PolicyUpdate(auth: .authorized, openIn: .whitelist(Self.bothMail)), .opened, WellKnownApp.nativeMail, false),
            (PolicyUpdate(auth: .unauthorized, openIn: .authorized), .blocked, nil, true),
        ]
        for (update, outcome, handler, notified) in cases {
            let fixture = try Fixture(apps: Self.mailApps, ready: update)
            let result = try fixture.broker.openURL("mailto:cfo@acme.com?subject=Q3")
            #expect(result.outcome == outcome, "\(update)")
            #expect(result.handler == handler)
            #expect(fixture.delegate.calls == (notified ? ["openURLBlocked"] : []))
            #expect(fixture.opener.openedURLs.map(\.handler) == (handler.map { [$0] } ?? []))
        }
    }

    @Test("an installed, authorized AppConnect mail app takes a blocked mailto: without a callback")
    func appConnectMailApp() throws {
        let apps = Self.mailApps + [DeviceApp(id: "com.example.emailplus", isAppConnect: true, isAuthorized: true,
                                              schemes: ["mailto"])]
        let fixture = try Fixture(apps: apps, ready: PolicyUpdate(auth: .authorized, openIn: .unauthorized))
        let result = try fixture.broker.openURL("MAILTO:cfo@acme.com")
        #expect(result.outcome == .opened)
        #expect(result.handler == "com.example.emailplus")
        #expect(fixture.delegate.calls.isEmpty)
        // An AppConnect mail app whose user is not authorized does not count.
        let unauthorized = Self.mailApps + [DeviceApp(id: "com.example.emailplus", isAppConnect: true, isAuthorized: false,
                                                      schemes: ["mailto"])]
        let other = try Fixture(apps: unauthorized, ready: PolicyUpdate(auth: .authorized, openIn: .unauthorized))
        #expect(try other.broker.openURL("mailto:x@y").outcome == .blocked)
    }

    @Test("MI_AC_DISABLE_SCHEME_BLOCKING, from the manifest or the server config, lets mailto: open native mail")
    func schemeBlockingDisabled() throws {
        let viaManifest = try Fixture(manifest: AppManifest(disableSchemeBlocking: true), apps: Self.mailApps,
                                      ready: PolicyUpdate(auth: .authorized, openIn: .unauthorized))
        #expect(try viaManifest.broker.openURL("mailto:a@b").outcome == .opened)
        let viaConfig = try Fixture(apps: Self.mailApps, ready: PolicyUpdate(
            auth: .authorized, openIn: .whitelist(["com.acme.viewer"]), config: ["MI_AC_DISABLE_SCHEME_BLOCKING": "true"]))
        #expect(try viaConfig.broker.openURL("mailto:a@b").outcome == .opened)
        let falseConfig = try Fixture(apps: Self.mailApps, ready: PolicyUpdate(
            auth: .authorized, openIn: .unauthorized, config: ["MI_AC_DISABLE_SCHEME_BLOCKING": "false"]))
        #expect(try falseConfig.broker.openURL("mailto:a@b").outcome == .blocked)
        // It does not apply to other schemes, nor while the user is unauthorized.
        #expect(try viaManifest.broker.openURL("sheets://x").outcome == .blocked)
        let unauthorized = try Fixture(manifest: AppManifest(disableSchemeBlocking: true), apps: Self.mailApps,
                                       ready: PolicyUpdate(auth: .unauthorized, openIn: .authorized))
        #expect(try unauthorized.broker.openURL("mailto:a@b").outcome == .blocked)
    }

    @Test("custom schemes follow the Open In policy toward the scheme's handler")
    func customSchemes() throws {
        let whitelisted = try Fixture(apps: Self.mailApps, ready: PolicyUpdate(auth: .authorized, openIn: .whitelist(["org.example.sheets"])))
        let opened = try whitelisted.broker.openURL("sheets://import?data=q3")
        #expect(opened.outcome == .opened)
        #expect(opened.handler == "org.example.sheets")
        let other = try Fixture(apps: Self.mailApps, ready: PolicyUpdate(auth: .authorized, openIn: .whitelist(["org.example"])))
        let blocked = try other.broker.openURL("sheets://import?data=q3")
        #expect(blocked.outcome == .blocked)
        #expect(other.delegate.calls == ["openURLBlocked"])
        #expect(other.opener.openedURLs.isEmpty)
        #expect(try other.broker.openURL("nobody-handles-this:x").outcome == .unhandled)
        #expect(throws: ShareBrokerError.missingScheme) { try other.broker.openURL("no scheme here") }
        #expect(throws: ShareBrokerError.missingScheme) { try other.broker.openURL("1abc:x") }
        #expect(throws: ShareBrokerError.webScheme("https")) { try other.broker.openURL("https://example.org") }
    }

    @Test("the in-app mail composer needs native mail whitelisted and calls openInAttemptedWhenBlocked")
    func composeMail() throws {
        let blocked = try Fixture(ready: PolicyUpdate(auth: .authorized, openIn: .whitelist([WellKnownApp.mailActivity])))
        #expect(!blocked.broker.composeMail().allowed)
        #expect(blocked.delegate.calls == ["openInBlocked"])
        let allowed = try Fixture(ready: PolicyUpdate(auth: .authorized, openIn: .whitelist(Self.bothMail)))
        #expect(allowed.broker.composeMail().allowed)
        #expect(allowed.delegate.calls.isEmpty)
    }

    @Test("print follows the print policy and fails closed")
    func print() throws {
        #expect(try Fixture(ready: PolicyUpdate(auth: .authorized, print: .authorized)).broker.print().allowed)
        #expect(!(try Fixture(ready: PolicyUpdate(auth: .authorized, print: .unauthorized)).broker.print().allowed))
        #expect(!(try Fixture(ready: PolicyUpdate(auth: .unauthorized, print: .authorized)).broker.print().allowed))
        #expect(!(try Fixture().broker.print().allowed))
    }

    @Test("drag and drop: all, AppConnect apps only, none")
    func dragAndDrop() throws {
        let apps = [DeviceApp(id: "com.acme.viewer", isAppConnect: true, isAuthorized: true),
                    DeviceApp(id: "com.acme.locked", isAppConnect: true, isAuthorized: false)]
        let all = try Fixture(apps: apps, ready: PolicyUpdate(auth: .authorized, dragAndDrop: .allApps))
        #expect(all.broker.dragAndDrop(to: "org.example.sheets").allowed)
        let managed = try Fixture(apps: apps, ready: PolicyUpdate(auth: .authorized, dragAndDrop: .appConnectApps))
        #expect(managed.broker.dragAndDrop(to: "com.acme.viewer").allowed)
        #expect(!managed.broker.dragAndDrop(to: "com.acme.locked").allowed)
        #expect(managed.delegate.calls.isEmpty)  // an AppConnect app, though not authorized: no callback
        #expect(!managed.broker.dragAndDrop(to: "org.example.sheets").allowed)
        #expect(managed.delegate.calls == ["dragAndDrop"])
        let none = try Fixture(apps: apps, ready: PolicyUpdate(auth: .authorized, dragAndDrop: .noApps))
        #expect(!none.broker.dragAndDrop(to: "com.acme.viewer").allowed)
        #expect(none.delegate.calls.isEmpty)
        let minimal = try Fixture(implementing: [], apps: apps, ready: PolicyUpdate(auth: .authorized, dragAndDrop: .noApps))
        #expect(!minimal.broker.dragAndDrop(to: "org.example.sheets").allowed)
        #expect(minimal.delegate.calls.isEmpty)
    }
}
