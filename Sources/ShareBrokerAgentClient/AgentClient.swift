#if canImport(Glibc)
import Glibc
#endif
import Logging
import ShareBroker
import ShareBrokerAgentProtocol
import ShareBrokerPOSIX
import Synchronization
import ShareBrokerCrypto

/// How an ``AgentClient`` reaches the agent and how it retries.
public struct AgentClientConfiguration: Sendable, Hashable {
    /// The agent's socket.
    public var socketPath: String
    /// The app id this process expects the agent to identify it as; `nil` accepts whatever the
    /// agent determines (host tools whose identity is their executable path).
    public var expectedAppID: String?
    /// How long the handshake may take.
    public var handshakeTimeoutMilliseconds: Int
    /// Whether to reconnect after the agent goes away.
    public var reconnects: Bool
    /// The first delay before reconnecting; doubles up to ``maximumBackoffMilliseconds``.
    public var initialBackoffMilliseconds: Int
    /// The longest delay between two reconnection attempts.
    public var maximumBackoffMilliseconds: Int
    /// The users trusted as the agent: the process listening on the socket must run as one of
    /// them (`SO_PEERCRED`), or the client sends nothing and accepts nothing. Default:
    /// `SHAREBROKER_AGENT_UID` when set, else this process's uid and root.
    public var agentUserIDs: [UInt32]

    /// Creates a configuration.
    public init(socketPath: String = AgentPaths.socket, expectedAppID: String? = nil,
                handshakeTimeoutMilliseconds: Int = 2_000, reconnects: Bool = true,
                initialBackoffMilliseconds: Int = 50, maximumBackoffMilliseconds: Int = 2_000,
                agentUserIDs: [UInt32]? = nil) {
        self.socketPath = socketPath
        self.agentUserIDs = agentUserIDs ?? FrameSocket.defaultAgentUserIDs
        self.expectedAppID = expectedAppID
        self.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
        self.reconnects = reconnects
        self.initialBackoffMilliseconds = max(1, initialBackoffMilliseconds)
        self.maximumBackoffMilliseconds = max(self.initialBackoffMilliseconds, maximumBackoffMilliseconds)
    }
}

/// Something the client saw, for apps and tools that want to follow along (never key bytes).
public enum AgentClientEvent: Sendable, Hashable {
    /// Handshake done: the identity the agent determined and the push in force.
    case connected(app: String, push: UInt64)
    /// A key ring arrived (key ids, current first).
    case keysInstalled([UInt32])
    /// The agent said this app is not entitled to keys: the cached ring was zeroed.
    case keysDropped
    /// A policy push was applied; the acknowledgments batch it produced is `batch`.
    case policyApplied(push: UInt64, changes: [String], acknowledgments: Int, batch: String)
    /// The agent confirmed a batch is on disk (or could not log it).
    case receipt(batch: String, logged: Bool)
    /// The connection was lost; keys dropped, secure services unavailable.
    case disconnected(reason: String)
    /// The agent refused this process.
    case refused(reason: String)
}

/// The library's client of the secure-services agent (`sharebrokerd`): a broker's key custodian
/// and report sink (`SecureServices` and `ServerReportSink`, package access).
///
/// ```swift
/// let client = AgentClient()
/// let welcome = try client.connect()                  // the agent identifies us from the kernel
/// let broker = client.makeBroker(for: welcome, platform: try .embedded(entitling: welcome.app))
/// try broker.start(delegate: myDelegate)
/// try client.attach(broker)                           // first policy: ready; pushes follow
/// ```
///
/// * The key ring is cached in guarded memory (imported into `sodium_malloc` keys, transient
///   buffers zeroed): a copy never waits on the agent.
/// * Policy pushes are applied with ``ShareBroker/apply(_:)``; the acknowledgments it produces
///   go back to the agent in one batch per push, and the agent answers with a receipt once they
///   are on disk. Blocked attempts and wipe reports go the same way. Unconfirmed batches are
///   resent after a reconnection (at least once: records carry ids).
/// * When the agent goes away the ring is zeroed and secure services become unavailable
///   (``ShareBroker/setSecureServices(_:)``): SecureCopy writes fail with nothing written, and
///   plain items stay readable. The client reconnects with exponential backoff.
/// * On retire or deauthorization the ring is zeroed (``relinquishKeys(for:)``, or "no keys"
///   from the agent).
public final class AgentClient: SecureServices, ServerReportSink, Sendable {
    struct Pending {
        var frame: AgentFrame
    }

