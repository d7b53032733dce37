import ShareBroker
import Testing

/// The seeds' Open In table as a matrix: policy x channel x target x callback implemented or not.
@Suite("Open In decision matrix")
struct OpenInMatrixTests {
    static let viewer = "com.acme.viewer"

    /// A policy situation and, per the seed, whether a target passes through a channel.
    struct Situation: Sendable, CustomStringConvertible {
        let description: String
        let update: PolicyUpdate?
        let apps: [DeviceApp]
        let passes: @Sendable (_ target: String, _ channel: TransferChannel) -> Bool
        var isReady: Bool { update != nil }
    }

    static let bothMail: Set<String> = [WellKnownApp.nativeMail, WellKnownApp.mailActivity]
    static let appConnectApps = [DeviceApp(id: viewer, isAppConnect: true, isAuthorized: true),
                                 DeviceApp(id: "org.example.unauthorized", isAppConnect: true, isAuthorized: false)]

    static let situations: [Situation] = [
        Situation(description: "before ready", update: nil, apps: []) { _, _ in false },
        Situation(description: "user unauthorized, Open In authorized",
                  update: PolicyUpdate(auth: .unauthorized, openIn: .authorized), apps: []) { _, _ in false },
        Situation(description: "retired", update: PolicyUpdate(auth: .retired, openIn: .authorized), apps: []) { _, _ in false },
        Situation(description: "Open In authorized", update: PolicyUpdate(auth: .authorized, openIn: .authorized),
                  apps: []) { _, _ in true },
        Situation(description: "Open In unauthorized", update: PolicyUpdate(auth: .authorized, openIn: .unauthorized),
                  apps: []) { _, _ in false },
        Situation(description: "whitelist [viewer]", update: PolicyUpdate(auth: .authorized, openIn: .whitelist([viewer])),
                  apps: []) { target, channel in channel != .activitySheet && target == viewer },
        Situation(description: "whitelist [viewer, both mail ids]",
                  update: PolicyUpdate(auth: .authorized, openIn: .whitelist(bothMail.union([viewer]))), apps: []) { target, channel in
            channel != .activitySheet && (target == viewer || bothMail.contains(target))
        },
        Situation(description: "whitelist [viewer, mobilemail only]",
                  update: PolicyUpdate(auth: .authorized, openIn: .whitelist([viewer, WellKnownApp.nativeMail])), apps: []) { target, channel in
            channel != .activitySheet && target == viewer
        },
        Situation(description: "whitelist [viewer, mail activity only]",
                  update: PolicyUpdate(auth: .authorized, openIn: .whitelist([viewer, WellKnownApp.mailActivity])), apps: []) { target, channel in
            channel != .activitySheet && target == viewer
        },
        Situation(description: "All AppConnect apps", update: PolicyUpdate(auth: .authorized, openIn: .allAppConnectApps),
                  apps: appConnectApps) { target, channel in channel != .activitySheet && target == viewer },
    ]

    static let targets = [viewer, "org.example.sheets", WellKnownApp.nativeMail, WellKnownApp.mailActivity,
                          "com.acme.viewer.evil", "COM.ACME.VIEWER", "com.acme", "org.example.unauthorized", ""]

    @Test("every cell of the matrix follows the seed", arguments: situations, [true, false])
    func matrix(situation: Situation, callbackImplemented: Bool) throws {
        let callbacks: Set<RecordingDelegate.Callback> = callbackImplemented ? [.openInBlocked] : []
        let fixture = try Fixture(implementing: callbacks, apps: situation.apps, ready: situation.update)
        let document = (name: "Q3 report.pdf", bytes: Array("quarterly numbers 2026".utf8))
        for channel in TransferChannel.allCases {
            for target in Self.targets {
                fixture.delegate.reset()
                let before = fixture.sink.blockedAttempts.count
                let expected = situation.passes(target, channel)
                #expect(fixture.broker.decideOpenIn(target: target, via: channel).allowed == expected,
                        "\(situation) \(channel) \(target)")
                let result = try fixture.broker.openIn(document.bytes, named: document.name, target: target, via: channel)
                if expected {
                    #expect(result.delivered, "\(situation) \(channel) \(target)")
                    #expect(result.name == document.name)
                    #expect(fixture.outbox.handedOver.last?.bytes == document.bytes)
                    #expect(fixture.delegate.calls.isEmpty)
                    #expect(fixture.sink.blockedAttempts.count == before)
                } else {
                    #expect(!result.delivered, "\(situation) \(channel) \(target)")
                    #expect(result.name != document.name)
                    #expect(result.name.hasSuffix("." + DummyFile.fileExtension))
                    #expect(fixture.outbox.handedOver.last?.bytes == [])
                    let notified = callbackImplemented && situation.isReady
                    #expect(fixture.delegate.calls == (notified ? ["openInBlocked"] : []), "\(situation) \(channel) \(target)")
                    #expect(fixture.sink.blockedAttempts.count == before + 1)
                    #expect(fixture.sink.blockedAttempts.last?.target == target)
                }
            }
        }
    }

    @Test("the All AppConnect apps whitelist follows the device")
    func appConnectWhitelistFollowsDevice() throws {
        let fixture = try Fixture(apps: Self.appConnectApps, ready: PolicyUpdate(auth: .authorized, openIn: .allAppConnectApps))
        #expect(try fixture.broker.policy().openInWhitelist == [Self.viewer])
        let outcome = try fixture.broker.updateDevice(DeviceApp(id: "org.example.unauthorized", isAppConnect: true, isAuthorized: true))
        #expect(outcome.changes == [.openIn])
        #expect(outcome.acknowledgments.map(\.kind) == [.openIn])
        #expect(fixture.broker.decideOpenIn(target: "org.example.unauthorized", via: .documentInteraction).allowed)
        let revoked = try fixture.broker.updateDevice(DeviceApp(id: Self.viewer, isAppConnect: true, isAuthorized: false))
        #expect(revoked.changes == [.openIn])
        #expect(!fixture.broker.decideOpenIn(target: Self.viewer, via: .documentInteraction).allowed)
        // A change that leaves the whitelist as it was announces nothing.
        let quiet = try fixture.broker.updateDevice(DeviceApp(id: "org.example.other", isAppConnect: false))
        #expect(quiet.changes.isEmpty)
    }

    @Test("a document name that could escape the outbox is refused, and nothing is handed over")
    func hostileDocumentNames() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, openIn: .authorized))
        for name in ["../etc/passwd", "a/b", "", ".", "..", "x\0y"] {
            #expect(throws: ShareBrokerError.invalidDocumentName) {
                try fixture.broker.openIn([1, 2, 3], named: name, target: Self.viewer)
            }
        }
        #expect(fixture.outbox.handedOver.isEmpty)
    }
}
