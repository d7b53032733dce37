#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import ShareBroker
import ShareBrokerAgentProtocol
import ShareBrokerPolicyDocument
import Synchronization
import ShareBrokerCrypto
import ShareBrokerPOSIX

/// Where the agent keeps its state and listens, and where its device policy comes from.
public struct AgentConfiguration: Sendable, Hashable {
    /// The state folder (mode 0700): key ring, device policy, acknowledgment and audit logs.
    public var stateDirectory: String
    /// The Unix socket apps connect to.
    public var socketPath: String
    /// A device policy file to read at start and at every reload; `nil` keeps the policy in the
    /// state folder. With neither, the agent has no device policy and refuses every app.
    public var policyFile: String?
    /// A policy directory (``ShareBrokerPolicyDocument/PolicyDirectory``: `device.json` and
    /// `policies.d/`), read at start and at every reload when it holds a `device.json`, and
    /// watched for changes. ``policyFile`` wins over it; it wins over the state folder's copy.
    public var policyDirectory: String?
    /// Where reports go besides the durable local logs.
    public var systemLog: AgentSystemLog
    /// An OpenTelemetry collector's OTLP/HTTP logs endpoint (`http://HOST:4318/v1/logs`) that
    /// also receives the reports, or `nil`.
    public var otlpEndpoint: String?
    /// How many older keys each rotation keeps for opening.
    public var keepingRecent: Int
    /// Socket file mode (0600: only the agent's user may connect).
    public var socketMode: UInt16
    /// How long a new connection may take to say hello before it is dropped.
    public var handshakeTimeoutMilliseconds: Int
    /// Whether to take the peer's pidfd with `SO_PEERPIDFD` (Linux 6.5+) when the kernel has
    /// it; `false` uses `pidfd_open` at accept, as on older kernels (tests exercise both).
    public var usePeerPidfd: Bool = true
    /// The size past which the acknowledgment and audit logs start a new file (default 16 MiB).
    public var logMaxBytes: Int = 16 << 20
    /// How many old files of each log are kept (`audit.jsonl.1` …; default 3). The logs then
    /// take at most about `logMaxBytes × (logFilesKept + 1)` each.
    public var logFilesKept: Int = 3
    /// Where Flatpak apps are installed and Flatpak keeps its instance records (a peer that says
    /// it is a Flatpak app is checked against them; docs/THREAT-MODEL.md).
    public var flatpak: FlatpakSettings = .standard

    /// Creates a configuration.
    public init(stateDirectory: String, socketPath: String, policyFile: String? = nil, policyDirectory: String? = nil,
                systemLog: AgentSystemLog = .automatic, otlpEndpoint: String? = nil, keepingRecent: Int = 4, socketMode: UInt16 = 0o600,
                handshakeTimeoutMilliseconds: Int = 5_000) {
        self.stateDirectory = stateDirectory
        self.socketPath = socketPath
        self.policyFile = policyFile
        self.policyDirectory = policyDirectory
        self.systemLog = systemLog
        self.otlpEndpoint = otlpEndpoint
        self.keepingRecent = keepingRecent
        self.socketMode = socketMode
        self.handshakeTimeoutMilliseconds = max(1, handshakeTimeoutMilliseconds)
    }

    /// Why `endpoint` cannot be an OTLP endpoint, or `nil` when it can (`http://HOST[:PORT][/PATH]`).
    public static func problem(withOTLPEndpoint endpoint: String) -> String? {
        do {
            let exporter = try OTLPLogExporter(endpoint: endpoint, hostname: "-")
            exporter.stop()
            return nil
        } catch {
            return error.description
        }
    }

    /// The default paths: everything under ``ShareBrokerAgentProtocol/AgentPaths/runtimeDirectory``.
    public static var standard: AgentConfiguration {
        AgentConfiguration(stateDirectory: AgentPaths.state, socketPath: AgentPaths.socket)
    }
}

/// Where the agent reports acknowledgments, blocked attempts, wipes, refusals and policy loads
/// besides its durable local logs (never payloads, document names or keys).
public enum AgentSystemLog: Sendable, Hashable {
    /// journald's native protocol when journald runs, else syslog on `/dev/log`, else nothing.
    case automatic
    /// journald's native protocol on this socket.
    case journald(socket: String)
    /// RFC 5424 syslog (structured data `sharebroker@32473`) on this Unix datagram socket.
    case syslog(socket: String)
    /// The local logs only.
    case off
}

/// Why the agent could not start or could not take a new policy.
public enum AgentError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A state file could not be read or written.
    case state(AgentStateError)
    /// The device policy is invalid; nothing of it was applied.
    case policy(source: String, errors: String)
    /// The key ring could not be made or rotated.
    case keys(SealingError)
    /// The socket could not be set up.
    case socket(path: String, reason: String)

    public var description: String {
        switch self {
        case .state(let e): e.description
        case .policy(let source, let errors): "the device policy \(source) is invalid; nothing of it was applied:\n\(errors)"
        case .keys(let e): "the group key ring could not be made or rotated: \(e)"
        case .socket(let path, let reason): "cannot listen on \(path): \(reason)"
        }
    }
}

/// Where the agent sends frames to one connected client. ``AgentServer`` implements it; the
/// core never touches a socket.
public protocol AgentConnection: Sendable {
    /// Sends `frames` in order. `sensitive` frames hold key bytes: the sender zeroes its copies
    /// once written.
    func send(_ frames: [AgentFrame], sensitive: Bool)
    /// The core admitted this connection as session `id` (called before the welcome is sent).
    func admitted(session id: UInt64)
    /// Closes the connection (after the frames already sent).
    func close()
}

