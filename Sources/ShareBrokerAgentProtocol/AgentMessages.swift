import ShareBroker
import ShareBrokerPolicyDocument

/// JSON bodies of the agent protocol's frames. Every message decodes strictly: unknown
/// frames are refused by type, and a body missing a required field is ``FrameError/invalidBody(_:)``.
///
/// The JSON is read and written without Foundation (the strict parser of policy documents, which
/// also refuses duplicate keys), so the C library that speaks this protocol carries no Foundation.
public enum AgentMessage {
    /// What a body may hold: everything a frame can carry (the frame limit bounds the memory), at
    /// most 64 levels deep (messages nest 4).
    static let bodyLimits = PolicyDocumentLimits(
        maxDocumentBytes: AgentFrame.maxFrameSize, maxDepth: 64, maxStringBytes: AgentFrame.maxFrameSize,
        maxContainerCount: AgentFrame.maxFrameSize, maxValues: AgentFrame.maxFrameSize)

    /// Encodes a message as a frame body (JSON, keys sorted).
    public static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        (try? JSONCoding.encode(value)) ?? Array("{}".utf8)
    }

    /// Decodes a frame body as `T`.
    /// - Throws: ``FrameError/invalidBody(_:)`` naming the type, never the body's content.
    public static func decode<T: Decodable>(_ type: T.Type, from body: [UInt8]) throws(FrameError) -> T {
        do {
            return try JSONCoding.decode(T.self, from: body, limits: bodyLimits)
        } catch {
            throw .invalidBody("not a valid \(T.self) message")
        }
    }

    /// A frame of `type` whose body is `value` as JSON.
    public static func frame<T: Encodable>(_ type: AgentFrameType, _ value: T) -> AgentFrame {
        AgentFrame(type: type, body: encode(value))
    }
}

/// What a client connects as.
public enum ClientRole: String, Codable, Sendable, Hashable {
    /// An app: the agent identifies it and sends its policy and keys.
    case app
    /// An administrator (same user as the agent, or root): commands such as reload.
    case admin
}

/// Client → agent, first frame. The client says which protocol it speaks and in what role; it
/// never says who it is (the agent asks the kernel).
public struct HelloMessage: Codable, Sendable, Hashable {
    /// The protocol version the client speaks.
    public var protocolVersion: Int
    /// App or admin.
    public var role: ClientRole

    /// Creates a hello.
    public init(protocolVersion: Int = Int(AgentFrame.protocolVersion), role: ClientRole = .app) {
        self.protocolVersion = protocolVersion
        self.role = role
    }
}

/// Who the agent found the connecting process to be (from the kernel), as it tells the client.
public struct PeerDescription: Codable, Sendable, Hashable {
    /// The process id (SO_PEERCRED).
    public var pid: Int32
    /// The user id (SO_PEERCRED).
    public var uid: UInt32
    /// The executable (`/proc/PID/exe`), when it could be read.
    public var executable: String?

    /// Creates a description.
    public init(pid: Int32, uid: UInt32, executable: String?) {
        self.pid = pid
        self.uid = uid
        self.executable = executable
    }
}

/// One app on the device, as the sharing rules see it.
public struct WireDeviceApp: Codable, Sendable, Hashable {
    /// Bundle id.
    public var id: String
    /// Whether it links the library.
    public var appConnect: Bool
    /// Whether its user is authorized.
    public var authorized: Bool
    /// URL schemes it opens.
    public var schemes: [String]

    /// Creates an entry.
    public init(id: String, appConnect: Bool, authorized: Bool, schemes: [String]) {
        self.id = id
        self.appConnect = appConnect
        self.authorized = authorized
        self.schemes = schemes
    }

    /// From the library's value.
    package init(_ app: DeviceApp) {
        self.init(id: app.id, appConnect: app.isAppConnect, authorized: app.isAuthorized, schemes: app.schemes)
    }

    /// As the library's value.
    package var deviceApp: DeviceApp {
        DeviceApp(id: id, isAppConnect: appConnect, isAuthorized: authorized, schemes: schemes)
    }
}

/// One exit's warn settings on the wire (``WarnSettings``).
public struct WireWarnSettings: Codable, Sendable, Hashable {
    public var reasonRequired: Bool
    /// Codes and labels, in order.
    public var reasons: [[String]]
    public var freeText: Bool
    public var proceedMinutes: Int
    public var answerMilliseconds: Int
    /// `[proceeds, minutes]`, or absent for no limit.
    public var rateLimit: [Int]?

