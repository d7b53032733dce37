import Foundation
import ShareBroker
import ShareBrokerAgentProtocol
import Testing

/// The agent protocol's bodies are JSON written and read without Foundation (so the C library
/// carries none): the same messages as before, in both directions with Foundation's coders (an
/// agent and an app of different builds understand each other), and stricter where it matters.
@Suite("agent message bodies without Foundation")
struct AgentMessageCodingTests {
    static let policy = WirePolicy(
        PolicyUpdate(auth: .authorized, authMessage: "ok \"quoted\"\n\u{1}", openIn: .whitelist(["b", "a"]),
                     pasteboard: .secureCopy, print: .authorized, config: ["k": "v", "ü": "∑"],
                     clipboardExceptionLength: 12),
        expandedWhitelist: [])
    static let welcome = WelcomeMessage(
        app: "com.acme.notes", peer: PeerDescription(pid: 42, uid: 1000, executable: nil), push: UInt64.max,
        policy: policy, device: [WireDeviceApp(id: "com.acme.viewer", appConnect: true, authorized: false, schemes: ["x"])],
        nativeMail: ["com.acme.mail"])

    @Test("Every message round-trips, and Foundation's coders read ours and we read theirs")
    func roundTripAndFoundationCompatibility() throws {
        try Self.check(Self.welcome)
        try Self.check(HelloMessage(protocolVersion: 1, role: .admin))
        try Self.check(RefusalMessage(reason: .interpreter, message: "no", peer: nil))
        try Self.check(PolicyPushMessage(push: 7, policy: Self.policy, device: []))
        try Self.check(AcknowledgmentBatch(id: "b", push: 3, records: [
            WireAcknowledgment(id: "r", kind: "auth", state: 1, message: "", generation: 9)]))
        try Self.check(ReceiptMessage(batch: "b", logged: false, reason: "disk full"))
        try Self.check(AdminRequest(command: "setPolicy", document: "{\"a\": [1, 2]}"))
        try Self.check(AdminResponse(ok: true, message: "m", push: 1, currentKeyID: nil, connectedApps: ["a"], entitledApps: []))
        try Self.check(ErrorMessage(message: "bad"))
    }

    static func check<T: Codable & Equatable>(_ value: T) throws {
        let ours = AgentMessage.encode(value)
        #expect(try AgentMessage.decode(T.self, from: ours) == value)
        #expect(try JSONDecoder().decode(T.self, from: Data(ours)) == value)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let theirs = try Array(encoder.encode(value))
        #expect(try AgentMessage.decode(T.self, from: theirs) == value)
        // Same bytes as Foundation's sorted-keys encoder, but for the escaped forward slash.
        #expect(String(decoding: ours, as: UTF8.self) == String(decoding: theirs, as: UTF8.self).replacingOccurrences(of: "\\/", with: "/"))
    }

    @Test("Keys are sorted, absent optionals are left out, integers are exact")
    func encodingShape() {
        let text = String(decoding: AgentMessage.encode(ReceiptMessage(batch: "b", logged: true)), as: UTF8.self)
        #expect(text == #"{"batch":"b","logged":true}"#)
        let push = String(decoding: AgentMessage.encode(PolicyPushMessage(push: UInt64.max, policy: Self.policy, device: [])), as: UTF8.self)
        #expect(push.contains(#""push":18446744073709551615"#))
    }

    @Test("Unknown members are ignored; duplicate keys, wrong types and integers that do not fit are refused")
    func strictDecoding() throws {
        let newer = #"{"batch":"b","logged":true,"future":{"x":[1,2,null]}}"#
        #expect(try AgentMessage.decode(ReceiptMessage.self, from: Array(newer.utf8)) == ReceiptMessage(batch: "b", logged: true))
        let refused = [
            #"{"batch":"b","logged":true,"logged":false}"#,   // read two ways by two parsers: refused
            #"{"batch":"b","logged":"true"}"#,
            #"{"batch":"b"}"#,
            #"{"batch":"b","logged":true,"reason":7}"#,
            #"{"batch":"b","logged":true} x"#,
            #"["batch"]"#,
            "",
        ]
        for body in refused {
            #expect(throws: FrameError.invalidBody("not a valid ReceiptMessage message")) {
                try AgentMessage.decode(ReceiptMessage.self, from: Array(body.utf8))
            }
        }
        for push in ["18446744073709551616", "-1", "1.5", "1e3", "\"1\""] {
            let body = #"{"push":\#(push),"policy":{},"device":[]}"#
            #expect(throws: FrameError.self) { try AgentMessage.decode(PolicyPushMessage.self, from: Array(body.utf8)) }
        }
        let nested = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: FrameError.self) { try AgentMessage.decode(ErrorMessage.self, from: Array(nested.utf8)) }
    }
}
