#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import NIOCore
import NIOPosix
import ShareBrokerAgentProtocol
import ShareBrokerCrypto

/// Reads frames from the byte stream: the length prefix is checked against
/// ``ShareBrokerAgentProtocol/AgentFrame/maxFrameSize`` as soon as its four bytes are in, before
/// the frame is buffered, and the frame itself is decoded by the pure codec.
struct AgentFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = AgentFrame

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard buffer.readableBytes >= 4, let prefix = buffer.getBytes(at: buffer.readerIndex, length: 4) else {
            return .needMoreData
        }
        let length = try AgentFrame.bodyLength(prefix: prefix)
        guard buffer.readableBytes >= 4 + length else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        guard let bytes = buffer.readBytes(length: length) else { return .needMoreData }
        let frame = try AgentFrame.decode(afterPrefix: bytes[...])
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }
}

/// `struct ucred` (Linux `SO_PEERCRED`), which Glibc's module does not export without
/// `_GNU_SOURCE`: the same layout.
struct KernelPeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// The core's view of one NIO channel.
struct ChannelConnection: AgentConnection {
    let channel: any Channel
    let handler: NIOLoopBound<AgentConnectionHandler>

    func send(_ frames: [AgentFrame], sensitive: Bool) {
        for frame in frames {
            var bytes = frame.encoded()
            let buffer = channel.allocator.buffer(bytes: bytes)
            if sensitive {
                Zeroize.zero(&bytes)
                channel.writeAndFlush(buffer).whenComplete { _ in
                    // Zero the bytes in place once the write is done: NIO no longer reads them, and
                    // a mutating accessor would copy the storage (copy-on-write) and zero the copy.
                    buffer.withUnsafeReadableBytes { raw in
                        if let base = raw.baseAddress { _ = memset(UnsafeMutableRawPointer(mutating: base), 0, raw.count) }
                    }
                }
            } else {
                channel.writeAndFlush(buffer, promise: nil)
            }
        }
    }

    func admitted(session id: UInt64) {
        let handler = self.handler
        channel.eventLoop.execute { handler.value.phase = .app(id) }
    }

    func close() {
        let channel = self.channel
        channel.eventLoop.execute { channel.close(promise: nil) }
    }
}