/// One line of `acknowledgments.jsonl`.
struct AcknowledgmentLogRecord: Codable, Sendable {
    var time: String
    var app: String
    var pid: Int32
    var uid: UInt32
    var push: UInt64
    var batch: String
    var id: String
    var kind: String
    var state: String
    var message: String
    var generation: UInt64
}

/// One line of `audit.jsonl`. Never content.
struct AuditLogRecord: Codable, Sendable {
    var time: String
    var event: String
    var app: String?
    var pid: Int32?
    var uid: UInt32?
    var executable: String?
    var id: String?
    var action: String?
    var target: String?
    var rule: String?
    var generation: UInt64?
    var reason: String?
    var erased: [String]?
    var failed: [String: String]?
    /// For a refusal: the process that wrote the refused bytes, when it is not `pid`.
    var writerPid: Int32?
    var writerUid: UInt32?
    /// For a coalesced refusal record: how many refusals of this kind it stands for.
    var count: Int?
    /// For a warned attempt: the reason code the user picked.
    var reasonCode: String?
    /// For a warned attempt: the user's text, escaped and bounded.
    var text: String?
}

/// The agent's logic, without networking: the registry, identification, key custody and
/// persistence, policy push and the durable logs. ``AgentServer`` drives it from sockets.
public final class AgentCore: Sendable {
    struct Session {
        var app: String
        var executable: String
        var peer: PeerCredentials
        var connection: any AgentConnection
        /// What was read of the process when it connected (its executable, the file's device
        /// and inode, host or its Flatpak instance): re-identification at a policy install
        /// starts from it and reads nothing of the process again.
        var identity: ProcessIdentity
        /// The key ids last sent to this session (empty: "no keys"); `nil` before the first.
        var sentKeyIDs: [UInt32]?
        /// Whether the session asked for keys after its welcome (a `keyRequest` frame): no key
        /// frame is sent before.
        var keysRequested = false
    }

    struct State {
        var registry: DeviceRegistry
        var ring: KeyRing
        /// Each app's file keys (every generation, newest first); sent to that app only.
        var fileKeys: [String: FileKeyRing]
        var metadata: KeyStore.Metadata
        var push: UInt64 = 1
        var sessions: [UInt64: Session] = [:]
        var nextSession: UInt64 = 1
    }

    /// The configuration it started with.
    public let configuration: AgentConfiguration
    /// Maps peers to registered apps (``PeerIdentifier`` over `/proc`; tests give one over a
    /// folder of their own through ``init(configuration:logger:identifier:)``).
    let identifier: PeerIdentifier
    let keyStore: KeyStore
    let acknowledgmentLog: DurableLog
    let auditLog: DurableLog
    let policyPath: String
    let logger: Logger
    /// The system log, when one is configured or found.
    let systemLog: SystemLogExporter?
    /// The OpenTelemetry collector, when one is configured.
    let otlp: OTLPLogExporter?
    private let state: Mutex<State>
    /// The state folder's lock (`flock` on `agent.lock`), held for the life of the core so that
    /// two agents never share (and fork) one key ring.
    private let lockDescriptor: Int32
    /// Serializes reloads (reading and writing policy files) without holding the state lock.
    private let reloading = Mutex<Void>(())

    /// Loads (or creates) the state folder, the device policy and the key ring; rotates the key
    /// if an app lost its entitlement while the agent was down.
    public convenience init(configuration: AgentConfiguration, logger: Logger = Logger(label: "sharebrokerd")) throws(AgentError) {
        try self.init(configuration: configuration, logger: logger, identifier: PeerIdentifier(flatpak: configuration.flatpak))
    }

    /// As ``init(configuration:logger:)``, identifying peers with `identifier`: the in-process
    /// tests (Tests/AgentCoreTests) pass one whose `/proc` is a folder they lay out, so the real
    /// identification runs on pids and executables of their choosing.
    package init(configuration: AgentConfiguration, logger: Logger, identifier: PeerIdentifier) throws(AgentError) {
        self.configuration = configuration
        self.identifier = identifier
        self.logger = logger
        let directory = configuration.stateDirectory
        do {
            try SecureFolders.makeDirectories(directory, private: true)
            lockDescriptor = try Self.lockStateFolder(directory)
            keyStore = KeyStore(directory: directory)
            let rotation = DurableLog.Rotation(maxBytes: max(4096, configuration.logMaxBytes),
                                               keep: max(0, configuration.logFilesKept))
            acknowledgmentLog = try DurableLog(path: directory + "/acknowledgments.jsonl", rotation: rotation)
            auditLog = try DurableLog(path: directory + "/audit.jsonl", rotation: rotation)
        } catch {
            throw .state(error)
        }
        policyPath = directory + "/device.json"
        switch configuration.systemLog {
        case .automatic: systemLog = SystemLogExporter.automaticTarget().map(SystemLogExporter.init(target:))
        case .journald(let socket): systemLog = SystemLogExporter(target: .journald(socket: socket))
        case .syslog(let socket): systemLog = SystemLogExporter(target: .syslog(socket: socket))
        case .off: systemLog = nil
        }
        if let endpoint = configuration.otlpEndpoint {
            do {
                otlp = try OTLPLogExporter(endpoint: endpoint, hostname: SystemLogExporter.hostName())
            } catch {
                logger.error("no OpenTelemetry export: \(error)")
                otlp = nil
            }
        } else {
            otlp = nil
        }
        let registry = try Self.loadPolicy(configuration: configuration, statePath: policyPath, logger: logger)
        let entitled = Self.entitled(registry)
        var ring: KeyRing
        var fileKeys: [String: FileKeyRing]
        var metadata: KeyStore.Metadata
        do {
            if let stored = try keyStore.load() {
                ring = stored.ring
                fileKeys = stored.fileKeys
                metadata = stored.metadata
                let revoked = Set(metadata.entitled).subtracting(entitled)
                if !revoked.isEmpty {
                    ring = try Self.rotate(ring, keepingRecent: configuration.keepingRecent)
                    metadata.rotation += 1
                    logger.notice("rotated the group key at start: entitlement lost while the agent was down", metadata: [
                        "apps": "\(revoked.sorted().joined(separator: ","))", "key": "\(Self.hex(ring.currentKeyID))"])
                }
                try Self.updateFileKeys(&fileKeys, registry: registry, entitled: entitled, revoked: revoked, logger: logger)
                metadata.entitled = entitled.sorted()
            } else {
                ring = try Self.newRing()
                fileKeys = [:]
                try Self.updateFileKeys(&fileKeys, registry: registry, entitled: entitled, revoked: [], logger: logger)
                metadata = KeyStore.Metadata(entitled: entitled.sorted(), rotation: 0)
                logger.notice("created a new group key ring", metadata: ["key": "\(Self.hex(ring.currentKeyID))"])
            }
            try keyStore.save(KeyStore.Contents(ring: ring, fileKeys: fileKeys, metadata: metadata))
        } catch {
            throw .state(error)
        }
        state = Mutex(State(registry: registry, ring: ring, fileKeys: fileKeys, metadata: metadata))
        for warning in Self.replaceableExecutables(registry) { logger.warning("\(warning)") }
    }

