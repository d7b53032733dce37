import ShareBroker
import ShareBrokerAgentClient
import ShareBrokerAgentProtocol

/// A managed app on Linux, wired to the agent (`sharebrokerd`) and the desktop: the one call an
/// app makes.
///
/// ```swift
/// let app = try ManagedApp.attach(delegate: myDelegate)
/// let result = try app.broker.copy(.text("quarterly numbers"))   // sealed under SecureCopy
/// ```
///
/// `attach` connects to the agent, which identifies this process from the kernel (its
/// executable, user and pins) and answers with its app id, the device's apps and the group keys
/// when the app is entitled; then it builds a ``ShareBroker`` over the real adapters (the agent
/// client as key custodian and report sink, the desktop clipboard, desktop hand-offs for
/// URLs), starts it with `delegate`, and applies the policy in force, so `delegate` hears
/// `appConnectIsReady` and every value before `attach` returns.
public final class ManagedApp: Sendable {
    /// What ``attach(_:delegate:)`` connects to and which adapters it uses.
    public struct Configuration: Sendable {
        /// The agent's socket (default: `$SHAREBROKER_SOCKET`, else the agent's runtime folder).
        public var socketPath: String
        /// How long to wait for the agent's answer, in milliseconds.
        public var handshakeTimeoutMilliseconds: Int
        /// Whether the client reconnects (with backoff) when the agent restarts.
        public var reconnects: Bool
        /// The general pasteboard (default: the desktop's, see ``PasteboardChoice/automatic``).
        public var pasteboard: PasteboardChoice
        /// Where Open In hand-overs of bytes go (default: a fresh folder under the runtime folder).
        public var outbox: (any Outbox)?
        /// How allowed URLs open (default: the desktop's scheme handlers through GIO).
        public var urlOpener: (any URLOpener)?

        /// The defaults: the agent's socket, 5 s, reconnecting, the desktop's pasteboard and handlers.
        public init(socketPath: String = AgentPaths.socket, handshakeTimeoutMilliseconds: Int = 5_000,
                    reconnects: Bool = true, pasteboard: PasteboardChoice = .automatic,
                    outbox: (any Outbox)? = nil, urlOpener: (any URLOpener)? = nil) {
            self.socketPath = socketPath
            self.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
            self.reconnects = reconnects
            self.pasteboard = pasteboard
            self.outbox = outbox
            self.urlOpener = urlOpener
        }
    }

    /// The broker every transfer of this app goes through.
    public let broker: ShareBroker
    /// The connection to the agent (key custody, policy pushes, acknowledgments, audit).
    public let agent: AgentClient
    /// The general pasteboard, with its desktop specifics.
    public let pasteboard: DesktopPasteboard
    /// The agent's answer: the app id it identified this process as, and the process it saw.
    public let welcome: WelcomeMessage
    /// The app id the agent identified this process as.
    public var appID: String { welcome.app }

    private init(broker: ShareBroker, agent: AgentClient, pasteboard: DesktopPasteboard, welcome: WelcomeMessage) {
        self.broker = broker
        self.agent = agent
        self.pasteboard = pasteboard
        self.welcome = welcome
    }

    /// Connects to the agent, builds and starts the broker over the real adapters, and applies
    /// the policy in force (see the type's documentation).
    ///
    /// - Throws: ``ManagedAppError/agent(_:)`` when the agent is down or refuses this process
    ///   (not a registered app, a changed binary, another user); ``ManagedAppError/setup(_:)``
    ///   when an adapter could not be opened; ``ManagedAppError/start(_:)`` when the broker
    ///   refused to start.
    public static func attach(_ configuration: Configuration = Configuration(),
                              delegate: any ShareBrokerDelegate) throws(ManagedAppError) -> ManagedApp {
        let pasteboard: DesktopPasteboard
        do {
            pasteboard = try DesktopPasteboard(configuration.pasteboard)
        } catch {
            throw .setup(error.description)
        }
        let agent = AgentClient(configuration: AgentClientConfiguration(
            socketPath: configuration.socketPath,
            handshakeTimeoutMilliseconds: configuration.handshakeTimeoutMilliseconds,
            reconnects: configuration.reconnects))
        let welcome: WelcomeMessage
        do {
            welcome = try agent.connect()
        } catch {
            pasteboard.close(handOffTimeout: .zero)
            throw .agent(error)
        }
        let outbox: any Outbox
        if let configured = configuration.outbox {
            outbox = configured
        } else {
            do {
                outbox = try FolderOutbox(directory: AgentPaths.runtimeDirectory + "/apps/\(welcome.app)/outbox")
            } catch {
                agent.close()
                pasteboard.close(handOffTimeout: .zero)
                throw .setup(error.description)
            }
        }
        let broker = ShareBroker(appID: welcome.app, device: agent.device, platform: Platform(
            outbox: outbox, urlOpener: configuration.urlOpener ?? DesktopURLOpener(), reportSink: agent,
            pasteboard: pasteboard.pasteboard, secureServices: agent))
        pasteboard.followPlaceholder(of: broker)
        do {
            try broker.start(delegate: delegate)
            try agent.attach(broker)
        } catch {
            agent.close()
            pasteboard.close(handOffTimeout: .zero)
            throw .start(error)
        }
        return ManagedApp(broker: broker, agent: agent, pasteboard: pasteboard, welcome: welcome)
    }

    /// Waits up to `timeoutMilliseconds` for the agent to confirm every acknowledgment and audit
    /// record sent; `false` when some are still unconfirmed.
    public func flush(timeoutMilliseconds: Int = 5_000) -> Bool {
        agent.flush(timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Flushes, hands a desktop clipboard item to a clipboard manager, and disconnects.
    public func close() {
        _ = agent.flush(timeoutMilliseconds: 1_000)
        pasteboard.close()
        agent.close()
    }
}

/// Why ``ManagedApp/attach(_:delegate:)`` failed.
public enum ManagedAppError: Error, Sendable, CustomStringConvertible {
    /// The agent is unavailable or refused this process.
    case agent(AgentClientError)
    /// An adapter could not be opened (the message says which and why).
    case setup(String)
    /// The broker refused to start.
    case start(ShareBrokerError)

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .agent(let error): "the agent did not accept this app: \(error)"
        case .setup(let why): why
        case .start(let error): "the broker did not start: \(error)"
        }
    }
}
