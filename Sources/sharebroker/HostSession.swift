import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentClient
import ShareBrokerAgentProtocol
import ShareBrokerLinux

/// Options every host command shares: where the agent and the host pasteboard are.
struct HostOptions: ParsableArguments {
    @Option(help: "The agent's socket. Default: $SHAREBROKER_SOCKET, else RUNTIME/agent.sock.")
    var socket: String?

    @Option(name: .customLong("pasteboard"),
            help: "The general pasteboard: x11, wayland or file. Default: wayland when WAYLAND_DISPLAY is set (x11 through Xwayland when the compositor offers no data-control protocol and DISPLAY is set), else x11 when DISPLAY is set, else file ($SHAREBROKER_PASTEBOARD set means file). A path here means the file at that path.")
    var pasteboardChoice: String?

    @Option(help: "The host pasteboard file (--pasteboard file). Default: $SHAREBROKER_PASTEBOARD, else RUNTIME/pasteboard.")
    var pasteboardFile: String?

    @Option(help: "How long to wait for the agent (handshake, and confirmations before exiting), in milliseconds.")
    var timeout: Int = 5_000

    var socketPath: String { socket ?? AgentPaths.socket }
    var pasteboardPath: String {
        if let pasteboardFile { return pasteboardFile }
        if let pasteboardChoice, PasteboardKind(rawValue: pasteboardChoice) == nil { return pasteboardChoice }
        return AgentPaths.pasteboard
    }

    /// The pasteboard chosen by `--pasteboard`, else by the environment.
    var pasteboardKind: Result<PasteboardKind, HostSession.Failure> {
        PasteboardKind.choose(pasteboardChoice, pasteboardFileGiven: pasteboardFile != nil,
                              environment: ProcessInfo.processInfo.environment)
    }
}

/// Which general pasteboard a host command uses.
enum PasteboardKind: String, CaseIterable {
    /// The X11 CLIPBOARD and PRIMARY selections (`ShareBrokerLinux.X11Pasteboard`).
    case x11
    /// The Wayland clipboard and primary selection through data-control, ext or wlr
    /// (`ShareBrokerLinux.WaylandPasteboard`).
    case wayland
    /// The file only ShareBroker's own processes read (`FilePasteboard`), the headless default.
    case file

    /// `--pasteboard` when given (a value that is not a kind is a file path); else the file when
    /// a pasteboard file is named; else wayland when `WAYLAND_DISPLAY` is set, x11 when
    /// `DISPLAY` is set, else the file.
    static func choose(_ option: String?, pasteboardFileGiven: Bool, environment: [String: String]) -> Result<PasteboardKind, HostSession.Failure> {
        if let option {
            if let kind = PasteboardKind(rawValue: option) { return .success(kind) }
            guard option.contains("/") else {
                return .failure(.setup("--pasteboard \(option): expected x11, wayland, file, or a file path"))
            }
            return .success(.file)
        }
        if pasteboardFileGiven || !(environment["SHAREBROKER_PASTEBOARD"] ?? "").isEmpty { return .success(.file) }
        if !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty { return .success(.wayland) }
        if !(environment["DISPLAY"] ?? "").isEmpty { return .success(.x11) }
        return .success(.file)
    }
}

extension HostOptions {
    /// The pasteboard `--pasteboard` / `--pasteboard-file` / the environment choose (Wayland
    /// chosen by the environment is the library's automatic choice: X11 through Xwayland when
    /// the compositor offers no data-control protocol).
    var pasteboard: Result<PasteboardChoice, HostSession.Failure> {
        pasteboardKind.map { kind in
            switch kind {
            case .x11: .x11
            case .wayland: pasteboardChoice == nil ? .automatic : .wayland
            case .file: .file(path: pasteboardPath)
            }
        }
    }
}

extension DesktopPasteboard {
    /// Opens the pasteboard the options choose.
    static func open(_ options: HostOptions) -> Result<DesktopPasteboard, HostSession.Failure> {
        options.pasteboard.flatMap { choice in
            do throws(LinuxSetupError) {
                let pasteboard = try DesktopPasteboard(choice)
                if let notice = pasteboard.notice { HostIO.error("sharebroker: \(notice)") }
                return .success(pasteboard)
            } catch {
                return .failure(.setup(error.description))
            }
        }
    }

    /// After a copy: a desktop clipboard is served by the copying process, so on X11 this hands
    /// the item to a running clipboard manager, or else serves it until another app copies; on
    /// Wayland it serves it until another app copies.
    func holdAfterCopy() {
        if let wayland {
            // Wayland has no clipboard-manager hand-off: the compositor drops a selection whose
            // client is gone, so this process serves it (as wl-copy does) until it is replaced.
            HostIO.error("sharebroker: serving the Wayland clipboard until another app copies")
            while wayland.ownsClipboard { usleep(50_000) }
            wayland.close()
            return
        }
        guard let x11 else { return }
        if x11.handOff(timeout: .seconds(1)) {
            HostIO.error("sharebroker: the clipboard manager keeps the item")
        } else {
            HostIO.error("sharebroker: serving the X11 clipboard until another app copies (no clipboard manager runs)")
            while x11.ownsClipboard { usleep(50_000) }
        }
        _ = x11.close(handOffTimeout: .zero)
    }
}

/// Exit statuses of the host commands (sysexits where one fits).
enum HostExit {
    /// The policy blocked the transfer (nothing written, or a dummy handed over).
    static let blocked: Int32 = 3
    /// Nothing readable on the pasteboard.
    static let nothing: Int32 = 1
    /// The agent is unavailable (EX_UNAVAILABLE).
    static let unavailable: Int32 = 69
    /// The agent refused this process: not a registered app (EX_NOPERM).
    static let refused: Int32 = 77
    /// A file could not be read or written (EX_IOERR).
    static let ioError: Int32 = 74
    /// The agent did not confirm a record it must keep (EX_TEMPFAIL).
    static let unconfirmed: Int32 = 75
    /// Bad input (an unknown or broken desktop entry, a bad document name): EX_USAGE.
    static let usage: Int32 = 64
}

