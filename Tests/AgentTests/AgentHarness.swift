import Foundation
import ShareBroker
import ShareBrokerAgentProtocol
import Testing
import ShareBrokerLinux

/// Runs the real binaries: `sharebrokerd`, and copies of `sharebroker` at registered paths
/// (hard links, so each path is a different app to the agent), in a temporary runtime folder.
/// The test command builds both products first.
final class AgentHarness: @unchecked Sendable {
    static var binDirectory: URL {
        // .build/debug/ShareBrokerPackageTests.xctest -> .build/debug
        let here = Bundle.main.bundleURL
        for candidate in [here.deletingLastPathComponent(), here] {
            if FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("sharebrokerd").path) {
                return candidate
            }
        }
        return here.deletingLastPathComponent()
    }

    static var sharebroker: String { binDirectory.appendingPathComponent("sharebroker").path }
    static var sharebrokerd: String { binDirectory.appendingPathComponent("sharebrokerd").path }

    static var binariesBuilt: Bool {
        FileManager.default.isExecutableFile(atPath: sharebroker) && FileManager.default.isExecutableFile(atPath: sharebrokerd)
    }

    let root: String
    var apps: String { root + "/apps" }
    var state: String { root + "/agent-state" }
    var socket: String { root + "/agent.sock" }
    var pasteboardPath: String { root + "/pasteboard" }
    var policyPath: String { root + "/device.json" }
    private(set) var agent: Process?
    private var agentLogIndex = 0
    private var background: [Process] = []

    init() throws {
        let base = "/tmp/sbt-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: base + "/apps", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/bin", withIntermediateDirectories: true)
        root = base
    }

    deinit {
        for process in background where process.isRunning { kill(process.processIdentifier, SIGKILL) }
        if let agent, agent.isRunning { kill(agent.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Variables added to every process the harness starts (the desktop tests' XDG tree).
    var extraEnvironment: [String: String] = [:]

    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment.merging(extraEnvironment) { $1 }
        env["SHAREBROKER_RUNTIME_DIR"] = root
        // The apps' offline-timer state (ManagedApp), inside the test's folder, not the home.
        env["XDG_STATE_HOME"] = root + "/xdg-state"
        env["SHAREBROKER_SOCKET"] = nil
        env["SHAREBROKER_PASTEBOARD"] = nil
        // The host pasteboard file, even on a desktop (sharebroker copy/paste pick x11 or
        // wayland from these).
        env["DISPLAY"] = nil
        env["WAYLAND_DISPLAY"] = nil
        return env
    }

    /// A copy of the sharebroker binary at `path` that is its own file (another inode), made by
    /// `cp` in a process of its own: the copy's file descriptor is never in this process, so a
    /// child another test forks meanwhile cannot inherit it and make the exec of the copy fail
    /// with ETXTBSY ("Text file busy").
    static func copyOfTheTool(to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        let cp = Process()
        cp.executableURL = URL(fileURLWithPath: "/bin/cp")
        cp.arguments = [sharebroker, path]
        try cp.run()
        cp.waitUntilExit()
        guard cp.terminationStatus == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }

    /// Installs the sharebroker binary at `path` (a hard link, or a copy across file systems).
    @discardableResult
    func install(at path: String) throws -> String {
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        if link(Self.sharebroker, path) != 0 {
            // A copy can meet ETXTBSY while another test's child, forked with the copy's file
            // descriptor open, has not yet exec'd: retry briefly rather than fail the test.
            var attempt = 0
            while true {
                do {
                    // In a cp process of its own (copyOfTheTool): an ordinary user may not hard
                    // link root's build, so every install is a copy when the suites run as one.
                    try Self.copyOfTheTool(to: path)
                    break
                } catch {
                    attempt += 1
                    guard attempt < 5 else { throw error }
                    try? FileManager.default.removeItem(atPath: path)
                    usleep(50_000)
                }
            }
        }
        return path
    }

    /// A device document: each app is (id, executable, policy JSON or nil for a non-AppConnect app, sha256).
    func writePolicy(_ apps: [(id: String, executable: String, policy: String?, sha256: String?)], to path: String? = nil) throws {
        let entries = apps.map { app -> String in
            var fields = [#""id": "\#(app.id)""#, #""executable": "\#(app.executable)""#]
            if let sha = app.sha256 { fields.append(#""sha256": "\#(sha)""#) }
            if let policy = app.policy {
                fields.append(#""appConnect": true"#)
                fields.append(#""policy": \#(policy)"#)
            }
            return "{" + fields.joined(separator: ", ") + "}"
        }
        let text = #"{"format": "sharebroker.device", "version": 1, "apps": ["# + entries.joined(separator: ",\n") + "]}\n"
        try text.write(toFile: path ?? policyPath, atomically: true, encoding: .utf8)
    }

    static let secureCopyPolicy = #"{"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "secureCopy", "print": "authorized", "dragAndDrop": "appConnectApps"}"#
    static let lockedPolicy = #"{"auth": "authorized", "openIn": "unauthorized", "pasteboard": "unauthorized"}"#
    static let retiredPolicy = #"{"auth": "retired"}"#

    /// The standard test device: notes and viewer (SecureCopy), locked (no copy), sheets (unmanaged).
    func standardDevice(viewer: String = secureCopyPolicy, notesPrint: String = "authorized") throws {
        try writePolicy([
            ("com.acme.notes", apps + "/notes", #"{"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "secureCopy", "print": "\#(notesPrint)", "dragAndDrop": "appConnectApps"}"#, nil),
            ("com.acme.viewer", apps + "/viewer", viewer, nil),
            ("com.acme.locked", apps + "/locked", Self.lockedPolicy, nil),
            ("org.example.sheets", apps + "/sheets", nil, nil),
        ])
        for name in ["notes", "viewer", "locked", "sheets"] where !FileManager.default.fileExists(atPath: apps + "/" + name) {
            try install(at: apps + "/" + name)
        }
        if !FileManager.default.fileExists(atPath: root + "/bin/unmanaged") { try install(at: root + "/bin/unmanaged") }
    }

    var notes: String { apps + "/notes" }
    var viewer: String { apps + "/viewer" }
    var locked: String { apps + "/locked" }
    var unmanaged: String { root + "/bin/unmanaged" }

    // MARK: The agent

    /// Starts sharebrokerd (with `--policy` when the policy file exists) and waits for its socket.
    func startAgent(arguments: [String]? = nil) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.sharebrokerd)
        var args = arguments ?? []
        if arguments == nil && FileManager.default.fileExists(atPath: policyPath) { args += ["--policy", policyPath] }
        process.arguments = args
        process.environment = environment
        agentLogIndex += 1
        let log = root + "/agent-\(agentLogIndex).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        agent = process
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if Self.canConnect(socket) { return }
            if !process.isRunning { break }
            usleep(20_000)
        }
        throw HarnessError("the agent did not start listening: " + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? ""))
    }

    /// Stops the agent with `signal` (SIGTERM: clean; SIGKILL: crash) and waits for it.
    func stopAgent(signal number: Int32 = SIGTERM) {
        guard let agent else { return }
        if agent.isRunning { kill(agent.processIdentifier, number) }
        agent.waitUntilExit()
        self.agent = nil
    }

    func reloadAgent() {
        if let agent { kill(agent.processIdentifier, SIGHUP) }
    }

    static func canConnect(_ path: String) -> Bool {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return connectUnix(fd, path)
    }

    static func connectUnix(_ fd: Int32, _ path: String) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        } == 0
    }

    // MARK: Running commands

    struct Run {
        var status: Int32
        var output: String
        var error: String
        var pid: Int32
    }

    /// Runs `executable` with `arguments` in the harness's runtime folder, feeding `input`;
    /// killed after `timeout` seconds.
    @discardableResult
    func run(_ executable: String, _ arguments: [String], input: String = "", timeout: TimeInterval = 20) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        // A generous handshake timeout: the machine may be busy with other suites.
        let hostCommands: Set<String> = ["copy", "paste", "status", "open-in", "open-url", "admin"]
        process.arguments = arguments + (arguments.first.map(hostCommands.contains) == true ? ["--timeout", "10000"] : [])
        process.environment = environment
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let pid = process.processIdentifier
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let outBox = DataBox(), errBox = DataBox()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async { outBox.data = stdout.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async { errBox.data = stderr.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            kill(pid, SIGKILL)
            group.wait()
        }
        process.waitUntilExit()
        return Run(status: process.terminationStatus, output: String(decoding: outBox.data, as: UTF8.self),
                   error: String(decoding: errBox.data, as: UTF8.self), pid: pid)
    }

    /// Starts a long-lived `watch` from `executable`; its JSON lines go to a file.
    func startWatch(_ executable: String, name: String) throws -> (process: Process, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["watch", "--seconds", "60"]
        process.environment = environment
        let path = root + "/watch-\(name).jsonl"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: path)
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        background.append(process)
        return (process, path)
    }

    func stop(_ process: Process) {
        // SIGKILL: the test runner may ignore SIGTERM, and children inherit that.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Waits until `condition` holds, up to `timeout` seconds.
    func wait(_ timeout: TimeInterval = 10, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    /// The JSON objects of a JSON Lines file (lines that do not parse are skipped).
    func jsonLines(_ path: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    var auditRecords: [[String: Any]] { jsonLines(state + "/audit.jsonl") }
    var acknowledgmentRecords: [[String: Any]] { jsonLines(state + "/acknowledgments.jsonl") }

    var pasteboard: FilePasteboard {
        get throws { try FilePasteboard(path: pasteboardPath) }
    }
}

final class DataBox: @unchecked Sendable {
    var data = Data()
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