    struct State {
        var socket: FrameSocket?
        var welcome: WelcomeMessage?
        var policy: WirePolicy?
        var device: [WireDeviceApp] = []
        var nativeMail: [String]?
        var push: UInt64 = 0
        var ring: KeyRing?
        /// This app's own file keys, delivered with the ring (and dropped with it).
        var fileKeys: FileKeyRing?
        var broker: ShareBroker?
        var pending: [String: Pending] = [:]
        var pendingOrder: [String] = []
        var failedBatches: [String: String] = [:]
        var collecting: [WireAcknowledgment]?
        var closed = false
        var readerRunning = false
        var reportedAvailability: SecureServicesAvailability?
        var eventHandler: (@Sendable (AgentClientEvent) -> Void)?
    }

    /// How it connects.
    public let configuration: AgentClientConfiguration
    private let state = Mutex(State())
    /// Serializes applying policies to the broker (the reader thread and ``attach(_:)``), so
    /// each push's acknowledgments are collected into its own batch.
    private let applying = Mutex<Void>(())
    private let counter = Atomic<UInt64>(0)
    private let idPrefix: String
    private let logger = Logger(label: "sharebroker.agent-client")

    /// Creates a client; nothing happens until ``connect()``.
    public init(configuration: AgentClientConfiguration = AgentClientConfiguration()) {
        self.configuration = configuration
        self.idPrefix = "\(getpid())-" + String(UInt32.random(in: 0 ... .max), radix: 16)
    }

    deinit {
        let (ring, fileKeys) = state.withLock { ($0.ring, $0.fileKeys) }
        ring?.wipe()
        fileKeys?.wipe()
    }

    /// Sets a function called with every ``AgentClientEvent`` (on the client's thread).
    public func setEventHandler(_ handler: (@Sendable (AgentClientEvent) -> Void)?) {
        state.withLock { $0.eventHandler = handler }
    }

    private func emit(_ event: AgentClientEvent) {
        state.withLock { $0.eventHandler }?(event)
    }

    // MARK: Connecting

    /// Connects and completes the handshake: the agent identifies this process from the kernel
    /// and answers with its app id and its policy; the client then asks for the key ring (a
    /// `keyRequest` frame, written only after the welcome) and receives it (or none). Then a background
    /// thread follows pushes and, if ``AgentClientConfiguration/reconnects``, reconnects.
    ///
    /// - Throws: ``AgentClientError``: the agent is unavailable, refused this process (no keys,
    ///   no policy), answered something unexpected or late, or named another app than
    ///   ``AgentClientConfiguration/expectedAppID``.
    @discardableResult
    public func connect() throws(AgentClientError) -> WelcomeMessage {
        let welcome = try handshake()
        startReader()
        return welcome
    }

    /// The app id the agent determined, once connected.
    public var appID: String? { state.withLock { $0.welcome?.app } }

    /// The other apps on the device and its native mail ids, as the agent last described them
    /// (from the device document). An attached broker follows every push: apps added, changed or
    /// removed, and native mail ids changed.
    package var device: DeviceApps {
        let (apps, nativeMail) = state.withLock { ($0.device, $0.nativeMail) }
        return DeviceApps(apps.map(\.deviceApp), nativeMail: NativeMail(wire: nativeMail))
    }

    /// The push number of the policy in force.
    public var push: UInt64 { state.withLock { $0.push } }

    /// Whether a connection to the agent is up.
    public var isConnected: Bool { state.withLock { $0.socket != nil } }

