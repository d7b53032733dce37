import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One report for the system log: what happened, to which app, under which rule and policy
/// version. Never payloads, document names or keys: the fields are ids, enum names and counts.
struct SystemLogRecord: Sendable, Equatable {
    /// `acknowledged`, `blocked`, `wiped`, `refused`, `policy-installed`, `policy-refused`...
    var event: String
    var app: String?
    var action: String?
    var rule: String?
    /// The device the record comes from: the host name, stamped by the exporter when the record
    /// is queued (collectors receive records of many machines; a field says which one without
    /// parsing the transport's own header).
    var device: String?
    /// The policy push (version) the record belongs to.
    var push: UInt64?
    var pid: Int32?
    var uid: UInt32?
    /// A short reason of the agent's own making (a refusal reason, an error summary).
    var reason: String?
    /// Notice for the ordinary, warning for refusals and failures.
    var isWarning = false
    /// How many identical events this record stands for (``ReportQueue`` coalesces a burst of
    /// the same event of the same app within a second into one record); `nil` for one.
    var count: Int?

    /// The structured fields, in a fixed order, without empty ones, their control characters
    /// escaped (``AgentCore/oneLine(_:)``), so every exporter gets the same safe text.
    var fields: [(key: String, value: String)] {
        rawFields.map { ($0.key, AgentCore.oneLine($0.value)) }
    }

    private var rawFields: [(key: String, value: String)] {
        var out: [(String, String)] = [("event", event)]
        if let device { out.append(("device", device)) }
        if let app { out.append(("app", app)) }
        if let action { out.append(("action", action)) }
        if let rule { out.append(("rule", rule)) }
        if let push { out.append(("push", String(push))) }
        if let pid { out.append(("pid", String(pid))) }
        if let uid { out.append(("uid", String(uid))) }
        if let reason { out.append(("reason", reason)) }
        if let count { out.append(("count", String(count))) }
        return out
    }

    /// One line for people: `key=value`, a value quoted (`"`, `\` escaped) when it is empty or
    /// holds a space, `=` or `"`, so no value can pass for another field.
    var message: String {
        "sharebroker " + fields.map { "\($0.key)=\(Self.quotedIfNeeded($0.value))" }.joined(separator: " ")
    }

    static func quotedIfNeeded(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0 == " " || $0 == "=" || $0 == "\"" || $0.isWhitespace }) else { return value }
        var out = "\""
        for character in value {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out + "\""
    }
}

/// Sends the agent's reports to the system log, besides its durable local logs: journald's
/// native protocol when journald runs, else RFC 5424 syslog (structured data
/// `[sharebroker@32473 ...]`) to `/dev/log`. Never blocks a caller: records go into a bounded
/// queue that a thread of its own drains; when the queue is full or the log socket does not take
/// them, the oldest are dropped and counted, and the count is reported once the log takes records
/// again.
final class SystemLogExporter: Sendable {
    /// Where the records go.
    enum Target: Sendable, Equatable {
        /// journald's native protocol (`KEY=value` lines in one datagram).
        case journald(socket: String)
        /// RFC 5424 over a Unix datagram socket (rsyslog, syslog-ng, journald's `/dev/log`).
        case syslog(socket: String)
    }

    /// journald's native socket, and the classic syslog socket.
    static let journaldSocket = "/run/systemd/journal/socket"
    static let syslogSocket = "/dev/log"
    /// How long the sending thread waits for room in a live receiver's queue.
    static let sendTimeoutMilliseconds = 250
    /// The queue's bound (``ReportQueue/capacity``).
    static var capacity: Int { ReportQueue.capacity }

    /// journald when its socket exists, else `/dev/log` when it exists, else `nil`.
    static func automaticTarget() -> Target? {
        if access(journaldSocket, W_OK) == 0 { return .journald(socket: journaldSocket) }
        if access(syslogSocket, W_OK) == 0 { return .syslog(socket: syslogSocket) }
        return nil
    }

    let target: Target
    private let queue: ReportQueue
    private let hostname: String
    private let descriptor: Int32

