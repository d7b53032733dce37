#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Logging
import ShareBrokerAgentProtocol
import ShareBrokerCrypto
import ShareBrokerPOSIX
import Synchronization

/// How many connections the agent serves at once, how large a frame may be before the welcome,
/// and how much memory all clients together may make it hold (docs/THREAT-MODEL.md, "Memory
/// before authentication" and "Memory after the welcome").
public struct AgentConnectionLimits: Sendable, Hashable {
    /// Connections open at once, all users together; more are refused at accept.
    public var total: Int
    /// Connections open at once from one uid (`SO_PEERCRED`); more are refused at accept.
    public var perUser: Int
    /// Of ``total``, the connections only registered apps of their allowed users may take: once
    /// `total - reserve` are open, a new connection is admitted only if the process runs an
    /// AppConnect app's registered executable as a user that app allows.
    public var reserve: Int
    /// The largest frame accepted before the welcome (the hello is a few dozen bytes).
    public var frameSizeBeforeWelcome: Int
    /// The most bytes queued for one client that does not read; past it the connection is dropped.
    public var outputBuffer: Int
    /// Past this many unsent bytes a connection is no longer read: a client that does not read
    /// what the agent answers cannot make it queue more answers.
    public var readPause: Int
    /// The most bytes queued for all clients together: past it, a client with more than
    /// ``readPause`` unsent bytes is dropped when more is queued for it.
    public var totalOutput: Int
    /// Frames larger than 64 KiB (up to the protocol's 4 MiB) being received and decoded, all
    /// connections together, each counted at ``largeFrameCost`` times its size (its buffer and
    /// the copies decoding makes); a connection whose frame would take more is dropped with an
    /// error.
    public var largeFrameInput: Int

    /// Creates limits.
    public init(total: Int = 512, perUser: Int = 128, reserve: Int = 64, frameSizeBeforeWelcome: Int = 16 * 1024,
                outputBuffer: Int = 64 * 1024 * 1024, readPause: Int = 256 * 1024, totalOutput: Int = 128 * 1024 * 1024,
                largeFrameInput: Int = 64 * 1024 * 1024) {
        self.total = max(1, total)
        self.perUser = max(1, perUser)
        self.reserve = min(max(0, reserve), self.total - 1)
        self.frameSizeBeforeWelcome = max(64, frameSizeBeforeWelcome)
        self.outputBuffer = max(AgentFrame.maxFrameSize, outputBuffer)
        self.readPause = max(4096, readPause)
        self.totalOutput = max(self.outputBuffer, totalOutput)
        self.largeFrameInput = max(AgentFrame.maxFrameSize * Self.largeFrameCost, largeFrameInput)
    }

    /// An input buffer up to this size is a connection's own; past it, it draws on ``largeFrameInput``.
    static let smallFrameInput = 64 * 1024
    /// What a large frame costs while it is received and decoded, in multiples of its size: the
    /// input buffer, the frame's body, and the decoder's copies (JSON text and strings).
    public static let largeFrameCost = 4
}

/// The bytes all connections hold together: queued output, and input buffers past 64 KiB.
final class ClientMemory: Sendable {
    private struct Counts {
        var output = 0
        var largeInput = 0
    }
    private let counts = Mutex(Counts())
    let limits: AgentConnectionLimits

    init(limits: AgentConnectionLimits) { self.limits = limits }

    /// Output queued (positive) or written (negative); returns the total now.
    @discardableResult
    func addOutput(_ delta: Int) -> Int {
        counts.withLock { counts in
            counts.output += delta
            return counts.output
        }
    }

    /// Takes `bytes` of the large-frame budget, or says it is spent.
    func takeLargeInput(_ bytes: Int) -> Bool {
        counts.withLock { counts in
            guard counts.largeInput + bytes <= limits.largeFrameInput else { return false }
            counts.largeInput += bytes
            return true
        }
    }

    func releaseLargeInput(_ bytes: Int) {
        counts.withLock { $0.largeInput -= bytes }
    }

    /// Queued output and large input buffers now.
    var held: (output: Int, largeInput: Int) { counts.withLock { ($0.output, $0.largeInput) } }
}