    private func handshake() throws(AgentClientError) -> WelcomeMessage {
        guard !state.withLock({ $0.closed }) else { throw .closed }
        let socket = try FrameSocket.connect(path: configuration.socketPath, agentUserIDs: configuration.agentUserIDs)
        // Reconnecting to an agent of this process's own (ordinary) user, which may not read a
        // non-dumpable process's /proc/PID/exe (it restarted, issue 29 item 1): this process
        // holds no keys (they were wiped when the agent went away), so it is dumpable again just
        // while the agent reads its hello, and not before it asks for keys; a tracer that
        // attached meanwhile stops the handshake (docs/THREAT-MODEL.md, "An agent restart").
        let reidentify = !ProcessHardening.isDumpable && geteuid() != 0 && socket.agentUserID == geteuid()
            && state.withLock { $0.ring == nil && $0.fileKeys == nil }
        let first: AgentFrame
        do {
            if reidentify { ProcessHardening.allowInspection() }
            defer { if reidentify { ProcessHardening.denyInspection() } }
            try socket.write(AgentMessage.frame(.hello, HelloMessage(role: .app)))
            first = try socket.read(timeoutMilliseconds: configuration.handshakeTimeoutMilliseconds)
        }
        if reidentify, ProcessHardening.tracerPID != 0 { throw .traced(tracer: ProcessHardening.tracerPID) }
        let welcome: WelcomeMessage
        switch first.type {
        case .welcome:
            do { welcome = try AgentMessage.decode(WelcomeMessage.self, from: first.body) } catch { throw .protocolError(error.description) }
        case .refused:
            let refusal = (try? AgentMessage.decode(RefusalMessage.self, from: first.body))
                ?? RefusalMessage(reason: .unidentified, message: "refused", peer: nil)
            emit(.refused(reason: refusal.reason.rawValue))
            throw .refused(refusal)
        case .error:
            let message = (try? AgentMessage.decode(ErrorMessage.self, from: first.body))?.message ?? "error"
            throw .protocolError(message)
        default:
            throw .protocolError("expected a welcome, got a \(first.type) frame")
        }
        if let expected = configuration.expectedAppID, expected != welcome.app {
            throw .wrongApp(expected: expected, identified: welcome.app)
        }
        // Keys come only when asked for after the welcome (docs/FORMATS.md, "Agent protocol").
        // Before they arrive, this process stops being dumpable: other processes of its user
        // can then neither ptrace it nor read its memory through /proc (issue 13, item 10).
        ProcessHardening.denyInspection()
        try socket.write(AgentFrame(type: .keyRequest, body: []))
        var keys = try socket.read(timeoutMilliseconds: configuration.handshakeTimeoutMilliseconds)
        defer { Zeroize.zero(&keys.body) }
        // A policy installed between the welcome and the key request is pushed to this session
        // before its keys: keep the newest such push and apply it after the welcome's policy, so
        // a reload during the handshake neither fails the connection nor is missed.
        var pushedBeforeKeys: PolicyPushMessage?
        var pushesBeforeKeys = 0
        while keys.type == .policy && pushesBeforeKeys < Self.maxPushesBeforeKeys {
            pushesBeforeKeys += 1
            do { pushedBeforeKeys = try AgentMessage.decode(PolicyPushMessage.self, from: keys.body) } catch { throw .protocolError(error.description) }
            keys = try socket.read(timeoutMilliseconds: configuration.handshakeTimeoutMilliseconds)
        }
        guard keys.type == .keys else { throw .protocolError("expected the key ring, got a \(keys.type) frame") }
        let imported = try Self.importRing(keys.body)
        let ring = imported?.ring
        let resend = state.withLock { state -> [AgentFrame] in
            state.ring?.wipe()
            state.fileKeys?.wipe()
            state.ring = ring
            state.fileKeys = imported?.fileKeys
            state.socket = socket
            state.welcome = welcome
            return state.pendingOrder.compactMap { state.pending[$0]?.frame }
        }
        emit(.connected(app: welcome.app, push: welcome.push))
        if let ring { emit(.keysInstalled(ring.keyIDs)) } else { emit(.keysDropped) }
        for frame in resend { try? socket.write(frame) }
        state.withLock { $0.nativeMail = welcome.nativeMail }
        apply(policy: welcome.policy, device: welcome.device, push: welcome.push)
        if let pushed = pushedBeforeKeys, pushed.push > welcome.push {
            state.withLock { $0.nativeMail = pushed.nativeMail }
            apply(policy: pushed.policy, device: pushed.device, push: pushed.push)
        }
        return welcome
    }

    /// How many policy pushes may arrive between the welcome and the key ring before the
    /// handshake is given up as a protocol error.
    static let maxPushesBeforeKeys = 64

    /// The group's ring and this app's file keys from a key frame, or `nil` for "no keys".
    private static func importRing(_ body: [UInt8]) throws(AgentClientError) -> (ring: KeyRing, fileKeys: FileKeyRing)? {
        let result: Result<(ring: KeyRing, fileKeys: FileKeyRing)?, SealingError>
        do {
            result = try KeyRingMessage.withEntries(in: body) { group, files in
                guard !group.isEmpty else { return .success(nil) }
                let retiredAt = KeyRingMessage.retirementTimes(in: body)
                return Result { () throws(SealingError) -> (ring: KeyRing, fileKeys: FileKeyRing)? in
                    (try KeyRing(importing: group, retiredAt: retiredAt), try FileKeyRing(importing: files))
                }
            }
        } catch {
            throw .protocolError(error.description)
        }
        do { return try result.get() } catch { throw .protocolError("the key ring could not be imported: \(error)") }
    }