    /// The wire form of `settings`.
    public init(_ settings: WarnSettings) {
        reasonRequired = settings.reasonRequired
        reasons = settings.reasons.map { [$0.code, $0.label] }
        freeText = settings.freeTextAllowed
        proceedMinutes = settings.proceedLifetimeMinutes
        answerMilliseconds = settings.answerTimeoutMilliseconds
        rateLimit = settings.rateLimit.map { [$0.proceeds, $0.minutes] }
    }

    /// The settings (a malformed reason or limit gives settings with a problem, which block).
    public var settings: WarnSettings {
        WarnSettings(reasonRequired: reasonRequired,
                     reasons: reasons.map { $0.count == 2 ? WarnReason(code: $0[0], label: $0[1]) : WarnReason(code: "", label: "") },
                     freeTextAllowed: freeText, proceedLifetimeMinutes: proceedMinutes,
                     answerTimeoutMilliseconds: answerMilliseconds,
                     rateLimit: rateLimit.map { $0.count == 2 ? WarnRateLimit(proceeds: $0[0], minutes: $0[1]) : WarnRateLimit(proceeds: 0, minutes: 0) })
    }
}

/// A complete policy for one app, with "All AppConnect apps" already expanded by the agent into
/// an explicit whitelist. Enum fields carry the AppConnect raw values.
public struct WirePolicy: Codable, Sendable, Hashable {
    /// ``AuthState`` raw value.
    public var auth: Int32
    /// Why.
    public var authMessage: String
    /// `unauthorized`, `authorized` or `whitelist`.
    public var openIn: String
    /// The whitelist (with `openIn: whitelist`), sorted.
    public var openInWhitelist: [String]
    /// ``PasteboardPolicy`` raw value.
    public var pasteboard: Int32
    /// ``PrintPolicy`` raw value.
    public var print: Int32
    /// ``SecureFileIOPolicy`` raw value.
    public var secureFileIO: Int32
    /// ``LogLevel`` raw value.
    public var logLevel: Int32
    /// ``DragAndDropPolicy`` raw value.
    public var dragAndDrop: Int32
    /// Whether the managed browser is required.
    public var managedBrowserRequired: Bool
    /// The app's configuration.
    public var config: [String: String]
    /// The clipboard character-count exception (issue 18). Absent (an older agent): 0.
    public var clipboardExceptionLength: Int?
    /// ``NotificationPolicy`` raw value (issue 18). Absent: allow, the behaviour before it existed.
    public var notifications: Int32?
    /// `unauthorized`, `authorized` or `whitelist` (issue 18). Absent: authorized.
    public var openFrom: String?
    /// The Open From whitelist (with `openFrom: whitelist`), sorted.
    public var openFromWhitelist: [String]?
    /// ``PasteInPolicy`` raw value (issue 18). Absent: any app.
    public var pasteIn: Int32?
    /// Offline access-check period in seconds, 0 for none (issue 18). Absent: none.
    public var offlineAccessCheckSeconds: Int?
    /// Offline wipe period in seconds, 0 for none (issue 18). Absent: none.
    public var offlineWipeSeconds: Int?
    /// The exits that warn (issue 33), by ``WarnExit`` raw value. Absent (an older agent): none.
    public var warn: [String: WireWarnSettings]?

    /// The wire form of a complete update; `allAppConnectApps` must already be expanded into
    /// `expandedWhitelist` (fields left `nil` take their most restrictive values).
    public init(_ update: PolicyUpdate, expandedWhitelist: Set<String>) {
        auth = (update.auth ?? .unauthorized).rawValue
        authMessage = update.authMessage ?? ""
        switch update.openIn ?? .unauthorized {
        case .unauthorized: openIn = "unauthorized"; openInWhitelist = []
        case .authorized: openIn = "authorized"; openInWhitelist = []
        case .whitelist(let ids): openIn = "whitelist"; openInWhitelist = ids.sorted()
        case .allAppConnectApps: openIn = "whitelist"; openInWhitelist = expandedWhitelist.sorted()
        }
        pasteboard = (update.pasteboard ?? .unauthorized).rawValue
        print = (update.print ?? .unauthorized).rawValue
        secureFileIO = (update.secureFileIO ?? .required).rawValue
        logLevel = (update.logLevel ?? .status).rawValue
        dragAndDrop = (update.dragAndDrop ?? .noApps).rawValue
        managedBrowserRequired = update.managedBrowserRequired ?? false
        config = update.config ?? [:]
        clipboardExceptionLength = update.clipboardExceptionLength ?? 0
        notifications = (update.notifications ?? .allow).rawValue
        switch update.openFrom ?? .authorized {
        case .unauthorized: openFrom = "unauthorized"; openFromWhitelist = []
        case .authorized: openFrom = "authorized"; openFromWhitelist = []
        case .whitelist(let ids): openFrom = "whitelist"; openFromWhitelist = ids.sorted()
        case .allAppConnectApps: openFrom = "whitelist"; openFromWhitelist = expandedWhitelist.sorted()
        }
        pasteIn = (update.pasteIn ?? .anyApp).rawValue
        offlineAccessCheckSeconds = (update.offline ?? .unlimited).accessCheckSeconds
        offlineWipeSeconds = (update.offline ?? .unlimited).wipeSeconds
        let exits = (update.warn ?? .none).exits
        warn = exits.isEmpty ? nil : Dictionary(uniqueKeysWithValues: exits.map { ($0.key.rawValue, WireWarnSettings($0.value)) })
    }

