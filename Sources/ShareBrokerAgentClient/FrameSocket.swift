#if canImport(Glibc)
import Glibc
#endif
import ShareBrokerAgentProtocol
import ShareBrokerPOSIX
import Synchronization
import ShareBrokerCrypto

/// Why the agent client could not get keys and policy, and what to do.
public enum AgentClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nobody answers on the socket: the agent is not running (or another path was meant).
    case agentUnavailable(socket: String, reason: String)
    /// The agent refused this process: no keys, no policy (unregistered, wrong hash...).
    case refused(RefusalMessage)
    /// The agent said something this client does not understand, or closed mid-handshake.
    case protocolError(String)
    /// The agent did not answer in time.
    case timedOut(milliseconds: Int)
    /// The agent identified this process as another app than the one it expects to be.
    case wrongApp(expected: String, identified: String)
    /// The client was closed.
    case closed
    /// A process attached to this one with ptrace while it let its agent identify it
    /// (``AgentClient`` after an agent restart): the keys are not asked for.
    case traced(tracer: Int32?)
    /// The process listening on the socket does not run as a user the client trusts as its agent:
    /// whoever bound the path could serve policies and keys of its choosing.
    case untrustedAgent(socket: String, uid: UInt32, trusted: [UInt32])

    public var description: String {
        switch self {
        case .agentUnavailable(let socket, let reason) where socket.hasPrefix(AgentPaths.unsetRuntimeDirectory):
            // No runtime folder: there is no socket path to name, only the fix.
            "the agent cannot be found: \(reason)"
        case .agentUnavailable(let socket, let reason):
            "the agent is unavailable at \(socket) (\(reason)); start sharebrokerd, or set SHAREBROKER_SOCKET / --socket"
        case .refused(let refusal): "the agent refused this process (\(refusal.reason.rawValue)): \(refusal.message)"
        case .protocolError(let why): "the agent's answer was not understood: \(why); use matching agent and client versions"
        case .timedOut(let ms): "the agent did not answer within \(ms) ms; check that it is not stuck, then retry"
        case .wrongApp(let expected, let identified):
            "the agent identified this process as \(identified), not \(expected); check the executable path in the device policy"
        case .closed: "the agent client was closed"
        case .traced(let tracer):
            "\(tracer.map { "process \($0)" } ?? "a process (this process's /proc/self/status could not be read)") may be tracing this process, which would let it read the keys; they were not asked for. Stop the debugger (or whatever traces the app), then restart the app"
        case .untrustedAgent(let socket, let uid, let trusted):
            "the process listening on \(socket) runs as uid \(uid), not as the agent's user (\(trusted.map(String.init).joined(separator: " or "))); nothing it sends is used. Stop it and start sharebrokerd, or set SHAREBROKER_AGENT_UID to the agent's uid if it runs as its own user"
        }
    }
}

/// A blocking Unix stream socket that reads and writes agent frames. One reader at a time;
/// writes are serialized.
final class FrameSocket: Sendable {
    let fd: Int32
    let path: String
    /// The uid of the agent (`SO_PEERCRED` at connect).
    let agentUserID: UInt32
    private let writeLock = Mutex<Void>(())

    private init(fd: Int32, path: String, agentUserID: UInt32) {
        self.fd = fd
        self.path = path
        self.agentUserID = agentUserID
    }

    deinit {
        close(fd)
    }

    /// The users a client trusts as its agent: `SHAREBROKER_AGENT_UID` when set (a number),
    /// else this process's own uid and root.
    static var defaultAgentUserIDs: [UInt32] {
        if let text = getenv("SHAREBROKER_AGENT_UID").map({ String(cString: $0) }), let uid = UInt32(text) { return [uid] }
        return getuid() == 0 ? [0] : [getuid(), 0]
    }

    /// The users an administration command trusts at `path`: ``defaultAgentUserIDs``, and at the
    /// system service's socket also the system service's user (a folder only it and root can
    /// write holds that socket), unless `SHAREBROKER_AGENT_UID` names the agent's user.
    static func administrationAgentUserIDs(path: String) -> [UInt32] {
        guard path == AgentPaths.systemSocket, getenv("SHAREBROKER_AGENT_UID") == nil,
              let service = userID(of: AgentPaths.systemUser) else { return defaultAgentUserIDs }
        return defaultAgentUserIDs + [service]
    }

