import ShareBroker
import Testing
import ShareBrokerTesting

/// Native mail as per-device configuration, and URL decisions that follow a platform's own
/// scheme associations (the Linux desktop adapter's `x-scheme-handler` defaults).
@Suite("native mail configuration and platform scheme associations")
struct NativeMailConfigurationTests {
    func snapshot(_ openIn: TransferSetting, nativeMail: NativeMail = .appleDevices, apps: [DeviceApp] = [],
                  config: [String: String]? = nil) throws -> PolicySnapshot {
        let broker = ShareBroker(appID: "com.acme.notes", device: DeviceApps(apps, nativeMail: nativeMail),
                                 platform: try Platform.embedded(entitling: "com.acme.notes"))
        try broker.start(delegate: Quiet())
        try broker.apply(PolicyUpdate(auth: .authorized, openIn: openIn, config: config))
        return try broker.policy()
    }

    final class Quiet: ShareBrokerDelegate {
        func appConnectIsReady() {}
        func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
    }

    static let linuxMail = NativeMail(ids: ["org.gnome.Evolution", "org.gnome.Evolution.compose"], launchID: "org.gnome.Evolution")

    @Test func theAppleDefaultKeepsTheSeedsRule() throws {
        #expect(NativeMail.appleDevices.ids.sorted() == ["com.apple.UIKit.activity.Mail", "com.apple.mobilemail"])
        #expect(try snapshot(.whitelist(["com.apple.mobilemail"])).whitelistAllowsNativeMail == false)
        #expect(try snapshot(.whitelist(["com.apple.mobilemail", "com.apple.UIKit.activity.Mail"])).whitelistAllowsNativeMail)
    }

    @Test func aLinuxDeviceNamesItsOwnIdsAndTheWhitelistMustHoldAllOfThem() throws {
        let half = try snapshot(.whitelist(["org.gnome.Evolution"]), nativeMail: Self.linuxMail)
        #expect(!half.whitelistAllowsNativeMail)
        #expect(TransferRules.openIn(target: "org.gnome.Evolution", via: .documentInteraction, in: half).rule == .nativeMailNotWhitelisted)
        let full = try snapshot(.whitelist(["org.gnome.Evolution", "org.gnome.Evolution.compose"]), nativeMail: Self.linuxMail)
        #expect(full.whitelistAllowsNativeMail)
        #expect(TransferRules.openIn(target: "org.gnome.Evolution.compose", via: .documentInteraction, in: full).rule == .nativeMailWhitelisted)
        // The Apple ids mean nothing special on that device.
        let apple = try snapshot(.whitelist(["com.apple.mobilemail", "com.apple.UIKit.activity.Mail"]), nativeMail: Self.linuxMail)
        #expect(!apple.whitelistAllowsNativeMail)
        #expect(Decision(allowed: false, rule: .nativeMailNotWhitelisted, generation: 1)
            .explanation(target: nil, snapshot: half).contains("org.gnome.Evolution and org.gnome.Evolution.compose"))
    }

    @Test func noNativeMailIdsMeansNativeMailIsNeverWhitelisted() throws {
        let none = NativeMail(ids: [], launchID: "org.example.Mail")
        #expect(none.ids == ["org.example.Mail"])
        let s = try snapshot(.whitelist([]), nativeMail: NativeMail(ids: [], launchID: "x"))
        #expect(!s.whitelistAllowsNativeMail)
    }

    @Test func mailtoOpensThePlatformsHandlerWhenItIsNativeMail() throws {
        let s = try snapshot(.whitelist(["org.gnome.Evolution", "org.gnome.Evolution.compose"]), nativeMail: Self.linuxMail)
        let d = try URLRules.decide(url: "mailto:a@b", in: s, association: .app("org.gnome.Evolution"))
        #expect(d.outcome == .opened)
        #expect(d.handler == "org.gnome.Evolution")
        // A handler that is not native mail is an ordinary target: not whitelisted, blocked.
        let other = try URLRules.decide(url: "mailto:a@b", in: s, association: .app("org.mozilla.Thunderbird"))
        #expect(other.outcome == .blocked)
        #expect(other.decision.rule == .notInWhitelist)
        #expect(other.notifiesApp)
    }

    @Test func schemeBlockingDisabledCoversOnlyNativeMail() throws {
        let s = try snapshot(.unauthorized, nativeMail: Self.linuxMail, config: [ServerConfigKey.disableSchemeBlocking: "true"])
        #expect(try URLRules.decide(url: "mailto:a@b", in: s, association: .app("org.gnome.Evolution")).decision.rule == .schemeBlockingDisabled)
        #expect(try URLRules.decide(url: "mailto:a@b", in: s, association: .app("org.mozilla.Thunderbird")).outcome == .blocked)
    }

    @Test func noMailHandlerAndNoManagedMailAppIsUnhandled() throws {
        let s = try snapshot(.unauthorized, nativeMail: Self.linuxMail)
        #expect(try URLRules.decide(url: "mailto:a@b", in: s, association: .none).outcome == .unhandled)
        let managed = DeviceApp(id: "com.acme.mail", isAppConnect: true, isAuthorized: true, schemes: ["mailto"])
        let t = try snapshot(.unauthorized, nativeMail: Self.linuxMail, apps: [managed])
        let taken = try URLRules.decide(url: "mailto:a@b", in: t, association: .none)
        #expect(taken.outcome == .opened)
        #expect(taken.handler == "com.acme.mail")
        #expect(taken.decision.rule == .appConnectMailApp)
    }

    @Test func customSchemesFollowThePlatformsAssociationNotTheDeviceTable() throws {
        let table = DeviceApp(id: "com.acme.sheets", schemes: ["sheets"])
        let s = try snapshot(.whitelist(["org.example.Sheets"]), apps: [table])
        #expect(try URLRules.decide(url: "sheets:x", in: s).decision.rule == .notInWhitelist)
        let d = try URLRules.decide(url: "sheets:x", in: s, association: .app("org.example.Sheets"))
        #expect(d.outcome == .opened)
        #expect(d.handler == "org.example.Sheets")
        #expect(try URLRules.decide(url: "sheets:x", in: s, association: .none).outcome == .unhandled)
        #expect(try URLRules.decide(url: "sheets:x", in: s, association: .app("org.example.sheets")).outcome == .blocked)
    }
}