    /// The update to hand to `ShareBroker.apply`: every field set. An unknown raw value takes
    /// the most restrictive value (fail closed); an absent issue 18 field (an older agent) the
    /// behaviour from before it existed.
    public var policyUpdate: PolicyUpdate {
        let openInSetting: TransferSetting
        switch openIn {
        case "authorized": openInSetting = .authorized
        case "whitelist": openInSetting = .whitelist(Set(openInWhitelist))
        default: openInSetting = .unauthorized
        }
        return PolicyUpdate(
            auth: AuthState(rawValue: auth) ?? .unauthorized, authMessage: authMessage, openIn: openInSetting,
            pasteboard: PasteboardPolicy(rawValue: pasteboard) ?? .unauthorized,
            print: PrintPolicy(rawValue: print) ?? .unauthorized,
            secureFileIO: SecureFileIOPolicy(rawValue: secureFileIO) ?? .required,
            logLevel: LogLevel(rawValue: logLevel) ?? .status,
            dragAndDrop: DragAndDropPolicy(rawValue: dragAndDrop) ?? .noApps,
            managedBrowserRequired: managedBrowserRequired, config: config,
            clipboardExceptionLength: clipboardExceptionLength.map { min(max($0, 0), PolicySnapshot.maxClipboardExceptionLength) } ?? 0,
            notifications: notifications.map { NotificationPolicy(rawValue: $0) ?? .block } ?? .allow,
            openFrom: openFromSetting,
            pasteIn: pasteIn.map { PasteInPolicy(rawValue: $0) ?? .managedApps } ?? .anyApp,
            offline: OfflinePolicy(accessCheckSeconds: offlineAccessCheckSeconds ?? 0, wipeSeconds: offlineWipeSeconds ?? 0))
            .withWarn(warnPolicy)
    }

    /// The warn policy: unknown exits are dropped, and settings with a problem never reach a
    /// snapshot (that exit blocks), so a bad value fails closed.
    private var warnPolicy: WarnPolicy {
        var policy = WarnPolicy()
        for (name, settings) in warn ?? [:] {
            guard let exit = WarnExit(rawValue: name) else { continue }
            policy[exit] = settings.settings
        }
        return policy
    }

    private var openFromSetting: TransferSetting {
        switch openFrom {
        case nil, "authorized"?: .authorized
        case "whitelist"?: .whitelist(Set(openFromWhitelist ?? []))
        default: .unauthorized
        }
    }

    /// The user's authorization.
    public var authState: AuthState { AuthState(rawValue: auth) ?? .unauthorized }
}

/// Agent → client after a hello from a registered AppConnect app.
public struct WelcomeMessage: Codable, Sendable, Hashable {
    /// The protocol version the agent speaks.
    public var protocolVersion: Int
    /// The app id the agent determined from the kernel (never from the client).
    public var app: String
    /// What the kernel said about the peer.
    public var peer: PeerDescription
    /// The push number of the policy below (increases with every reload).
    public var push: UInt64
    /// The app's policy.
    public var policy: WirePolicy
    /// The other apps on the device.
    public var device: [WireDeviceApp]
    /// The ids that count as native mail on the device, the one `mailto:` opens first; absent:
    /// the two Apple ids.
    public var nativeMail: [String]?

    /// Creates a welcome.
    public init(protocolVersion: Int = Int(AgentFrame.protocolVersion), app: String, peer: PeerDescription,
                push: UInt64, policy: WirePolicy, device: [WireDeviceApp], nativeMail: [String]? = nil) {
        self.protocolVersion = protocolVersion
        self.app = app
        self.peer = peer
        self.push = push
        self.policy = policy
        self.device = device
        self.nativeMail = nativeMail
    }
}

