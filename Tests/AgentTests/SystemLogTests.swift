import Foundation
@testable import ShareBrokerAgent
import Testing

/// Reports to the system log, received by a real rsyslogd started by the test (apt rsyslog;
/// `make deps` installs it), and the record formats.
@Suite("system log reports", .serialized)
struct SystemLogTests {
    static let rsyslogd = ["/usr/sbin/rsyslogd", "/sbin/rsyslogd"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// An rsyslogd listening on a Unix socket of its own, writing what it parsed (RFC 5424
    /// fields) to a file.
    final class Receiver {
        let folder: String
        var socket: String { folder + "/log.sock" }
        var output: String { folder + "/received.log" }
        var process: Process?

        init(folder: String) throws {
            self.folder = folder
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let config = """
                global(workDirectory="\(folder)")
                module(load="imuxsock" SysSock.Use="off")
                input(type="imuxsock" Socket="\(socket)" UseSpecialParser="off" ParseHostname="on" CreatePath="on")
                template(name="fields" type="string" string="%app-name%|%msgid%|%structured-data%|%msg%\\n")
                action(type="omfile" file="\(output)" template="fields")
                """
            try config.write(toFile: folder + "/rsyslog.conf", atomically: true, encoding: .utf8)
        }

        func start() throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: SystemLogTests.rsyslogd ?? "rsyslogd")
            process.arguments = ["-n", "-f", folder + "/rsyslog.conf", "-i", folder + "/rsyslogd.pid"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            self.process = process
            for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) { usleep(10_000) }
        }

        func stop() {
            guard let process, process.isRunning else { return }
            // SIGKILL: the test process blocks SIGTERM, and its children inherit the mask.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            self.process = nil
            try? FileManager.default.removeItem(atPath: socket)
        }