/// One accepted client, served by a thread of its own: reads go through `recvmsg` with
/// `SO_PASSCRED`, so every chunk of bytes carries the credentials of the process that wrote it,
/// and each must be the process that connected (`SO_PEERCRED`), whatever the frame. Writes are
/// non-blocking and queued (bounded); the connection's thread flushes what the socket did not
/// take at once.
final class SocketConnection: AgentConnection {
    enum Phase: Sendable {
        case awaitingHello
        case identifying
        case app(UInt64)
        case admin
        case closing
    }

    struct Shared {
        var out: [UInt8] = []
        var written = 0
        var closeRequested = false
        var closeDeadline: UInt64 = 0
        var phase: Phase = .awaitingHello
        /// The descriptors are closed: nothing may touch them (their numbers may be reused).
        var ended = false
    }

    let fd: Int32
    let wake: Int32
    let pidfd: Int32
    let peer: PeerCredentials
    let core: AgentCore
    let limits: AgentConnectionLimits
    let memory: ClientMemory
    let handshakeDeadline: UInt64
    private let shared = Mutex(Shared())

    init(fd: Int32, wake: Int32, pidfd: Int32, peer: PeerCredentials, core: AgentCore, memory: ClientMemory) {
        self.fd = fd
        self.wake = wake
        self.pidfd = pidfd
        self.peer = peer
        self.core = core
        self.limits = memory.limits
        self.memory = memory
        self.handshakeDeadline = Self.now() + UInt64(core.configuration.handshakeTimeoutMilliseconds) * 1_000_000
    }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    var phase: Phase { shared.withLock { $0.phase } }

    // MARK: AgentConnection

    func send(_ frames: [AgentFrame], sensitive: Bool) {
        let overflow = shared.withLock { state -> String? in
            guard !state.closeRequested else { return nil }
            let before = state.out.count - state.written
            for frame in frames {
                var bytes = frame.encoded()
                state.out.append(contentsOf: bytes)
                if sensitive { Zeroize.zero(&bytes) }
            }
            Self.flush(fd, &state)
            let unsent = state.out.count - state.written
            let total = memory.addOutput(unsent - before)
            let why: String?
            if unsent > limits.outputBuffer {
                why = "more than \(limits.outputBuffer) bytes wait for it"
            } else if total > limits.totalOutput && unsent > limits.readPause {
                why = "the agent holds more than \(limits.totalOutput) bytes for clients, \(unsent) of them for it"
            } else {
                why = nil
            }
            if let why {
                // Dropped now: what it did not read is zeroed and freed.
                memory.addOutput(-unsent)
                Zeroize.zero(&state.out)
                state.out = []
                state.written = 0
                state.closeRequested = true
                state.closeDeadline = Self.now()
                signal(state)
                return why
            }
            if state.written < state.out.count { signal(state) }
            return nil
        }
        if let overflow {
            core.logger.notice("dropped a client that does not read", metadata: ["pid": "\(peer.pid)", "uid": "\(peer.uid)", "why": "\(overflow)"])
        }
    }

    func admitted(session id: UInt64) {
        shared.withLock { $0.phase = .app(id) }
    }

    func close() {
        shared.withLock { state in
            if !state.closeRequested {
                state.closeRequested = true
                state.closeDeadline = Self.now() + 2_000_000_000
            }
            signal(state)
        }
    }

