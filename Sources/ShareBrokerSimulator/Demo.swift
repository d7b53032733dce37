/// The demo: a managed app walked through the policies on an embedded default device, each
/// step a simulator line, printed as a table of action, policy, outcome and why.
public enum Demo {
    /// One step: what the reader sees, and the simulator line that carries it out.
    public struct Step: Sendable {
        /// The section the step belongs to.
        public let section: String
        /// What the user or server does, for people.
        public let action: String
        /// The simulator line.
        public let line: String
    }

    /// The embedded default scenario.
    public static let steps: [Step] = [
        Step(section: "start", action: "app starts on a device with a viewer, mail and a sheets app",
             line: #"{"op":"start","app":"com.acme.notes","implements":["openInPolicyChanged","openInAttemptedWhenBlocked","openURLAttemptedWhenUnauthorized","dragAndDropToNonAppConnectApp","printPolicyChanged","openFromAttemptedWhenBlocked"],"apps":[{"id":"com.acme.viewer","appConnect":true,"authorized":true},{"id":"com.apple.mobilemail","handles":["mailto"]},{"id":"org.example.sheets","handles":["sheets"]}]}"#),
        Step(section: "before ready", action: "Open In to the viewer before any policy",
             line: #"{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"com.acme.viewer"}"#),
        Step(section: "authorized", action: "server: authorized, Open In authorized, print authorized",
             line: #"{"op":"policy","auth":"authorized","authMessage":"Welcome","openIn":"authorized","pasteboard":"authorized","print":"authorized","dragAndDrop":"appConnectApps"}"#),
        Step(section: "authorized", action: "Open In to org.example.sheets",
             line: #"{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"org.example.sheets"}"#),
        Step(section: "authorized", action: "print", line: #"{"op":"print"}"#),
        Step(section: "authorized", action: "drag to org.example.sheets",
             line: #"{"op":"dragAndDrop","target":"org.example.sheets"}"#),
        Step(section: "whitelist", action: "server: Open In whitelist [com.acme.viewer]",
             line: #"{"op":"policy","openIn":"whitelist","openInWhitelist":["com.acme.viewer"]}"#),
        Step(section: "whitelist", action: "Open In to com.acme.viewer",
             line: #"{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"com.acme.viewer"}"#),
        Step(section: "whitelist", action: "Open In to org.example.sheets",
             line: #"{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"org.example.sheets"}"#),
        Step(section: "whitelist", action: "Open In to com.acme.viewer.evil (prefix of a listed id)",
             line: #"{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"com.acme.viewer.evil"}"#),
        Step(section: "whitelist", action: "share sheet (cannot tell the app) to com.acme.viewer",
             line: #"{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"com.acme.viewer","via":"activitySheet"}"#),
        Step(section: "mail", action: "mailto: with mail not whitelisted",
             line: #"{"op":"openURL","url":"mailto:cfo@acme.com?subject=Q3"}"#),
        Step(section: "mail", action: "in-app mail composer", line: #"{"op":"composeMail"}"#),
        Step(section: "mail", action: "server: whitelist adds both mail ids",
             line: #"{"op":"policy","openIn":"whitelist","openInWhitelist":["com.acme.viewer","com.apple.mobilemail","com.apple.UIKit.activity.Mail"]}"#),
        Step(section: "mail", action: "mailto: with both mail ids whitelisted",
             line: #"{"op":"openURL","url":"mailto:cfo@acme.com?subject=Q3"}"#),
        Step(section: "schemes", action: "sheets://import?data=... (handler not whitelisted)",
             line: #"{"op":"openURL","url":"sheets://import?data=quarterly"}"#),
        Step(section: "schemes", action: "server: All AppConnect apps", line: #"{"op":"policy","openIn":"appConnectApps"}"#),
        Step(section: "schemes", action: "device: sheets becomes an authorized AppConnect app",
             line: #"{"op":"device","app":{"id":"org.example.sheets","appConnect":true,"authorized":true}}"#),
        Step(section: "schemes", action: "sheets://import?data=... (handler now whitelisted)",
             line: #"{"op":"openURL","url":"sheets://import?data=quarterly"}"#),
        Step(section: "clipboard", action: "server: pasteboard authorized",
             line: #"{"op":"policy","pasteboard":"authorized"}"#),
        Step(section: "clipboard", action: "copy \"secret plan\"", line: #"{"op":"copy","text":"secret plan"}"#),
        Step(section: "clipboard", action: "non-managed org.example.photos pastes",
             line: #"{"op":"paste","as":"org.example.photos"}"#),
        Step(section: "clipboard", action: "server: pasteboard SecureCopy",
             line: #"{"op":"policy","pasteboard":"secureCopy"}"#),
        Step(section: "clipboard", action: "copy \"secret plan\"", line: #"{"op":"copy","text":"secret plan"}"#),
        Step(section: "clipboard", action: "what any app sees on the pasteboard", line: #"{"op":"pasteboardRaw"}"#),
        Step(section: "clipboard", action: "managed com.acme.viewer pastes", line: #"{"op":"paste","as":"com.acme.viewer"}"#),
        Step(section: "clipboard", action: "non-managed org.example.photos pastes",
             line: #"{"op":"paste","as":"org.example.photos"}"#),
        Step(section: "clipboard", action: "secure services go down", line: #"{"op":"device","secureServices":"unavailable"}"#),
        Step(section: "clipboard", action: "copy \"secret plan\" without secure services",
             line: #"{"op":"copy","text":"secret plan"}"#),
        Step(section: "clipboard", action: "secure services come back", line: #"{"op":"device","secureServices":"available"}"#),
        Step(section: "clipboard", action: "server: pasteboard unauthorized",
             line: #"{"op":"policy","pasteboard":"unauthorized"}"#),
        Step(section: "clipboard", action: "copy \"secret plan\"", line: #"{"op":"copy","text":"secret plan"}"#),
        Step(section: "clipboard", action: "server: pasteboard SecureCopy again",
             line: #"{"op":"policy","pasteboard":"secureCopy"}"#),
        Step(section: "web views", action: "server: managed browser required for external links",
             line: #"{"op":"policy","managedBrowserRequired":true}"#),
        Step(section: "web views", action: "web view A (EULA) with no policy: takes the managed identity",
             line: #"{"op":"webView","id":"A","parent":"aboutScreen"}"#),
        Step(section: "web views", action: "web view B under helpScreen (no policy yet)",
             line: #"{"op":"webView","id":"B","parent":"helpScreen"}"#),
        Step(section: "web views", action: "container helpScreen set to unmanaged",
             line: #"{"op":"webView","id":"helpScreen","policy":"unmanaged"}"#),
        Step(section: "web views", action: "web view B again (inherits unmanaged)", line: #"{"op":"webView","id":"B"}"#),
        Step(section: "web views", action: "web view E (user documents) with an isExternalURL delegate",
             line: #"{"op":"webView","id":"E","parent":"docsScreen","policy":"currentIdentity","externalURLDelegate":{"internal":["https://docs.acme.com/u/42/"]}}"#),
        Step(section: "web views", action: "E navigates to its own document",
             line: #"{"op":"navigate","view":"E","url":"https://docs.acme.com/u/42/report"}"#),
        Step(section: "web views", action: "E follows a link to an outside site",
             line: #"{"op":"navigate","view":"E","url":"https://search.example.org/?q=q3"}"#),
        Step(section: "web views", action: "copy from web view B (unmanaged) under SecureCopy",
             line: #"{"op":"copy","text":"help page text","from":"B"}"#),
        Step(section: "web views", action: "copy from web view E (managed) under SecureCopy",
             line: #"{"op":"copy","text":"user document","from":"E"}"#),
        Step(section: "web views", action: "the user switches to a personal account",
             line: #"{"op":"identity","user":"unmanaged"}"#),
        Step(section: "web views", action: "E follows the same outside link, now unmanaged",
             line: #"{"op":"navigate","view":"E","url":"https://search.example.org/?q=q3"}"#),
        Step(section: "web views", action: "back to the managed account", line: #"{"op":"identity","user":"managed"}"#),
        Step(section: "short copies", action: "server: SecureCopy with a 10-character exception",
             line: #"{"op":"policy","clipboardExceptionLength":10}"#),
        Step(section: "short copies", action: "copy \"PO-4711 ✅\" (9 characters, 12 bytes)",
             line: #"{"op":"copy","text":"PO-4711 ✅"}"#),
        Step(section: "short copies", action: "copy \"secret merger plan\" (18 characters)",
             line: #"{"op":"copy","text":"secret merger plan"}"#),
        Step(section: "notify", action: "server: notifications without organization data",
             line: #"{"op":"policy","notifications":"blockOrgData"}"#),
        Step(section: "notify", action: "notify \"Q3 numbers from the CFO\"",
             line: #"{"op":"notify","title":"Q3 numbers from the CFO","body":"Revenue is down 12%"}"#),
        Step(section: "notify", action: "server: notifications blocked", line: #"{"op":"policy","notifications":"block"}"#),
        Step(section: "notify", action: "notify \"Q3 numbers from the CFO\"",
             line: #"{"op":"notify","title":"Q3 numbers from the CFO"}"#),
        Step(section: "open from", action: "server: documents in only from AppConnect apps",
             line: #"{"op":"policy","openFrom":"appConnectApps"}"#),
        Step(section: "open from", action: "com.acme.viewer sends a document", line: #"{"op":"openFrom","source":"com.acme.viewer","document":"notes.pdf"}"#),
        Step(section: "open from", action: "org.example.photos sends a document",
             line: #"{"op":"openFrom","source":"org.example.photos","document":"holiday.jpg"}"#),
        Step(section: "paste-in", action: "server: paste in only from managed apps", line: #"{"op":"policy","pasteIn":"managedApps"}"#),
        Step(section: "paste-in", action: "unmanaged org.example.photos copies a link",
             line: #"{"op":"copy","text":"http://phish.example/","as":"org.example.photos"}"#),
        Step(section: "paste-in", action: "the app pastes into managed content", line: #"{"op":"paste"}"#),
        Step(section: "offline", action: "server: transfers held back after 1 hour offline, wipe after 1 day",
             line: #"{"op":"policy","offlineAccessCheckSeconds":3600,"offlineWipeSeconds":86400}"#),
        Step(section: "offline", action: "the wall clock is set back a day; 61 minutes pass offline",
             line: #"{"op":"clock","wallClockSeconds":-86400,"advanceSeconds":3660}"#),
        Step(section: "offline", action: "the app checks its offline timers", line: #"{"op":"checkOffline"}"#),
        Step(section: "offline", action: "print while offline too long", line: #"{"op":"print"}"#),
        Step(section: "offline", action: "the agent confirms the policy", line: #"{"op":"confirm"}"#),
        Step(section: "unauthorized", action: "server: user unauthorized",
             line: #"{"op":"policy","auth":"unauthorized","authMessage":"Device out of compliance"}"#),
        Step(section: "unauthorized", action: "Open In to com.acme.viewer",
             line: #"{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"com.acme.viewer"}"#),
        Step(section: "unauthorized", action: "print", line: #"{"op":"print"}"#),
        Step(section: "retire", action: "server: retire", line: #"{"op":"policy","auth":"retired","authMessage":"Retired by admin"}"#),
        Step(section: "retire", action: "what any app sees on the pasteboard after retire", line: #"{"op":"pasteboardRaw"}"#),
        Step(section: "retire", action: "Open In to com.acme.viewer after retire",
             line: #"{"op":"openIn","document":"Q3 report.pdf","content":"quarterly numbers","target":"com.acme.viewer"}"#),
    ]

    /// Runs the scenario and renders the table. Returns the text and whether every line was accepted.
    public static func run(outboxDirectory: String) -> (table: String, ok: Bool) {
        let simulator = PolicySimulator(outboxDirectory: outboxDirectory)
        var rows: [[String]] = [["section", "action", "outcome", "why"]]
        var ok = true
        for (index, step) in steps.enumerated() {
            guard let answer = simulator.handle(line: step.line, number: index + 1) else { continue }
            ok = ok && !answer.rejected
            rows.append([step.section, step.action, outcome(of: answer.json), why(of: answer.json)])
        }
        return (render(rows), ok)
    }

    private static func outcome(of json: JSON) -> String {
        if case .string(let error)? = json["error"] { return "ERROR: \(error)" }
        if case .string(let outcome)? = json["outcome"] {
            if case .string(let handler)? = json["handler"] { return "\(outcome) in \(handler)" }
            return outcome
        }
        var parts: [String] = []
        if case .array(let n)? = json["notifications"], !n.isEmpty {
            parts.append(n.compactMap { if case .string(let s) = $0 { s } else { nil } }.joined(separator: ", "))
        }
        if case .bool(true)? = json["wiped"] { parts.append("wiped") }
        if case .bool(let ready)? = json["ready"] { parts.append(ready ? "ready" : "started, not ready") }
        if case .string(let effective)? = json["effective"] { parts.append("effective: \(effective)") }
        if case .string(let identity)? = json["identity"] { parts.append("identity: \(identity)") }
        if let text = json["text"] {
            if case .string(let t) = text { parts.append("reads \"\(t)\"") } else { parts.append("reads nothing") }
        }
        if case .array(let items)? = json["items"] {
            let shown = items.map { item -> String in
                let type = item["type"].flatMap { if case .string(let t) = $0 { t } else { nil } } ?? "?"
                let bytes = item["bytesBase64"].flatMap { if case .string(let b) = $0 { b } else { nil } } ?? ""
                return "\(type) \(bytes.prefix(16))…"
            }
            parts.append(shown.isEmpty ? "empty" : shown.joined(separator: ", "))
        }
        return parts.isEmpty ? "-" : parts.joined(separator: "; ")
    }

    private static func why(of json: JSON) -> String {
        if case .string(let why)? = json["why"] { return why }
        if case .object(let acks)? = json["acks"], !acks.isEmpty {
            return "acks: " + acks.map { key, value in
                if case .string(let s) = value { "\(key) \(s)" } else { key }
            }.joined(separator: ", ")
        }
        return ""
    }

    private static func render(_ rows: [[String]]) -> String {
        let limits = [12, 52, 34, 200]
        let cut = rows.map { row in row.enumerated().map { i, cell in
            cell.count > limits[i] ? String(cell.prefix(limits[i] - 1)) + "…" : cell
        } }
        var widths = [Int](repeating: 0, count: 4)
        for row in cut { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        var out = ""
        for (r, row) in cut.enumerated() {
            out += row.enumerated().map { i, cell in
                i == 3 ? cell : cell.padded(to: widths[i])
            }.joined(separator: " | ") + "\n"
            if r == 0 { out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-") + "\n" }
        }
        return out
    }
}