    private func startReader() {
        let start = state.withLock { state -> Bool in
            guard !state.readerRunning else { return false }
            state.readerRunning = true
            return true
        }
        guard start else { return }
        guard DetachedThread.start(name: "sb-agent-client", { [self] in self.readLoop() }) else {
            state.withLock { $0.readerRunning = false }
            logger.error("could not start the agent client's reader thread (the process is at its thread limit); the app stays disconnected")
            return
        }
    }

    private func readLoop() {
        var backoff = configuration.initialBackoffMilliseconds
        while true {
            guard let socket = state.withLock({ $0.closed ? nil : $0.socket }) else {
                if state.withLock({ $0.closed }) { break }
                // Not connected: reconnect with exponential backoff (bounded delay, with jitter).
                guard configuration.reconnects else { break }
                usleep(UInt32(min(backoff, configuration.maximumBackoffMilliseconds)) * 1000
                       + UInt32.random(in: 0...UInt32(backoff * 100)))
                backoff = min(backoff * 2, configuration.maximumBackoffMilliseconds)
                if (try? handshake()) != nil { backoff = configuration.initialBackoffMilliseconds }
                continue
            }
            do {
                var frame = try socket.read()
                defer { Zeroize.zero(&frame.body) }
                try handle(frame)
            } catch {
                disconnect(reason: error.description)
            }
        }
        state.withLock { $0.readerRunning = false }
    }

    private func handle(_ frame: AgentFrame) throws(AgentClientError) {
        switch frame.type {
        case .keys:
            let imported = try Self.importRing(frame.body)
            let ring = imported?.ring
            let old = state.withLock { state -> (KeyRing?, FileKeyRing?) in
                defer {
                    state.ring = ring
                    state.fileKeys = imported?.fileKeys
                }
                return (state.ring, state.fileKeys)
            }
            old.0?.wipe()
            old.1?.wipe()
            if let ring { emit(.keysInstalled(ring.keyIDs)) } else { emit(.keysDropped) }
            reportAvailability()
        case .policy:
            let push: PolicyPushMessage
            do { push = try AgentMessage.decode(PolicyPushMessage.self, from: frame.body) } catch { throw .protocolError(error.description) }
            state.withLock { $0.nativeMail = push.nativeMail }
            apply(policy: push.policy, device: push.device, push: push.push)
        case .receipt:
            let receipt: ReceiptMessage
            do { receipt = try AgentMessage.decode(ReceiptMessage.self, from: frame.body) } catch { throw .protocolError(error.description) }
            state.withLock { state in
                state.pending[receipt.batch] = nil
                state.pendingOrder.removeAll { $0 == receipt.batch }
                if !receipt.logged { state.failedBatches[receipt.batch] = receipt.reason ?? "not logged" }
            }
            emit(.receipt(batch: receipt.batch, logged: receipt.logged))
        case .refused:
            let refusal = (try? AgentMessage.decode(RefusalMessage.self, from: frame.body))
            emit(.refused(reason: refusal?.reason.rawValue ?? "refused"))
            throw .refused(refusal ?? RefusalMessage(reason: .unregistered, message: "refused", peer: nil))
        case .error:
            let message = (try? AgentMessage.decode(ErrorMessage.self, from: frame.body))?.message ?? "error"
            throw .protocolError(message)
        default:
            throw .protocolError("unexpected \(frame.type) frame")
        }
    }

    private func disconnect(reason: String) {
        let (ring, fileKeys, closed) = state.withLock { state -> (KeyRing?, FileKeyRing?, Bool) in
            state.socket?.shutdown()
            state.socket = nil
            defer {
                state.ring = nil
                state.fileKeys = nil
            }
            return (state.ring, state.fileKeys, state.closed)
        }
        ring?.wipe()
        fileKeys?.wipe()
        guard !closed else { return }
        logger.notice("lost the agent; secure services unavailable", metadata: ["reason": "\(reason)"])
        emit(.disconnected(reason: reason))
        reportAvailability()
    }