    deinit {
        close(lockDescriptor)
    }

    /// Takes the state folder's exclusive lock, or fails if another agent holds it.
    private static func lockStateFolder(_ directory: String) throws(AgentStateError) -> Int32 {
        let path = directory + "/agent.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw AgentStateError(operation: "open", path: path, code: errno) }
        do throws(AgentStateError) { try SecureFolders.checkOwnedFile(fd, path: path) } catch {
            close(fd)
            throw error
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                throw AgentStateError(operation: "lock", path: path, code: 0,
                                      detail: "another agent is using this state folder; stop it, or give another --state")
            }
            throw AgentStateError(operation: "lock", path: path, code: code)
        }
        return fd
    }

    private static func newRing() throws(AgentStateError) -> KeyRing {
        do {
            return try KeyRing.generate()
        } catch {
            throw AgentStateError(operation: "create the group key", path: "(memory)", code: 0, detail: error.description)
        }
    }

    private static func rotate(_ ring: KeyRing, keepingRecent: Int) throws(AgentStateError) -> KeyRing {
        do {
            return try ring.rotated(keepingRecent: keepingRecent)
        } catch {
            throw AgentStateError(operation: "rotate the group key", path: "(memory)", code: 0, detail: error.description)
        }
    }

    /// Brings the apps' file keys up to date with a policy: an entitled app without file keys
    /// gets its first generation; an app in `revoked` (it lost its entitlement, or a process
    /// that received its keys lost its identity) gets a new generation, so files it writes once
    /// entitled again are under a key no earlier holder had; a retired app's file keys are
    /// dropped (a retire wipes the app's files, and dropping the keys makes any copy left
    /// behind unreadable: crypto-erasure). No other generation is ever dropped, so every secure
    /// file stays readable by its app. Returns whether anything changed.
    @discardableResult
    static func updateFileKeys(_ fileKeys: inout [String: FileKeyRing], registry: DeviceRegistry, entitled: Set<String>,
                               revoked: Set<String>, logger: Logger) throws(AgentStateError) -> Bool {
        var changed = false
        do throws(SealingError) {
            for app in registry.apps where app.isAppConnect && app.policy?.auth == .retired {
                // Dropped, not wiped: the state in force may still hold the ring until the store is
                // saved; its memory is zeroed when the last reference goes.
                if fileKeys.removeValue(forKey: app.id) != nil {
                    changed = true
                    logger.notice("dropped the file keys of a retired app", metadata: ["app": "\(app.id)"])
                }
            }
            for app in revoked.sorted() {
                guard let keys = fileKeys[app] else { continue }
                guard keys.canAdvance else {
                    logger.warning("the app has the most file key generations; it keeps sealing under its newest", metadata: ["app": "\(app)"])
                    continue
                }
                fileKeys[app] = try keys.advanced()
                changed = true
            }
            for app in entitled.sorted() where fileKeys[app] == nil {
                fileKeys[app] = try FileKeyRing.generate()
                changed = true
            }
        } catch {
            throw AgentStateError(operation: "make file keys", path: "(memory)", code: 0, detail: error.description)
        }
        return changed
    }

    static func hex(_ id: UInt32) -> String {
        let digits = String(id, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    /// Warnings, one per registered AppConnect host app that is not pinned (`sha256`) and whose
    /// executable, or the folder holding it, a user other than root owns or others may write
    /// (``PeerIdentifier/replacer(of:file:)``): that user can put another program at the path (a
    /// modified interpreter, say), and it would be that app. The agent refuses such an app to
    /// users other than its own and root (an agent that runs as its own user); the warning names
    /// them. For the agent's own user (the one-desktop-user deployment) it is a warning only.
    static func replaceableExecutables(_ registry: DeviceRegistry) -> [String] {
        let me = geteuid()
        return registry.apps.filter { $0.isAppConnect && !$0.isFlatpak && $0.sha256 == nil }.compactMap { app in
            var file = stat()
            guard stat(app.executable, &file) == 0, let who = PeerIdentifier.replacer(of: app.executable, file: file) else { return nil }
            let others = (app.users ?? [me, 0]).filter { $0 != me && $0 != 0 }
            let refused = others.isEmpty ? "" : "; it is refused to uids \(others.map(String.init).joined(separator: ", ")) (not the agent's user)"
            return "\(app.executable) (\(app.id)) is not pinned, and \(who) can replace it with any program, which would then get \(app.id)'s keys\(refused); pin its sha256 in the device policy, or install it root-owned in a root-owned folder"
        }
    }

    /// The apps entitled to the group keys: registered AppConnect apps whose user is authorized.
    static func entitled(_ registry: DeviceRegistry) -> Set<String> {
        Set(registry.apps.filter(\.isAuthorized).map(\.id))
    }

    /// Parses a device document strictly.
    static func parse(_ bytes: [UInt8], source: String) throws(AgentError) -> DeviceRegistry {
        do {
            return try DeviceRegistry.parse(bytes).registry
        } catch {
            throw .policy(source: source, errors: error.description)
        }
    }

    /// The policy at start: `--policy`, else the policy directory when it holds a device
    /// document (either persisted to the state folder), else the state folder's copy, else none:
    /// an empty device on which every app is refused (nothing is persisted, so a policy placed
    /// in the state folder or given later with `--reload` takes over).
    static func loadPolicy(configuration: AgentConfiguration, statePath: String, logger: Logger) throws(AgentError) -> DeviceRegistry {
        do {
            if let source = try readConfiguredSource(configuration, logger: logger) {
                try DurableFile.writeAtomically(source.bytes, to: statePath)
                return source.registry
            }
            if let bytes = try DurableFile.read(statePath, limit: PolicyDocumentLimits.standard.maxDocumentBytes) {
                return try parse(bytes, source: statePath)
            }
            logger.warning("no device policy: every app is refused until one is installed (start with --policy FILE or --policy-dir DIR, or place it at the state folder's device.json and run sharebrokerd --reload, or sharebroker admin set-policy FILE)")
            return DeviceRegistry(apps: [])
        } catch let error as AgentError {
            throw error
        } catch let error as AgentStateError {
            throw .state(error)
        } catch {
            throw .state(AgentStateError(operation: "read", path: statePath, code: 0, detail: "\(error)"))
        }
    }

    /// The policy the administrator configured: the `--policy` file, else the policy directory
    /// if it holds a device document; `nil` when neither is configured or in use.
    static func readConfiguredSource(_ configuration: AgentConfiguration, logger: Logger)
        throws(AgentError) -> (registry: DeviceRegistry, bytes: [UInt8], source: String)? {
        if let file = configuration.policyFile {
            let bytes = try readPolicyFile(file)
            return (try parse(bytes, source: file), bytes, file)
        }
        if let directory = configuration.policyDirectory, PolicyDirectoryReader.isInUse(directory) {
            let read = try PolicyDirectoryReader.read(directory)
            for warning in read.warnings { logger.notice("policy directory: \(warning)") }
            return (read.registry, read.bytes, directory)
        }
        return nil
    }

    static func readPolicyFile(_ path: String) throws(AgentError) -> [UInt8] {
        do {
            return try PolicyDocumentFile.read(path)
        } catch {
            throw .policy(source: path, errors: error.description)
        }
    }

    static func now() -> String { Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(Date()) }

    // MARK: Sessions

    /// A client said hello as an app: identify it from the kernel and, if it is a registered
    /// AppConnect app, register the session and send its welcome, key ring (or "no keys") and
    /// nothing else; otherwise send a refusal, audit it and close.
    ///
    /// `stillConnected` tells whether the process that connected is still alive with the same
    /// pid (its pidfd): checked after `/proc` was read, so a pid recycled in between cannot
    /// stand in for it.
    ///
    /// `verify` runs after identification, just before the welcome: a refusal it returns is sent
    /// instead (the server refuses a process that exited, or bytes written before the welcome).
    /// The key ring is sent only when the session asks for it (``keysRequested(session:)``).
    ///
    /// `pidfd` is the peer's pidfd (-1 when the caller has none): the reads of a Flatpak app's
    /// `/proc/PID/root` are pinned to it.
    public func admitApp(peer: PeerCredentials, pidfd: Int32 = -1, connection: any AgentConnection,
                         verify: @Sendable (_ executable: String) -> RefusalMessage? = { _ in nil }) {
        let registry = state.withLock { $0.registry }
        switch identifier.identification(of: peer, pidfd: pidfd, in: registry) {
        case .failure(let refusal):
            refuse(refusal, peer: peer, connection: connection)
        case .success(let identification):
            let app = identification.app
            if let refusal = verify(app.executable) {
                refuse(refusal, peer: peer, connection: connection)
                return
            }
            let admitted = state.withLock { state -> Bool in
                // The registry may have changed while we hashed: the app must still be registered
                // as it was identified (same id and executable, the same way: host or Flatpak,
                // the same pin and users), or the new rules were never checked against it.
                guard let current = state.registry.app(forExecutable: app.executable), current.id == app.id,
                      current.isFlatpak == app.isFlatpak, current.sha256 == app.sha256, current.users == app.users,
                      current.isAppConnect else { return false }
                let id = state.nextSession
                state.nextSession += 1
                let session = Session(app: app.id, executable: app.executable, peer: peer, connection: connection,
                                      identity: identification.identity)
                connection.admitted(session: id)
                let welcome = WelcomeMessage(
                    app: app.id, peer: PeerDescription(pid: peer.pid, uid: peer.uid, executable: app.executable),
                    push: state.push, policy: Self.wirePolicy(for: current, in: state.registry),
                    device: Self.wireDevice(for: current, in: state.registry),
                    nativeMail: state.registry.nativeMail.wire)
                connection.send([AgentMessage.frame(.welcome, welcome)], sensitive: false)
                state.sessions[id] = session
                return true
            }
            if admitted {
                logger.info("app connected", metadata: ["app": "\(app.id)", "pid": "\(peer.pid)", "uid": "\(peer.uid)"])
            } else {
                refuse(RefusalMessage(reason: .unregistered, message: "the device policy changed while the agent identified the process; connect again",
                                      peer: PeerDescription(pid: peer.pid, uid: peer.uid, executable: app.executable)),
                       peer: peer, connection: connection)
            }
        }
    }

    /// The key ids `app` should hold now: the ring's then its own file keys', or none when it is
    /// not entitled.
    private func keyIDs(for app: String, state: State) -> [UInt32] {
        guard state.metadata.entitled.contains(app), let fileKeys = state.fileKeys[app] else { return [] }
        return state.ring.keyIDs + fileKeys.keyIDs
    }

    /// Sends the session its key ring, or "no keys" when its app is not entitled, and returns the
    /// key ids sent. Called with the state lock held, so rings and pushes reach each client in
    /// order.
    private func sendKeys(to session: Session, state: State) -> [UInt32] {
        guard state.metadata.entitled.contains(session.app), let fileKeys = state.fileKeys[session.app] else {
            session.connection.send([AgentFrame(type: .keys, body: KeyRingMessage.none)], sensitive: false)
            return []
        }
        do {
            // The group's keys and this app's own file keys: never another app's.
            // Built into one array that only `body` holds, so zeroing it erases the key bytes.
            var body: [UInt8] = []
            try state.ring.exportKeys { group in
                body = (try? fileKeys.exportKeys { files in
                    KeyRingMessage.body(group: group, retiredAt: state.ring.retiredAt, files: files)
                }) ?? []
            }
            guard !body.isEmpty else { throw SealingError.wiped }
            session.connection.send([AgentFrame(type: .keys, body: body)], sensitive: true)
            Zeroize.zero(&body)
            return keyIDs(for: session.app, state: state)
        } catch {
            logger.error("could not export the key ring; the app gets no keys", metadata: ["app": "\(session.app)"])
            session.connection.send([AgentFrame(type: .keys, body: KeyRingMessage.none)], sensitive: false)
            return []
        }
    }

    /// Sends a report to the system log and the collector, when configured; never blocks.
    func report(_ record: SystemLogRecord) {
        systemLog?.export(record)
        otlp?.export(record)
    }

    /// Sends `refusal` and closes, after auditing it (coalesced: see ``auditCoalesced(reason:peer:executable:writer:then:)``).
    func refuse(_ refusal: RefusalMessage, peer: PeerCredentials, writer: PeerCredentials? = nil,
                connection: any AgentConnection) {
        report(SystemLogRecord(event: "refused", pid: peer.pid, uid: peer.uid, reason: refusal.reason.rawValue, isWarning: true))
        auditCoalesced(reason: refusal.reason, peer: peer, executable: refusal.peer?.executable, writer: writer,
                       detail: refusal.message) {
            connection.send([AgentMessage.frame(.refused, refusal)], sensitive: false)
            connection.close()
        }
    }

    /// A kind of refusal: the reason, the uid, and the file the process ran (device and inode,
    /// so hard links of one file at many paths are one kind), or its path when the file could
    /// not be examined.
    struct RefusalKey: Hashable {
        var reason: RefusalReason
        var uid: UInt32
        var file: FileIdentity?
        var executable: String?
    }

    /// Refusals seen in the current one-second window, by kind: how many were not written on
    /// their own, and the executable's path as the first of them named it.
    private let refusalWindow = Mutex<[RefusalKey: (count: Int, executable: String?)]>([:])

    /// Audits a refusal: the first of its kind (reason, uid, file) in a one-second window
    /// is written on its own (with the pid) and `then` runs once it is durable; later ones in
    /// the window only count, and ``flushCoalescedRefusals()`` writes one record with the count,
    /// so a flood of refused connections costs one fsync per kind per second, not one each.
    ///
    /// `detail` (what the agent found, for people: paths, ids and pids, never keys or content)
    /// goes to the agent's log with the first of a kind, not to the audit record.
    func auditCoalesced(reason: RefusalReason, peer: PeerCredentials, executable: String?,
                        writer: PeerCredentials? = nil, detail: String? = nil, then: @escaping @Sendable () -> Void) {
        var file: FileIdentity?
        var info = stat()
        if executable != nil, stat("\(identifier.procRoot)/\(peer.pid)/exe", &info) == 0 {
            file = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        }
        let key = RefusalKey(reason: reason, uid: peer.uid, file: file, executable: file == nil ? executable : nil)
        let first = refusalWindow.withLock { window -> Bool in
            if let seen = window[key] {
                window[key] = (seen.count + 1, seen.executable)
                return false
            }
            window[key] = (0, executable)
            return true
        }
        guard first else {
            then()
            return
        }
        // The executable's path and the detail (which quotes a Flatpak claim's app path) are the
        // peer's to choose: escaped, so a newline in them cannot start a forged log line.
        var metadata: Logger.Metadata = [
            "reason": "\(reason.rawValue)", "pid": "\(peer.pid)", "uid": "\(peer.uid)",
            "executable": "\(Self.oneLine(executable ?? "?"))"]
        if let detail { metadata["why"] = "\(Self.oneLine(detail))" }
        logger.notice("refused a process", metadata: metadata)
        var record = AuditLogRecord(time: Self.now(), event: "refused", app: nil, pid: peer.pid, uid: peer.uid,
                                    executable: executable, reason: reason.rawValue)
        record.writerPid = writer?.pid
        record.writerUid = writer?.uid
        auditLog.append([record]) { _ in then() }
    }

    /// `text` with its control characters escaped (`\n`, `\u{1b}`), for one line of any log:
    /// C0 and C1 controls, DEL, and the Unicode line and paragraph separators (U+2028, U+2029),
    /// so text a peer chose cannot start a forged line or drive a terminal in any exporter.
    static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var line = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: line += "\\n"
            case 0x0D: line += "\\r"
            case _ where isControl(scalar): line += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: line.unicodeScalars.append(scalar)
            }
        }
        return line
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0 ..< 0x20, 0x7F ... 0x9F, 0x2028, 0x2029: true
        default: false
        }
    }

    /// The events an app may report in its audit batches; everything else (`refused`,
    /// `policy-installed`, ...) is the agent's own to write.
    static let appReportedEvents: Set<String> = ["blocked", "warned", "wiped"]

    /// Writes one record per kind of refusal that was counted but not written in the window
    /// that ends now, and starts a new window.
    public func flushCoalescedRefusals() {
        let window = refusalWindow.withLock { window -> [RefusalKey: (count: Int, executable: String?)] in
            defer { window = [:] }
            return window
        }
        let time = Self.now()
        let records = window.filter { $0.value.count > 0 }.map { key, seen in
            var record = AuditLogRecord(time: time, event: "refused", app: nil, pid: nil, uid: key.uid,
                                        executable: seen.executable, reason: key.reason.rawValue)
            record.count = seen.count
            return record
        }
        guard !records.isEmpty else { return }
        logger.notice("refused processes (coalesced)", metadata: ["records": "\(records.count)",
                                                                  "refusals": "\(records.compactMap(\.count).reduce(0, +))"])
        auditLog.append(records) { _ in }
    }

    /// Whether `peer` runs the registered executable of an AppConnect app as a user that app
    /// allows: read at accept (one `readlink`), for the connection reserve
    /// (``AgentConnectionLimits/reserve``); the hello's identification decides everything else.
    func mayUseReserve(_ peer: PeerCredentials) -> Bool {
        guard let executable = identifier.executable(of: peer.pid) else { return false }
        let registry = state.withLock { $0.registry }
        guard let app = registry.app(forExecutable: executable), app.isAppConnect else { return false }
        return (app.users ?? [geteuid(), 0]).contains(peer.uid)
    }

    /// Whether `peer` may administer the agent: the agent's own user, or root.
    public func mayAdminister(_ peer: PeerCredentials) -> Bool {
        peer.uid == 0 || peer.uid == getuid()
    }

    /// The session asked for its keys after its welcome: send the ring (or "no keys"). A second
    /// request sends the ring again.
    public func keysRequested(session id: UInt64) {
        state.withLock { state in
            guard var session = state.sessions[id] else { return }
            session.keysRequested = true
            session.sentKeyIDs = sendKeys(to: session, state: state)
            state.sessions[id] = session
        }
    }

    /// The session ended.
    public func disconnected(session id: UInt64) {
        let gone = state.withLock { $0.sessions.removeValue(forKey: id) }
        if let gone {
            logger.info("app disconnected", metadata: ["app": "\(gone.app)", "pid": "\(gone.peer.pid)"])
        }
    }

    /// Logs a session's acknowledgments durably, then sends the receipt.
    public func acknowledgments(_ batch: AcknowledgmentBatch, session id: UInt64) {
        guard let session = state.withLock({ $0.sessions[id] }) else { return }
        let time = Self.now()
        let records = batch.records.map { record in
            AcknowledgmentLogRecord(
                time: time, app: session.app, pid: session.peer.pid, uid: session.peer.uid, push: batch.push,
                batch: Self.oneLine(batch.id), id: Self.oneLine(record.id), kind: Self.oneLine(record.kind),
                state: PolicyState(rawValue: record.state).map(Self.name) ?? "invalid(\(record.state))",
                message: Self.oneLine(record.message), generation: record.generation)
        }
        guard !records.isEmpty else {
            session.connection.send([AgentMessage.frame(.receipt, ReceiptMessage(batch: batch.id, logged: true))], sensitive: false)
            return
        }
        if systemLog != nil || otlp != nil {
            for record in records {
                report(SystemLogRecord(event: "acknowledged", app: record.app, action: record.kind, rule: record.state,
                                                 push: record.push, pid: record.pid, uid: record.uid))
            }
        }
        acknowledgmentLog.append(records) { [logger] error in
            if let error { logger.error("could not log acknowledgments", metadata: ["error": "\(error)"]) }
            session.connection.send([AgentMessage.frame(.receipt, ReceiptMessage(
                batch: batch.id, logged: error == nil, reason: error?.description))], sensitive: false)
        }
    }

    /// The exporters' reason of a warned attempt: the reason code and the user's text (already
    /// escaped), or `nil` when there is neither.
    package static func warnedReason(code: String?, text: String?) -> String? {
        let parts = [code.map { "code=\($0)" }, text.map { "text=\"\($0)\"" }].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }

    /// Logs a session's audit records durably, then sends the receipt.
    public func audit(_ batch: AuditBatch, session id: UInt64) {
        guard let session = state.withLock({ $0.sessions[id] }) else { return }
        // The agent decides which events an app may report: a batch with another is refused
        // whole (nothing of it is logged), and its receipt says why.
        if let event = batch.records.first(where: { !Self.appReportedEvents.contains($0.event) })?.event {
            let reason = "an app may report only \(Self.appReportedEvents.sorted().joined(separator: ", ")) events, not '\(Self.oneLine(String(event.prefix(64))))'; nothing of the batch was logged"
            logger.notice("refused an audit batch", metadata: ["app": "\(session.app)", "pid": "\(session.peer.pid)", "why": "\(reason)"])
            session.connection.send([AgentMessage.frame(.receipt, ReceiptMessage(batch: batch.id, logged: false, reason: reason))], sensitive: false)
            return
        }
        let time = Self.now()
        // What the app wrote is escaped once, here, for every exporter (audit file, system log,
        // OpenTelemetry).
        let records = batch.records.map { record in
            AuditLogRecord(time: time, event: record.event, app: session.app, pid: session.peer.pid,
                           uid: session.peer.uid, executable: nil, id: Self.oneLine(record.id), action: record.action.map(Self.oneLine),
                           target: record.target.map(Self.oneLine), rule: record.rule.map(Self.oneLine), generation: record.generation,
                           reason: nil, erased: record.erased?.map(Self.oneLine),
                           failed: record.failed.map { Dictionary($0.map { (Self.oneLine($0.key), Self.oneLine($0.value)) }) { first, _ in first } },
                           reasonCode: record.event == "warned" ? record.reasonCode.map(WarnText.sanitizedEscaped) : nil,
                           text: record.event == "warned" ? record.text.map(WarnText.sanitizedEscaped) : nil)
        }
        if systemLog != nil || otlp != nil {
            for record in records {
                let counts = record.erased.map { "erased \($0.count), failed \(record.failed?.count ?? 0)" }
                    ?? (record.event == "warned" ? Self.warnedReason(code: record.reasonCode, text: record.text) : nil)
                report(SystemLogRecord(event: record.event, app: record.app, action: record.action, rule: record.rule,
                                                 push: record.generation, pid: record.pid, uid: record.uid, reason: counts,
                                                 isWarning: (record.event != "wiped" && record.event != "warned") || record.failed?.isEmpty == false
                                                    || (record.event == "warned" && record.rule == "proceeded")))
            }
        }
        auditLog.append(records) { [logger] error in
            if let error { logger.error("could not log audit records", metadata: ["error": "\(error)"]) }
            session.connection.send([AgentMessage.frame(.receipt, ReceiptMessage(
                batch: batch.id, logged: error == nil, reason: error?.description))], sensitive: false)
        }
    }

    static func name(_ state: PolicyState) -> String {
        switch state {
        case .unsupported: "unsupported"
        case .applied: "applied"
        case .error: "error"
        }
    }

    // MARK: Policy

    static func wirePolicy(for app: RegisteredApp, in registry: DeviceRegistry) -> WirePolicy {
        let whitelist = Set(registry.apps.filter { $0.isAuthorized && $0.id != app.id }.map(\.id))
        return WirePolicy(app.policyUpdate ?? PolicyUpdate(), expandedWhitelist: whitelist)
    }

    static func wireDevice(for app: RegisteredApp, in registry: DeviceRegistry) -> [WireDeviceApp] {
        registry.deviceApps(excluding: app.id).all.map(WireDeviceApp.init)
    }

    /// Re-reads the policy source (`--policy` file, else the policy directory, else the state
    /// folder's copy) and installs it. A source that does not validate changes nothing: the
    /// policy in force stays for every app, and the refusal is logged and audited.
    public func reload() -> AdminResponse {
        reloading.withLock { _ in
            var source = configuration.policyFile ?? configuration.policyDirectory ?? policyPath
            do throws(AgentError) {
                if let configured = try Self.readConfiguredSource(configuration, logger: logger) {
                    source = configured.source
                    return try install(configured.registry, bytes: configured.bytes, persist: true, source: source)
                }
                source = policyPath
                let bytes = try Self.readPolicyFile(policyPath)
                return try install(try Self.parse(bytes, source: policyPath), bytes: bytes, persist: false, source: source)
            } catch {
                logger.error("reload failed; the policy in force is unchanged", metadata: ["error": "\(error)"])
                report(SystemLogRecord(event: "policy-refused", reason: error.description, isWarning: true))
                auditLog.append([AuditLogRecord(time: Self.now(), event: "policy-refused", target: source,
                                                reason: error.description)]) { _ in }
                return response(ok: false, message: error.description)
            }
        }
    }

    /// Installs a new device policy given as text (admin `setPolicy`): validated strictly,
    /// persisted to the state folder, pushed.
    public func setPolicy(_ text: String) -> AdminResponse {
        reloading.withLock { _ in
            do throws(AgentError) {
                let bytes = Array(text.utf8)
                let registry = try Self.parse(bytes, source: "(admin)")
                return try install(registry, bytes: bytes, persist: true, source: "(admin)")
            } catch {
                report(SystemLogRecord(event: "policy-refused", reason: error.description, isWarning: true))
                auditLog.append([AuditLogRecord(time: Self.now(), event: "policy-refused", target: "(admin)",
                                                reason: error.description)]) { _ in }
                return response(ok: false, message: error.description)
            }
        }
    }

    /// The agent's status.
    public func status() -> AdminResponse {
        response(ok: true, message: "running")
    }

    private func response(ok: Bool, message: String) -> AdminResponse {
        state.withLock { state in
            AdminResponse(ok: ok, message: message, push: state.push, currentKeyID: Self.hex(state.ring.currentKeyID),
                          connectedApps: state.sessions.values.map { "\($0.app) (pid \($0.peer.pid))" }.sorted(),
                          entitledApps: state.metadata.entitled)
        }
    }

    /// Persists and pushes `registry`: rotates the group key first if an app lost its
    /// entitlement, so the apps still entitled get the new ring and the others get none.
    private func install(_ registry: DeviceRegistry, bytes: [UInt8], persist: Bool, source: String) throws(AgentError) -> AdminResponse {
        if persist {
            do throws(AgentStateError) { try DurableFile.writeAtomically(bytes, to: policyPath) } catch { throw .state(error) }
        }
        // Re-check every live session against the new registry (outside the lock: hashing a
        // newly pinned file may take a while; the digest cache makes an unchanged binary cheap),
        // from what was read of the process when it connected: nothing of the process is read
        // again (a connected app is not dumpable, and an agent of its own user may no longer
        // read its /proc files), nothing the peer or its user can make stall (a FUSE mount over
        // its root or instance record) is read under the install lock. A session whose process
        // no longer matches (pin or executable changed, app removed or now another id) is
        // closed; if it had received keys, the ring rotates.
        let live = state.withLock { $0.sessions.map { (id: $0.key, peer: $0.value.peer, app: $0.value.app, identity: $0.value.identity) } }
        var mismatched: [UInt64: RefusalMessage] = [:]
        for session in live {
            switch identifier.match(session.identity, peer: session.peer, in: registry) {
            case .success(let app) where app.id == session.app:
                continue
            case .success(let app):
                mismatched[session.id] = RefusalMessage(
                    reason: .unregistered,
                    message: "the device policy now registers this executable as \(app.id), not \(session.app); connect again",
                    peer: PeerDescription(pid: session.peer.pid, uid: session.peer.uid, executable: app.executable))
            case .failure(let refusal):
                mismatched[session.id] = refusal
            }
        }
        let result = try state.withLock { (state) throws(AgentError) -> (rotated: Bool, revoked: [String], push: UInt64) in
            let entitled = Self.entitled(registry)
            var revokedApps = Set(state.metadata.entitled).subtracting(entitled)
            var revoked = revokedApps
            for (id, refusal) in mismatched {
                guard let session = state.sessions.removeValue(forKey: id) else { continue }
                if let sent = session.sentKeyIDs, !sent.isEmpty {
                    revoked.insert(session.app + " (pid \(session.peer.pid): \(refusal.reason.rawValue))")
                    revokedApps.insert(session.app)
                }
                session.connection.send([AgentFrame(type: .keys, body: KeyRingMessage.none)], sensitive: false)
                refuse(refusal, peer: session.peer, connection: session.connection)
            }
            var ring = state.ring
            var fileKeys = state.fileKeys
            var metadata = state.metadata
            if !revoked.isEmpty {
                do throws(AgentStateError) { ring = try Self.rotate(ring, keepingRecent: configuration.keepingRecent) } catch { throw .state(error) }
                metadata.rotation += 1
            }
            let fileKeysChanged: Bool
            do throws(AgentStateError) {
                fileKeysChanged = try Self.updateFileKeys(&fileKeys, registry: registry, entitled: entitled,
                                                          revoked: revokedApps, logger: logger)
            } catch { throw .state(error) }
            metadata.entitled = entitled.sorted()
            if metadata != state.metadata || ring !== state.ring || fileKeysChanged {
                do throws(AgentStateError) {
                    try keyStore.save(KeyStore.Contents(ring: ring, fileKeys: fileKeys, metadata: metadata))
                } catch { throw .state(error) }
            }
            state.registry = registry
            state.ring = ring
            state.fileKeys = fileKeys
            state.metadata = metadata
            state.push += 1
            // One push frame per app, shared by its sessions.
            var frames: [String: AgentFrame] = [:]
            for (id, session) in state.sessions {
                guard let app = registry.app(forExecutable: session.executable), app.id == session.app, app.isAppConnect else {
                    // The app was removed (or its executable now belongs to another id): no keys, no policy.
                    session.connection.send([
                        AgentFrame(type: .keys, body: KeyRingMessage.none),
                        AgentMessage.frame(.refused, RefusalMessage(
                            reason: .unregistered, message: "the app was removed from the device policy",
                            peer: PeerDescription(pid: session.peer.pid, uid: session.peer.uid, executable: session.executable))),
                    ], sensitive: false)
                    session.connection.close()
                    state.sessions[id] = nil
                    continue
                }
                // Keys only when they changed for this session (a rotation, or a change of entitlement).
                if session.keysRequested, session.sentKeyIDs != keyIDs(for: session.app, state: state) {
                    let sent = sendKeys(to: session, state: state)
                    state.sessions[id]?.sentKeyIDs = sent
                }
                let frame = frames[app.id] ?? AgentMessage.frame(.policy, PolicyPushMessage(
                    push: state.push, policy: Self.wirePolicy(for: app, in: registry),
                    device: Self.wireDevice(for: app, in: registry), nativeMail: registry.nativeMail.wire))
                frames[app.id] = frame
                session.connection.send([frame], sensitive: false)
            }
            return (!revoked.isEmpty, revoked.sorted(), state.push)
        }
        if result.rotated {
            logger.notice("rotated the group key: apps lost their entitlement", metadata: [
                "apps": "\(result.revoked.joined(separator: ","))"])
        }
        logger.notice("policy pushed", metadata: ["push": "\(result.push)", "source": "\(source)"])
        let warnings = Self.replaceableExecutables(registry)
        for warning in warnings { logger.warning("\(warning)") }
        report(SystemLogRecord(event: "policy-installed", push: result.push, reason: result.rotated ? "group key rotated" : nil))
        auditLog.append([AuditLogRecord(time: Self.now(), event: "policy-installed", target: source,
                                        generation: result.push)]) { _ in }
        let pushed = result.rotated
            ? "policy \(result.push) pushed; group key rotated (no longer entitled: \(result.revoked.joined(separator: ", ")))"
            : "policy \(result.push) pushed"
        return response(ok: true, message: ([pushed] + warnings.map { "warning: " + $0 }).joined(separator: "\n"))
    }
}
