import Foundation
@testable import ShareBrokerAgent
import ShareBrokerAgentProtocol
import Testing

/// Issue 29, item 6: an app chooses what it writes in its audit records; the agent decides which
/// events it may report, and no exporter (audit file, journald, syslog, OpenTelemetry) passes its
/// control characters on or lets a value pass for another field.
@Suite("log injection")
struct LogInjectionTests {
    static let hostile = "x\r\nsharebroker event=refused app=com.acme.admin\u{1b}[2J\u{2028}\u{9b}31m\u{7f}"

    static func batch(event: String, target: String) throws -> AuditBatch {
        let record = try JSONDecoder().decode(WireAuditRecord.self, from: JSONSerialization.data(withJSONObject: [
            "id": "r1", "event": event, "action": "copy", "target": target, "rule": "blocked",
        ]))
        return AuditBatch(id: "b-\(event)", records: [record])
    }

    /// Whether `bytes` hold a C0 control (besides the `allowed` ones), DEL, a C1 control, U+2028 or U+2029.
    static func hasControl(_ bytes: [UInt8], allowing allowed: Set<UInt8> = []) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.unicodeScalars.contains { scalar in
            if scalar.value < 0x80, allowed.contains(UInt8(scalar.value)) { return false }
            return scalar.value < 0x20 || (0x7F ... 0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
        }
    }

    /// `key=value` pairs of a message after its first word; a value in quotes runs to the
    /// closing quote (`\"` and `\\` escaped).
    static func parse(_ message: String) -> [(key: String, value: String)] {
        var out: [(key: String, value: String)] = []
        var rest = Substring(message.drop { $0 != " " })
        while let start = rest.firstIndex(where: { $0 != " " }) {
            rest = rest[start...]
            guard let equals = rest.firstIndex(of: "=") else { break }
            let key = String(rest[..<equals])
            rest = rest[rest.index(after: equals)...]
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped { value.append(character); escaped = false; continue }
                    if character == "\\" { escaped = true; continue }
                    if character == "\"" { break }
                    value.append(character)
                }
            } else {
                let end = rest.firstIndex(of: " ") ?? rest.endIndex
                value = String(rest[..<end])
                rest = rest[end...]
            }
            out.append((key, value))
        }
        return out
    }

    @Test("An app reports refused and policy-installed events: the batch is refused whole (receipt not logged, saying why), nothing reaches the audit file; blocked, warned and wiped still log")
    func eventAllowList() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let notes = try world.connect(core, try world.peer(901, running: world.notes))
        for event in ["refused", "policy-installed", "acknowledged"] {
            core.audit(try Self.batch(event: event, target: "t"), session: notes.session)
        }
        let receipts = try notes.connection.decoded(.receipt, as: ReceiptMessage.self)
        #expect(receipts.count == 3)
        #expect(receipts.allSatisfy { !$0.logged && ($0.reason ?? "").contains("may report only blocked, warned, wiped") })
        core.audit(try Self.batch(event: "blocked", target: "t"), session: notes.session)
        #expect(await eventually { world.logRecords("audit.jsonl").contains { $0["event"] as? String == "blocked" && $0["pid"] as? Int == 901 } })
        #expect(!world.logRecords("audit.jsonl").contains { ($0["event"] as? String).map { ["refused", "policy-installed", "acknowledged"].contains($0) } == true && $0["pid"] as? Int == 901 })
    }

    @Test("Control characters an app writes (CR, LF, ESC, C1 CSI, DEL, U+2028) are escaped in the audit file")
    func auditFileEscapes() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let notes = try world.connect(core, try world.peer(902, running: world.notes))
        core.audit(try Self.batch(event: "blocked", target: Self.hostile), session: notes.session)
        #expect(await eventually { world.logRecords("audit.jsonl").contains { $0["pid"] as? Int == 902 } })
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: world.state + "/audit.jsonl")))
        #expect(!Self.hasControl(bytes, allowing: [0x0A]))
        let record = try #require(world.logRecords("audit.jsonl").first { $0["pid"] as? Int == 902 })
        let target = try #require(record["target"] as? String)
        #expect(target.contains("\\r\\n") && target.contains("\\u{1b}") && target.contains("\\u{2028}") && target.contains("\\u{9b}"))
        // One line per record: the hostile text did not start a line of its own.
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil })
    }

    @Test("journald, syslog and OTLP get escaped values, and a value cannot pass for another field in the message")
    func exportersEscape() throws {
        let record = SystemLogRecord(event: "blocked", app: "com.acme.notes", action: "copy", rule: Self.hostile,
                                     push: 3, pid: 42, uid: 1000, reason: nil, isWarning: true)
        // Read back as a log parser would (key=value, a quoted value up to its closing quote):
        // the hostile value stays one value, and no second event or app appears.
        let fields = Self.parse(record.message)
        #expect(fields.map(\.key) == ["event", "app", "action", "rule", "push", "pid", "uid"], "\(fields)")
        #expect(fields.first { $0.key == "event" }?.value == "blocked")
        #expect(fields.first { $0.key == "app" }?.value == "com.acme.notes")

        let journald = SystemLogExporter.journaldDatagram(record)
        #expect(!Self.hasControl(journald, allowing: [0x0A]))
        // One KEY=value line per field, no more: the value's CR/LF did not make lines.
        let journaldLines = String(decoding: journald, as: UTF8.self).split(separator: "\n")
        #expect(journaldLines.count == 3 + record.fields.count)
        #expect(journaldLines.allSatisfy { $0.contains("=") })

        let syslog = SystemLogExporter.syslogDatagram(record, hostname: "host", pid: 7, time: Date(timeIntervalSince1970: 0))
        #expect(!Self.hasControl(syslog))

        let otlp = OTLPLogExporter.requestBody([record], hostname: "host", time: Date(timeIntervalSince1970: 0))
        #expect(!Self.hasControl(otlp))
        let text = String(decoding: otlp, as: UTF8.self)
        #expect(!text.contains("\\r") || text.contains("\\\\r"), "CR reaches the collector only as the two characters \\r")
        #expect(!text.contains("\\u001b") && !text.contains("\\u2028"))
        #expect((try? JSONSerialization.jsonObject(with: Data(otlp))) != nil)
    }
}
