import Dispatch
import Foundation
import ShareBroker
@testable import ShareBrokerLinux
import Synchronization
import Testing
import ShareBrokerTesting

/// The real tools the X11 tests drive, and why the tests skip when one is missing.
enum X11Tools {
    static func find(_ name: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(folder)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    static let xvfb = find("Xvfb")
    static let xclip = find("xclip")
    static let xsel = find("xsel")
    static let xauth = find("xauth")
    static var available: Bool { xvfb != nil && xclip != nil && xsel != nil }
    static let skipReason: Comment = "Xvfb, xclip or xsel is not installed (make deps installs xvfb xclip xsel)"
}

/// A child process started with posix_spawn: standard input and output are pipes (or
/// /dev/null), standard error goes to a private temporary file (``errorOutput``, for failure
/// messages). Reaped by ``wait(timeout:)`` or ``kill()``.
final class Child: @unchecked Sendable {
    let pid: pid_t
    let output: Int32
    private let errorPath: String
    private var reaped = false
    private(set) var status: Int32 = -1

    init(_ path: String, _ arguments: [String], environment: [String: String], input: [UInt8]?) throws {
        var outPipe: [Int32] = [0, 0]
        var inPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0 else { throw HarnessError("pipe failed") }
        if input != nil { guard pipe(&inPipe) == 0 else { throw HarnessError("pipe failed") } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
            posix_spawn_file_actions_addclose(&actions, inPipe[1])
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_addclose(&actions, outPipe[0])
        errorPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("sharebroker-child-\(UUID().uuidString).stderr").path
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
        close(outPipe[1])
        if input != nil { close(inPipe[0]) }
        guard rc == 0 else {
            close(outPipe[0])
            if input != nil { close(inPipe[1]) }
            throw HarnessError("could not start \(path): \(rc)")
        }
        self.pid = pid
        output = outPipe[0]
        if let input {
            let fd = inPipe[1]
            Thread.detachNewThread {
                var done = 0
                while done < input.count {
                    let n = input.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
                    if n <= 0 { break }
                    done += n
                }
                close(fd)
            }
        }
    }

    deinit {
        kill()
        close(output)
        unlink(errorPath)
    }

    /// What the child wrote to standard error so far (for failure messages).
    var errorOutput: String {
        (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    }

    /// Reads standard output until end of file or the deadline.
    func readAll(until deadline: ContinuousClock.Instant) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while ContinuousClock.now < deadline {
            var pfd = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ms = Int32(clamping: ContinuousClock.now.duration(to: deadline).milliseconds + 1)
            guard poll(&pfd, 1, ms) > 0 else { continue }
            let n = read(output, &buffer, buffer.count)
            if n <= 0 { break }
            out.append(contentsOf: buffer[0..<n])
        }
        return out
    }

    /// Reads one line of standard output (without the newline).
    func readLine(until deadline: ContinuousClock.Instant) -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while ContinuousClock.now < deadline {
            var pfd = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            if read(output, &byte, 1) != 1 || byte == 10 { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// Waits for the exit; `false` on timeout.
    func wait(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !reaped {
            var raw: Int32 = 0
            let r = waitpid(pid, &raw, WNOHANG)
            if r == pid {
                reaped = true
                status = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
                return true
            }
            if r < 0 { reaped = true; return true }
            if ContinuousClock.now >= deadline { return false }
            usleep(1_000)
        }
        return true
    }

    func signal(_ number: Int32) { if !reaped { _ = Glibc.kill(pid, number) } }

    func kill() {
        guard !reaped else { return }
        _ = Glibc.kill(pid, SIGKILL)
        _ = wait(timeout: .seconds(5))
    }
}

/// A private Xvfb display, started on a free display number (`-displayfd`) and killed when dropped.
final class XvfbDisplay: @unchecked Sendable {
    let server: Child
    let name: String

    /// Starts Xvfb; with `authority`, an authority file (`xauth` format) whose keys the server
    /// requires of every client (`-auth`).
    init(authority: String? = nil) throws {
        guard let xvfb = X11Tools.xvfb else { throw HarnessError("Xvfb is not installed") }
        // -noreset: by default an X server resets when its last client disconnects, and a
        // client connecting during the reset is refused. The tests' short-lived xclip and xsel
        // clients made that happen under load ("could not connect to the X server" from a copier
        // started while an `xclip -o` exited; reproduced 5 times in 120 rounds of
        // copy-while-polling under CPU load, 0 in 120 with -noreset).
        server = try Child(xvfb, ["-noreset", "-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "64x64x24"]
                               + (authority.map { ["-auth", $0] } ?? []),
                           environment: ["PATH": "/usr/bin:/bin"], input: nil)
        // Xvfb writes the display number and a newline once it accepts clients.
        let number = server.readLine(until: .now + .seconds(10))
        guard !number.isEmpty, Int(number) != nil else {
            server.kill()
            throw HarnessError("Xvfb did not report a display number")
        }
        name = ":" + number
        // A start counts once a client can connect.
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            do {
                let connection = try XConnection(display: name)
                connection.disconnect()
                break
            } catch {
                // The server answers (and, with an authority file, refuses this process).
                if case .notAuthorized = error { break }
            }
            guard ContinuousClock.now < deadline else {
                server.kill()
                throw HarnessError("Xvfb reported \(name) but no client could connect to it: \(server.errorOutput)")
            }
            usleep(20_000)
        }
    }

    deinit { server.kill() }

    /// Runs a tool against this display; returns its exit status and standard output.
    @discardableResult
    func run(_ tool: String?, _ arguments: [String], input: [UInt8]? = nil, timeout: Duration = .seconds(10)) throws -> (status: Int32, output: [UInt8]) {
        guard let tool else { throw HarnessError("tool not installed") }
        let child = try start(tool, arguments, input: input)
        let deadline = ContinuousClock.now + timeout
        // xclip -i forks a child that keeps standard output open: do not wait for end of file.
        let output = arguments.contains("-i") ? [] : child.readAll(until: deadline)
        guard child.wait(timeout: ContinuousClock.now.duration(to: deadline)) else {
            child.kill()
            throw HarnessError("\(tool) \(arguments) did not finish in \(timeout)")
        }
        return (child.status, output)
    }

    /// Starts a tool against this display, in an environment of its own: the display, a plain
    /// PATH, and the sanitizer settings of the test run (the ASan run's LeakSanitizer
    /// suppressions of the toolchain's own leaks, which the tools built with it need too).
    func start(_ tool: String, _ arguments: [String], input: [UInt8]? = nil) throws -> Child {
        var environment = ["DISPLAY": name, "PATH": "/usr/bin:/bin"]
        for key in ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"] {
            if let value = ProcessInfo.processInfo.environment[key] { environment[key] = value }
        }
        return try Child(tool, arguments, environment: environment, input: input)
    }

    /// `xclip -o` of `selection` and `target` (nil: xclip's default); empty when it fails.
    func xclipOut(_ selection: String = "clipboard", target: String? = nil) throws -> [UInt8] {
        var arguments = ["-o", "-selection", selection]
        if let target { arguments += ["-t", target] }
        let result = try run(X11Tools.xclip, arguments)
        return result.status == 0 ? result.output : []
    }

    /// `xclip -i`: an unmanaged app copies `text` (xclip serves it from a forked child);
    /// returns once xclip's content is readable.
    func xclipIn(_ text: String, selection: String = "clipboard") throws {
        try run(X11Tools.xclip, ["-i", "-selection", selection], input: Array(text.utf8))
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if try xclipOut(selection) == Array(text.utf8) { return }
            usleep(10_000)
        }
        throw HarnessError("xclip -i did not take the \(selection) selection")
    }

    /// `xsel -o` of the clipboard (`-b`) or primary (`-p`).
    func xselOut(_ flag: String = "-b") throws -> [UInt8] {
        let result = try run(X11Tools.xsel, [flag, "-o"])
        return result.status == 0 ? result.output : []
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A delegate that applies every policy.
final class ApplyingDelegate: ShareBrokerDelegate {
    func appConnectIsReady() {}
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
    func configChanged(to config: [String: String]) -> Acknowledgment { .applied }
    func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment { .applied }
    func copyAttemptedWhenUnauthorized(policy: PasteboardPolicy) {}
    func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment { .applied }
    func secureServicesAvailabilityChanged(to availability: SecureServicesAvailability) {}
    func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment { .applied }
    func logLevelChanged(to level: LogLevel) {}
    func willResignActive() {}
    func didBecomeActive() {}
}

/// A managed app on the X display: a broker whose general pasteboard is an ``X11Pasteboard``.
struct ManagedX11App {
    let broker: ShareBroker
    let pasteboard: X11Pasteboard
    let delegate = ApplyingDelegate()

    init(_ appID: String, display: XvfbDisplay, custodian: InProcessKeyCustodian, policy: PasteboardPolicy,
         config: [String: String] = [:], transferTimeout: Duration = .seconds(5)) throws {
        pasteboard = try X11Pasteboard(configuration: .init(display: display.name, transferTimeout: transferTimeout))
        broker = ShareBroker(appID: appID, platform: Platform(
            outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: RecordingReportSink(),
            pasteboard: pasteboard, secureServices: custodian))
        pasteboard.followPlaceholder(of: broker)
        try broker.start(delegate: delegate)
        try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: policy, config: config))
    }
}

extension Array where Element == UInt8 {
    /// Whether any `window`-byte run of `secret` appears in these bytes.
    func containsRun(of secret: [UInt8], window: Int = 8) -> Bool {
        guard secret.count >= window, count >= window else { return false }
        var runs = Set<ArraySlice<UInt8>>()
        for start in 0...(secret.count - window) { runs.insert(secret[start..<(start + window)]) }
        for start in 0...(count - window) where runs.contains(self[start..<(start + window)]) { return true }
        return false
    }
}

/// A minimal ICCCM clipboard manager for the tests (Debian's xclipboard does not speak
/// `SAVE_TARGETS`): owns `CLIPBOARD_MANAGER`; on `SAVE_TARGETS` it reads every target the
/// `CLIPBOARD` owner offers, takes `CLIPBOARD` with those bytes, and confirms.
final class TestClipboardManager: @unchecked Sendable {
    let manager: SelectionServer
    let keeper: SelectionServer
    let display: String
    let saved = SavedTargets()

