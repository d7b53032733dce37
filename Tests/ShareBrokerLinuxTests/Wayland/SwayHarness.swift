import Foundation
import Testing

/// A headless sway started for one test, and the wl-clipboard tools pointed at it.
///
/// sway refuses to run as root, so a root test process (CI) runs it as a test user it creates
/// (`useradd`, once; the user is kept for later runs) through `runuser`, in a runtime folder
/// owned by that user (mode 0700). The Wayland clients of the test (the adapter, `wl-copy`,
/// `wl-paste`) stay root and connect through the socket's absolute path: root passes the
/// folder's and the socket's permissions, and sway does not check a client's uid. A test process
/// that is not root runs sway as itself.
final class SwayHeadless: @unchecked Sendable {
    static let user = "sharebroker-wl"
    static let toolPaths = ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"]

    /// Why the Wayland end-to-end tests cannot run here, or `nil` when they can.
    static let unavailableReason: String? = {
        var needed = ["sway", "wl-copy", "wl-paste"]
        if geteuid() == 0 { needed += ["runuser", "useradd"] }
        let missing = needed.filter { executable($0) == nil }
        guard missing.isEmpty else {
            return "missing \(missing.joined(separator: ", ")): run `make deps` (apt sway wl-clipboard util-linux passwd)"
        }
        return nil
    }()

    static func executable(_ name: String) -> String? {
        toolPaths.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The test user exists (created once per machine), or why not.
    static let userReady: Result<Void, HarnessError> = {
        guard geteuid() == 0 else { return .success(()) }
        if getpwnam(user) != nil { return .success(()) }
        let status = try? run(executable("useradd") ?? "useradd",
                              ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user])
        if getpwnam(user) != nil { return .success(()) }
        return .failure(HarnessError("could not create the test user \(user) (useradd exit \(status.map(String.init) ?? "?"))"))
    }()

    struct HarnessError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The compositor's socket (absolute path): a `WaylandPasteboard.Configuration.display`.
    let display: String
    private let runtimeDirectory: String
    private let scratch: String
    private let process: Process
    private var stopped = false

    private init(display: String, runtimeDirectory: String, scratch: String, process: Process) {
        self.display = display
        self.runtimeDirectory = runtimeDirectory
        self.scratch = scratch
        self.process = process
    }

    deinit { stop() }

    /// Starts sway and waits (at most 15 s) for its socket.
    static func start() throws -> SwayHeadless {
        try userReady.get()
        let scratch = try temporaryDirectory("sbwl-scratch")
        let runtime = try temporaryDirectory("sbwl-run")
        if geteuid() == 0 {
            guard let entry = getpwnam(user) else { throw HarnessError("no user \(user)") }
            guard chown(runtime, entry.pointee.pw_uid, entry.pointee.pw_gid) == 0 else {
                throw HarnessError("could not chown \(runtime) to \(user)")
            }
        }
        chmod(runtime, 0o700)
        let config = scratch + "/sway.config"
        try "# headless test compositor\n".write(toFile: config, atomically: true, encoding: .utf8)
        chmod(scratch, 0o755)
        chmod(config, 0o644)
        guard let sway = executable("sway") else { throw HarnessError("no sway") }
        let environment = ["env", "-i", "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=\(runtime)",
                           "WLR_BACKENDS=headless", "WLR_RENDERER=pixman", "WLR_LIBINPUT_NO_DEVICES=1",
                           sway, "-c", config]
        let process = Process()
        if geteuid() == 0 {
            process.executableURL = URL(fileURLWithPath: executable("runuser") ?? "/usr/sbin/runuser")
            process.arguments = ["-u", user, "--"] + environment
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = Array(environment.dropFirst())
        }
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        process.standardInput = FileHandle.nullDevice
        let log = scratch + "/sway.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let logHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = logHandle
        process.standardError = logHandle
        try process.run()
        try? logHandle.close()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []
            if let socket = names.sorted().first(where: { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }) {
                let harness = SwayHeadless(display: runtime + "/" + socket, runtimeDirectory: runtime,
                                           scratch: scratch, process: process)
                // The socket is bound before sway serves it; a first tool run confirms it answers.
                for _ in 0..<50 {
                    if (try? harness.paste(["--list-types"]))?.status != nil { return harness }
                    usleep(100_000)
                }
                return harness
            }
            if !process.isRunning { break }
            usleep(50_000)
        }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        process.terminate()
        throw HarnessError("sway did not start within 15 s; its log:\n\(text.suffix(2000))")
    }

    /// Ends sway (and with it every client still connected, wl-copy's among them).
    func stop() {
        guard !stopped else { return }
        stopped = true
        if process.isRunning {
            process.terminate() // runuser passes SIGTERM on to sway
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        try? FileManager.default.removeItem(atPath: runtimeDirectory)
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// Runs `wl-paste ARGS`; its output (bytes) and exit status. Killed after `timeout` seconds.
    func paste(_ arguments: [String], timeout: TimeInterval = 20) throws -> (status: Int32, output: [UInt8]) {
        let out = scratch + "/paste.\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let status = try Self.run(Self.executable("wl-paste") ?? "wl-paste", arguments, environment: toolEnvironment,
                                  stdoutPath: out, timeout: timeout)
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: out))).map { [UInt8]($0) } ?? []
        return (status, bytes)
    }

    /// Runs `wl-copy ARGS` with `input` on its standard input (it forks a server and returns).
    func copy(_ input: [UInt8], _ arguments: [String] = []) throws {
        let inputPath = scratch + "/copy.\(UUID().uuidString)"
        try Data(input).write(to: URL(fileURLWithPath: inputPath))
        defer { try? FileManager.default.removeItem(atPath: inputPath) }
        let status = try Self.run(Self.executable("wl-copy") ?? "wl-copy", arguments, environment: toolEnvironment,
                                  stdinPath: inputPath, timeout: 20)
        guard status == 0 else { throw HarnessError("wl-copy exited with \(status)") }
    }

    private var toolEnvironment: [String: String] {
        ["PATH": "/usr/bin:/bin", "WAYLAND_DISPLAY": display, "XDG_RUNTIME_DIR": scratch, "HOME": scratch]
    }

    @discardableResult
    static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil,
                    stdinPath: String? = nil, stdoutPath: String? = nil, timeout: TimeInterval = 30) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardInput = try stdinPath.map { try FileHandle(forReadingFrom: URL(fileURLWithPath: $0)) } ?? FileHandle.nullDevice
        var outHandle: FileHandle?
        if let stdoutPath {
            _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
            outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        }
        process.standardOutput = outHandle ?? FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try? outHandle?.close()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw HarnessError("\((path as NSString).lastPathComponent) \(arguments) did not finish within \(Int(timeout)) s")
        }
        return process.terminationStatus
    }

    static func temporaryDirectory(_ prefix: String) throws -> String {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }) else {
            throw HarnessError("mkdtemp failed")
        }
        return String(cString: made)
    }
}

/// Whether `haystack` holds any `run`-byte run of `needle`.
func sharesRun(_ haystack: [UInt8], _ needle: [UInt8], run: Int = 8) -> Bool {
    guard needle.count >= run, haystack.count >= run else { return false }
    var runs = Set<ArraySlice<UInt8>>()
    for start in 0...(needle.count - run) { runs.insert(needle[start..<(start + run)]) }
    for start in 0...(haystack.count - run) where runs.contains(haystack[start..<(start + run)]) { return true }
    return false
}
