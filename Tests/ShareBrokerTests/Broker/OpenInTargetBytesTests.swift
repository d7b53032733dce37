import PropertyBased
import ShareBroker
import ShareBrokerTesting
import Testing

/// The Open In decision on a target's bytes (``OpenInTargets``, the C interface's fast path)
/// against the decision on the String: the same answer wherever the bytes answer, and no answer
/// where only Unicode equivalence can decide (targets or whitelist ids that are not ASCII,
/// invalid UTF-8).
@Suite("Open In on a target's bytes")
struct OpenInTargetBytesTests {
    final class Quiet: ShareBrokerDelegate {
        func appConnectIsReady() {}
        func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
    }

    func makeBroker(_ openIn: TransferSetting, nativeMail: NativeMail = .appleDevices, apps: [DeviceApp] = [],
                auth: AuthState = .authorized) throws -> ShareBroker {
        let broker = ShareBroker(appID: "com.acme.notes", device: DeviceApps(apps, nativeMail: nativeMail),
                                 platform: try Platform.embedded(entitling: "com.acme.notes"))
        try broker.start(delegate: Quiet())
        try broker.apply(PolicyUpdate(auth: auth, openIn: openIn))
        return broker
    }

    /// The decision on `bytes` under the broker's snapshot (nil: the bytes cannot decide), as the C
    /// interface's call makes it before it falls back to the String.
    func byBytes(_ broker: ShareBroker, _ bytes: [UInt8], via channel: TransferChannel = .documentInteraction) -> Decision? {
        let snapshot = broker.currentSnapshot
        return bytes.withUnsafeBytes { TransferRules.openIn(targetUTF8: $0, via: channel, in: snapshot) }
    }

