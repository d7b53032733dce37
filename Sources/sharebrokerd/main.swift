import ArgumentParser
import Foundation
import Logging
import ShareBrokerAgent
import ShareBrokerAgentClient
import ShareBrokerAgentProtocol
import ShareBrokerPolicyDocument
import ShareBrokerPOSIX

/// `sharebrokerd`: the secure-services agent. Argument parsing and start-up only; the logic is
/// in the ShareBrokerAgent library.
struct ShareBrokerDaemon: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sharebrokerd",
        abstract: "The secure-services agent: identifies apps from the kernel, hands authorized apps their policy and the group key ring, pushes policy changes, logs acknowledgments and blocked attempts durably.",
        discussion: """
            With no options everything lives under $SHAREBROKER_RUNTIME_DIR, else \
            $XDG_RUNTIME_DIR/sharebroker (with neither set, give --state and --socket: there is \
            no shared fallback folder): the socket agent.sock and the \
            state folder agent-state/. The device policy (which apps exist, their executables, \
            pins and policies) comes from --policy, else from the policy directory (--policy-dir, \
            default /etc/sharebroker) when it holds device.json, else from the state folder's copy \
            of the last one installed; with neither, the agent starts with no apps and refuses every app until \
            a policy is installed (`sharebroker agent-demo` shows a complete setup).
            SIGHUP re-reads the device policy (as does `sharebrokerd --reload`); SIGTERM stops.
            """)

    @Option(help: "The state folder (key ring, device policy, logs). Default: RUNTIME/agent-state.")
    var state: String?

    @Option(help: "The Unix socket to listen on. Default: RUNTIME/agent.sock.")
    var socket: String?

    @Option(help: "A device policy (sharebroker.device) to read at start and at every reload. Default: the one in the state folder, else none (every app is refused).")
    var policy: String?

    @Option(help: "A policy directory: device.json and policies.d/*.json (native app policies or Intune Graph bodies), owned by root or the agent's user and writable by no one else; read at start when it holds device.json, watched, and re-read on every change. --policy wins over it.")
    var policyDir: String = PolicyDirectory.defaultPath

    @Option(help: "Where reports go besides the local logs: auto (journald when it runs, else /dev/log), journald, syslog, off.")
    var systemLog: String = "auto"

    @Option(help: "The socket for --system-log journald or syslog (default: /run/systemd/journal/socket, /dev/log).")
    var systemLogSocket: String?

    @Option(help: "Also send reports as OpenTelemetry log records to this OTLP/HTTP endpoint (http://HOST:4318/v1/logs, a collector).")
    var otlpEndpoint: String?

    @Option(help: "How many older keys each rotation keeps for opening.")
    var keep: Int = 4

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "notice"

    @Option(help: ArgumentHelp("How long a new connection may take to say hello, in milliseconds.", visibility: .hidden))
    var handshakeTimeout: Int = 5_000

    @Flag(help: ArgumentHelp("Take peers' pidfds with pidfd_open at accept even where SO_PEERPIDFD exists (as on kernels before 6.5).", visibility: .hidden))
    var noPeerPidfd = false

    @Option(name: .customLong("flatpak-installation"), help: "A Flatpak installation whose apps the agent trusts (repeatable; an app's files must be under INSTALLATION/app/APP-ID/, owned by root or the agent's user). Default: /var/lib/flatpak.")
    var flatpakInstallations: [String] = []

    @Option(help: "The folder holding the users' runtime folders, where Flatpak keeps its instance records (ROOT/UID/.flatpak/INSTANCE/). Default: /run/user.")
    var flatpakRuntimeRoot: String = "/run/user"

    @Flag(help: "Let other users connect (socket mode 0666); the agent still identifies each process. Default: owner only (0600).")
    var allowOtherUsers = false

    @Option(help: "Start a new acknowledgment or audit log file past this many bytes (at least 4096).")
    var logMaxBytes: Int = 16 << 20

    @Option(help: "Old log files kept per log (audit.jsonl.1, ...); 0 keeps none.")
    var logKeep: Int = 3

    @Flag(help: "Do not start: ask the running agent to re-read its device policy and push it.")
    var reload = false

    @Flag(help: "Do not start: print the running agent's status.")
    var status = false

    /// `--reload` and `--status`: one admin request to the running agent.
    static func administer(reload: Bool, socketPath: String) throws {
        do {
            let response = try AdminClient.send(AdminRequest(command: reload ? "reload" : "status"), socketPath: socketPath)
            print(response.message)
            print("push \(response.push), key \(response.currentKeyID ?? "-"), entitled: \(response.entitledApps.joined(separator: ", "))")
            print("connected: \(response.connectedApps.isEmpty ? "none" : response.connectedApps.joined(separator: ", "))")
            if !response.ok { throw ExitCode(1) }
        } catch let error as AgentClientError {
            FileHandle.standardError.write(Data("sharebrokerd: \(error)\n".utf8))
            throw ExitCode(69)
        }
    }

    func run() throws {
        // Before any thread exists: SIGHUP, SIGTERM and SIGINT are taken by the server's signal
        // thread (sigwait), so every thread must block them.
        AgentServer.blockHandledSignals()
        let level = Logger.Level(rawValue: logLevel) ?? .notice
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        if reload || status {
            // An administrator's root shell reaches the system service with no variable set
            // (AgentPaths.administrationSocket).
            try Self.administer(reload: reload, socketPath: socket ?? AgentPaths.administrationSocket)
            return
        }
        if state == nil || socket == nil, ProcessInfo.processInfo.environment["SHAREBROKER_SOCKET"] == nil || state == nil {
            do {
                _ = try AgentPaths.resolvedRuntimeDirectory()
            } catch {
                FileHandle.standardError.write(Data("sharebrokerd: \(error)\n".utf8))
                throw ExitCode(78)
            }
        }
        let socketPath = socket ?? AgentPaths.socket
        let reports: AgentSystemLog
        switch systemLog {
        case "auto": reports = .automatic
        case "off": reports = .off
        case "journald": reports = .journald(socket: systemLogSocket ?? "/run/systemd/journal/socket")
        case "syslog": reports = .syslog(socket: systemLogSocket ?? "/dev/log")
        default: throw ValidationError("--system-log must be auto, journald, syslog or off; got '\(systemLog)'")
        }
        if let otlpEndpoint, let problem = AgentConfiguration.problem(withOTLPEndpoint: otlpEndpoint) {
            throw ValidationError(problem)
        }
        var configuration = AgentConfiguration(
            stateDirectory: state ?? AgentPaths.state, socketPath: socketPath, policyFile: policy,
            policyDirectory: policyDir.isEmpty ? nil : policyDir, systemLog: reports, otlpEndpoint: otlpEndpoint,
            keepingRecent: keep, socketMode: allowOtherUsers ? 0o666 : 0o600,
            handshakeTimeoutMilliseconds: handshakeTimeout)
        configuration.usePeerPidfd = !noPeerPidfd
        for installation in flatpakInstallations where !installation.hasPrefix("/") {
            throw ValidationError("--flatpak-installation must be an absolute path; got '\(installation)'")
        }
        configuration.flatpak = FlatpakSettings(
            installations: flatpakInstallations.isEmpty ? FlatpakSettings.standard.installations : flatpakInstallations,
            runtimeRoot: flatpakRuntimeRoot)
        configuration.logMaxBytes = logMaxBytes
        configuration.logFilesKept = logKeep
        // A few malloc arenas for the agent's many connection threads, not one per core and
        // thread group: memory a client's large frame used is reused by the next, not held in an
        // arena of its own (docs/THREAT-MODEL.md, "Memory after the welcome").
        ProcessHardening.limitMallocArenas(4)
        // Before any key is loaded: other processes of the agent's user can neither ptrace it
        // nor read its memory through /proc, and it leaves no core dump.
        ProcessHardening.denyInspection()
        if let otlpEndpoint { OTLPProbe.start(endpoint: otlpEndpoint, logger: Logger(label: "sharebrokerd")) }
        do {
            let core = try AgentCore(configuration: configuration)
            let server = try AgentServer.start(core: core)
            try server.waitUntilStopped()
        } catch let error as AgentError {
            FileHandle.standardError.write(Data("sharebrokerd: \(error)\n".utf8))
            throw ExitCode(71)
        }
    }
}

ShareBrokerDaemon.main()