    /// Wakes the connection's thread; called with the lock held, so never after its descriptors
    /// are closed.
    private func signal(_ state: Shared) {
        guard !state.ended else { return }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    /// Writes what the socket takes now; zeroes and drops what was written. Returns the bytes
    /// that left the queue (written, or dropped when the peer is gone).
    @discardableResult
    private static func flush(_ fd: Int32, _ state: inout Shared) -> Int {
        let start = state.written
        while state.written < state.out.count {
            let n = state.out.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress.map { $0 + state.written }, raw.count - state.written, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return state.written - start }
                // The peer is gone: drop everything queued.
                state.written = state.out.count
                break
            }
            state.written += n
        }
        let left = state.written - start
        if state.written >= state.out.count && !state.out.isEmpty {
            Zeroize.zero(&state.out)
            state.out.removeAll(keepingCapacity: state.out.capacity <= AgentConnectionLimits.smallFrameInput)
            state.written = 0
        }
        return left
    }

    // MARK: The connection's thread

    /// Serves the connection until it ends; then tells the core and closes every descriptor.
    func run() {
        var input = Input(limit: limits.frameSizeBeforeWelcome)
        loop: while true {
            let (unsent, closing, closeDeadline, awaitingHello) = shared.withLock { state in
                (state.out.count - state.written, state.closeRequested, state.closeDeadline, {
                    if case .awaitingHello = state.phase { return true } else { return false }
                }())
            }
            let pending = unsent > 0
            // A client that does not read what it was sent is not read either, until it does.
            let reading = !closing && unsent <= limits.readPause
            let now = Self.now()
            if closing && (!pending || now >= closeDeadline) { break }
            if awaitingHello && !closing && now >= handshakeDeadline {
                core.logger.info("dropped a connection that did not say hello in time", metadata: ["pid": "\(peer.pid)"])
                break
            }
            var fds = [
                pollfd(fd: fd, events: Int16((reading ? POLLIN : 0) | (pending ? POLLOUT : 0)), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            var timeout: Int32 = -1
            if closing { timeout = Int32(min(UInt64(Int32.max), (closeDeadline &- now) / 1_000_000 + 1)) }
            else if awaitingHello { timeout = Int32(min(UInt64(Int32.max), (handshakeDeadline &- now) / 1_000_000 + 1)) }
            let ready = poll(&fds, 2, timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if fds[1].revents & Int16(POLLIN) != 0 {
                var value: UInt64 = 0
                _ = read(wake, &value, 8)
            }
            if pending && fds[0].revents & Int16(POLLOUT) != 0 {
                memory.addOutput(-shared.withLock { Self.flush(fd, &$0) })
            }
            if closing {
                if fds[0].revents & Int16(POLLHUP | POLLERR) != 0 { break }
                continue
            }
            // Not reading (the client does not read either) and it hung up: nothing queued can
            // reach it any more.
            if !reading && fds[0].revents & Int16(POLLHUP | POLLERR) != 0 { break }
            if reading && fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                switch receive(into: &input) {
                case .more: continue loop
                case .ended: break loop
                }
            }
        }
        input.wipe()
        input.release(memory)
        if case .app(let id) = shared.withLock({ state -> Phase in
            let phase = state.phase
            state.phase = .closing
            return phase
        }) {
            core.disconnected(session: id)
        }
        shared.withLock { state in
            memory.addOutput(-(state.out.count - state.written))
            Zeroize.zero(&state.out)
            state.out = []
            state.written = 0
            state.closeRequested = true
            state.ended = true
            _ = shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
            Glibc.close(wake)
            if pidfd >= 0 { Glibc.close(pidfd) }
        }
    }

    /// The bytes read and not yet decoded, bounded by the frame size the phase allows. The
    /// buffer grows to the frame being read (past 64 KiB from the agent-wide large-frame budget)
    /// and shrinks back once it is decoded.
    struct Input {
        var buffer: [UInt8]
        var filled = 0
        /// Bytes of the buffer taken from the large-frame budget.
        var borrowed = 0

        init(limit: Int) {
            buffer = [UInt8](repeating: 0, count: 4 + limit)
        }

        mutating func wipe() {
            Zeroize.zero(&buffer)
            filled = 0
        }

        /// Room for a frame of `length` bytes (and its prefix); false when the budget is spent.
        mutating func reserve(_ length: Int, _ memory: ClientMemory) -> Bool {
            let needed = 4 + length
            guard needed > buffer.count else { return true }
            let large = max(0, needed - (4 + AgentConnectionLimits.smallFrameInput)) * AgentConnectionLimits.largeFrameCost
            if large > borrowed {
                guard memory.takeLargeInput(large - borrowed) else { return false }
                borrowed = large
            }
            buffer.append(contentsOf: [UInt8](repeating: 0, count: needed - buffer.count))
            return true
        }

        /// Back to at most 64 KiB once what it holds fits, returning what was borrowed.
        mutating func shrink(_ memory: ClientMemory) {
            let small = 4 + AgentConnectionLimits.smallFrameInput
            guard borrowed > 0, filled <= small else { return }
            var smaller = [UInt8](repeating: 0, count: small)
            smaller.withUnsafeMutableBytes { target in
                buffer.withUnsafeBytes { source in
                    guard let to = target.baseAddress, let from = source.baseAddress else { return }
                    memcpy(to, from, filled)
                }
            }
            Zeroize.zero(&buffer)
            buffer = smaller
            memory.releaseLargeInput(borrowed)
            borrowed = 0
        }

        mutating func release(_ memory: ClientMemory) {
            if borrowed > 0 { memory.releaseLargeInput(borrowed) }
            borrowed = 0
        }
    }

    enum ReadOutcome { case more, ended }

    private func receive(into input: inout Input) -> ReadOutcome {
        if case .closing = phase {
            // A refusal or an error is on its way: what else arrives is read and dropped.
            input.filled = 0
            _ = PeerSocket.receive(fd, into: &input.buffer, offset: 0, count: input.buffer.count)
            input.wipe()
            return .more
        }
        if input.filled == input.buffer.count {
            // Never more than one whole frame of the current limit (and its prefix).
            return fail("a frame larger than the agent accepts here")
        }
        let space = input.buffer.count - input.filled
        switch PeerSocket.receive(fd, into: &input.buffer, offset: input.filled, count: space) {
        case .failure(let error):
            if error.code == EAGAIN || error.code == EINTR { return .more }
            return .ended
        case .success(let (count, credentials)):
            if count == 0 { return .ended }
            guard let credentials, credentials.pid == peer.pid, credentials.uid == peer.uid else {
                input.wipe()
                return speakerMismatch(credentials)
            }
            input.filled += count
        }
        return decodeFrames(&input)
    }

    private func decodeFrames(_ input: inout Input) -> ReadOutcome {
        while input.filled >= 4 {
            let length: Int
            do {
                length = try AgentFrame.bodyLength(prefix: Array(input.buffer[0..<4]))
            } catch {
                return fail("\(error)")
            }
            let allowed: Int
            switch phase {
            case .awaitingHello, .identifying: allowed = limits.frameSizeBeforeWelcome
            default: allowed = AgentFrame.maxFrameSize
            }
            guard length <= allowed else {
                return fail("frame too large: \(length) bytes, at most \(allowed) before the welcome; send the hello first")
            }
            guard input.reserve(length, memory) else {
                return fail("the agent is receiving too many large frames at once (\(limits.largeFrameInput) bytes in all); send frames under 64 KiB, or retry later")
            }
            guard input.filled >= 4 + length else { return .more }
            let frame: AgentFrame
            do {
                frame = try AgentFrame.decode(afterPrefix: input.buffer[4..<(4 + length)])
            } catch {
                return fail("\(error)")
            }
            let consumed = 4 + length
            input.buffer.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return }
                memmove(base, base + consumed, input.filled - consumed)
                memset(base + (input.filled - consumed), 0, consumed)
            }
            input.filled -= consumed
            // The budget is given back once the frame was handled (decoded and acted on).
            let outcome = handle(frame, pendingAfter: input.filled)
            input.shrink(memory)
            if case .ended = outcome { return .ended }
            if shared.withLock({ state -> Bool in
                if case .closing = state.phase { return true }
                return state.closeRequested
            }) {
                input.wipe()
                return .more
            }
        }
        return .more
    }

    private func handle(_ frame: AgentFrame, pendingAfter: Int) -> ReadOutcome {
        do {
            switch (phase, frame.type) {
            case (.awaitingHello, .hello):
                let hello = try AgentMessage.decode(HelloMessage.self, from: frame.body)
                handleHello(hello, pendingAfter: pendingAfter)
            case (.app(let id), .acknowledgments):
                let batch = try AgentMessage.decode(AcknowledgmentBatch.self, from: frame.body)
                try Self.checkIDs(batch: batch.id, records: batch.records.map(\.id))
                core.acknowledgments(batch, session: id)
            case (.app(let id), .keyRequest):
                core.keysRequested(session: id)
            case (.app(let id), .audit):
                let batch = try AgentMessage.decode(AuditBatch.self, from: frame.body)
                try Self.checkIDs(batch: batch.id, records: batch.records.map(\.id))
                core.audit(batch, session: id)
            case (.admin, .adminRequest):
                handleAdmin(try AgentMessage.decode(AdminRequest.self, from: frame.body))
            case (.identifying, _):
                throw FrameError.invalidBody("wait for the welcome before sending more frames")
            default:
                throw FrameError.invalidBody("a \(frame.type) frame is not expected here")
            }
        } catch {
            return fail("\(error)")
        }
        return .more
    }

    /// The longest batch or record id accepted (a client's are a few dozen bytes): the receipt
    /// echoes the batch id, so a long one would make the agent queue it again for the client.
    static let maxIDBytes = 256

    static func checkIDs(batch: String, records: [String]) throws(FrameError) {
        guard batch.utf8.count <= maxIDBytes, records.allSatisfy({ $0.utf8.count <= maxIDBytes }) else {
            throw .invalidBody("a batch or record id is longer than \(maxIDBytes) bytes; use short ids")
        }
    }

    /// Sends an error frame and closes after it.
    private func fail(_ message: String) -> ReadOutcome {
        let previous = shared.withLock { state -> Phase in
            let phase = state.phase
            state.phase = .closing
            return phase
        }
        if case .closing = previous { return .more }
        core.logger.notice("dropped a connection", metadata: ["why": "\(message)"])
        if case .app(let id) = previous { core.disconnected(session: id) }
        send([AgentMessage.frame(.error, ErrorMessage(message: message))], sensitive: false)
        close()
        return .more
    }

    /// Bytes from a process other than the one that connected (a descriptor shared across
    /// `fork`, or inherited across `exec`): no keys, no policy, audited, closed.
    private func speakerMismatch(_ writer: KernelCredentials?) -> ReadOutcome {
        let previous = shared.withLock { state -> Phase in
            let phase = state.phase
            state.phase = .closing
            return phase
        }
        if case .closing = previous { return .more }
        if case .app(let id) = previous { core.disconnected(session: id) }
        let writerText = writer.map { "process \($0.pid) (uid \($0.uid))" } ?? "a writer the kernel did not name"
        let refusal = RefusalMessage(
            reason: .speakerMismatch,
            message: "bytes on this connection came from \(writerText), not from process \(peer.pid), which connected; the connection is closed and gets no keys and no policy (do not share the agent's socket across fork or exec)",
            peer: PeerDescription(pid: peer.pid, uid: peer.uid, executable: core.identifier.executable(of: peer.pid)))
        core.refuse(refusal, peer: peer, writer: writer.map { PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid) }, connection: self)
        return .more
    }

    /// Whether bytes wait on the socket now (not consumed).
    private func bytesWaiting() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    private func handleHello(_ hello: HelloMessage, pendingAfter: Int) {
        guard hello.protocolVersion == Int(AgentFrame.protocolVersion) else {
            shared.withLock { $0.phase = .closing }
            send([AgentMessage.frame(.refused, RefusalMessage(
                reason: .protocolVersion,
                message: "the agent speaks protocol \(AgentFrame.protocolVersion), the client \(hello.protocolVersion); use matching versions",
                peer: nil))], sensitive: false)
            close()
            return
        }
        switch hello.role {
        case .admin:
            if core.mayAdminister(peer) {
                shared.withLock { $0.phase = .admin }
            } else {
                shared.withLock { $0.phase = .closing }
                send([AgentMessage.frame(.refused, RefusalMessage(
                    reason: .notAdministrator,
                    message: "only the agent's user (uid \(getuid())) or root may administer it", peer: nil))],
                    sensitive: false)
                close()
            }
        case .app:
            shared.withLock { $0.phase = .identifying }
            let pidfd = self.pidfd
            let peer = self.peer
            // On this connection's thread: reading /proc and hashing may block, nobody else waits.
            // After /proc was read: the process must still be the one that connected (pidfd), and
            // nothing may follow the hello yet. Whatever a process wrote before it exec'd the
            // registered binary was written before that read, so it is seen here and refused.
            core.admitApp(peer: peer, pidfd: pidfd, connection: self, verify: { [self] executable in
                guard pidfd >= 0 && PeerSocket.isAlive(pidfd: pidfd, pid: peer.pid) else {
                    return RefusalMessage(reason: .processGone, message: "process \(peer.pid), which connected, exited before it was identified (its pid may now be another process's); it gets no keys and no policy",
                                          peer: PeerDescription(pid: peer.pid, uid: peer.uid, executable: executable))
                }
                guard pendingAfter == 0 && !bytesWaiting() else {
                    return RefusalMessage(reason: .earlyFrames, message: "bytes followed the hello before the welcome (an app waits for the welcome, then asks for its keys); it gets no keys and no policy",
                                          peer: PeerDescription(pid: peer.pid, uid: peer.uid, executable: executable))
                }
                return nil
            })
            // Not admitted: a refusal is on its way (after its audit record); nothing more is read.
            shared.withLock { state in
                if case .identifying = state.phase { state.phase = .closing }
            }
        }
    }

    private func handleAdmin(_ request: AdminRequest) {
        let response: AdminResponse
        switch request.command {
        case "reload": response = core.reload()
        case "setPolicy":
            response = request.document.map { core.setPolicy($0) }
                ?? core.statusWith(ok: false, message: "setPolicy needs a document")
        case "status": response = core.status()
        default: response = core.statusWith(ok: false, message: "unknown command '\(request.command)'; use reload, setPolicy or status")
        }
        send([AgentMessage.frame(.adminResponse, response)], sensitive: false)
    }
}

