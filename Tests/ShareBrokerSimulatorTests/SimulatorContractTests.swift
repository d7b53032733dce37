import Foundation
import ShareBrokerSimulator
import Testing

/// Drives the simulator line by line, as `sharebroker simulate` does.
final class Session {
    let simulator: PolicySimulator
    let outbox: String
    private(set) var number = 0

    init() {
        outbox = NSTemporaryDirectory() + "sb-sim-test-\(UUID().uuidString)"
        simulator = PolicySimulator(outboxDirectory: outbox)
    }

    deinit { try? FileManager.default.removeItem(atPath: outbox) }

    @discardableResult
    func send(_ line: String) -> JSON {
        number += 1
        guard let answer = simulator.handle(line: line, number: number) else { return .null }
        return answer.json
    }

    /// The `state` result without its line number: equal before and after means nothing changed.
    func stateFingerprint() -> String {
        var json = send(#"{"op":"state"}"#)
        if case .object(let members) = json { json = .object(members.filter { $0.0 != "line" }) }
        return json.serialized() + send(#"{"op":"serverLog"}"#)["acks"].map { $0.serialized() }.debugDescription
    }
}

extension JSON {
    var string: String? { if case .string(let s) = self { s } else { nil } }
    var strings: [String] {
        if case .array(let items) = self { items.compactMap(\.string) } else { [] }
    }
}

@Suite("Simulator contract")
struct SimulatorContractTests {
    static let start = #"{"op":"start","app":"com.acme.notes","implements":["openInPolicyChanged","openInAttemptedWhenBlocked","openURLAttemptedWhenUnauthorized","printPolicyChanged"],"apps":[{"id":"com.acme.viewer","appConnect":true,"authorized":true},{"id":"com.apple.mobilemail","handles":["mailto"]},{"id":"org.example.sheets","handles":["sheets"]}]}"#

    @Test("start answers ready false; state before the first policy is rejected")
    func startAndReady() {
        let s = Session()
        let started = s.send(Self.start)
        #expect(started["ready"] == .bool(false))
        #expect(started["line"] == .number(1))
        #expect(started["op"] == .string("start"))
        #expect(s.send(#"{"op":"state"}"#)["error"]?.string?.contains("not ready") == true)
        let ready = s.send(#"{"op":"policy","auth":"authorized","openIn":"authorized"}"#)
        #expect(ready["notifications"]?.strings == ["appConnectIsReady"])
        #expect(ready["acks"] == .object([]))
        #expect(ready["wiped"] == .bool(false))
        let state = s.send(#"{"op":"state"}"#)
        #expect(state["ready"] == .bool(true))
        #expect(state["pasteboardPolicy"]?.string == "unauthorized")
        #expect(state["secureFileIOPolicy"]?.string == "required")
        #expect(state["openInEnabled"] == .bool(true))
        #expect(state["copyEnabled"] == .bool(false))
    }

    @Test("later updates list the callbacks of changed values and their acknowledgments")
    func notificationsAndAcks() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized"}"#)
        let update = s.send(#"{"op":"policy","openIn":"whitelist","openInWhitelist":["com.acme.viewer"],"print":"authorized","pasteboard":"authorized","logLevel":"debug","ackWith":{"openIn":"error:viewer is missing"}}"#)
        #expect(update["notifications"]?.strings == ["openInPolicyChanged", "printPolicyChanged"])
        #expect(update["acks"] == .object([("openIn", .string("error")), ("pasteboard", .string("unsupported")),
                                           ("print", .string("applied"))]))
        let log = s.send(#"{"op":"serverLog"}"#)
        guard case .array(let acks)? = log["acks"] else {
            Issue.record("serverLog has no acks")
            return
        }
        #expect(acks.count == 3)
        #expect(acks.first?["message"]?.string == "viewer is missing")
        let state = s.send(#"{"op":"state"}"#)
        #expect(state["openInWhitelist"]?.strings == ["com.acme.viewer"])
        #expect(state["logLevel"]?.string == "debug")
    }

    @Test("a rejected line is answered with an error and leaves the state exactly as it was", arguments: [
        ("not json at all", "not valid JSON"),
        (#"[1,2,3]"#, "JSON object"),
        (#"{"op":"fly"}"#, "unknown op"),
        (#"{"noop":true}"#, "'op'"),
        (#"{"op":"policy","auth":"maybe"}"#, "'auth'"),
        (#"{"op":"policy","auth":"authorized","print":"sometimes"}"#, "'print'"),
        (#"{"op":"policy","openIn":"whitelist"}"#, "openInWhitelist"),
        (#"{"op":"policy","openIn":"authorized","openInWhitelist":["a"]}"#, "openInWhitelist"),
        (#"{"op":"policy","auth":"unauthorized","ackWith":{"auth":"unsupported"}}"#, "ackWith.auth"),
        (#"{"op":"policy","auth":"unauthorized","ackWith":{"weather":"applied"}}"#, "ackWith"),
        (#"{"op":"policy","config":{"a":1}}"#, "config.a"),
        (#"{"op":"policy","managedBrowserRequired":"yes"}"#, "managedBrowserRequired"),
        (#"{"op":"openIn","document":"a.pdf","target":"x"}"#, "content"),
        (#"{"op":"openIn","document":"a.pdf","content":"x"}"#, "'target'"),
        (#"{"op":"openIn","document":"../../escape","content":"x","target":"com.acme.viewer"}"#, "document"),
        (#"{"op":"openIn","document":"a","contentBase64":"***","target":"x"}"#, "base64"),
        (#"{"op":"openIn","document":"a","content":"x","target":"x","via":"carrierPigeon"}"#, "'via'"),
        (#"{"op":"openURL","url":"https://example.org"}"#, "version 1"),
        (#"{"op":"openURL"}"#, "'url'"),
        (#"{"op":"device"}"#, "secureServices"),
        (#"{"op":"device","app":{"appConnect":true}}"#, "app.id"),
        (#"{"op":"start","app":"again"}"#, "only once"),
    ])
    func rejectedLines(line: String, mentions: String) {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","openIn":"authorized","print":"authorized"}"#)
        let before = s.stateFingerprint()
        let answer = s.send(line)
        let error = answer["error"]?.string
        #expect(error != nil, "\(line) was not rejected")
        #expect(error?.contains(mentions) == true, "error '\(error ?? "")' does not mention \(mentions)")
        #expect(s.stateFingerprint() == before)
    }

    @Test("every op before start is rejected; unknown extra fields are ignored")
    func opBeforeStart() {
        let s = Session()
        for op in ["policy", "device", "state", "openIn", "print", "serverLog", "copy"] {
            #expect(s.send(#"{"op":"\#(op)"}"#)["error"]?.string?.contains("before 'start'") == true)
        }
        #expect(s.send(#"{"op":"start","app":"a","colour":"blue"}"#)["ready"] == .bool(false))
    }

    @Test("openIn writes the document or an empty dummy under the outbox, with absolute paths")
    func openInFiles() throws {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","openIn":"whitelist","openInWhitelist":["com.acme.viewer"]}"#)
        let delivered = s.send(#"{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"com.acme.viewer"}"#)
        #expect(delivered["outcome"]?.string == "delivered")
        let path = try #require(delivered["path"]?.string)
        #expect(path.hasPrefix("/") && path.hasSuffix("/Q3 report.pdf"))
        #expect(FileManager.default.contents(atPath: path) == Data("quarterly numbers".utf8))
        let dummy = s.send(#"{"op":"openIn","document":"Q3 report.pdf","contentBase64":"cXVhcnRlcmx5IG51bWJlcnM=","target":"org.example.sheets"}"#)
        #expect(dummy["outcome"]?.string == "dummy")
        #expect(dummy["notifications"]?.strings == ["openInAttemptedWhenBlocked"])
        #expect(dummy["why"]?.string?.contains("not in the whitelist of 1 app") == true)
        let dummyPath = try #require(dummy["path"]?.string)
        #expect(!dummyPath.contains("Q3"))
        #expect(FileManager.default.contents(atPath: dummyPath) == Data())
        let sheet = s.send(#"{"op":"openIn","document":"Q3 report.pdf","content":"q","target":"com.acme.viewer","via":"activitySheet"}"#)
        #expect(sheet["outcome"]?.string == "dummy")
    }

    @Test("URLs, mail, print and drag and drop through the simulator")
    func actions() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","openIn":"whitelist","openInWhitelist":["com.acme.viewer"],"dragAndDrop":"appConnectApps"}"#)
        let mail = s.send(#"{"op":"openURL","url":"mailto:cfo@acme.com?subject=Q3"}"#)
        #expect(mail["outcome"]?.string == "blocked")
        #expect(mail["handler"] == .null)
        #expect(mail["notifications"]?.strings == ["openURLAttemptedWhenUnauthorized"])
        #expect(s.send(#"{"op":"openURL","url":"sheets://x"}"#)["outcome"]?.string == "blocked")
        #expect(s.send(#"{"op":"openURL","url":"nothing://x"}"#)["outcome"]?.string == "unhandled")
        #expect(s.send(#"{"op":"composeMail"}"#)["outcome"]?.string == "blocked")
        #expect(s.send(#"{"op":"print"}"#)["outcome"]?.string == "blocked")
        #expect(s.send(#"{"op":"dragAndDrop","target":"com.acme.viewer"}"#)["outcome"]?.string == "allowed")
        let drop = s.send(#"{"op":"dragAndDrop","target":"org.example.sheets"}"#)
        #expect(drop["outcome"]?.string == "blocked")
        #expect(drop["notifications"]?.strings == [])  // not implemented by this app
        // The mail app becomes whitelisted only with both ids.
        s.send(#"{"op":"policy","openInWhitelist":["com.apple.mobilemail","com.apple.UIKit.activity.Mail"]}"#)
        let opened = s.send(#"{"op":"openURL","url":"mailto:cfo@acme.com"}"#)
        #expect(opened["outcome"]?.string == "opened")
        #expect(opened["handler"]?.string == "com.apple.mobilemail")
        // The contract's word for an allowed mail composer is "opened", not "allowed".
        #expect(s.send(#"{"op":"composeMail"}"#)["outcome"]?.string == "opened")
    }

    @Test("All AppConnect apps follows device changes, with a notification and an acknowledgment")
    func appConnectApps() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","openIn":"appConnectApps"}"#)
        #expect(s.send(#"{"op":"state"}"#)["openInWhitelist"]?.strings == ["com.acme.viewer"])
        let change = s.send(#"{"op":"device","app":{"id":"org.example.sheets","appConnect":true,"authorized":true}}"#)
        #expect(change["notifications"]?.strings == ["openInPolicyChanged"])
        #expect(change["acks"] == .object([("openIn", .string("applied"))]))
        #expect(s.send(#"{"op":"state"}"#)["openInWhitelist"]?.strings == ["com.acme.viewer", "org.example.sheets"])
        let services = s.send(#"{"op":"device","secureServices":"unavailable"}"#)
        #expect(services["notifications"]?.strings == [])  // callback not implemented
        #expect(s.send(#"{"op":"state"}"#)["secureServices"]?.string == "unavailable")
    }

    @Test("retire answers wiped and everything fails closed after")
    func retire() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","openIn":"authorized","config":{"secret":"x"}}"#)
        let retire = s.send(#"{"op":"policy","auth":"retired","authMessage":"bye"}"#)
        #expect(retire["wiped"] == .bool(true))
        #expect(retire["notifications"]?.strings == ["authStateChanged"])
        let state = s.send(#"{"op":"state"}"#)
        #expect(state["authState"]?.string == "retired")
        #expect(state["config"] == .object([]))
        #expect(s.send(#"{"op":"openIn","document":"a","content":"b","target":"com.acme.viewer"}"#)["outcome"]?.string == "dummy")
    }

    @Test("blank lines get no answer but count toward line numbers")
    func blankLines() {
        let s = Session()
        var out: [String] = []
        let rejected = s.simulator.run(lines: ["", Self.start, "   ", #"{"op":"print"}"#]) { out.append($0) }
        #expect(!rejected)
        #expect(out.count == 2)
        #expect(out[0].hasPrefix(#"{"line":2,"op":"start""#))
        #expect(out[1].hasPrefix(#"{"line":4,"op":"print""#))
    }
}