    /// Tells the attached broker about a change of availability, outside any lock of its own.
    private func reportAvailability() {
        let (broker, availability, changed) = state.withLock { state -> (ShareBroker?, SecureServicesAvailability, Bool) in
            let now: SecureServicesAvailability = state.socket != nil && state.ring != nil ? .available : .unavailable
            guard let broker = state.broker, state.reportedAvailability != now else { return (nil, now, false) }
            state.reportedAvailability = now
            return (broker, now, true)
        }
        if changed, let broker { _ = try? broker.setSecureServices(availability) }
    }

    // MARK: Applying policies

    /// Hands the policy in force (and every later push) to `broker`, which must be started: the
    /// first makes it ready. Availability changes are reported to it from now on.
    public func attach(_ broker: ShareBroker) throws(ShareBrokerError) {
        let (policy, device, push) = state.withLock { state in
            state.broker = broker
            return (state.policy, state.device, state.push)
        }
        reportAvailability()
        if let policy { apply(policy: policy, device: device, push: push, to: broker) }
    }

    private func apply(policy: WirePolicy, device: [WireDeviceApp], push: UInt64) {
        let broker = state.withLock { state -> ShareBroker? in
            state.policy = policy
            state.device = device
            state.push = push
            return state.broker
        }
        guard let broker else {
            // Not attached yet: acknowledge the push as received, with nothing applied.
            send(acknowledgments: [], push: push)
            return
        }
        apply(policy: policy, device: device, push: push, to: broker)
    }

    private func apply(policy: WirePolicy, device: [WireDeviceApp], push: UInt64, to broker: ShareBroker) {
        applying.withLock { _ in applyLocked(policy: policy, device: device, push: push, to: broker) }
    }

    private func applyLocked(policy: WirePolicy, device: [WireDeviceApp], push: UInt64, to broker: ShareBroker) {
        let nativeMail = state.withLock { state in
            state.collecting = []
            return state.nativeMail
        }
        let described = DeviceApps(device.map(\.deviceApp), nativeMail: NativeMail(wire: nativeMail))
        if broker.currentSnapshot.device != described { _ = try? broker.replaceDevice(described) }
        let outcome = try? broker.applyReporting(policy.policyUpdate)
        let records = state.withLock { state -> [WireAcknowledgment] in
            defer { state.collecting = nil }
            return state.collecting ?? []
        }
        reportAvailability()
        let batch = send(acknowledgments: records, push: push)
        emit(.policyApplied(push: push, changes: outcome?.changes.map(\.rawValue) ?? [], acknowledgments: records.count, batch: batch))
    }

    @discardableResult
    private func send(acknowledgments: [WireAcknowledgment], push: UInt64) -> String {
        let id = nextID()
        enqueue(id: id, frame: AgentMessage.frame(.acknowledgments, AcknowledgmentBatch(id: id, push: push, records: acknowledgments)))
        return id
    }

    private func nextID() -> String {
        idPrefix + "-" + String(counter.add(1, ordering: .relaxed).newValue)
    }

    /// The most batches kept while waiting for receipts; past it the oldest are dropped (and
    /// reported in ``failedBatches``), so an agent that never comes back cannot exhaust memory.
    public static let maxUnconfirmedBatches = 10_000

    /// Keeps the frame until its receipt, and sends it now if connected.
    private func enqueue(id: String, frame: AgentFrame) {
        let (socket, dropped) = state.withLock { state -> (FrameSocket?, Int) in
            state.pending[id] = Pending(frame: frame)
            state.pendingOrder.append(id)
            var dropped = 0
            while state.pendingOrder.count > Self.maxUnconfirmedBatches {
                let oldest = state.pendingOrder.removeFirst()
                state.pending[oldest] = nil
                state.failedBatches[oldest] = "dropped unconfirmed: more than \(Self.maxUnconfirmedBatches) batches waited for the agent"
                dropped += 1
            }
            return (state.socket, dropped)
        }
        if dropped > 0 {
            logger.error("dropped unconfirmed record batches: the agent has been away too long", metadata: ["count": "\(dropped)"])
        }
        if let socket { try? socket.write(frame) }
    }

