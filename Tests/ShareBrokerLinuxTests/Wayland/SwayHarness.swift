import Foundation
import ShareBroker
@testable import ShareBrokerLinux
import Synchronization
import Testing
import ShareBrokerTesting

/// The real tools the Wayland tests drive, and why the tests skip when one is missing.
enum WaylandTools {
    static let sway = X11Tools.find("sway")
    static let wlCopy = X11Tools.find("wl-copy")
    static let wlPaste = X11Tools.find("wl-paste")
    static let setpriv = X11Tools.find("setpriv") ?? ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let useradd = ["/usr/sbin/useradd", "/sbin/useradd"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let userdel = ["/usr/sbin/userdel", "/sbin/userdel"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Why the end-to-end tests cannot run here, or `nil` when they can. (sway refuses to run
    /// as root: a root test process runs it as a user it creates, which needs useradd and
    /// setpriv; a test process that is not root runs sway as itself.)
    static let unavailableReason: String? = {
        var missing: [String] = []
        if sway == nil { missing.append("sway") }
        if wlCopy == nil || wlPaste == nil { missing.append("wl-copy/wl-paste") }
        if geteuid() == 0 {
            if setpriv == nil { missing.append("setpriv") }
            if useradd == nil || userdel == nil { missing.append("useradd/userdel") }
        }
        guard missing.isEmpty else {
            return "missing \(missing.joined(separator: ", ")): make deps installs sway wl-clipboard (setpriv: util-linux, useradd: passwd)"
        }
        return nil
    }()
    static var available: Bool { unavailableReason == nil }
    static var skipReason: Comment { Comment(rawValue: unavailableReason ?? "") }
}

/// The user a root test process runs sway as: created (`useradd --system`, no home) when the
/// first compositor starts and deleted (`userdel`) when the last one stops, so a test run leaves
/// no user behind. Named after the test process, so parallel runs do not share one.
enum SwayUser {
    private static let state = Mutex<(name: String?, uid: uid_t, gid: gid_t, users: Int)>((nil, 0, 0, 0))

    static func acquire() throws -> (uid: uid_t, gid: gid_t) {
        try state.withLock { state throws -> (uid: uid_t, gid: gid_t) in
            if state.users == 0 {
                removeStaleUsers()
                let name = "sbwl-\(getpid())"
                if getpwnam(name) == nil {
                    let status = try X11Tools.runQuietly(WaylandTools.useradd ?? "useradd",
                                                         ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
                    guard status == 0 else { throw HarnessError("useradd \(name) exited with \(status)") }
                }
                guard let entry = getpwnam(name) else { throw HarnessError("no user \(name) after useradd") }
                state.name = name
                state.uid = entry.pointee.pw_uid
                state.gid = entry.pointee.pw_gid
            }
            state.users += 1
            return (state.uid, state.gid)
        }
    }

    /// Deletes the users of earlier test processes that ended without deleting theirs (a crash):
    /// `sbwl-PID` where no process PID runs.
    private static func removeStaleUsers() {
        var stale: [String] = []
        setpwent()
        while let entry = getpwent() {
            let name = String(cString: entry.pointee.pw_name)
            guard name.hasPrefix("sbwl-"), let pid = pid_t(name.dropFirst(5)), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { stale.append(name) }
        }
        endpwent()
        for name in stale { _ = try? X11Tools.runQuietly(WaylandTools.userdel ?? "userdel", [name]) }
    }

    static func release() {
        state.withLock { state in
            state.users -= 1
            guard state.users == 0, let name = state.name else { return }
            _ = try? X11Tools.runQuietly(WaylandTools.userdel ?? "userdel", [name])
            state.name = nil
        }
    }
}

extension X11Tools {
    /// Runs a tool with no input or output; its exit status.
    static func runQuietly(_ path: String, _ arguments: [String]) throws -> Int32 {
        let child = try Child(path, arguments, environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"], input: nil)
        guard child.wait(timeout: .seconds(10)) else {
            child.kill()
            throw HarnessError("\(path) \(arguments) did not finish")
        }
        return child.status
    }
}

/// A headless sway started for one test, and the wl-clipboard tools pointed at it.
///
/// `WLR_BACKENDS=headless WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1`, Xwayland off, in a
/// runtime folder of its own (mode 0700). A root test process runs sway as ``SwayUser`` through
/// `setpriv` (which execs sway, so the process the test holds is sway itself); the test's own
/// clients (the adapter, `wl-copy`, `wl-paste`) stay root and connect through the socket's
/// absolute path. ``stop()`` ends sway and every `wl-copy` the test started, and removes the
/// folders (and the user, with the last compositor).
final class SwayHeadless: @unchecked Sendable {
    /// The compositor's socket (absolute path): a `WaylandPasteboard.Configuration.display`.
    let display: String
    private let runtime: String
    private let scratch: String
    private let sway: Child
    private let usesUser: Bool
    private let lock = NSLock()
    private var copiers: [Child] = []
    private var stopped = false

    /// Starts sway and waits (at most 10 s) until it answers `wl-paste`.
    init() throws {
        guard let swayPath = WaylandTools.sway else { throw HarnessError("sway is not installed") }
        scratch = try Self.temporaryDirectory("sbwl-scratch")
        runtime = try Self.temporaryDirectory("sbwl-run")
        var path: String
        var arguments: [String]
        let config = scratch + "/sway.config"
        try "xwayland disable\n".write(toFile: config, atomically: true, encoding: .utf8)
        chmod(scratch, 0o755)
        chmod(config, 0o644)
        if geteuid() == 0 {
            let user: (uid: uid_t, gid: gid_t)
            do {
                user = try SwayUser.acquire()
            } catch {
                try? FileManager.default.removeItem(atPath: runtime)
                try? FileManager.default.removeItem(atPath: scratch)
                throw error
            }
            usesUser = true
            chown(runtime, user.uid, user.gid)
            path = WaylandTools.setpriv ?? "/usr/bin/setpriv"
            arguments = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", "--", swayPath, "-c", config]
        } else {
            usesUser = false
            path = swayPath
            arguments = ["-c", config]
        }
        chmod(runtime, 0o700)
        let environment = ["PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": runtime, "WLR_BACKENDS": "headless",
                           "WLR_RENDERER": "pixman", "WLR_LIBINPUT_NO_DEVICES": "1", "HOME": scratch]
        do {
            sway = try Child(path, arguments, environment: environment, input: nil)
        } catch {
            if usesUser { SwayUser.release() }
            try? FileManager.default.removeItem(atPath: runtime)
            try? FileManager.default.removeItem(atPath: scratch)
            throw error
        }
        let deadline = ContinuousClock.now + .seconds(10)
        var socket: String?
        while ContinuousClock.now < deadline && socket == nil {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []
            socket = names.sorted().first { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }
            if socket == nil {
                if sway.wait(timeout: .zero) { break }
                usleep(10_000)
            }
        }
        display = runtime + "/" + (socket ?? "wayland-missing")
        guard socket != nil else {
            stop()
            throw HarnessError("sway did not open a Wayland socket within 10 s")
        }
        // The socket is bound before sway serves it: wait until wl-paste gets an answer.
        while ContinuousClock.now < deadline {
            if let status = try? paste(["--list-types"]).status, status == 0 || status == 1 { return }
            usleep(20_000)
        }
        stop()
        throw HarnessError("sway did not answer wl-paste within 10 s")
    }

    deinit { stop() }

    /// Ends sway and the `wl-copy` servers, removes the folders, and lets the user go.
    func stop() {
        let (first, copiers) = lock.withLock { () -> (Bool, [Child]) in
            defer { stopped = true }
            return (!stopped, self.copiers)
        }
        guard first else { return }
        for copier in copiers { copier.kill() }
        // SIGKILL: the test process may pass sway an ignored SIGTERM (posix_spawn keeps ignored
        // dispositions), and nothing of sway's needs to outlive the test.
        sway.kill()
        try? FileManager.default.removeItem(atPath: runtime)
        try? FileManager.default.removeItem(atPath: scratch)
        if usesUser { SwayUser.release() }
    }

    private var toolEnvironment: [String: String] {
        ["PATH": "/usr/bin:/bin", "WAYLAND_DISPLAY": display, "XDG_RUNTIME_DIR": scratch, "HOME": scratch]
    }

    /// Runs `wl-paste ARGS`: its exit status and standard output.
    func paste(_ arguments: [String], timeout: Duration = .seconds(10)) throws -> (status: Int32, output: [UInt8]) {
        guard let tool = WaylandTools.wlPaste else { throw HarnessError("wl-paste is not installed") }
        let child = try Child(tool, arguments, environment: toolEnvironment, input: nil)
        let deadline = ContinuousClock.now + timeout
        let output = child.readAll(until: deadline)
        guard child.wait(timeout: ContinuousClock.now.duration(to: deadline)) else {
            child.kill()
            throw HarnessError("wl-paste \(arguments) did not finish in \(timeout)")
        }
        return (child.status, output)
    }

    /// `wl-paste --no-newline [ARGS]`: the bytes, empty when it fails (nothing offered).
    func pasted(_ arguments: [String] = []) throws -> [UInt8] {
        let result = try paste(["--no-newline"] + arguments)
        return result.status == 0 ? result.output : []
    }

    /// `wl-paste --list-types [ARGS]` as a list.
    func types(_ arguments: [String] = []) throws -> [String] {
        let result = try paste(["--list-types"] + arguments)
        guard result.status == 0 else { return [] }
        return String(decoding: result.output, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// An unmanaged app copies `bytes` (`wl-copy --foreground`, which serves until replaced;
    /// ``stop()`` ends it); returns once `wl-paste` reads them.
    ///
    /// This sets the scene for a test, so a wl-copy whose offer never shows (seen once in a
    /// ThreadSanitizer run with the whole suite in parallel: `wl-paste --primary` found no
    /// selection for 10 s while wl-copy still ran) is replaced by a second one before giving up.
    func copy(_ bytes: [UInt8], primary: Bool = false, type: String? = nil) throws {
        guard let tool = WaylandTools.wlCopy else { throw HarnessError("wl-copy is not installed") }
        var arguments = ["--foreground"]
        if primary { arguments.append("--primary") }
        if let type { arguments += ["--type", type] }
        let check = (primary ? ["--primary"] : []) + (type.map { ["--type", $0] } ?? [])
        var failures: [String] = []
        for _ in 0..<2 {
            let child = try Child(tool, arguments, environment: toolEnvironment, input: bytes)
            lock.withLock { copiers.append(child) }
            let deadline = ContinuousClock.now + .seconds(10)
            var last: (status: Int32, output: [UInt8]) = (-1, [])
            while ContinuousClock.now < deadline {
                last = try paste(["--no-newline"] + check)
                if last.status == 0 && last.output == bytes { return }
                usleep(10_000)
            }
            let exited = child.wait(timeout: .zero)
            failures.append("wl-paste \(check): status \(last.status), \(last.output.count) bytes; "
                            + "wl-copy \(exited ? "exited with \(child.status)" : "still ran")")
            if !exited { child.kill() }
        }
        throw HarnessError("wl-copy \(arguments)'s content never appeared, twice: \(failures.joined(separator: "; then "))")
    }

    /// Starts a tool with `WAYLAND_DISPLAY` pointing here and no `DISPLAY`.
    func start(_ tool: String, _ arguments: [String], input: [UInt8]? = nil) throws -> Child {
        try Child(tool, arguments, environment: toolEnvironment, input: input)
    }

    static func temporaryDirectory(_ prefix: String) throws -> String {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }) else {
            throw HarnessError("mkdtemp failed")
        }
        return String(cString: made)
    }
}

/// A managed app on the Wayland desktop: a broker whose general pasteboard is a
/// ``WaylandPasteboard``.
struct ManagedWaylandApp {
    let broker: ShareBroker
    let pasteboard: WaylandPasteboard
    let delegate = ApplyingDelegate()

    init(_ appID: String, sway: SwayHeadless, custodian: InProcessKeyCustodian, policy: PasteboardPolicy,
         config: [String: String] = [:], transferTimeout: Duration = .seconds(5)) throws {
        try self.init(appID, display: sway.display, custodian: custodian, policy: policy, config: config,
                      transferTimeout: transferTimeout)
    }

    /// The same on the compositor at `display` (a socket path).
    init(_ appID: String, display: String, custodian: InProcessKeyCustodian, policy: PasteboardPolicy,
         config: [String: String] = [:], transferTimeout: Duration = .seconds(5)) throws {
        pasteboard = try WaylandPasteboard(configuration: .init(display: display, transferTimeout: transferTimeout))
        broker = ShareBroker(appID: appID, platform: Platform(
            outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: RecordingReportSink(),
            pasteboard: pasteboard, secureServices: custodian))
        pasteboard.followPlaceholder(of: broker)
        try broker.start(delegate: delegate)
        try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: policy, config: config))
    }
}
