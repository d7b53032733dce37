import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentClient
import ShareBrokerAgentProtocol
import ShareBrokerLinux
import ShareBrokerTesting

/// How a host command hands things to other apps.
enum HandOffMode: String, ExpressibleByArgument, CaseIterable {
    /// The desktop when a session is available, else the folder.
    case auto
    /// Start the target's desktop entry through GIO (private copy or dummy under
    /// `$XDG_RUNTIME_DIR/app/<id>/`; URLs through the `x-scheme-handler` associations).
    case desktop
    /// Write into a folder and start nothing (URLs: the device table, nothing opened).
    case folder

    /// Whether a desktop session is available: a runtime folder and a display.
    static var desktopSessionAvailable: Bool {
        let env = ProcessInfo.processInfo.environment
        guard let runtime = env["XDG_RUNTIME_DIR"], !runtime.isEmpty else { return false }
        return !(env["DISPLAY"] ?? "").isEmpty || !(env["WAYLAND_DISPLAY"] ?? "").isEmpty
    }

    var usesDesktop: Bool {
        switch self {
        case .auto: Self.desktopSessionAvailable
        case .desktop: true
        case .folder: false
        }
    }

    /// `auto` with no desktop session and no folder asked for: starting an app is impossible, and
    /// writing into a folder instead would report a hand-off while no app was started. The
    /// command says so (exit 69) instead of switching modes silently.
    static let noSessionMessage = "no desktop session (XDG_RUNTIME_DIR and DISPLAY or WAYLAND_DISPLAY are not set), so no app "
        + "can be started; run inside a desktop session, or give --handoff folder to hand over into a folder without starting an app"
}

