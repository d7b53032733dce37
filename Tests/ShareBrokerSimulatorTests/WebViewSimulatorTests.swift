import ShareBrokerSimulator
import Testing

@Suite("Simulator web views")
struct WebViewSimulatorTests {
    static let start = #"{"op":"start","app":"com.acme.docs","manifest":{"TreatAllWebViewsAsUnmanaged":true}}"#

    @Test("the seed's five web views A to E")
    func fiveWebViews() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"policy","auth":"authorized","pasteboard":"secureCopy","managedBrowserRequired":true}"#)
        for id in ["A", "B", "C"] {
            #expect(s.send(#"{"op":"webView","id":"\#(id)","parent":"app"}"#)["effective"]?.string == "unmanaged")
        }
        #expect(s.send(#"{"op":"webView","id":"D","parent":"orgScreen","policy":"currentIdentity"}"#)["effective"]?.string == "managed")
        let e = s.send(#"{"op":"webView","id":"E","parent":"docsScreen","policy":"currentIdentity","externalURLDelegate":{"internal":["https://docs.acme.com/u/42/"]}}"#)
        #expect(e["effective"]?.string == "managed")
        #expect(s.send(#"{"op":"navigate","view":"E","url":"https://docs.acme.com/u/42/report"}"#)["outcome"]?.string == "webView")
        #expect(s.send(#"{"op":"navigate","view":"E","url":"https://search.example.org/?q=x"}"#)["outcome"]?.string == "managedBrowser")
        // D has no delegate: every URL is internal.
        #expect(s.send(#"{"op":"navigate","view":"D","url":"https://search.example.org/"}"#)["outcome"]?.string == "webView")
        // A is unmanaged: its links stay, and no delegate is asked.
        let a = s.send(#"{"op":"navigate","view":"A","url":"https://search.example.org/"}"#)
        #expect(a["outcome"]?.string == "webView")
        #expect(a["delegateAsked"] == .bool(false))
    }

    @Test("an unmanaged user makes every web view unmanaged; switching back restores managed")
    func identitySwitch() {
        let s = Session()
        s.send(#"{"op":"start","app":"com.acme.docs"}"#)
        s.send(#"{"op":"policy","auth":"authorized","managedBrowserRequired":true}"#)
        #expect(s.send(#"{"op":"webView","id":"E","externalURLDelegate":{"internal":[]}}"#)["effective"]?.string == "managed")
        #expect(s.send(#"{"op":"navigate","view":"E","url":"https://x.example/"}"#)["outcome"]?.string == "managedBrowser")
        #expect(s.send(#"{"op":"identity","user":"unmanaged"}"#)["identity"]?.string == "unmanaged")
        #expect(s.send(#"{"op":"webView","id":"E"}"#)["effective"]?.string == "unmanaged")
        #expect(s.send(#"{"op":"navigate","view":"E","url":"https://x.example/"}"#)["outcome"]?.string == "webView")
        s.send(#"{"op":"identity","user":"managed"}"#)
        #expect(s.send(#"{"op":"webView","id":"E"}"#)["effective"]?.string == "managed")
    }

    @Test("a policy on a container reaches children declared later; a nearer node overrides")
    func inheritance() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"webView","id":"settingsScreen","policy":"currentIdentity"}"#)
        #expect(s.send(#"{"op":"webView","id":"D","parent":"settingsScreen"}"#)["effective"]?.string == "managed")
        #expect(s.send(#"{"op":"webView","id":"D2","parent":"D","policy":"unmanaged"}"#)["effective"]?.string == "unmanaged")
        #expect(s.send(#"{"op":"webView","id":"D3","parent":"D2"}"#)["effective"]?.string == "unmanaged")
    }

    @Test("bad web-view lines are rejected and change nothing")
    func badLines() {
        let s = Session()
        s.send(Self.start)
        s.send(#"{"op":"webView","id":"P","policy":"currentIdentity"}"#)
        s.send(#"{"op":"webView","id":"C","parent":"P"}"#)
        #expect(s.send(#"{"op":"webView","id":"P","parent":"C"}"#)["error"]?.string?.contains("cycle") == true)
        #expect(s.send(#"{"op":"webView","id":"C"}"#)["effective"]?.string == "managed")
        #expect(s.send(#"{"op":"webView","id":"X","policy":"sometimes"}"#)["error"]?.string?.contains("'policy'") == true)
        #expect(s.send(#"{"op":"navigate","view":"nowhere","url":"https://x"}"#)["error"] != nil)
        #expect(s.send(#"{"op":"identity","user":"robot"}"#)["error"]?.string?.contains("'user'") == true)
        #expect(s.send(#"{"op":"identity"}"#)["error"]?.string?.contains("'user'") == true)
    }
}
