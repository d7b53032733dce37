import Foundation
import ShareBrokerSimulator
import Testing

@Suite("Simulator pasteboard")
struct PasteboardSimulatorTests {
    static let start = #"{"op":"start","app":"com.acme.notes","implements":["copyAttemptedWhenUnauthorized","secureServicesAvailabilityChanged"],"apps":[{"id":"com.acme.viewer","appConnect":true,"authorized":true},{"id":"com.acme.locked","appConnect":true,"authorized":false},{"id":"org.example.sheets"}]}"#

    static func rawBytes(_ s: Session) -> [String] {
        guard case .array(let items)? = s.send(#"{"op":"pasteboardRaw"}"#)["items"] else { return [] }
        return items.compactMap { $0["bytesBase64"]?.string }
    }

    @Test("the same text under each pasteboard policy, and what each app reads")
    func eachPolicy() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"authorized"}"#)
        #expect(s.send(#"{"op":"copy","text":"secret plan"}"#)["outcome"]?.string == "written")
        #expect(s.send(#"{"op":"paste","as":"org.example.sheets"}"#)["text"]?.string == "secret plan")

        s.send(#"{"op":"policy","pasteboard":"secureCopy"}"#)
        #expect(s.send(#"{"op":"copy","text":"secret plan"}"#)["outcome"]?.string == "encrypted")
        let raw = Self.rawBytes(s)
        #expect(raw.count == 1)
        #expect(!(raw.first.flatMap { Data(base64Encoded: $0) }.map { String(decoding: $0, as: UTF8.self).contains("secret plan") } ?? true))
        #expect(s.send(#"{"op":"paste"}"#)["text"]?.string == "secret plan")
        #expect(s.send(#"{"op":"paste","as":"com.acme.viewer"}"#)["text"]?.string == "secret plan")
        #expect(s.send(#"{"op":"paste","as":"com.acme.locked"}"#)["text"] == .null)
        #expect(s.send(#"{"op":"paste","as":"org.example.sheets"}"#)["text"] == .null)
        #expect(s.send(#"{"op":"paste","as":"never.heard.of"}"#)["text"] == .null)

        s.send(#"{"op":"policy","pasteboard":"unauthorized"}"#)
        let blocked = s.send(#"{"op":"copy","text":"another secret"}"#)
        #expect(blocked["outcome"]?.string == "blocked")
        #expect(blocked["notifications"]?.strings == ["copyAttemptedWhenUnauthorized"])
        #expect(Self.rawBytes(s) == raw, "a blocked copy leaves the pasteboard exactly as it was")
    }

    @Test("secure services down: SecureCopy blocked without a callback, sealed items unreadable, back again")
    func servicesDown() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"secureCopy"}"#)
        s.send(#"{"op":"copy","text":"sealed before"}"#)
        let down = s.send(#"{"op":"device","secureServices":"unavailable"}"#)
        #expect(down["notifications"]?.strings == ["secureServicesAvailabilityChanged"])
        #expect(s.send(#"{"op":"state"}"#)["copyEnabled"] == .bool(false))
        let blocked = s.send(#"{"op":"copy","text":"x"}"#)
        #expect(blocked["outcome"]?.string == "blocked")
        #expect(blocked["notifications"]?.strings == [])
        #expect(s.send(#"{"op":"paste"}"#)["text"] == .null)
        #expect(s.send(#"{"op":"paste","as":"com.acme.viewer"}"#)["text"] == .null)
        s.send(#"{"op":"device","secureServices":"available"}"#)
        #expect(s.send(#"{"op":"paste","as":"com.acme.viewer"}"#)["text"]?.string == "sealed before")
    }

    @Test("binary items keep their type; a deauthorized app loses access to items sealed after")
    func binaryAndDeauthorization() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"secureCopy"}"#)
        s.send(#"{"op":"copy","dataBase64":"iVBORw0KGgo=","type":"public.png"}"#)
        let pasted = s.send(#"{"op":"paste","as":"com.acme.viewer"}"#)
        #expect(pasted["dataBase64"]?.string == "iVBORw0KGgo=")
        #expect(pasted["type"]?.string == "public.png")
        s.send(#"{"op":"device","app":{"id":"com.acme.viewer","authorized":false}}"#)
        s.send(#"{"op":"copy","text":"after deauthorization"}"#)
        #expect(s.send(#"{"op":"paste","as":"com.acme.viewer"}"#)["text"] == .null)
        #expect(s.send(#"{"op":"paste"}"#)["text"]?.string == "after deauthorization")
    }

    @Test("retire removes the app's items from the pasteboard")
    func retire() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"secureCopy"}"#)
        s.send(#"{"op":"copy","text":"secret plan"}"#)
        #expect(s.send(#"{"op":"policy","auth":"retired"}"#)["wiped"] == .bool(true))
        #expect(Self.rawBytes(s).isEmpty)
        #expect(s.send(#"{"op":"copy","text":"x"}"#)["outcome"]?.string == "blocked")
    }

    @Test("copy from a web view follows its effective identity")
    func webViewCopy() {
        let s = Session()
        s.send(#"{"op":"start","app":"com.acme.docs","manifest":{"TreatAllWebViewsAsUnmanaged":true}}"#)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"secureCopy"}"#)
        s.send(#"{"op":"webView","id":"A"}"#)
        s.send(#"{"op":"webView","id":"E","policy":"currentIdentity"}"#)
        #expect(s.send(#"{"op":"copy","text":"eula","from":"A"}"#)["outcome"]?.string == "written")
        #expect(s.send(#"{"op":"copy","text":"user doc","from":"E"}"#)["outcome"]?.string == "encrypted")
        #expect(s.send(#"{"op":"copy","text":"x","from":"Z"}"#)["error"]?.string?.contains("'from'") == true)
        #expect(s.send(#"{"op":"copy"}"#)["error"]?.string?.contains("'text'") == true)
        #expect(s.send(#"{"op":"copy","dataBase64":"AAAA"}"#)["error"]?.string?.contains("'type'") == true)
    }
}
