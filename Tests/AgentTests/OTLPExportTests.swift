import Foundation
@testable import ShareBrokerAgent
import Testing

/// Reports as OpenTelemetry log records over OTLP/HTTP (JSON encoding), received by an endpoint
/// that parses them with the official protobuf definitions (scripts/otlp-receiver.py,
/// opentelemetry-proto from PyPI, installed by `make deps` into .build-python/).
@Suite("OpenTelemetry export", .serialized)
struct OTLPExportTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static let pythonPath = root + "/.build-python"
    static let available = FileManager.default.fileExists(atPath: pythonPath + "/opentelemetry/proto")

    final class Receiver {
        let folder: String
        var output: String { folder + "/received.jsonl" }
        var port = 0
        var process: Process?

        init(folder: String) throws {
            self.folder = folder
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        func start() throws {
            let portFile = folder + "/port"
            try? FileManager.default.removeItem(atPath: portFile)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", OTLPExportTests.root + "/scripts/otlp-receiver.py", portFile, output, String(port)]
            process.environment = ProcessInfo.processInfo.environment.merging(["PYTHONPATH": OTLPExportTests.pythonPath]) { $1 }
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            self.process = process
            for _ in 0..<500 {
                if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let value = Int(text) {
                    port = value
                    return
                }
                usleep(10_000)
            }
            throw HarnessError("the OTLP receiver did not start")
        }

        func stop() {
            guard let process, process.isRunning else { return }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            self.process = nil
        }

        var records: [[String: Any]] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }
        }

        func events(_ name: String) -> [[String: Any]] {
            records.filter { ($0["attributes"] as? [String: String])?["sharebroker.event"] == name }
        }

        deinit { stop() }
    }

    @Test("Refusals and policy loads reach an OTLP endpoint as valid ExportLogsServiceRequests, never content; records made while it is down arrive when it returns",
          .enabled(if: available, "opentelemetry-proto is missing: make deps installs it into .build-python/"),
          .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
    func collectorReceivesReports() throws {
        let h = try AgentHarness()
        let receiver = try Receiver(folder: h.root + "/otlp")
        try receiver.start()
        defer { receiver.stop() }
        try h.standardDevice()
        try h.startAgent(arguments: ["--policy", h.policyPath, "--system-log", "off",
                                     "--otlp-endpoint", "http://127.0.0.1:\(receiver.port)/v1/logs"])
        defer { h.stopAgent() }

        #expect(try h.run(h.notes, ["copy"], input: "TOP-SECRET-PAYLOAD").status == 0)
        #expect(try h.run(h.unmanaged, ["status"]).status == 77)
        #expect(h.wait { !receiver.events("refused").isEmpty }, "\(receiver.records)")
        let refused = receiver.events("refused").first ?? [:]
        #expect((refused["resource"] as? [String: String])?["service.name"] == "sharebrokerd")
        #expect(refused["scope"] as? String == "sharebroker")
        #expect(refused["severity"] as? Int == 13, "WARN")
        #expect(refused["path"] as? String == "/v1/logs")
        #expect((refused["attributes"] as? [String: String])?["sharebroker.reason"] == "unregistered")

        try h.standardDevice(notesPrint: "unauthorized")
        h.reloadAgent()
        #expect(h.wait { receiver.events("policy-installed").contains { ($0["attributes"] as? [String: String])?["sharebroker.push"] == "2" } })

        // The collector goes away: the agent keeps working and delivers what it kept on its return.
        receiver.stop()
        #expect(try h.run(h.notes, ["copy"], input: "TOP-SECRET-PAYLOAD again").status == 0)
        #expect(try h.run(h.unmanaged, ["status"]).status == 77)
        let before = receiver.events("refused").count
        try receiver.start()
        #expect(h.wait(15) { receiver.events("refused").count > before }, "the refusal made while the collector was down arrives when it returns")

        let everything = (try? String(contentsOfFile: receiver.output, encoding: .utf8)) ?? ""
        #expect(!everything.contains("TOP-SECRET"))
    }

    @Test("The request body is OTLP's JSON encoding: int64 times as strings, string attributes, escaped text")
    func requestBody() throws {
        let record = SystemLogRecord(event: "blocked", app: "com.acme.notes", action: "openIn", rule: "notInWhitelist",
                                     push: 3, reason: "a \"quoted\"\nreason", isWarning: true)
        let body = OTLPLogExporter.requestBody([record], hostname: "host", time: Date(timeIntervalSince1970: 1))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let resourceLogs = try #require(json["resourceLogs"] as? [[String: Any]])
        let scopeLogs = try #require(resourceLogs.first?["scopeLogs"] as? [[String: Any]])
        let logRecord = try #require((scopeLogs.first?["logRecords"] as? [[String: Any]])?.first)
        #expect(logRecord["observedTimeUnixNano"] as? String == "1000000000")
        #expect(logRecord["severityNumber"] as? Int == 13)
        let attributes = try #require(logRecord["attributes"] as? [[String: Any]])
        let reason = attributes.first { $0["key"] as? String == "sharebroker.reason" }?["value"] as? [String: String]
        // Control characters are escaped before export (issue 29, item 6): the newline arrives as \n.
        #expect(reason?["stringValue"] == "a \"quoted\"\\nreason")
    }

    @Test("Endpoints that are not http://HOST[:PORT][/PATH] are refused with a reason")
    func endpoints() {
        #expect(AgentConfiguration.problem(withOTLPEndpoint: "http://127.0.0.1:4318/v1/logs") == nil)
        #expect(AgentConfiguration.problem(withOTLPEndpoint: "http://collector") == nil)
        #expect(AgentConfiguration.problem(withOTLPEndpoint: "https://collector:4318")?.contains("http://") == true)
        #expect(AgentConfiguration.problem(withOTLPEndpoint: "http://:4318")?.contains("no host") == true)
        #expect(AgentConfiguration.problem(withOTLPEndpoint: "http://collector:99999")?.contains("port") == true)
    }
}