/// Why the agent refuses a process keys and policy.
public enum RefusalReason: String, Codable, Sendable, Hashable {
    /// The executable is not in the device registry.
    case unregistered
    /// The executable is registered but its SHA-256 is not the pinned one.
    case hashMismatch
    /// The executable file at the registered path is not the one the process runs (replaced,
    /// deleted, or a different inode).
    case executableChanged
    /// The executable is registered, but not as an AppConnect app: it has no policy.
    case notAppConnect
    /// The peer's credentials or executable could not be read.
    case unidentified
    /// An admin hello from a user other than the agent's or root.
    case notAdministrator
    /// The client speaks another protocol version.
    case protocolVersion
    /// Bytes on the connection were written by another process than the one that connected
    /// (`SCM_CREDENTIALS` differs from `SO_PEERCRED`): a socket shared across fork or exec.
    case speakerMismatch
    /// The process that connected exited before it was identified (its pid may be reused).
    case processGone
    /// The agent's connection limits (all users, or this uid) are reached.
    case tooManyConnections
    /// The process runs a registered app as a user the device policy does not allow for it.
    case userNotAllowed
    /// The registered executable is writable by someone other than root or the agent's user
    /// (or owned by someone else): whoever can write it could make any program that app.
    case unsafeExecutable
    /// The registered executable is a copy or link of an interpreter or the dynamic loader on
    /// this system (python, perl, node, a shell, ld-linux...): it runs whatever script it is given.
    case interpreter
    /// An app sent bytes after its hello before the welcome (a process that wrote ahead and then
    /// exec'd the registered binary looks like this).
    case earlyFrames
    /// The process has a `/.flatpak-info` (it says it is a Flatpak app), but the claim does not
    /// verify against Flatpak's instance record, the sandbox's namespaces or the installed app.
    case flatpakUnverified
    /// A process that is not a Flatpak app runs outside the agent's pid or user namespace
    /// (made with `unshare`, or a container): the credentials it attaches to its writes cannot
    /// be trusted to name the writer.
    case foreignNamespace
}

/// Agent → client: no keys, no policy. The agent closes the connection after it.
public struct RefusalMessage: Error, Codable, Sendable, Hashable, CustomStringConvertible {
    /// Why.
    public var reason: RefusalReason
    /// For people: what the agent found and what to do.
    public var message: String
    /// What the kernel said about the peer.
    public var peer: PeerDescription?

    /// Creates a refusal.
    public init(reason: RefusalReason, message: String, peer: PeerDescription?) {
        self.reason = reason
        self.message = message
        self.peer = peer
    }

    /// The message.
    public var description: String { message }
}

/// Agent → client: a new policy, for the app to apply and acknowledge.
public struct PolicyPushMessage: Codable, Sendable, Hashable {
    /// The push number; the acknowledgments name it.
    public var push: UInt64
    /// The app's policy.
    public var policy: WirePolicy
    /// The other apps on the device.
    public var device: [WireDeviceApp]
    /// As in ``WelcomeMessage/nativeMail``.
    public var nativeMail: [String]?

    /// Creates a push.
    public init(push: UInt64, policy: WirePolicy, device: [WireDeviceApp], nativeMail: [String]? = nil) {
        self.push = push
        self.policy = policy
        self.device = device
        self.nativeMail = nativeMail
    }
}

/// One acknowledgment on the wire.
public struct WireAcknowledgment: Codable, Sendable, Hashable {
    /// A client-chosen id, unique per record, so that a resent record can be recognised.
    public var id: String
    /// `AcknowledgedKind` raw value (`auth`, `openIn`...).
    public var kind: String
    /// The acknowledgment's `ACPolicyState` code (0 unsupported, 1 applied, 2 error).
    public var state: Int32
    /// The app's message.
    public var message: String
    /// The snapshot generation it answers.
    public var generation: UInt64

    /// Creates an acknowledgment.
    public init(id: String, kind: String, state: Int32, message: String, generation: UInt64) {
        self.id = id
        self.kind = kind
        self.state = state
        self.message = message
        self.generation = generation
    }

    /// The acknowledgment of a record.
    package init(id: String, _ record: AcknowledgmentRecord) {
        self.id = id
        kind = record.kind.rawValue
        state = record.state.rawValue
        message = record.message
        generation = record.generation
    }
}

/// Client → agent: the acknowledgments of one push (possibly none: the push was applied and
/// changed nothing that is acknowledged).
public struct AcknowledgmentBatch: Codable, Sendable, Hashable {
    /// An id for the batch, echoed in the receipt.
    public var id: String
    /// The push these answer (0: acknowledgments of an update the app made itself).
    public var push: UInt64
    /// The records.
    public var records: [WireAcknowledgment]