    /// Opens the datagram socket and starts the sending thread.
    init(target: Target) {
        self.target = target
        hostname = Self.hostName()
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        if descriptor >= 0 {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            // A full receiver (its queue of datagrams is bounded: net.unix.max_dgram_qlen) makes
            // the sending thread, and only it, wait for room, up to this long; a log that is away
            // (no socket, nobody bound) fails at once. Without the wait, a busy but live log
            // cost a retry pause per full queue and dropped most records under load
            // (agent-bench --reports: 13,645 of 40,895 delivered).
            var timeout = timeval(tv_sec: 0, tv_usec: Int(Self.sendTimeoutMilliseconds) * 1000)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        self.descriptor = descriptor
        let host = hostname
        queue = ReportQueue(name: "sharebrokerd-system-log", batchSize: 1, device: host) { batch in
            batch.allSatisfy { Self.send($0, target: target, descriptor: descriptor, hostname: host) }
        }
    }

    /// This machine's host name (`gethostname`), or `-` (RFC 5424's nil value) when it has none.
    static func hostName() -> String {
        var name = [UInt8](repeating: 0, count: 256)
        let host = name.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { base in
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { gethostname($0, buffer.count - 1) }
            } == 0 ? String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self) : "-"
        }
        return host.isEmpty ? "-" : host
    }

    /// Queues `record`, stamped with this device; never blocks on the log.
    func export(_ record: SystemLogRecord) { queue.export(record) }

    /// How many records were dropped so far and not yet reported.
    var droppedCount: Int { queue.droppedCount }

    /// Stops the sending thread after what is queued.
    func stop() { queue.stop() }

    /// One datagram; `false` when the socket did not take it.
    private static func send(_ record: SystemLogRecord, target: Target, descriptor: Int32, hostname: String) -> Bool {
        guard descriptor >= 0 else { return false }
        let (path, bytes): (String, [UInt8])
        switch target {
        case .journald(let socket): (path, bytes) = (socket, Self.journaldDatagram(record))
        case .syslog(let socket): (path, bytes) = (socket, Self.syslogDatagram(record, hostname: hostname, pid: getpid(), time: Date()))
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        let sent = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        return sent == bytes.count
    }

    // MARK: Formats

    /// journald's native protocol: `KEY=value` lines (values on one line; the agent's values never
    /// hold a newline, and any is replaced).
    static func journaldDatagram(_ record: SystemLogRecord) -> [UInt8] {
        var lines = ["MESSAGE=" + oneLine(record.message), "PRIORITY=\(record.isWarning ? 4 : 5)", "SYSLOG_IDENTIFIER=sharebrokerd"]
        for field in record.fields {
            lines.append("SHAREBROKER_" + field.key.uppercased().replacingOccurrences(of: "-", with: "_") + "=" + oneLine(field.value))
        }
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// RFC 5424: `<PRI>1 TIME HOST sharebrokerd PID EVENT [sharebroker@32473 k="v"...] message`,
    /// facility daemon. 32473 is the enterprise number RFC 5612 reserves for examples, as
    /// products without their own use.
    static func syslogDatagram(_ record: SystemLogRecord, hostname: String, pid: Int32, time: Date) -> [UInt8] {
        let priority = 3 * 8 + (record.isWarning ? 4 : 5)
        let stamp = timestamp(time)
        let data = record.fields.map { "\($0.key)=\"\(escapeParameter($0.value))\"" }.joined(separator: " ")
        let msgid = String(record.event.prefix(32).map { $0.isASCII && !$0.isWhitespace ? $0 : "-" })
        return Array("<\(priority)>1 \(stamp) \(hostname) sharebrokerd \(pid) \(msgid) [sharebroker@32473 \(data)] \(oneLine(record.message))".utf8)
    }

    /// RFC 5424's TIMESTAMP in UTC with milliseconds (`1970-01-01T00:00:00.000Z`), from
    /// `gmtime_r`: Foundation's ISO 8601 format style cost more than the rest of a record.
    static func timestamp(_ time: Date) -> String {
        let since = time.timeIntervalSince1970
        var seconds = time_t(since.rounded(.down))
        let milliseconds = min(999, max(0, Int((since - Double(seconds)) * 1000)))
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return "-" }
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
        }
        return padded(Int(parts.tm_year) + 1900, 4) + "-" + padded(Int(parts.tm_mon) + 1, 2) + "-" + padded(Int(parts.tm_mday), 2)
            + "T" + padded(Int(parts.tm_hour), 2) + ":" + padded(Int(parts.tm_min), 2) + ":" + padded(Int(parts.tm_sec), 2)
            + "." + padded(milliseconds, 3) + "Z"
    }

    /// RFC 5424 PARAM-VALUE escaping: `"`, `\` and `]`.
    static func escapeParameter(_ value: String) -> String {
        var out = ""
        for character in oneLine(value) {
            if character == "\"" || character == "\\" || character == "]" { out.append("\\") }
            out.append(character)
        }
        return out
    }

    static func oneLine(_ value: String) -> String {
        value.contains(where: \.isNewline) ? String(value.map { $0.isNewline ? " " : $0 }) : value
    }
}