/// The delegate of a host command: it applies every policy (acknowledging "applied") and
/// remembers what it was told.
final class HostDelegate: ShareBrokerDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var events: [String] = []
    /// Called with every recorded event (the watch command prints them).
    let onEvent: (@Sendable (String) -> Void)?

    init(onEvent: (@Sendable (String) -> Void)? = nil) {
        self.onEvent = onEvent
    }

    func record(_ event: String) {
        lock.lock()
        events.append(event)
        lock.unlock()
        onEvent?(event)
    }

    var recorded: [String] {
        lock.lock()
        defer { lock.unlock() }
        return events
    }

    func appConnectIsReady() { record("ready") }
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment {
        record("auth=\(state)")
        return .applied
    }
    func configChanged(to config: [String: String]) -> Acknowledgment { .applied }
    func openInPolicyChanged(to policy: OpenInPolicy, whitelist: Set<String>) -> Acknowledgment { .applied }
    func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment { .applied }
    func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment { .applied }
    func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment { .applied }
    func secureServicesAvailabilityChanged(to availability: SecureServicesAvailability) {
        record("secureServices=\(availability == .available ? "available" : "unavailable")")
    }
}

/// A host process as a managed app: identified by the agent from its executable, with its
/// policy applied and the group keys cached, over the host pasteboard (``ManagedApp``).
struct HostSession {
    let app: ManagedApp
    let delegate: HostDelegate

    var client: AgentClient { app.agent }
    var broker: ShareBroker { app.broker }
    var pasteboard: DesktopPasteboard { app.pasteboard }
    var welcome: WelcomeMessage { app.welcome }

    /// Why a host command could not become a managed app.
    enum Failure: Error, CustomStringConvertible {
        case agent(AgentClientError)
        case setup(String)

        var description: String {
            switch self {
            case .agent(let e): e.description
            case .setup(let why): why
            }
        }

        var exitCode: Int32 {
            switch self {
            case .agent(.refused): HostExit.refused
            case .agent: HostExit.unavailable
            case .setup: HostExit.ioError
            }
        }
    }

    /// The pasteboard the options choose, or exit with a message.
    static func hostPasteboard(_ options: HostOptions) throws -> DesktopPasteboard {
        switch DesktopPasteboard.open(options) {
        case .success(let pasteboard): return pasteboard
        case .failure(let failure):
            HostIO.error("sharebroker: \(failure)")
            throw ExitCode(failure.exitCode)
        }
    }

    /// The host pasteboard file (status and watch show it).
    static func pasteboard(_ options: HostOptions) throws -> FilePasteboard {
        do {
            return try FilePasteboard(path: options.pasteboardPath)
        } catch {
            HostIO.error("sharebroker: \(error)")
            throw ExitCode(HostExit.ioError)
        }
    }

    /// Attaches this process to the agent as a managed app (``ManagedApp/attach(_:delegate:)``)
    /// over the pasteboard the options choose, without reconnecting (a command is short-lived).
    /// `secureFileDirectories` are the folders of encrypted files the command uses (the broker's
    /// configuration names them before it starts).
    static func open(_ options: HostOptions, outbox: (any Outbox)? = nil,
                     urlOpener: (any URLOpener)? = nil, secureFileDirectories: [String] = []) -> Result<HostSession, Failure> {
        let choice: PasteboardChoice
        switch options.pasteboard {
        case .success(let chosen): choice = chosen
        case .failure(let failure): return .failure(failure)
        }
        let delegate = HostDelegate()
        do {
            var configuration = ManagedApp.Configuration(
                socketPath: options.socketPath, handshakeTimeoutMilliseconds: options.timeout, reconnects: false,
                pasteboard: choice, broker: ShareBroker.Configuration(secureFileDirectories: secureFileDirectories))
            configuration.outbox = outbox
            configuration.urlOpener = urlOpener
            let app = try ManagedApp.attach(configuration, delegate: delegate)
            if let notice = app.pasteboard.notice { HostIO.error("sharebroker: \(notice)") }
            return .success(HostSession(app: app, delegate: delegate))
        } catch {
            switch error {
            case .agent(let agentError): return .failure(.agent(agentError))
            case .setup(let why): return .failure(.setup(why))
            case .start(let startError): return .failure(.setup(startError.description))
            }
        }
    }

    /// Waits for the agent to confirm every acknowledgment and audit record sent; says so on
    /// standard error when it did not.
    func confirm(_ options: HostOptions) -> Bool {
        let confirmed = client.flush(timeoutMilliseconds: options.timeout) && client.failedBatches.isEmpty
        if !confirmed {
            HostIO.error("sharebroker: the agent did not confirm \(client.unconfirmedBatches + client.failedBatches.count) record batch(es); they may be lost")
        }
        client.close()
        return confirmed
    }
}

/// Output helpers.
enum HostIO {
    static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    static func out(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Writes `bytes` and a newline as they are (a path whose name is not UTF-8).
    static func out(bytes: [UInt8]) {
        FileHandle.standardOutput.write(Data(bytes + [0x0A]))
    }

    /// Reads standard input, at most `limit` bytes (one more tells it is over).
    static func readStandardInput(limit: Int) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while out.count <= limit {
            let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, min($0.count, limit + 1 - out.count)) }
            if n < 0 {
                if errno == EINTR { continue }
                break
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    static func hex(_ id: UInt32) -> String {
        let digits = String(id, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }
}