        var lines: [String] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        deinit { stop() }
    }

    @Test("Refusals, policy loads and acknowledgments reach a real rsyslogd as RFC 5424 structured data, never content; records made while it is down arrive when it returns",
          .enabled(if: rsyslogd != nil, "rsyslogd is missing: make deps installs rsyslog"),
          .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
    func rsyslogReceivesReports() throws {
        let h = try AgentHarness()
        let receiver = try Receiver(folder: h.root + "/rsyslog")
        try receiver.start()
        defer { receiver.stop() }
        try h.standardDevice()
        try h.startAgent(arguments: ["--policy", h.policyPath, "--system-log", "syslog", "--system-log-socket", receiver.socket])
        defer { h.stopAgent() }

        #expect(try h.run(h.notes, ["copy"], input: "TOP-SECRET-PAYLOAD").status == 0)
        #expect(try h.run(h.unmanaged, ["status"]).status == 77)
        #expect(h.wait { receiver.lines.contains { $0.hasPrefix("sharebrokerd|refused|") && $0.contains("reason=\"unregistered\"") } },
                "\(receiver.lines)")
        let watcher = try h.startWatch(h.notes, name: "notes")
        defer { h.stop(watcher.process) }
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "attached" } })
        try h.standardDevice(notesPrint: "unauthorized")
        h.reloadAgent()
        #expect(h.wait { receiver.lines.contains { $0.hasPrefix("sharebrokerd|policy-installed|") && $0.contains("push=\"2\"") } })
        #expect(h.wait { receiver.lines.contains { $0.hasPrefix("sharebrokerd|acknowledged|") && $0.contains("app=\"com.acme.notes\"")
            && $0.contains("action=\"print\"") && $0.contains("push=\"2\"") } }, "\(receiver.lines)")

        // The receiver goes away: the agent keeps working and keeps what it could not send.
        receiver.stop()
        #expect(try h.run(h.notes, ["copy"], input: "TOP-SECRET-PAYLOAD again").status == 0)
        #expect(try h.run(h.unmanaged, ["status"]).status == 77)
        let before = receiver.lines.filter { $0.hasPrefix("sharebrokerd|refused|") }.count
        try receiver.start()
        #expect(h.wait { receiver.lines.filter { $0.hasPrefix("sharebrokerd|refused|") }.count > before },
                "the refusal made while rsyslogd was down arrives when it returns")

        // Every record names its device (the host name) as a field of its own.
        let device = "device=\"\(SystemLogExporter.escapeParameter(SystemLogExporter.hostName()))\""
        #expect(receiver.lines.filter { $0.hasPrefix("sharebrokerd|") }.allSatisfy { $0.contains(device) }, "\(receiver.lines)")

        let everything = receiver.lines.joined(separator: "\n")
        #expect(!everything.contains("TOP-SECRET"))
        #expect(!everything.contains("keyring"))
    }

    @Test("Formats: RFC 5424 escapes PARAM-VALUE, journald gets one KEY=value per line, newlines never split a record")
    func formats() {
        let record = SystemLogRecord(event: "blocked", app: "com.acme.notes", action: "openIn", rule: "whitelist",
                                     push: 7, reason: "a \"quoted\" ] value\nwith a newline", isWarning: true)
        let syslog = String(decoding: SystemLogExporter.syslogDatagram(record, hostname: "host", pid: 42, time: Date(timeIntervalSince1970: 0)), as: UTF8.self)
        #expect(syslog.hasPrefix("<28>1 1970-01-01T00:00:00.000Z host sharebrokerd 42 blocked [sharebroker@32473 event=\"blocked\" app=\"com.acme.notes\""))
        // Control characters are escaped (issue 29, item 6): the newline is the two characters \n,
        // whose backslash PARAM-VALUE escapes again.
        #expect(syslog.contains(#"reason="a \"quoted\" \] value\\nwith a newline""#))
        #expect(!syslog.contains("\n"))
        // The hand-made timestamp is Foundation's ISO 8601 with milliseconds, in UTC.
        for seconds in [0, 951_782_400.5, 1_764_079_200.123, 4_102_444_799.999] {
            let time = Date(timeIntervalSince1970: seconds)
            #expect(SystemLogExporter.timestamp(time) == time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        }
        let journald = String(decoding: SystemLogExporter.journaldDatagram(record), as: UTF8.self)
        let lines = journald.split(separator: "\n")
        #expect(lines.contains("PRIORITY=4"))
        #expect(lines.contains("SHAREBROKER_APP=com.acme.notes"))
        #expect(lines.contains("SHAREBROKER_PUSH=7"))
        #expect(lines.allSatisfy { $0.contains("=") }, "every line is KEY=value: \(lines)")
    }

    @Test("journald's native datagram, received on a real socket: every line KEY=value with a valid journald field name (A-Z, 0-9, _, not starting with _ or a digit, at most 64), the device field is the host name")
    func journaldDatagramFields() throws {
        let journal = try DatagramReceiver(name: "journald", timeoutSeconds: 10)
        defer { withExtendedLifetime(journal) {} }
        let path = journal.path, receiver = journal.descriptor

        let exporter = SystemLogExporter(target: .journald(socket: path))
        defer { exporter.stop() }
        exporter.export(SystemLogRecord(event: "policy-refused", app: "com.acme.notes", action: "copy", rule: "pasteboardUnauthorized",
                                        push: 3, pid: 42, uid: 1000, reason: "line one\nline=two", isWarning: true))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(receiver, $0.baseAddress, $0.count, 0) }
        #expect(count > 0, "a datagram arrived")
        let text = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
        #expect(text.hasSuffix("\n"))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        var fields: [String: String] = [:]
        for line in lines {
            guard let equals = line.firstIndex(of: "=") else {
                Issue.record("a line without '=': \(line)")
                continue
            }
            let key = String(line[..<equals])
            let valid = !key.isEmpty && key.count <= 64 && key.utf8.allSatisfy { (65...90).contains($0) || (48...57).contains($0) || $0 == 95 }
                && key.first != "_" && !(key.first?.isNumber ?? true)
            #expect(valid, "not a journald field name a client may send: \(key)")
            #expect(fields[key] == nil, "\(key) twice")
            fields[key] = String(line[line.index(after: equals)...])
        }
        #expect(fields["SHAREBROKER_DEVICE"] == SystemLogExporter.hostName())
        #expect(fields["SHAREBROKER_DEVICE"]?.isEmpty == false)
        #expect(fields["SHAREBROKER_EVENT"] == "policy-refused")
        #expect(fields["SHAREBROKER_APP"] == "com.acme.notes")
        #expect(fields["SHAREBROKER_PUSH"] == "3")
        #expect(fields["SHAREBROKER_REASON"] == "line one\\nline=two", "the newline is escaped (\\n), the '=' kept in the value")
        #expect(fields["PRIORITY"] == "4")
        #expect(fields["SYSLOG_IDENTIFIER"] == "sharebrokerd")
        #expect(fields["MESSAGE"]?.contains("device=") == true)
    }

    @Test("A burst of the same event is coalesced into one record with its count; other events keep records of their own; nothing is lost")
    func burstIsCoalesced() throws {
        let journal = try DatagramReceiver(name: "coalesce", timeoutSeconds: 5)
        defer { withExtendedLifetime(journal) {} }
        let path = journal.path, receiver = journal.descriptor

        let exporter = SystemLogExporter(target: .journald(socket: path))
        defer { exporter.stop() }
        for i in 0..<10_000 {
            exporter.export(SystemLogRecord(event: "blocked", app: "com.acme.notes", action: "copy", rule: "pasteboardUnauthorized",
                                            push: 3, pid: Int32(100 + i % 7), uid: 1000))
        }
        exporter.export(SystemLogRecord(event: "blocked", app: "com.acme.viewer", action: "copy", rule: "pasteboardUnauthorized",
                                        push: 3, pid: 9, uid: 1000))
        var counts: [String: Int] = [:]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while counts.values.reduce(0, +) < 10_001 {
            let n = buffer.withUnsafeMutableBytes { recv(receiver, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            var fields: [String: String] = [:]
            for line in String(decoding: buffer.prefix(n), as: UTF8.self).split(separator: "\n") {
                if let equals = line.firstIndex(of: "=") { fields[String(line[..<equals])] = String(line[line.index(after: equals)...]) }
            }
            let app = fields["SHAREBROKER_APP"] ?? "?"
            counts[app, default: 0] += Int(fields["SHAREBROKER_COUNT"] ?? "1") ?? 0
        }
        #expect(counts["com.acme.notes"] == 10_000, "\(counts)")
        #expect(counts["com.acme.viewer"] == 1, "\(counts)")
        #expect(exporter.droppedCount == 0)
    }

    @Test("A full queue drops the oldest records and counts them; export never blocks")
    func boundedQueue() {
        // A socket nobody listens on: nothing is ever taken.
        let exporter = SystemLogExporter(target: .syslog(socket: "/nonexistent/sharebroker-test.sock"))
        defer { exporter.stop() }
        let start = ContinuousClock.now
        for i in 0..<(SystemLogExporter.capacity + 500) {
            exporter.export(SystemLogRecord(event: "acknowledged", app: "com.acme.notes", push: UInt64(i)))
        }
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(exporter.droppedCount >= 500)
    }
}

/// A bound Unix datagram socket in a fresh folder under /tmp, standing for journald's socket;
/// reads time out after `timeoutSeconds`. Closed and removed with the value.
final class DatagramReceiver {
    let path: String
    let descriptor: Int32
    private let folder: String

    init(name: String, timeoutSeconds: Int) throws {
        folder = "/tmp/sbt-\(name)-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        path = folder + "/journal.sock"
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw HarnessError("bind \(path): errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(descriptor)
        try? FileManager.default.removeItem(atPath: folder)
    }
}
