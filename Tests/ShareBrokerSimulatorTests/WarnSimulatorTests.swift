import Foundation
import ShareBrokerSimulator
import Testing

/// Issue 33 in the simulator: the `warn` field of `policy`, the `warn` outcome of copy, openIn,
/// print and dragAndDrop, the `answer` op that plays the user, and the warned records in
/// `serverLog`. Lines without them answer as before.
@Suite("Simulator: warn and answer")
struct WarnSimulatorTests {
    static let start = #"{"op":"start","app":"com.acme.notes","implements":["warnHandler","copyAttemptedWhenUnauthorized"],"apps":[{"id":"com.acme.viewer","appConnect":true,"authorized":true},{"id":"org.example.sheets"}]}"#
    static let policy = #"{"op":"policy","auth":"authorized","pasteboard":"unauthorized","print":"unauthorized","openIn":"whitelist","openInWhitelist":["com.acme.viewer"],"dragAndDrop":"none","warn":{"copy":{"reasonRequired":true,"reasons":[{"code":"customer","label":"A customer asked"}],"freeText":true,"answerSeconds":30},"openIn":{"proceedMinutes":5},"print":{"rateLimit":{"proceeds":1,"minutes":10}}}}"#

    @Test("copy: warn, then cancel (blocked), then proceed with a reason (written, audited)")
    func copy() {
        let s = Session()
        s.send(Self.start)
        #expect(s.send(Self.policy)["error"] == nil)
        let first = s.send(#"{"op":"copy","text":"the merger plan"}"#)
        #expect(first["outcome"]?.string == "warn")
        #expect(first["question"]?["exit"]?.string == "copy")
        #expect(first["question"]?["answerSeconds"]?.number == 30)
        #expect(first["notifications"]?.strings == [], "a warned copy owes no copyAttemptedWhenUnauthorized")
        #expect(s.send(#"{"op":"copy","text":"x"}"#)["error"]?.string?.contains("answer") == true, "one question at a time")
        let cancelled = s.send(#"{"op":"answer","answer":"cancel"}"#)
        #expect(cancelled["for"]?.string == "copy" && cancelled["outcome"]?.string == "blocked")
        #expect(cancelled["warning"]?.string == "cancelled")
        #expect(s.send(#"{"op":"pasteboardRaw"}"#)["items"]?.array?.isEmpty == true)
        #expect(s.send(#"{"op":"answer","answer":"cancel"}"#)["error"] != nil, "no question is open any more")

        s.send(#"{"op":"copy","text":"the merger plan"}"#)
        let proceeded = s.send(#"{"op":"answer","answer":"proceed","reason":"customer","text":"ticket 42\n"}"#)
        #expect(proceeded["outcome"]?.string == "written" && proceeded["warning"]?.string == "proceeded")
        #expect(proceeded["audit"]?["reason"]?.string == "customer")
        #expect(proceeded["audit"]?["text"]?.string == #"ticket 42\u{A}"#)
        #expect(s.send(#"{"op":"paste","as":"org.example.sheets"}"#)["text"]?.string == "the merger plan")
        let log = s.send(#"{"op":"serverLog"}"#)
        #expect(log["warned"]?.array?.map { $0["outcome"]?.string } == ["cancelled", "proceeded"])
        #expect(!log.serialized().contains("merger"), "never content in the audit")
    }

    @Test("a reason not offered and a timeout block; a bad warn policy is rejected and changes nothing")
    func refusals() {
        let s = Session()
        s.send(Self.start)
        s.send(Self.policy)
        s.send(#"{"op":"copy","text":"x"}"#)
        #expect(s.send(#"{"op":"answer","answer":"proceed","reason":"made-up"}"#)["warning"]?.string == "invalidAnswer")
        s.send(#"{"op":"copy","text":"x"}"#)
        let late = s.send(#"{"op":"answer","answer":"timeout"}"#)
        #expect(late["warning"]?.string == "timedOut" && late["outcome"]?.string == "blocked")
        let bad = s.send(#"{"op":"policy","warn":{"copy":{"reasonRequired":true}}}"#)
        #expect(bad["error"]?.string?.contains("warn.copy") == true)
        #expect(s.send(#"{"op":"policy","warn":{"paste":{}}}"#)["error"]?.string?.contains("unknown exit") == true)
        #expect(s.send(#"{"op":"copy","text":"x"}"#)["outcome"]?.string == "warn", "the rejected lines changed nothing")
    }

    @Test("Open In: the proceed lasts for its minutes for the same target; print: the rate limit")
    func openInAndPrint() {
        let s = Session()
        s.send(Self.start)
        s.send(Self.policy)
        #expect(s.send(#"{"op":"openIn","document":"q3.pdf","content":"n","target":"com.acme.viewer"}"#)["outcome"]?.string == "delivered")
        #expect(s.send(#"{"op":"openIn","document":"q3.pdf","content":"n","target":"org.example.sheets"}"#)["outcome"]?.string == "warn")
        let delivered = s.send(#"{"op":"answer","answer":"proceed"}"#)
        #expect(delivered["outcome"]?.string == "delivered" && delivered["path"]?.string?.hasSuffix("q3.pdf") == true)
        #expect(delivered["audit"]?["target"]?.string == "org.example.sheets")
        let again = s.send(#"{"op":"openIn","document":"q3.pdf","content":"n","target":"org.example.sheets"}"#)
        #expect(again["warning"]?.string == "remembered" && again["outcome"]?.string == "delivered")
        s.send(#"{"op":"clock","advanceSeconds":301}"#)
        #expect(s.send(#"{"op":"openIn","document":"q3.pdf","content":"n","target":"org.example.sheets"}"#)["outcome"]?.string == "warn")
        #expect(s.send(#"{"op":"answer","answer":"cancel"}"#)["outcome"]?.string == "dummy")

        #expect(s.send(#"{"op":"print"}"#)["outcome"]?.string == "warn")
        #expect(s.send(#"{"op":"answer","answer":"proceed"}"#)["outcome"]?.string == "allowed")
        let limited = s.send(#"{"op":"print"}"#)
        #expect(limited["outcome"]?.string == "blocked" && limited["warning"]?.string == "rateLimited")
        s.send(#"{"op":"clock","advanceSeconds":600}"#)
        #expect(s.send(#"{"op":"print"}"#)["outcome"]?.string == "warn")
        // Drag and drop does not warn under this policy: blocked as before.
        s.send(#"{"op":"answer","answer":"cancel"}"#)
        let drop = s.send(#"{"op":"dragAndDrop","target":"org.example.sheets"}"#)
        #expect(drop["outcome"]?.string == "blocked" && drop["warning"] == nil)
    }

    @Test("without warnHandler in implements: blocked at once as noHandler")
    func noHandler() {
        let s = Session()
        s.send(#"{"op":"start","app":"com.acme.notes"}"#)
        s.send(Self.policy)
        let copy = s.send(#"{"op":"copy","text":"x"}"#)
        #expect(copy["outcome"]?.string == "blocked" && copy["warning"]?.string == "noHandler")
    }
}

extension JSON {
    var number: Double? { if case .number(let n) = self { n } else { nil } }
    var array: [JSON]? { if case .array(let items) = self { items } else { nil } }
}
