import Dispatch
import Glibc
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
///
/// It also runs the policy's offline timers (``OfflinePolicy``): while the agent is connected it
/// confirms the policy (often enough for the shortest period), the last confirmation is kept in
/// the state folder (``Configuration/broker``'s `stateDirectory`) across restarts, and every second it checks the timers,
/// so within a second of the access-check period every transfer fails closed and the app is
/// told, and past the wipe period the app retires itself.
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
        /// Where Open In hand-overs of bytes go (`nil`, the default: a fresh folder under the
        /// runtime folder). Package access: the CLI and the tests set their own.
        package var outbox: (any Outbox)?
        /// How allowed URLs open (`nil`, the default: the desktop's scheme handlers through GIO).
        /// Package access: the CLI and the tests set their own.
        package var urlOpener: (any URLOpener)?
        /// What the broker must have before it starts: the app's erasers, its secure-file
        /// folders, the sealed items' maximum age, web views, the logger, the static settings. Its
        /// `stateDirectory` is the app's state folder, which only this user can read and which
        /// survives logouts and reboots: the wipe journal, the record of the app's last
        /// pasteboard write, and the offline timers' last confirmation (`nil`, the default:
        /// `$XDG_STATE_HOME/sharebroker/APP-ID`, else `~/.local/state/sharebroker/APP-ID`).
        public var broker: ShareBroker.Configuration

        /// The defaults: the agent's socket, 5 s, reconnecting, the desktop's pasteboard and handlers.
        public init(socketPath: String = AgentPaths.socket, handshakeTimeoutMilliseconds: Int = 5_000,
                    reconnects: Bool = true, pasteboard: PasteboardChoice = .automatic,
                    broker: ShareBroker.Configuration = ShareBroker.Configuration()) {
            self.socketPath = socketPath
            self.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
            self.reconnects = reconnects
            self.pasteboard = pasteboard
            outbox = nil
            urlOpener = nil
            self.broker = broker
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
    /// Confirms while connected and checks the offline timers every second.
    private let watchdog: OfflineWatchdog

    private init(broker: ShareBroker, agent: AgentClient, pasteboard: DesktopPasteboard, welcome: WelcomeMessage) {
        self.broker = broker
        self.agent = agent
        self.pasteboard = pasteboard
        self.welcome = welcome
        watchdog = OfflineWatchdog(broker: broker, agent: agent)
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
        // The agent first: an agent that is down or refuses this process is said as such, before
        // the clipboard is opened (or a clipboard error hides it).
        let agent = AgentClient(configuration: AgentClientConfiguration(
            socketPath: configuration.socketPath,
            handshakeTimeoutMilliseconds: configuration.handshakeTimeoutMilliseconds,
            reconnects: configuration.reconnects))
        let welcome: WelcomeMessage
        do {
            welcome = try agent.connect()
        } catch {
            throw .agent(error)
        }
        let pasteboard: DesktopPasteboard
        do {
            pasteboard = try DesktopPasteboard(configuration.pasteboard)
        } catch {
            agent.close()
            throw .setup(error.description)
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
        // The state folder keeps the wipe journal (a retire a crash interrupted is finished at
        // the next start), the record of the app's last pasteboard write, and the offline
        // timers' last confirmation.
        // A folder this process cannot use gets no journal: a journal that cannot be read makes
        // every start wipe everything (it cannot tell whether a retire was interrupted).
        let stateFolder = configuration.broker.stateDirectory ?? Self.defaultStateDirectory(app: welcome.app)
        var brokerConfiguration = configuration.broker
        brokerConfiguration.stateDirectory = Self.makeUsableFolder(stateFolder) ? stateFolder : nil
        let broker = ShareBroker(appID: welcome.app, device: agent.device, platform: Platform(
            outbox: outbox, urlOpener: configuration.urlOpener ?? DesktopURLOpener(), reportSink: agent,
            pasteboard: pasteboard.pasteboard, secureServices: agent),
            configuration: brokerConfiguration)
        pasteboard.followPlaceholder(of: broker)
        // The offline timers keep their last confirmation in the state folder; where it cannot
        // be made (no usable home), they count in memory, from this start's first policy: no
        // weaker than the folder, which this user could delete anyway.
        do {
            try broker.enableOfflineTimers(directory: stateFolder)
        } catch {
            do {
                try broker.enableOfflineTimers(directory: nil)
            } catch {
                agent.close()
                pasteboard.close(handOffTimeout: .zero)
                throw .setup("the offline timers could not start: \(error)")
            }
        }
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
        watchdog.stop()
        _ = agent.flush(timeoutMilliseconds: 1_000)
        pasteboard.close()
        agent.close()
    }
}

extension ManagedApp {
    /// Makes `folder` (and its parents, mode 0700) if missing; whether this process can then
    /// read, write and enter it.
    static func makeUsableFolder(_ folder: String) -> Bool {
        guard folder.hasPrefix("/") else { return false }
        var path = ""
        for component in folder.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o700) != 0 && errno != EEXIST { return false }
        }
        return access(folder, R_OK | W_OK | X_OK) == 0
    }

    /// `$XDG_STATE_HOME/sharebroker/APP`, else `$HOME/.local/state/sharebroker/APP`, else a
    /// folder under the agent's runtime folder (which does not survive a reboot).
    static func defaultStateDirectory(app: String) -> String {
        func variable(_ name: String) -> String? {
            guard let value = getenv(name) else { return nil }
            let text = String(cString: value)
            return text.hasPrefix("/") ? text : nil
        }
        if let state = variable("XDG_STATE_HOME") { return state + "/sharebroker/" + app }
        if let home = variable("HOME") { return home + "/.local/state/sharebroker/" + app }
        return AgentPaths.runtimeDirectory + "/apps/\(app)/state"
    }
}

/// The offline timers' clockwork for an attached app: every second, a confirmation when the agent
/// is connected and the last one is older than a quarter of the access-check period (at most
/// 30 s), then a check of the timers.
final class OfflineWatchdog: Sendable {
    /// Thread-safe (`cancel` may come from any thread); Dispatch does not mark it Sendable.
    nonisolated(unsafe) private let timer: any DispatchSourceTimer
    /// When this watchdog last confirmed (only its timer's serial queue touches it).
    private final class State: @unchecked Sendable {
        var lastConfirmation = ContinuousClock.now
    }

    init(broker: ShareBroker, agent: AgentClient) {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "sharebroker.offline-timers"))
        self.timer = timer
        let state = State()
        timer.setEventHandler {
            let period = (try? broker.policy())?.offlinePolicy.accessCheckAfter
            let interval = min(.seconds(30), (period ?? .seconds(120)) / 4)
            if agent.isConnected, ContinuousClock.now - state.lastConfirmation >= interval {
                try? broker.confirmPolicy()
                state.lastConfirmation = .now
            }
            _ = try? broker.checkOfflineTimers()
        }
        timer.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1), leeway: .milliseconds(100))
        timer.resume()
    }

    func stop() { timer.cancel() }

    deinit { timer.cancel() }
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