extension AgentCore {
    /// The status with another outcome and message.
    func statusWith(ok: Bool, message: String) -> AdminResponse {
        var response = status()
        response.ok = ok
        response.message = message
        return response
    }
}

/// The agent's socket server: a Unix stream socket with `SO_PASSCRED`, an accept thread that
/// enforces the connection limits, and a thread per connection.
///
/// ```swift
/// let core = try AgentCore(configuration: .standard)
/// let server = try AgentServer.start(core: core)
/// try server.waitUntilStopped()          // SIGTERM or SIGINT stops it; SIGHUP reloads
/// ```
public final class AgentServer: Sendable {
    struct Counts {
        var total = 0
        /// Of `total`, connections admitted into the reserve.
        var reserved = 0
        var perUser: [UInt32: Int] = [:]
        var connections: [ObjectIdentifier: SocketConnection] = [:]
        var stopped = false
    }

    /// The core it serves.
    public let core: AgentCore
    /// The limits in force.
    public let limits: AgentConnectionLimits
    let listener: Int32
    let stopEvent: Int32
    /// What all connections hold together (``AgentConnectionLimits/totalOutput``, ``AgentConnectionLimits/largeFrameInput``).
    let memory: ClientMemory
    private let counts = Mutex(Counts())
    private let acceptDone = DispatchSemaphore(value: 0)
    /// Signalled by the signal thread at SIGTERM or SIGINT.
    private let stopRequested: DispatchSemaphore
    /// Watches the policy directory, when one is configured.
    let policyWatcher: PolicyDirectoryWatcher?

