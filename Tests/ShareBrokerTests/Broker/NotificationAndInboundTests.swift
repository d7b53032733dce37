import ShareBroker
import ShareBrokerTesting
import Testing

/// Notifications (Intune's `notificationRestriction`): the app asks before posting.
@Suite("Notification decision table")
struct NotificationTests {
    static let title = "Q3 numbers from the CFO"
    static let body = "Revenue is down 12%"

    @Test("policy x identity: post, generic text, or nothing",
          arguments: [NotificationPolicy.allow, .blockOrgData, .block], [ManagedIdentity.managed, .unmanaged])
    func table(policy: NotificationPolicy, identity: ManagedIdentity) throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, notifications: policy))
        try fixture.broker.setIdentity(identity)
        let content = fixture.broker.notificationContent(title: Self.title, body: Self.body)
        #expect(fixture.broker.decideNotification() == content.decision)
        let posted = fixture.broker.notification(title: Self.title, body: Self.body)
        #expect(posted?.title == content.title && posted?.body == content.body && (posted != nil) == content.mayPost)
        switch (identity, policy) {
        case (.unmanaged, _):
            #expect(content.decision.rule == .unmanagedContent)
            #expect(content.title == Self.title && content.body == Self.body)
        case (_, .allow):
            #expect(content.decision.action == .post)
            #expect(content.title == Self.title && content.body == Self.body)
        case (_, .blockOrgData):
            #expect(content.decision.action == .postGeneric)
            #expect(content.title == NotificationDecision.genericText)
            #expect(content.body == nil)
            #expect(!(content.title ?? "").contains("CFO"), "the generic text carries nothing of the original")
        case (_, .block):
            #expect(content.decision.action == .blocked)
            #expect(content.title == nil && content.body == nil && !content.mayPost)
            #expect(fixture.sink.blockedAttempts.last?.action == .notification)
        }
    }

    @Test("fails closed before ready, unauthorized and retired; a policy without the field allows (as before)")
    func gates() throws {
        #expect(try Fixture().broker.notificationContent(title: Self.title).decision.rule == .notReady)
        let unauthorized = try Fixture(ready: PolicyUpdate(auth: .unauthorized, notifications: .allow))
        #expect(unauthorized.broker.notificationContent(title: Self.title).title == nil)
        let retired = try Fixture(ready: PolicyUpdate(auth: .authorized, notifications: .allow))
        try retired.broker.apply(PolicyUpdate(auth: .retired))
        #expect(retired.broker.notificationContent(title: Self.title).decision.rule == .notAuthorized)
        let unset = try Fixture(ready: PolicyUpdate(auth: .authorized))
        #expect(unset.broker.notificationContent(title: Self.title).decision.action == .post)
        #expect(unset.sink.blockedAttempts.isEmpty)
    }
}

/// Open From (AppConnect's `ACOpenFromPolicy`, Intune's `allowedInboundDataTransferSources`).
@Suite("Open From decision matrix")
struct OpenFromMatrixTests {
    static let viewer = "com.acme.viewer"
    static let apps = [DeviceApp(id: viewer, isAppConnect: true, isAuthorized: true),
                       DeviceApp(id: "org.example.unauthorized", isAppConnect: true, isAuthorized: false)]
    static let sources: [String?] = [viewer, "org.example.sheets", "com.acme.viewer.evil", "COM.ACME.VIEWER",
                                     "org.example.unauthorized", "", nil]

    static let situations: [(String, PolicyUpdate?, @Sendable (String?) -> Bool)] = [
        ("before ready", nil, { _ in false }),
        ("user unauthorized", PolicyUpdate(auth: .unauthorized, openFrom: .authorized), { _ in false }),
        ("retired", PolicyUpdate(auth: .retired, openFrom: .authorized), { _ in false }),
        ("left out (as before: any app)", PolicyUpdate(auth: .authorized), { _ in true }),
        ("authorized", PolicyUpdate(auth: .authorized, openFrom: .authorized), { _ in true }),
        ("unauthorized", PolicyUpdate(auth: .authorized, openFrom: .unauthorized), { _ in false }),
        ("whitelist [viewer]", PolicyUpdate(auth: .authorized, openFrom: .whitelist([viewer])), { $0 == viewer }),
        ("empty whitelist", PolicyUpdate(auth: .authorized, openFrom: .whitelist([])), { _ in false }),
        ("All AppConnect apps", PolicyUpdate(auth: .authorized, openFrom: .allAppConnectApps), { $0 == viewer }),
    ]