    /// The uid of the user `name`, or `nil` when there is none.
    static func userID(of name: String) -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.pw_uid
    }

    /// Connects to the agent at `path`, and checks from the kernel (`SO_PEERCRED`: the process
    /// that called `listen`) that it runs as one of `agentUserIDs`.
    static func connect(path: String, agentUserIDs: [UInt32] = defaultAgentUserIDs) throws(AgentClientError) -> FrameSocket {
        if path.hasPrefix(AgentPaths.unsetRuntimeDirectory) {
            throw .agentUnavailable(socket: path, reason: "neither XDG_RUNTIME_DIR nor SHAREBROKER_RUNTIME_DIR is set, and there is no shared fallback folder; set one of them (or SHAREBROKER_SOCKET / --socket)")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .agentUnavailable(socket: path, reason: String(cString: strerror(errno))) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw .agentUnavailable(socket: path, reason: "the socket path is longer than 107 bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .agentUnavailable(socket: path, reason: reason)
        }
        let agentUserID: UInt32
        switch PeerSocket.peerCredentials(fd) {
        case .failure(let error):
            close(fd)
            throw .agentUnavailable(socket: path, reason: "the agent's credentials could not be read: \(error)")
        case .success(let server):
            guard agentUserIDs.contains(server.uid) else {
                close(fd)
                throw .untrustedAgent(socket: path, uid: server.uid, trusted: agentUserIDs)
            }
            agentUserID = server.uid
        }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
        return FrameSocket(fd: fd, path: path, agentUserID: agentUserID)
    }

    /// Writes raw bytes whole.
    func write(bytes: [UInt8]) throws(AgentClientError) {
        let result: Result<Void, AgentClientError> = writeLock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var written = 0
                while written < raw.count {
                    let n = send(fd, raw.baseAddress.map { $0 + written }, raw.count - written, Int32(MSG_NOSIGNAL))
                    if n < 0 {
                        if errno == EINTR { continue }
                        return .failure(.agentUnavailable(socket: path, reason: String(cString: strerror(errno))))
                    }
                    written += n
                }
                return .success(())
            }
        }
        try result.get()
    }

    /// Writes one frame.
    func write(_ frame: AgentFrame) throws(AgentClientError) {
        try write(bytes: frame.encoded())
    }

    /// Reads exactly `count` bytes into `buffer` from `offset`, waiting at most until `deadline`
    /// (monotonic nanoseconds; `nil`: forever).
    private func readExactly(_ buffer: inout [UInt8], offset: Int, count: Int, deadline: UInt64?) throws(AgentClientError) {
        var done = 0
        while done < count {
            if let deadline {
                let now = Self.monotonicNanoseconds()
                guard now < deadline else { throw .timedOut(milliseconds: 0) }
                var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pollfd, 1, Int32(min(UInt64(Int32.max), (deadline - now) / 1_000_000 + 1)))
                if ready < 0 {
                    if errno == EINTR { continue }
                    throw .agentUnavailable(socket: path, reason: String(cString: strerror(errno)))
                }
                if ready == 0 { continue }
            }
            let n = buffer.withUnsafeMutableBytes { raw in
                recv(fd, raw.baseAddress.map { $0 + offset + done }, count - done, 0)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw .agentUnavailable(socket: path, reason: String(cString: strerror(errno)))
            }
            if n == 0 { throw .agentUnavailable(socket: path, reason: "the agent closed the connection") }
            done += n
        }
    }

    /// Reads one frame; the caller zeroes key frames' bodies after use (the read buffer is
    /// zeroed here).
    func read(timeoutMilliseconds: Int? = nil) throws(AgentClientError) -> AgentFrame {
        let deadline = timeoutMilliseconds.map { Self.monotonicNanoseconds() + UInt64($0) * 1_000_000 }
        do throws(AgentClientError) {
            var prefix = [UInt8](repeating: 0, count: 4)
            try readExactly(&prefix, offset: 0, count: 4, deadline: deadline)
            let length: Int
            do throws(FrameError) { length = try AgentFrame.bodyLength(prefix: prefix) } catch { throw AgentClientError.protocolError(error.description) }
            var rest = [UInt8](repeating: 0, count: length)
            defer { Zeroize.zero(&rest) }
            try readExactly(&rest, offset: 0, count: length, deadline: deadline)
            do throws(FrameError) { return try AgentFrame.decode(afterPrefix: rest[...]) } catch { throw AgentClientError.protocolError(error.description) }
        } catch {
            if case .timedOut = error { throw .timedOut(milliseconds: timeoutMilliseconds ?? 0) }
            throw error
        }
    }

    /// Wakes a blocked reader and stops the connection both ways.
    func shutdown() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