/// `sharebroker open-in FILE --to APP`: hands a document to another app through the broker and
/// prints the path of what the target gets: the document, or an empty dummy when blocked. On a
/// desktop the target's desktop entry is started with it.
struct OpenInCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-in",
        abstract: "Hand FILE to another app through the broker; print the path to hand over (the document, or a dummy).",
        discussion: """
            With --handoff desktop (the default when XDG_RUNTIME_DIR and DISPLAY or WAYLAND_DISPLAY are \
            set) APP-ID is a desktop app id without ".desktop" (org.gnome.TextEditor): its desktop entry \
            is started with a private copy of FILE, or an empty dummy when blocked; --via activitySheet \
            (without --to) hands FILE to whatever app the desktop opens its type with (never under a \
            whitelist). With --handoff folder (or --outbox) nothing is started. --handoff auto outside a \
            desktop session, without --outbox, is an error (69). Exit status: 0 delivered, 3 blocked (a \
            dummy was handed over, or nothing under a whitelist), 64 bad input (unknown or broken desktop \
            entry, bad name), 69 agent unavailable or no desktop session, 74 the file cannot be read or \
            copied, 77 not a registered app.
            """)

    @Argument(help: "The document to hand over.")
    var file: String

    @Option(help: "The target app's id (a desktop app id on the desktop). Not needed with --via activitySheet.")
    var to: String?

    @Option(help: "documentInteraction, previewController or activitySheet.")
    var via: String = TransferChannel.documentInteraction.rawValue

    @Option(help: "auto (desktop in a desktop session unless --outbox is given), desktop or folder.")
    var handoff: HandOffMode = .auto

    @Option(help: "Folder mode: where handed-over files go (each hand-over in a fresh sub-folder). Default: RUNTIME/outbox/PID.")
    var outbox: String?

    @OptionGroup var host: HostOptions

    func validate() throws {
        if to == nil && via != TransferChannel.activitySheet.rawValue {
            throw ValidationError("--to APP-ID is required (except with --via activitySheet)")
        }
        if let to, via == TransferChannel.activitySheet.rawValue {
            throw ValidationError("--to \(to) cannot go with --via activitySheet: on the activity sheet the user picks the app "
                                  + "after the decision; drop --to, or use --via documentInteraction to hand over to \(to)")
        }
    }

    func run() throws {
        guard let channel = TransferChannel(rawValue: via) else {
            throw ValidationError("unknown channel '\(via)'; use \(TransferChannel.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        // --outbox names a folder: the folder mode, unless --handoff desktop says otherwise.
        if handoff == .auto && outbox == nil && !HandOffMode.desktopSessionAvailable {
            HostIO.error("sharebroker open-in: \(HandOffMode.noSessionMessage); nothing was handed over")
            throw ExitCode(HostExit.unavailable)
        }
        if handoff == .desktop || (handoff == .auto && outbox == nil) {
            try runOnDesktop(channel)
        } else {
            try runIntoFolder(channel)
        }
    }

    private func runOnDesktop(_ channel: TransferChannel) throws {
        let desktop: DesktopHandOff
        do {
            desktop = try DesktopHandOff()
        } catch {
            HostIO.error("sharebroker open-in: \(error)")
            throw ExitCode(HostExit.ioError)
        }
        let session: HostSession
        switch HostSession.open(host) {
        case .success(let opened): session = opened
        case .failure(let failure):
            HostIO.error("sharebroker open-in: \(failure); nothing was handed over")
            throw ExitCode(failure.exitCode)
        }
        let target = to ?? DesktopHandOff.unknownTarget
        let result: DesktopHandOffResult
        do {
            result = try desktop.openIn(filePath: Self.rawArgument(file), target: target, via: channel, broker: session.broker)
        } catch {
            HostIO.error("sharebroker open-in: \(error)")
            _ = session.confirm(host)
            switch error {
            case .documentUnreadable, .documentNotRegular, .copyFailed, .runtimeFolder, .launchFailed:
                throw ExitCode(HostExit.ioError)
            default:
                throw ExitCode(HostExit.usage)
            }
        }
        let confirmed = session.confirm(host)
        HostIO.out(bytes: result.pathBytes)
        let who = result.started ?? target
        if result.transfer.delivered {
            HostIO.error("delivered to \(who), started with a private copy (\(result.transfer.decision.rule.rawValue))")
        } else {
            HostIO.error("blocked (\(result.transfer.decision.rule.rawValue)): " +
                         (result.started == nil ? "nothing was started" : "\(who) was started with an empty dummy") +
                         (confirmed ? "; the agent logged the attempt" : ""))
            throw ExitCode(confirmed ? HostExit.blocked : HostExit.unconfirmed)
        }
    }

    /// The bytes of the argument that ArgumentParser gave as `value`: file names are bytes, and
    /// the parser decodes arguments as UTF-8, showing bytes that are not as U+FFFD. Such a value
    /// is matched back to the one raw argument that decodes to it.
    static func rawArgument(_ value: String) -> [UInt8] {
        guard value.unicodeScalars.contains("\u{FFFD}") else { return Array(value.utf8) }
        var matches = Set<[UInt8]>()
        for index in 1 ..< Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            let raw = Array(UnsafeRawBufferPointer(start: argument, count: strlen(argument)))
            if String(decoding: raw, as: UTF8.self) == value { matches.insert(raw) }
        }
        return matches.count == 1 ? matches.first ?? Array(value.utf8) : Array(value.utf8)
    }

    /// The bytes of the file at `path` (given as bytes), or `nil` when it cannot be read.
    static func contents(ofPath path: [UInt8]) -> [UInt8]? {
        let fd = open(path.map { CChar(bitPattern: $0) } + [0], O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { return out }
            if n < 0 { if errno == EINTR { continue } else { return nil } }
            out += chunk[0 ..< n]
        }
    }

    private func runIntoFolder(_ channel: TransferChannel) throws {
        guard let data = Self.contents(ofPath: Self.rawArgument(file)) else {
            HostIO.error("sharebroker open-in: cannot read \(file); check the path")
            throw ExitCode(HostExit.ioError)
        }
        let folder: FolderOutbox
        do {
            folder = try FolderOutbox(directory: (outbox ?? AgentPaths.runtimeDirectory + "/outbox") + "/\(getpid())")
        } catch {
            HostIO.error("sharebroker open-in: \(error)")
            throw ExitCode(HostExit.ioError)
        }
        let session: HostSession
        switch HostSession.open(host, outbox: folder) {
        case .success(let opened): session = opened
        case .failure(let failure):
            HostIO.error("sharebroker open-in: \(failure); nothing was handed over")
            throw ExitCode(failure.exitCode)
        }
        let target = to ?? DesktopHandOff.unknownTarget
        let name = URL(fileURLWithPath: file).lastPathComponent
        let result: TransferResult
        do {
            result = try session.broker.openIn(data, named: name, target: target, via: channel)
        } catch {
            HostIO.error("sharebroker open-in: \(error)")
            _ = session.confirm(host)
            throw ExitCode(HostExit.ioError)
        }
        let confirmed = session.confirm(host)
        HostIO.out(result.path)
        if result.delivered {
            HostIO.error("delivered for \(target) into the folder (\(result.decision.rule.rawValue)); folder mode: no app was started")
        } else {
            HostIO.error("blocked (\(result.decision.rule.rawValue)): \(target) gets an empty dummy in the folder; no app was started" +
                         (confirmed ? "; the agent logged the attempt" : ""))
            throw ExitCode(confirmed ? HostExit.blocked : HostExit.unconfirmed)
        }
    }
}