    /// Waits until the agent confirmed every batch sent so far is on disk, or `milliseconds`
    /// passed. Returns whether everything is confirmed.
    public func flush(timeoutMilliseconds milliseconds: Int) -> Bool {
        let deadline = FrameSocket.monotonicNanoseconds() + UInt64(max(0, milliseconds)) * 1_000_000
        while FrameSocket.monotonicNanoseconds() < deadline {
            if state.withLock({ $0.pending.isEmpty }) { return true }
            usleep(500)
        }
        return state.withLock { $0.pending.isEmpty }
    }

    /// How many batches wait for a receipt.
    public var unconfirmedBatches: Int { state.withLock { $0.pending.count } }

    /// Batches the agent received but could not log, with why.
    public var failedBatches: [String: String] { state.withLock { $0.failedBatches } }

    /// Disconnects for good: zeroes the ring, stops reconnecting, and detaches the broker (later
    /// pushes reach it no more).
    public func close() {
        let (ring, fileKeys) = state.withLock { state -> (KeyRing?, FileKeyRing?) in
            state.closed = true
            state.socket?.shutdown()
            state.socket = nil
            // Detached: the broker uses this client for keys and reports, and this client held
            // the broker for pushes; keeping both would keep both alive forever.
            state.broker = nil
            defer {
                state.ring = nil
                state.fileKeys = nil
            }
            return (state.ring, state.fileKeys)
        }
        ring?.wipe()
        fileKeys?.wipe()
    }

    // MARK: SecureServices

    /// Available while connected and holding a ring the agent delivered.
    public var availability: SecureServicesAvailability {
        state.withLock { $0.socket != nil && $0.ring != nil ? .available : .unavailable }
    }

    /// The cached ring (no round trip to the agent), for the app the agent identified.
    public func keyRing(for appID: String) throws(ShareBrokerError) -> KeyRing {
        try state.withLock { (state) throws(ShareBrokerError) -> KeyRing in
            guard state.socket != nil, let ring = state.ring, !ring.isWiped else { throw .secureServicesUnavailable }
            guard state.welcome?.app == appID else { throw .notEntitled(appID) }
            return ring
        }
    }

    /// This app's own file keys, cached with the ring (no round trip to the agent), for the app
    /// the agent identified.
    public func fileKeys(for appID: String) throws(ShareBrokerError) -> FileKeyRing {
        try state.withLock { (state) throws(ShareBrokerError) -> FileKeyRing in
            guard state.socket != nil, let keys = state.fileKeys, !keys.isWiped else { throw .secureServicesUnavailable }
            guard state.welcome?.app == appID else { throw .notEntitled(appID) }
            return keys
        }
    }

    /// Zeroes the cached ring and file keys now (retire); the agent sends no new ones to a
    /// retired app. Called by the library inside ``ShareBroker/apply(_:)``; the availability
    /// change is reported to the broker after the update.
    public func relinquishKeys(for appID: String) throws(SealingError) {
        let (ring, fileKeys) = state.withLock { state -> (KeyRing?, FileKeyRing?) in
            defer {
                state.ring = nil
                state.fileKeys = nil
            }
            return (state.ring, state.fileKeys)
        }
        ring?.wipe()
        fileKeys?.wipe()
    }

    // MARK: ServerReportSink

    /// Collected into the current push's batch, or sent at once (push 0).
    package func acknowledged(_ record: AcknowledgmentRecord) {
        let wire = WireAcknowledgment(id: nextID(), record)
        let collected = state.withLock { state -> Bool in
            guard state.collecting != nil else { return false }
            state.collecting?.append(wire)
            return true
        }
        if !collected { send(acknowledgments: [wire], push: 0) }
    }

    /// Sent to the agent's audit log (no content).
    package func blockedAttempt(_ record: BlockedAttemptRecord) {
        let id = nextID()
        enqueue(id: id, frame: AgentMessage.frame(.audit, AuditBatch(id: id, records: [WireAuditRecord(id: id, blocked: record)])))
    }

    /// Sent to the agent's audit log (no content; the text escaped and bounded).
    package func warnedAttempt(_ record: WarnedAttemptRecord) {
        let id = nextID()
        enqueue(id: id, frame: AgentMessage.frame(.audit, AuditBatch(id: id, records: [WireAuditRecord(id: id, warned: record)])))
    }

    /// Sent to the agent's audit log.
    package func wiped(_ report: WipeReport) {
        let id = nextID()
        enqueue(id: id, frame: AgentMessage.frame(.audit, AuditBatch(id: id, records: [WireAuditRecord(id: id, wiped: report)])))
    }
}