    private init(core: AgentCore, limits: AgentConnectionLimits, listener: Int32, stopEvent: Int32,
                 stopRequested: DispatchSemaphore, policyWatcher: PolicyDirectoryWatcher?) {
        self.core = core
        self.limits = limits
        self.memory = ClientMemory(limits: limits)
        self.listener = listener
        self.stopEvent = stopEvent
        self.stopRequested = stopRequested
        self.policyWatcher = policyWatcher
    }

    /// Binds the socket (refusing to replace one another agent is listening on), makes it
    /// owner-only (or ``AgentConfiguration/socketMode``), and starts serving.
    /// - Throws: ``AgentError/socket(path:reason:)``.
    /// - Parameter threads: ignored (each connection has a thread of its own); kept for callers.
    public static func start(core: AgentCore, threads: Int = 1,
                             limits: AgentConnectionLimits = AgentConnectionLimits()) throws(AgentError) -> AgentServer {
        let path = core.configuration.socketPath
        do {
            // Reachable by other users only when they may connect; writable by nobody else.
            let folderMode: mode_t = core.configuration.socketMode & 0o066 != 0 ? 0o755 : 0o700
            try SecureFolders.makeDirectories(DurableFile.parent(of: path), mode: folderMode, private: false)
        } catch {
            throw .state(error)
        }
        if Self.someoneListens(on: path) {
            throw .socket(path: path, reason: "another agent is already listening there; stop it first, or give another --socket")
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFSOCK, info.st_uid == geteuid() else {
                throw .socket(path: path, reason: "something that is not this user's socket is at that path (mode \(String(info.st_mode, radix: 8)), owner uid \(info.st_uid)); remove it, or give another --socket")
            }
            unlink(path)
        }
        // SIGHUP reloads, SIGTERM and SIGINT stop; set up before the socket exists, so a reload
        // sent as soon as the agent accepts connections cannot kill it.
        let stopRequested = Self.startSignalThread(core: core)
        let listener = try Self.listen(on: path, mode: core.configuration.socketMode)
        let stopEvent = PeerSocket.eventDescriptor(nonBlocking: false)
        guard stopEvent >= 0 else {
            Glibc.close(listener)
            throw .socket(path: path, reason: "eventfd: \(String(cString: strerror(errno)))")
        }
        // The policy directory is watched: a change reloads as SIGHUP does.
        let watcher = core.configuration.policyDirectory.flatMap { directory in
            PolicyDirectoryWatcher(directory: directory, logger: core.logger) {
                let response = core.reload()
                core.logger.notice("policy directory changed: \(response.message)")
            }
        }
        let server = AgentServer(core: core, limits: limits, listener: listener, stopEvent: stopEvent, stopRequested: stopRequested,
                                 policyWatcher: watcher)
        let thread = Thread { server.acceptLoop() }
        thread.name = "sharebrokerd.accept"
        thread.start()
        core.logger.notice("listening", metadata: ["socket": "\(path)", "state": "\(core.configuration.stateDirectory)"])
        return server
    }