    /// Checks that the bytes of `target` decide as the String does; returns whether they decided.
    /// With `whitelist`, also checks the String's answer against Swift's own `Set<String>`
    /// membership (the reference: the String path looks in the same byte table first).
    @discardableResult
    func expectSame(_ broker: ShareBroker, _ target: String, via channel: TransferChannel = .documentInteraction,
                    whitelist: Set<String>? = nil, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let byString = broker.decideOpenIn(target: target, via: channel)
        if let whitelist, channel == .documentInteraction {
            #expect((byString.rule == .inWhitelist) == whitelist.contains(target),
                    "\(target.debugDescription): \(byString.rule)", sourceLocation: sourceLocation)
        }
        guard let bytes = byBytes(broker, Array(target.utf8), via: channel) else { return false }
        #expect(bytes == byString, "\(target.debugDescription) via \(channel)", sourceLocation: sourceLocation)
        return true
    }

    /// ASCII ids of every length from 0 to 40 bytes: the hash's short (1-3, 4-7), one-word and
    /// several-word paths, each id found and each near miss (one byte changed at the start, the
    /// middle and the end; one byte more; one byte less) not found.
    @Test func asciiIdsOfEveryLengthDecideOnTheirBytesAsOnTheString() throws {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789.-_ABC".utf8)
        let ids = (0...40).map { length in String(decoding: (0..<length).map { alphabet[($0 * 7 + length) % alphabet.count] }, as: UTF8.self) }
        let broker = try makeBroker(.whitelist(Set(ids)))
        for id in ids {
            #expect(expectSame(broker, id, whitelist: Set(ids)), "\(id.debugDescription) was not decided on its bytes")
            #expect(broker.decideOpenIn(target: id, via: .documentInteraction).rule == .inWhitelist)
            var near: [[UInt8]] = []
            let utf8 = Array(id.utf8)
            for index in [0, utf8.count / 2, utf8.count - 1] where utf8.indices.contains(index) {
                var changed = utf8
                changed[index] = changed[index] == UInt8(ascii: "x") ? UInt8(ascii: "y") : UInt8(ascii: "x")
                near.append(changed)
            }
            near.append(utf8 + [UInt8(ascii: "q")])
            if !utf8.isEmpty { near.append(Array(utf8.dropLast())) }
            for miss in near {
                let target = String(decoding: miss, as: UTF8.self)
                #expect(expectSame(broker, target, whitelist: Set(ids)), "\(target.debugDescription) was not decided on its bytes")
            }
        }
        // Every channel, and the activity sheet before any lookup.
        for channel in TransferChannel.allCases {
            #expect(expectSame(broker, ids[23], via: channel))
        }
    }

    /// Random whitelists (0 to 200 ids, some sharing long prefixes) and random targets: the bytes
    /// always decide (every id is ASCII) and always as the String does.
    @Test func randomAsciiWhitelistsDecideOnTheirBytesAsOnTheString() throws {
        var random = Xoshiro(seed: (0x5eed_0016, 0x5eed_0017, 0x5eed_0018, 0x5eed_0019)) // swift-property-based's, reproducible
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789.-_ABCXYZ".utf8)
        func randomID() -> String {
            let prefix = ["", "com.acme.", "org.example.averylongcommonprefix."][Int.random(in: 0..<3, using: &random)]
            let length = Int.random(in: 0...24, using: &random)
            return prefix + String(decoding: (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] },
                                   as: UTF8.self)
        }
        for _ in 0..<40 {
            let ids = Set((0..<Int.random(in: 0...200, using: &random)).map { _ in randomID() })
            let broker = try makeBroker(.whitelist(ids))
            for id in ids { #expect(expectSame(broker, id, whitelist: ids)) }
            for _ in 0..<200 { #expect(expectSame(broker, randomID(), whitelist: ids)) }
            #expect(expectSame(broker, WellKnownApp.nativeMail))
            #expect(expectSame(broker, WellKnownApp.mailActivity))
        }
    }

    /// A target that is not ASCII never decides on its bytes: equal Strings can differ in bytes.
    @Test func aTargetThatIsNotAsciiIsLeftToTheString() throws {
        let precomposed = "com.acme.caf\u{E9}"      // é as one scalar
        let decomposed = "com.acme.cafe\u{301}"     // e + combining acute
        #expect(precomposed == decomposed && Array(precomposed.utf8) != Array(decomposed.utf8))
        let broker = try makeBroker(.whitelist([precomposed, "org.example.sheets"]))
        #expect(byBytes(broker, Array(precomposed.utf8)) == nil)
        #expect(byBytes(broker, Array(decomposed.utf8)) == nil)
        #expect(broker.decideOpenIn(target: decomposed, via: .documentInteraction).rule == .inWhitelist)
        // Under the other policies too (the bytes are never trusted to be UTF-8 then).
        for setting in [TransferSetting.authorized, .unauthorized] {
            #expect(byBytes(try makeBroker(setting), Array(decomposed.utf8)) == nil)
        }
        #expect(byBytes(try makeBroker(.authorized, auth: .unauthorized), Array(decomposed.utf8)) == nil)
    }

    /// Bytes that are not UTF-8 at all get no answer (the C interface then reports invalid UTF-8).
    @Test func invalidUTF8GetsNoAnswer() throws {
        let broker = try makeBroker(.whitelist(["org.example.sheets"]))
        for bytes: [UInt8] in [[0x6F, 0x72, 0x67, 0x2E, 0xFF], [0xC0, 0xAF], Array("org.example.sheet".utf8) + [0xC3],
                               [0x80], Array("org.example.sheets".utf8) + [0xED, 0xA0, 0x80]] {
            #expect(byBytes(broker, bytes) == nil, "\(bytes)")
            #expect(byBytes(try makeBroker(.authorized), bytes) == nil, "\(bytes)")
        }
    }

    /// A whitelist id that is not ASCII may equal an ASCII target (U+212A KELVIN SIGN is "K"):
    /// the bytes still decide the ASCII ids they hold, and leave every other target to the String.
    @Test func aWhitelistIdThatIsNotAsciiLeavesTheMissesToTheString() throws {
        let kelvin = "com.acme.\u{212A}"
        #expect(kelvin == "com.acme.K")
        let broker = try makeBroker(.whitelist([kelvin, "com.acme.caf\u{E9}", "org.example.sheets"]))
        #expect(expectSame(broker, "org.example.sheets"))
        #expect(byBytes(broker, Array("com.acme.K".utf8)) == nil)
        #expect(broker.decideOpenIn(target: "com.acme.K", via: .documentInteraction).rule == .inWhitelist)
        #expect(byBytes(broker, Array("org.example.other".utf8)) == nil)
        #expect(broker.decideOpenIn(target: "org.example.other", via: .documentInteraction).rule == .notInWhitelist)
        // Whatever the bytes answer through the other channels is the String's answer.
        for channel in TransferChannel.allCases {
            expectSame(broker, "com.acme.K", via: channel)
            expectSame(broker, "org.example.sheets", via: channel)
        }
    }

    /// Native mail: its ids decide on their bytes too (and whether the whitelist holds them all);
    /// a native mail id that is not ASCII leaves every target to the String.
    @Test func nativeMailIdsDecideOnTheirBytes() throws {
        let both = try makeBroker(.whitelist([WellKnownApp.nativeMail, WellKnownApp.mailActivity, "org.example.sheets"]))
        #expect(expectSame(both, WellKnownApp.nativeMail))
        #expect(both.decideOpenIn(target: WellKnownApp.nativeMail, via: .documentInteraction).rule == .nativeMailWhitelisted)
        let half = try makeBroker(.whitelist([WellKnownApp.nativeMail, "org.example.sheets"]))
        #expect(expectSame(half, WellKnownApp.nativeMail))
        #expect(expectSame(half, WellKnownApp.mailActivity))
        #expect(half.decideOpenIn(target: WellKnownApp.mailActivity, via: .documentInteraction).rule == .nativeMailNotWhitelisted)
        let linux = NativeMail(ids: ["org.gnome.Evolution", "org.gnome.Evolution.compose"], launchID: "org.gnome.Evolution")
        let evolution = try makeBroker(.whitelist(["org.gnome.Evolution"]), nativeMail: linux)
        #expect(expectSame(evolution, "org.gnome.Evolution"))
        #expect(expectSame(evolution, WellKnownApp.nativeMail))
        let accented = NativeMail(ids: ["org.example.m\u{E9}l"], launchID: "org.example.m\u{E9}l")
        let odd = try makeBroker(.whitelist(["org.example.sheets"]), nativeMail: accented)
        #expect(byBytes(odd, Array("org.example.sheets".utf8)) == nil)
        #expect(odd.decideOpenIn(target: "org.example.sheets", via: .documentInteraction).rule == .inWhitelist)
    }

    /// "All AppConnect apps", authorized, unauthorized, not ready, not authorized: ASCII targets
    /// decide on their bytes as on the String.
    @Test func everyPolicyDecidesAsciiTargetsOnTheirBytes() throws {
        let apps = [DeviceApp(id: "com.acme.viewer", isAppConnect: true, isAuthorized: true),
                    DeviceApp(id: "com.acme.locked", isAppConnect: true, isAuthorized: false)]
        let brokers = [try makeBroker(.allAppConnectApps, apps: apps), try makeBroker(.authorized), try makeBroker(.unauthorized),
                       try makeBroker(.authorized, auth: .unauthorized), try makeBroker(.whitelist(["com.acme.viewer"]), auth: .retired)]
        let notReady = ShareBroker(appID: "com.acme.notes", platform: try Platform.embedded(entitling: "com.acme.notes"))
        for broker in brokers + [notReady] {
            for target in ["com.acme.viewer", "com.acme.locked", "", WellKnownApp.nativeMail] {
                for channel in TransferChannel.allCases { #expect(expectSame(broker, target, via: channel)) }
            }
        }
    }

    /// The table is built with the snapshot and kept while the whitelist and the device stay.
    @Test func theTableFollowsTheWhitelistAndTheDevice() throws {
        let broker = try makeBroker(.whitelist(["org.example.sheets"]))
        let first = try broker.policy()
        try broker.apply(PolicyUpdate(auth: .unauthorized))
        #expect(try broker.policy().openInTargets === first.openInTargets)
        try broker.apply(PolicyUpdate(auth: .authorized, openIn: .whitelist(["org.example.docs"])))
        #expect(try broker.policy().openInTargets !== first.openInTargets)
        #expect(expectSame(broker, "org.example.docs"))
        #expect(broker.decideOpenIn(target: "org.example.sheets", via: .documentInteraction).rule == .notInWhitelist)
    }
    /// The C interface's call (``ShareBroker/decideOpenIn(targetCString:via:)``): the String's
    /// answer for every valid target, ASCII (on the bytes) or not (validated, then on the String),
    /// and `nil` for bytes that are not UTF-8.
    @Test func theCStringCallAnswersAsTheStringOrRefusesInvalidUTF8() throws {
        let whitelist: Set<String> = ["com.acme.viewer", "caf\u{E9}.app", "\u{212A}elvin"]
        for nativeMail in [NativeMail.appleDevices, NativeMail(ids: ["com.acme.m\u{E4}il"], launchID: "com.acme.m\u{E4}il")] {
            let broker = try makeBroker(.whitelist(whitelist), nativeMail: nativeMail)
            for target in ["com.acme.viewer", "com.acme.other", "", "cafe\u{301}.app", "Kelvin", "\u{212A}elvin",
                           "com.acme.m\u{E4}il", "com.acme.ma\u{308}il", WellKnownApp.nativeMail] {
                for channel in TransferChannel.allCases {
                    let byCString = Array(target.utf8CString).withUnsafeBufferPointer { buffer in
                        buffer.baseAddress.flatMap { broker.decideOpenIn(targetCString: $0, via: channel) }
                    }
                    #expect(byCString == broker.decideOpenIn(target: target, via: channel), "\(target.debugDescription) via \(channel)")
                }
            }
            for invalid: [UInt8] in [[0xFF], [0x63, 0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF]] {
                let answer = (invalid.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer { buffer in
                    buffer.baseAddress.flatMap { broker.decideOpenIn(targetCString: $0, via: .documentInteraction) }
                }
                #expect(answer == nil, "\(invalid)")
            }
        }
    }
}
