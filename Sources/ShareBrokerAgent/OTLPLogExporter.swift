import Foundation
import ShareBrokerPolicyDocument

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Sends the agent's reports as OpenTelemetry log records to a collector over OTLP/HTTP with the
/// JSON encoding (`POST /v1/logs`, an `ExportLogsServiceRequest`), batched (up to 100 records per
/// request), retried while the collector is away, bounded in memory (``ReportQueue``), and never
/// blocking a decision or a copy.
///
/// Plain `http://` only: point it at a collector on the host or the local network (the
/// OpenTelemetry Collector's `otlp` receiver), which forwards over TLS. Written on POSIX sockets
/// rather than through swift-otel, whose build would add several minutes to every build of the
/// agent for one POST.
final class OTLPLogExporter: Sendable {
    /// Why an endpoint is not usable.
    struct EndpointError: Error, CustomStringConvertible {
        let description: String
    }

    let host: String
    let port: UInt16
    let path: String
    private let queue: ReportQueue
    private let hostname: String

    /// Parses `endpoint` (`http://HOST:PORT/v1/logs`; the path defaults to `/v1/logs`, the port
    /// to 4318) and starts the sending thread.
    init(endpoint: String, hostname: String) throws(EndpointError) {
        guard endpoint.hasPrefix("http://") else {
            throw EndpointError(description: "the OTLP endpoint must be http://HOST:PORT/PATH (a local collector forwards over TLS); got \(endpoint)")
        }
        let rest = endpoint.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard !authority.isEmpty, parts.count <= 2, let host = parts.first, !host.isEmpty else {
            throw EndpointError(description: "the OTLP endpoint names no host: \(endpoint)")
        }
        var port: UInt16 = 4318
        if parts.count == 2 {
            guard let parsed = UInt16(parts[1]), parsed > 0 else {
                throw EndpointError(description: "the OTLP endpoint's port is not a number from 1 to 65535: \(endpoint)")
            }
            port = parsed
        }
        let finalPath = path.isEmpty ? "/v1/logs" : String(path)
        self.host = String(host)
        self.port = port
        self.path = finalPath
        self.hostname = hostname
        let target = (host: String(host), port: port, path: finalPath)
        queue = ReportQueue(name: "sharebrokerd-otlp", batchSize: 100, retryDelay: .milliseconds(500), device: hostname) { batch in
            Self.post(Self.requestBody(batch, hostname: hostname, time: Date()), to: target)
        }
    }

    /// Queues `record`, stamped with this device; never blocks on the collector.
    func export(_ record: SystemLogRecord) { queue.export(record) }

    /// How many records were dropped and not yet reported.
    var droppedCount: Int { queue.droppedCount }

    /// Stops the sending thread.
    func stop() { queue.stop() }

    // MARK: The request

    /// An `ExportLogsServiceRequest` in OTLP's JSON encoding: one resource (`service.name`
    /// sharebrokerd, `host.name`), one scope, a log record per report with its fields as
    /// `sharebroker.*` attributes.
    static func requestBody(_ records: [SystemLogRecord], hostname: String, time: Date) -> [UInt8] {
        let nanos = String(UInt64(max(0, time.timeIntervalSince1970) * 1_000_000_000))
        func attribute(_ key: String, _ value: String) -> String {
            "{\"key\":\(JSONWriter.quoted(key)),\"value\":{\"stringValue\":\(JSONWriter.quoted(value))}}"
        }
        let logRecords = records.map { record in
            let attributes = record.fields.map { attribute("sharebroker." + $0.key, $0.value) }.joined(separator: ",")
            return "{\"observedTimeUnixNano\":\"\(nanos)\",\"severityNumber\":\(record.isWarning ? 13 : 9),"
                + "\"severityText\":\"\(record.isWarning ? "WARN" : "INFO")\","
                + "\"body\":{\"stringValue\":\(JSONWriter.quoted(record.message))},\"attributes\":[\(attributes)]}"
        }.joined(separator: ",")
        let resource = [attribute("service.name", "sharebrokerd"), attribute("host.name", hostname)].joined(separator: ",")
        let text = "{\"resourceLogs\":[{\"resource\":{\"attributes\":[\(resource)]},"
            + "\"scopeLogs\":[{\"scope\":{\"name\":\"sharebroker\",\"version\":\"1\"},\"logRecords\":[\(logRecords)]}]}]}"
        return Array(text.utf8)
    }

    /// One POST; `true` when the collector answered 2xx, or 400 (a request it will never take:
    /// retrying would not help; counted as sent). `false` (retry later) otherwise.
    static func post(_ body: [UInt8], to target: (host: String, port: UInt16, path: String)) -> Bool {
        guard let fd = connect(host: target.host, port: target.port) else { return false }
        defer { close(fd) }
        let head = "POST \(target.path) HTTP/1.1\r\nHost: \(target.host):\(target.port)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        guard sendAll(fd, Array(head.utf8) + body) else { return false }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while response.count < 16 * 1024, !response.contains(0x0A) {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            response += chunk[0..<n]
        }
        // "HTTP/1.1 200 OK"
        let statusLine = String(decoding: response.prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else { return false }
        return (200..<300).contains(status) || status == 400
    }

    /// A TCP connection with 2-second send and receive timeouts, or `nil`.
    private static func connect(host: String, port: UInt16) -> Int32? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(first) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            if fd >= 0 {
                var timeout = timeval(tv_sec: 2, tv_usec: 0)
                _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
                close(fd)
            }
            entry = info.pointee.ai_next
        }
        return nil
    }

    /// `send` with `MSG_NOSIGNAL` (a collector that hangs up must not raise SIGPIPE), every byte.
    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}
