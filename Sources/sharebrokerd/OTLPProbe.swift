import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// One connection attempt to the OTLP collector at start, on a thread of its own, so an agent
/// whose reports cannot go anywhere says so once in its log instead of queueing silently (the
/// shipped unit has no network: `PrivateNetwork=yes`; deploy/systemd/otlp.conf opens it).
enum OTLPProbe {
    /// Starts the attempt for `endpoint` (`http://HOST[:PORT][/PATH]`, already validated).
    static func start(endpoint: String, logger: Logger) {
        let authority = endpoint.dropFirst("http://".count).prefix { $0 != "/" }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard let host = parts.first.map(String.init) else { return }
        let port = parts.count == 2 ? String(parts[1]) : "4318"
        let thread = Thread {
            if let problem = problem(host: host, port: port) {
                logger.warning("""
                    the OTLP endpoint \(endpoint) cannot be reached (\(problem)): reports wait in the queue (at most \
                    4,096, then the oldest are dropped and counted) and are sent when it can be. Under the shipped \
                    unit the service has no network: install the drop-in otlp.conf (docs/DEPLOYMENT.md, "Reports")
                    """)
            }
        }
        thread.name = "sharebrokerd-otlp-probe"
        thread.start()
    }

    /// Why a TCP connection to `host`:`port` fails within 2 seconds, or `nil` when it succeeds.
    static func problem(host: String, port: String) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, port, &hints, &list)
        guard resolved == 0, let first = list else { return "cannot resolve \(host): \(String(cString: gai_strerror(resolved)))" }
        defer { freeaddrinfo(first) }
        var reason = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else { reason = String(cString: strerror(errno)); continue }
            defer { close(fd) }
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return nil }
            reason = String(cString: strerror(errno))
        }
        return reason
    }
}