/// One client connection: the handshake, then the frames its role allows. Anything else (a
/// frame that does not decode, an oversized frame, a frame out of place, silence past the
/// handshake timeout) gets an error frame and the connection is dropped; other clients are
/// unaffected.
final class AgentConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = AgentFrame
    typealias OutboundOut = ByteBuffer

    enum Phase {
        case awaitingHello
        case identifying
        case app(UInt64)
        case admin
        case closing
    }

    var phase: Phase = .awaitingHello
    let core: AgentCore
    let handshakeTimeout: TimeAmount
    private var timeout: Scheduled<Void>?

    init(core: AgentCore, handshakeTimeout: TimeAmount = .seconds(5)) {
        self.core = core
        self.handshakeTimeout = handshakeTimeout
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        timeout = context.eventLoop.scheduleTask(in: handshakeTimeout) {
            channel.close(promise: nil)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timeout?.cancel()
        if case .app(let id) = phase { core.disconnected(session: id) }
        phase = .closing
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        do {
            switch (phase, frame.type) {
            case (.awaitingHello, .hello):
                let hello = try AgentMessage.decode(HelloMessage.self, from: frame.body)
                timeout?.cancel()
                try handleHello(hello, context: context)
            case (.app(let id), .acknowledgments):
                core.acknowledgments(try AgentMessage.decode(AcknowledgmentBatch.self, from: frame.body), session: id)
            case (.app(let id), .audit):
                core.audit(try AgentMessage.decode(AuditBatch.self, from: frame.body), session: id)
            case (.admin, .adminRequest):
                let request = try AgentMessage.decode(AdminRequest.self, from: frame.body)
                handleAdmin(request, context: context)
            case (.identifying, _):
                throw FrameError.invalidBody("wait for the welcome before sending more frames")
            default:
                throw FrameError.invalidBody("a \(frame.type) frame is not expected here")
            }
        } catch {
            fail(context: context, message: "\(error)")
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context: context, message: "\(error)")
    }

    private func fail(context: ChannelHandlerContext, message: String) {
        if case .closing = phase { return }
        core.logger.notice("dropped a connection", metadata: ["why": "\(message)"])
        if case .app(let id) = phase { core.disconnected(session: id) }
        phase = .closing
        let frame = AgentMessage.frame(.error, ErrorMessage(message: message))
        let channel = context.channel
        channel.writeAndFlush(channel.allocator.buffer(bytes: frame.encoded())).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    private func handleHello(_ hello: HelloMessage, context: ChannelHandlerContext) throws {
        let channel = context.channel
        let connection = ChannelConnection(channel: channel, handler: NIOLoopBound(self, eventLoop: context.eventLoop))
        guard hello.protocolVersion == Int(AgentFrame.protocolVersion) else {
            connection.send([AgentMessage.frame(.refused, RefusalMessage(
                reason: .protocolVersion,
                message: "the agent speaks protocol \(AgentFrame.protocolVersion), the client \(hello.protocolVersion); use matching versions",
                peer: nil))], sensitive: false)
            connection.close()
            phase = .closing
            return
        }
        guard let provider = channel as? any SocketOptionProvider else {
            throw FrameError.invalidBody("the agent cannot read this connection's peer credentials")
        }
        phase = .identifying
        let core = self.core
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let credentials: EventLoopFuture<KernelPeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        credentials.whenComplete { result in
            switch result {
            case .failure:
                connection.send([AgentMessage.frame(.refused, RefusalMessage(
                    reason: .unidentified, message: "the agent could not read the peer's credentials", peer: nil))],
                    sensitive: false)
                connection.close()
                bound.value.phase = .closing
            case .success(let cred):
                let peer = PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid)
                switch hello.role {
                case .admin:
                    if core.mayAdminister(peer) {
                        bound.value.phase = .admin
                    } else {
                        connection.send([AgentMessage.frame(.refused, RefusalMessage(
                            reason: .notAdministrator,
                            message: "only the agent's user (uid \(getuid())) or root may administer it", peer: nil))],
                            sensitive: false)
                        connection.close()
                        bound.value.phase = .closing
                    }
                case .app:
                    // Reading /proc and hashing the executable may block: off the event loop.
                    DispatchQueue.global().async {
                        core.admitApp(peer: peer, connection: connection)
                    }
                }
            }
        }
    }

    private func handleAdmin(_ request: AdminRequest, context: ChannelHandlerContext) {
        let core = self.core
        let channel = context.channel
        DispatchQueue.global().async {
            let response: AdminResponse
            switch request.command {
            case "reload": response = core.reload()
            case "setPolicy":
                response = request.document.map { core.setPolicy($0) }
                    ?? core.statusWith(ok: false, message: "setPolicy needs a document")
            case "status": response = core.status()
            default: response = core.statusWith(ok: false, message: "unknown command '\(request.command)'; use reload, setPolicy or status")
            }
            let frame = AgentMessage.frame(.adminResponse, response)
            channel.writeAndFlush(channel.allocator.buffer(bytes: frame.encoded()), promise: nil)
        }
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

/// The agent's socket server: swift-nio over a Unix domain socket.
///
/// ```swift
/// let core = try AgentCore(configuration: .standard)
/// let server = try AgentServer.start(core: core)
/// try server.waitUntilStopped()          // SIGTERM or SIGINT stops it; SIGHUP reloads
/// ```
public final class AgentServer: Sendable {
    /// The core it serves.
    public let core: AgentCore
    let channel: any Channel
    let group: MultiThreadedEventLoopGroup
    /// Kept alive for as long as the server; only touched at start.
    nonisolated(unsafe) let signalSources: [any DispatchSourceSignal]
    /// Watches the policy directory, when one is configured.
    let policyWatcher: PolicyDirectoryWatcher?

    private init(core: AgentCore, channel: any Channel, group: MultiThreadedEventLoopGroup,
                 signalSources: [any DispatchSourceSignal], policyWatcher: PolicyDirectoryWatcher?) {
        self.core = core
        self.channel = channel
        self.group = group
        self.signalSources = signalSources
        self.policyWatcher = policyWatcher
    }

    /// Binds the socket (refusing to replace one another agent is listening on), makes it
    /// owner-only (or ``AgentConfiguration/socketMode``), and starts serving.
    /// - Throws: ``AgentError/socket(path:reason:)``.
    /// - Parameter threads: event-loop threads (default: one per core, at most 4).
    public static func start(core: AgentCore, threads: Int = min(4, System.coreCount)) throws(AgentError) -> AgentServer {
        let path = core.configuration.socketPath
        do {
            try DurableFile.makeDirectories(DurableFile.parent(of: path))
        } catch {
            throw .state(error)
        }
        if Self.someoneListens(on: path) {
            throw .socket(path: path, reason: "another agent is already listening there; stop it first, or give another --socket")
        }
        unlink(path)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(AgentFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(AgentConnectionHandler(
                        core: core, handshakeTimeout: .milliseconds(Int64(core.configuration.handshakeTimeoutMilliseconds))))
                }
            }
        // SIGHUP reloads; set up before the socket exists, so a reload sent as soon as the agent
        // accepts connections cannot kill it.
        signal(SIGHUP, SIG_IGN)
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangup.setEventHandler {
            let response = core.reload()
            core.logger.notice("SIGHUP: \(response.message)")
        }
        hangup.resume()
        let previousMask = umask(0o077)
        let channel: any Channel
        do {
            channel = try bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).wait()
        } catch {
            umask(previousMask)
            hangup.cancel()
            try? group.syncShutdownGracefully()
            throw .socket(path: path, reason: "\(error)")
        }
        umask(previousMask)
        _ = chmod(path, mode_t(core.configuration.socketMode))

        // The policy directory is watched: a change reloads as SIGHUP does.
        let watcher = core.configuration.policyDirectory.flatMap { directory in
            PolicyDirectoryWatcher(directory: directory, logger: core.logger) {
                let response = core.reload()
                core.logger.notice("policy directory changed: \(response.message)")
            }
        }
        core.logger.notice("listening", metadata: ["socket": "\(path)", "state": "\(core.configuration.stateDirectory)"])
        return AgentServer(core: core, channel: channel, group: group, signalSources: [hangup], policyWatcher: watcher)
    }

    /// Whether a process accepts connections on the socket at `path`.
    static func someoneListens(on path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
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
        let stop = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            sources.append(source)
        }
        let closed = channel.closeFuture
        DispatchQueue.global().async {
            try? closed.wait()
            stop.signal()
        }
        stop.wait()
        self.stop()
        withExtendedLifetime(sources) {}
    }

    /// Stops serving: closes the listening socket and every connection, removes the socket file.
    public func stop() {
        policyWatcher?.stop()
        try? channel.close().wait()
        unlink(core.configuration.socketPath)
        try? group.syncShutdownGracefully()
        core.logger.notice("stopped")
    }
}