    final class SavedTargets: Sendable {
        let names = Mutex<[String]>([])
    }

    init(display: String) throws {
        self.display = display
        manager = try SelectionServer(display: display, selections: ["CLIPBOARD_MANAGER"], transferTimeout: .seconds(5))
        keeper = try SelectionServer(display: display, selections: ["CLIPBOARD"], transferTimeout: .seconds(5))
        let keeper = keeper
        let saved = saved
        manager.unhandledRequest = { server, request in
            Thread.detachNewThread {
                var success = false
                if let reader = try? SelectionReader(display: display, limit: SealedSet.maxSize) {
                    let conn = reader.conn
                    let clipboard = conn.atom("CLIPBOARD")
                    let skip = Set(["TARGETS", "TIMESTAMP", "MULTIPLE", "SAVE_TARGETS", "DELETE"])
                    var offer = SelectionOffer()
                    if let targets = try? reader.targets(of: clipboard, timeout: .seconds(2)) {
                        for target in targets {
                            guard let name = conn.atomName(target), !skip.contains(name),
                                  let value = try? reader.convert(clipboard, target: target, timeout: .seconds(2)) else { continue }
                            offer.targets.append(.init(name, value.bytes))
                        }
                    }
                    saved.names.withLock { $0 = offer.targets.map(\.name) }
                    let toKeep = offer
                    success = !toKeep.targets.isEmpty && keeper.perform({ (try? $0.own(toKeep)) != nil }) == true
                }
                let confirmed = success
                _ = server.perform { $0.answer(request, success: confirmed) }
            }
            return true
        }
        manager.start()
        keeper.start()
        guard manager.perform({ (try? $0.own(SelectionOffer())) != nil }) == true else {
            throw HarnessError("the test clipboard manager could not own CLIPBOARD_MANAGER")
        }
    }

    func stop() {
        manager.stop()
        keeper.stop()
    }
}
