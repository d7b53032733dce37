import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 30: with the shipped unit (no network), `--otlp-endpoint` sent nothing and said nothing.
/// The agent now tries the collector once at start and logs, once, that it cannot be reached and
/// what to do (deploy/systemd/otlp.conf; `make units-check` verifies the unit with that drop-in).
@Suite("OTLP endpoint at start", .serialized,
       .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct OTLPStartupTests {
    /// A TCP port on the loopback address: listening (the returned descriptor, to close), or
    /// closed again (nothing listens there).
    static func loopbackPort(listening: Bool) throws -> (port: UInt16, fd: Int32) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound, !listening || listen(fd, 8) == 0 else { close(fd); throw HarnessError("bind/listen: \(errno)") }
        let port = UInt16(bigEndian: address.sin_port)
        if !listening { close(fd); return (port, -1) }
        return (port, fd)
    }

    func agentLog(_ h: AgentHarness) -> String {
        (try? String(contentsOfFile: h.root + "/agent-1.log", encoding: .utf8)) ?? ""
    }

    @Test("An endpoint nothing listens on: one warning at start naming it, the reason and the drop-in")
    func unreachableEndpointIsLogged() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let closed = try Self.loopbackPort(listening: false)
        let endpoint = "http://127.0.0.1:\(closed.port)/v1/logs"
        try h.startAgent(arguments: ["--policy", h.policyPath, "--otlp-endpoint", endpoint, "--system-log", "off"])
        defer { h.stopAgent() }
        #expect(h.wait { agentLog(h).contains("cannot be reached") }, "\(agentLog(h))")
        let log = agentLog(h)
        #expect(log.contains(endpoint))
        #expect(log.contains("Connection refused"))
        #expect(log.contains("otlp.conf"))
    }

    @Test("A reachable endpoint: no warning")
    func reachableEndpointIsQuiet() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let open = try Self.loopbackPort(listening: true)
        defer { close(open.fd) }
        try h.startAgent(arguments: ["--policy", h.policyPath, "--otlp-endpoint", "http://127.0.0.1:\(open.port)/v1/logs",
                                     "--system-log", "off"])
        defer { h.stopAgent() }
        // The probe runs at start; give it the time a refused connection takes many times over.
        usleep(1_500_000)
        #expect(!agentLog(h).contains("cannot be reached"), "\(agentLog(h))")
        #expect(h.agent?.isRunning == true)
    }
}