    @Test("every situation x source x callback implemented", arguments: 0 ..< 9)
    func matrix(situation index: Int) throws {
        let (name, update, passes) = Self.situations[index]
        for implemented in [true, false] {
            let fixture = try Fixture(implementing: implemented ? [.openFromBlocked] : [], apps: Self.apps, ready: update)
            for source in Self.sources {
                fixture.delegate.reset()
                let before = fixture.sink.blockedAttempts.count
                let content = fixture.broker.openFrom(Array("report".utf8), source: source)
                let allowed = passes(source)
                #expect(fixture.broker.decideOpenFrom(source: source).allowed == allowed, "\(name), source \(source ?? "nil")")
                #expect((content != nil) == allowed, "blocked content must not reach the app")
                if allowed {
                    #expect(content == Array("report".utf8))
                    #expect(fixture.sink.blockedAttempts.count == before)
                } else {
                    #expect(fixture.sink.blockedAttempts.last?.action == .openFrom)
                    #expect(fixture.sink.blockedAttempts.last?.target == source, "the source is reported")
                    let callback = implemented && update != nil ? ["openFromBlocked:\(source ?? "?")"] : []
                    #expect(fixture.delegate.calls == callback)
                }
            }
        }
    }

    @Test("All AppConnect apps follows the device; an unknown source under a whitelist names its rule")
    func followsDevice() throws {
        let fixture = try Fixture(apps: Self.apps, ready: PolicyUpdate(auth: .authorized, openFrom: .allAppConnectApps))
        #expect(!fixture.broker.decideOpenFrom(source: "org.example.sheets").allowed)
        try fixture.broker.updateDevice(DeviceApp(id: "org.example.sheets", isAppConnect: true, isAuthorized: true))
        #expect(fixture.broker.decideOpenFrom(source: "org.example.sheets").allowed)
        #expect(fixture.broker.decideOpenFrom(source: nil).rule == .unknownSourceUnderWhitelist)
        #expect(try fixture.broker.policy().openFromPolicy == .whitelist)
    }

    @Test("issue 31.5: native mail is a whitelisted source only when the Open From whitelist holds both mail ids")
    func nativeMailSource() throws {
        for (whitelist, allowed) in [([WellKnownApp.nativeMail], false), ([WellKnownApp.mailActivity], false),
                                     ([WellKnownApp.nativeMail, WellKnownApp.mailActivity], true)] {
            let f = try Fixture(ready: PolicyUpdate(auth: .authorized, openFrom: .whitelist(Set(whitelist))))
            for source in [WellKnownApp.nativeMail, WellKnownApp.mailActivity] {
                let decision = f.broker.decideOpenFrom(source: source)
                #expect(decision.allowed == allowed, "\(whitelist) from \(source)")
                #expect(decision.rule == (allowed ? .nativeMailWhitelisted : .nativeMailNotWhitelisted))
                #expect((f.broker.openFrom("mail", source: source) != nil) == allowed)
            }
        }
    }
}

/// Paste-in (Intune's `managedAppsWithPasteIn` versus `managedApps`).
@Suite("Paste-in decision table")
struct PasteInTests {
    @Test("policy x who wrote the clear item x identity",
          arguments: [PasteInPolicy.anyApp, .managedApps], [ManagedIdentity.managed, .unmanaged])
    func table(policy: PasteInPolicy, identity: ManagedIdentity) throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .authorized, pasteIn: policy))
        try fixture.broker.setIdentity(identity)
        let restricted = policy == .managedApps && identity == .managed
        // Another (unmanaged) app wrote a clear item.
        fixture.pasteboard.write([.text("from a personal app")])
        #expect(fixture.broker.paste() == (restricted ? nil : .text("from a personal app")))
        #expect(fixture.broker.decidePasteIn(writtenByThisApp: false).allowed == !restricted)
        if restricted { #expect(fixture.sink.blockedAttempts.last?.rule == "pasteInFromOtherApp") }
        // The app's own clear copy is always pasteable back.
        try fixture.broker.copyResult(.text("own words"))
        #expect(fixture.broker.paste() == .text("own words"))
        #expect(fixture.broker.decidePasteIn(writtenByThisApp: true).allowed)
    }

    @Test("under managedApps, SecureCopy items of managed apps still paste; the placeholder text does not")
    func sealedStillPastes() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy, pasteIn: .managedApps))
        try fixture.broker.copyResult(.text("sealed plan"))
        // Someone else re-offers the sealed item followed by a clear placeholder (what a desktop
        // clipboard does): the sealed one opens, the placeholder is never read.
        let sealed = fixture.pasteboard.read().items
        fixture.pasteboard.write(sealed + [.text("placeholder")])
        #expect(fixture.broker.paste() == .text("sealed plan"))
        fixture.pasteboard.write([.text("placeholder")])
        #expect(fixture.broker.paste() == nil)
    }
}