    /// Creates a batch.
    public init(id: String, push: UInt64, records: [WireAcknowledgment]) {
        self.id = id
        self.push = push
        self.records = records
    }
}

/// One audit record from an app: a blocked attempt or a wipe report. Never content.
public struct WireAuditRecord: Codable, Sendable, Hashable {
    /// A client-chosen id, unique per record.
    public var id: String
    /// `blocked`, `warned` or `wiped`.
    public var event: String
    /// What was attempted (`copy`, `openIn`...), for `blocked`.
    public var action: String?
    /// Where it was headed, when known.
    public var target: String?
    /// The rule that refused it.
    public var rule: String?
    /// The snapshot generation the decision read.
    public var generation: UInt64?
    /// For `wiped`: what was erased.
    public var erased: [String]?
    /// For `wiped`: what could not be, and why.
    public var failed: [String: String]?
    /// For `warned`: the reason code the user picked, if any.
    public var reasonCode: String?
    /// For `warned`: the user's text, escaped and bounded by the app's library (and again by the agent).
    public var text: String?

    /// A blocked attempt.
    package init(id: String, blocked record: BlockedAttemptRecord) {
        self.id = id
        event = "blocked"
        action = record.action.rawValue
        target = record.target
        rule = record.rule
        generation = record.generation
    }

    /// A warned attempt: `action` is the exit, `rule` the outcome (`proceeded`, `cancelled`...).
    package init(id: String, warned record: WarnedAttemptRecord) {
        self.id = id
        event = "warned"
        action = record.exit.rawValue
        target = record.target
        rule = record.outcome.rawValue
        generation = record.generation
        reasonCode = record.reasonCode
        text = record.text
    }

    /// A wipe report.
    package init(id: String, wiped report: WipeReport) {
        self.id = id
        event = "wiped"
        erased = report.erased
        failed = report.failed
    }
}

/// Client → agent: audit records.
public struct AuditBatch: Codable, Sendable, Hashable {
    /// An id for the batch, echoed in the receipt.
    public var id: String
    /// The records.
    public var records: [WireAuditRecord]

    /// Creates a batch.
    public init(id: String, records: [WireAuditRecord]) {
        self.id = id
        self.records = records
    }
}

/// Agent → client: the batch is durably logged (fsynced).
public struct ReceiptMessage: Codable, Sendable, Hashable {
    /// The batch id.
    public var batch: String
    /// Whether it was logged; `false` with a reason when the agent could not write its log.
    public var logged: Bool
    /// Why not.
    public var reason: String?

    /// Creates a receipt.
    public init(batch: String, logged: Bool, reason: String? = nil) {
        self.batch = batch
        self.logged = logged
        self.reason = reason
    }
}

/// Admin → agent.
public struct AdminRequest: Codable, Sendable, Hashable {
    /// `reload` (re-read the policy source), `setPolicy` (install `document`), `status`.
    public var command: String
    /// For `setPolicy`: a `sharebroker.device` document, as text.
    public var document: String?

    /// Creates a request.
    public init(command: String, document: String? = nil) {
        self.command = command
        self.document = document
    }
}

/// Agent → admin.
public struct AdminResponse: Codable, Sendable, Hashable {
    /// Whether the command succeeded.
    public var ok: Bool
    /// What happened, or what went wrong and what to do.
    public var message: String
    /// The push number now in force.
    public var push: UInt64
    /// The current key id (not secret), as `0x` and 8 hex digits.
    public var currentKeyID: String?
    /// Apps connected now.
    public var connectedApps: [String]
    /// Apps entitled to the keys now.
    public var entitledApps: [String]

    /// Creates a response.
    public init(ok: Bool, message: String, push: UInt64, currentKeyID: String?, connectedApps: [String],
                entitledApps: [String]) {
        self.ok = ok
        self.message = message
        self.push = push
        self.currentKeyID = currentKeyID
        self.connectedApps = connectedApps
        self.entitledApps = entitledApps
    }
}

/// Agent → client: the last frame was not acceptable; the agent closes the connection.
public struct ErrorMessage: Codable, Sendable, Hashable {
    /// What was wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(message: String) {
        self.message = message
    }
}

extension NativeMail {
    /// The wire form: `nil` for the Apple default, else the id `mailto:` opens first.
    public var wire: [String]? {
        self == .appleDevices ? nil : [launchID] + ids.filter { $0 != launchID }
    }

    /// Reads the wire form (`nil` or empty: the Apple default).
    public init(wire: [String]?) {
        if let wire, let first = wire.first {
            self.init(ids: wire, launchID: first)
        } else {
            self = .appleDevices
        }
    }
}