/// `sharebroker open-url URL`: opens a URL in the app that handles its scheme, if the policy
/// allows (custom schemes under the Open In rules, `mailto:` under the mail rules).
struct OpenURLCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-url",
        abstract: "Open URL in the app that handles its scheme, if the policy allows; print that app's id.",
        discussion: """
            With --handoff desktop (the default in a desktop session) the handler is the desktop's \
            x-scheme-handler/SCHEME association (as `xdg-mime query default` answers) and it is started \
            with the URL; with --handoff folder the device document's table names it and nothing is \
            started (exit 0 means allowed). --handoff auto outside a desktop session is an error (69). \
            Exit status: 0 opened, 1 no app handles the scheme, 3 blocked, 64 not a URL or a web URL, 69 \
            agent unavailable or no desktop session, 74 the handler could not be started, 77 not a \
            registered app.
            """)

    @Argument(help: "The URL (mailto:, or a custom scheme such as sheets:).")
    var url: String

    @Option(help: "auto, desktop or folder.")
    var handoff: HandOffMode = .auto

    @OptionGroup var host: HostOptions

    func run() throws {
        if handoff == .auto && !HandOffMode.desktopSessionAvailable {
            HostIO.error("sharebroker open-url: \(HandOffMode.noSessionMessage); nothing was opened")
            throw ExitCode(HostExit.unavailable)
        }
        let desktop = handoff.usesDesktop ? DesktopURLOpener() : nil
        let opener: any URLOpener = desktop ?? RecordingURLOpener()
        let session: HostSession
        switch HostSession.open(host, urlOpener: opener) {
        case .success(let opened): session = opened
        case .failure(let failure):
            HostIO.error("sharebroker open-url: \(failure); nothing was opened")
            throw ExitCode(failure.exitCode)
        }
        let decision: URLDecision
        do {
            decision = try session.broker.openURL(url)
        } catch {
            HostIO.error("sharebroker open-url: \(error)")
            _ = session.confirm(host)
            throw ExitCode(HostExit.usage)
        }
        let confirmed = session.confirm(host)
        switch decision.outcome {
        case .opened:
            if let failure = desktop?.failures.first {
                HostIO.error("sharebroker open-url: allowed (\(decision.decision.rule.rawValue)), but \(failure.error)")
                throw ExitCode(HostExit.ioError)
            }
            HostIO.out(decision.handler ?? "")
            HostIO.error(desktop == nil
                ? "allowed for \(decision.handler ?? "?") (\(decision.decision.rule.rawValue)); folder mode: nothing was opened"
                : "opened in \(decision.handler ?? "?") (\(decision.decision.rule.rawValue))")
        case .blocked:
            HostIO.error("blocked (\(decision.decision.rule.rawValue)): "
                         + (decision.intendedHandler.map { "\($0) was not started" } ?? "nothing was opened") +
                         (confirmed ? "; the agent logged the attempt" : ""))
            throw ExitCode(confirmed ? HostExit.blocked : HostExit.unconfirmed)
        case .unhandled:
            HostIO.error("no app handles this URL's scheme")
            throw ExitCode(HostExit.nothing)
        }
    }
}