    private static func listen(on path: String, mode: UInt16) throws(AgentError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .socket(path: path, reason: String(cString: strerror(errno))) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(fd)
            throw .socket(path: path, reason: "the path is longer than 107 bytes; give a shorter --socket")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        // Accepted sockets inherit SO_PASSCRED atomically, so the hello carries credentials even
        // when the client writes it before the agent accepts.
        guard PeerSocket.enablePassCredentials(fd) else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .socket(path: path, reason: "SO_PASSCRED: \(reason)")
        }
        let previousMask = umask(0o077)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(previousMask)
        guard bound == 0, Glibc.listen(fd, 256) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .socket(path: path, reason: reason)
        }
        _ = chmod(path, mode_t(mode))
        return fd
    }

    private func acceptLoop() {
        var lastFlush = SocketConnection.now()
        while true {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stopEvent, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, 1000)
            let now = SocketConnection.now()
            if now &- lastFlush >= 1_000_000_000 {
                core.flushCoalescedRefusals()
                lastFlush = now
            }
            if ready < 0 && errno != EINTR { break }
            if fds[1].revents != 0 { break }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            let fd = PeerSocket.accept(listener)
            if fd < 0 {
                if errno == EMFILE || errno == ENFILE { usleep(10_000) }
                continue
            }
            admit(fd)
        }
        core.flushCoalescedRefusals()
        acceptDone.signal()
    }

    private func admit(_ fd: Int32) {
        _ = PeerSocket.enablePassCredentials(fd)
        guard case .success(let kernel) = PeerSocket.peerCredentials(fd) else {
            Glibc.close(fd)
            return
        }
        let peer = PeerCredentials(pid: kernel.pid, uid: kernel.uid, gid: kernel.gid)
        var refusal = counts.withLock { counts -> String? in
            if counts.stopped { return "the agent is stopping" }
            if counts.total >= limits.total - limits.reserve {
                return "the agent serves at most \(limits.total - limits.reserve) connections at once (and \(limits.reserve) more for registered apps); close idle ones and retry"
            }
            if counts.perUser[peer.uid, default: 0] >= limits.perUser {
                return "uid \(peer.uid) has \(limits.perUser) connections open, the most the agent allows one user; close idle ones and retry"
            }
            counts.total += 1
            counts.perUser[peer.uid, default: 0] += 1
            return nil
        }
        var reserved = false
        // Full for everyone else: a registered app of a user it allows may still take the reserve,
        // so a flood of other processes (of any uid) cannot keep the apps out.
        if refusal != nil, limits.reserve > 0, core.mayUseReserve(peer) {
            reserved = counts.withLock { counts -> Bool in
                guard !counts.stopped, counts.reserved < limits.reserve, counts.total < limits.total else { return false }
                counts.total += 1
                counts.reserved += 1
                counts.perUser[peer.uid, default: 0] += 1
                return true
            }
            if reserved { refusal = nil }
        }
        if let refusal {
            let frame = AgentMessage.frame(.refused, RefusalMessage(reason: .tooManyConnections, message: refusal,
                                                                    peer: PeerDescription(pid: peer.pid, uid: peer.uid, executable: nil)))
            _ = frame.encoded().withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            Glibc.close(fd)
            core.auditCoalesced(reason: .tooManyConnections, peer: peer, executable: nil) {}
            return
        }
        let pidfd: Int32
        switch PeerSocket.peerPidfd(fd, pid: peer.pid, allowPeerPidfd: core.configuration.usePeerPidfd) {
        case .success(let result): pidfd = result.fd
        case .failure: pidfd = -1   // the process is gone already: identification refuses it
        }
        let wake = PeerSocket.eventDescriptor(nonBlocking: true)
        guard wake >= 0 else {
            if pidfd >= 0 { Glibc.close(pidfd) }
            Glibc.close(fd)
            release(uid: peer.uid, reserved: reserved, nil)
            return
        }
        let inReserve = reserved
        let connection = SocketConnection(fd: fd, wake: wake, pidfd: pidfd, peer: peer, core: core, memory: memory)
        counts.withLock { $0.connections[ObjectIdentifier(connection)] = connection }
        let thread = Thread { [self] in
            connection.run()
            release(uid: peer.uid, reserved: inReserve, connection)
        }
        thread.stackSize = 512 * 1024
        thread.name = "sharebrokerd.connection"
        thread.start()
    }

    private func release(uid: UInt32, reserved: Bool, _ connection: SocketConnection?) {
        counts.withLock { counts in
            counts.total -= 1
            if reserved { counts.reserved -= 1 }
            counts.perUser[uid, default: 1] -= 1
            if counts.perUser[uid] == 0 { counts.perUser[uid] = nil }
            if let connection { counts.connections[ObjectIdentifier(connection)] = nil }
        }
    }

    /// Connections open now.
    public var openConnections: Int { counts.withLock { $0.total } }

    /// Whether a process accepts connections on the socket at `path`.
    static func someoneListens(on path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }

    /// Blocks until SIGTERM or SIGINT, then stops serving and removes the socket.
    public func waitUntilStopped() throws {
        stopRequested.wait()
        self.stop()
    }

    /// The signals the agent handles: SIGHUP reloads, SIGTERM and SIGINT stop.
    static let handledSignals = [SIGHUP, SIGTERM, SIGINT]

    private static var handledSet: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in handledSignals { sigaddset(&set, number) }
        return set
    }

    /// Blocks the handled signals in the calling thread, and so in every thread it starts from
    /// then on: a thread of their own takes them with `sigwait`. sharebrokerd calls this first,
    /// before any thread exists. (Not Dispatch signal sources: the first one starts libdispatch's
    /// event-manager thread, which asks for a priority an unprivileged service may not take, and
    /// each start of the system service logged "Failed to set thread priority for worker thread
    /// ... errno=13" to the journal.)
    public static func blockHandledSignals() {
        var set = handledSet
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// The thread that takes the handled signals; returns what it signals at SIGTERM or SIGINT.
    /// Ignored as well as blocked: a signal that reaches a thread started before
    /// ``blockHandledSignals()`` is dropped, never the default action (which ends the process).
    private static func startSignalThread(core: AgentCore) -> DispatchSemaphore {
        for number in handledSignals { signal(number, SIG_IGN) }
        blockHandledSignals()
        let stopRequested = DispatchSemaphore(value: 0)
        let thread = Thread {
            var set = handledSet
            while true {
                var number: Int32 = 0
                guard sigwait(&set, &number) == 0 else { continue }
                if number == SIGHUP {
                    let response = core.reload()
                    core.logger.notice("SIGHUP: \(response.message)")
                } else {
                    stopRequested.signal()
                }
            }
        }
        thread.name = "sharebrokerd.signals"
        thread.start()
        return stopRequested
    }

    /// Stops serving: closes the listening socket and every connection, removes the socket file.
    public func stop() {
        let first = counts.withLock { counts -> Bool in
            defer { counts.stopped = true }
            return !counts.stopped
        }
        guard first else { return }
        policyWatcher?.stop()
        var one: UInt64 = 1
        _ = write(stopEvent, &one, 8)
        acceptDone.wait()
        Glibc.close(listener)
        unlink(core.configuration.socketPath)
        let open = counts.withLock { Array($0.connections.values) }
        for connection in open { connection.close() }
        // Give the connections' threads a moment to flush and close.
        var waited = 0
        while openConnections > 0 && waited < 200 {
            usleep(10_000)
            waited += 1
        }
        core.logger.notice("stopped")
    }
}
