import Foundation
import ShareBrokerAgent
import Testing

/// The one-desktop-user deployment (issue 29, items 1 and 2): the agent and the apps run as one
/// ordinary user, the agent without `CAP_SYS_PTRACE`. Run as root, the tests make a throwaway
/// user (useradd) and run both as it (setpriv); run as an ordinary user (`make test-agent-nonroot`),
/// they run both as that user.
@Suite("one desktop user", .serialized,
       .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"),
       .enabled(if: DesktopUser.unavailableReason == nil, DesktopUser.skipReason))
struct OneUserDesktopTests {
    /// The user the agent and the app run as, and the folder they share.
    final class World {
        let h: AgentHarness
        let user: DesktopUser
        let runtime: String
        var environment: [String: String]
        private var started: [Process] = []

        init() throws {
            h = try AgentHarness()
            user = try DesktopUser()
            chmod(h.root, 0o755)
            runtime = h.root + "/user-runtime"
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            chown(runtime, user.uid, user.gid)
            chmod(runtime, 0o700)
            environment = h.environment
            environment["SHAREBROKER_RUNTIME_DIR"] = runtime
            environment["XDG_STATE_HOME"] = runtime + "/xdg-state"
        }

        deinit {
            for process in started where process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }

        var socket: String { runtime + "/agent.sock" }
        var auditRecords: [[String: Any]] { h.jsonLines(runtime + "/agent-state/audit.jsonl") }

        /// Starts `executable` as the user, its output (stdout and stderr) to `output`.
        func start(_ executable: String, _ arguments: [String], output: String) throws -> Process {
            let (path, args) = user.command(executable, arguments)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = args
            process.environment = environment
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            let handle = FileHandle(forWritingAtPath: output)
            process.standardOutput = handle
            process.standardError = handle
            process.standardInput = FileHandle.nullDevice
            try process.run()
            started.append(process)
            return process
        }

        /// Runs `executable` as the user, to its end.
        func run(_ executable: String, _ arguments: [String], timeout: TimeInterval = 30) throws -> AgentHarness.Run {
            let (path, args) = user.command(executable, arguments)
            return try runProcess(path, args, environment: environment, timeout: timeout)
        }

        /// Starts the agent as the user, with `policy`, and waits for its socket.
        func startAgent(policy: String, log: String) throws -> Process {
            let agent = try start(AgentHarness.sharebrokerd, ["--policy", policy, "--system-log", "off"], output: log)
            guard h.wait(15, until: { AgentHarness.canConnect(socket) }) else {
                throw HarnessError("the agent did not start: " + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? ""))
            }
            return agent
        }

        func stop(_ process: Process, signal number: Int32 = SIGTERM) {
            if process.isRunning { kill(process.processIdentifier, number) }
            process.waitUntilExit()
        }
    }

    static func sha256(_ path: String) throws -> String {
        let run = try runProcess("/usr/bin/sha256sum", [path], environment: ProcessInfo.processInfo.environment)
        return try #require(run.output.split(separator: " ").first.map(String.init))
    }

    /// Whether `pid`'s `/proc` files belong to root (the process made itself non-dumpable).
    static func isNonDumpable(_ pid: Int32) -> Bool {
        var info = stat()
        return stat("/proc/\(pid)/environ", &info) == 0 && info.st_uid == 0
    }

    static func device(notesPin: String, print: String) -> String {
        let notes = #"{"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "secureCopy", "print": "\#(print)", "dragAndDrop": "appConnectApps"}"#
        return #"{"format": "sharebroker.device", "version": 1, "apps": [{"id": "com.acme.notes", "executable": "NOTES", "sha256": "\#(notesPin)", "appConnect": true, "policy": \#(notes)}]}"#
    }

    /// Installs the notes app and writes `device.json` pinning it, printing authorized; returns its path.
    static func installPinnedNotes(_ h: AgentHarness) throws -> String {
        try h.install(at: h.notes)
        let policy = h.root + "/device.json"
        try device(notesPin: try sha256(h.notes), print: "authorized").replacingOccurrences(of: "NOTES", with: h.notes)
            .write(toFile: policy, atomically: true, encoding: .utf8)
        return policy
    }

    @Test("Issue 29 item 1: the agent and a pinned app as one ordinary user, the app non-dumpable and connected; a policy change of print only keeps its keys (no rotation, no refusal); the agent killed and restarted, the running app reconnects and gets its keys again, non-dumpable once it holds them")
    func policyChangeKeepsNonDumpableApp() throws {
        let world = try World()
        let h = world.h
        try h.install(at: h.notes)
        let pin = try Self.sha256(h.notes)
        let first = h.root + "/device-1.json", second = h.root + "/device-2.json"
        try Self.device(notesPin: pin, print: "authorized").replacingOccurrences(of: "NOTES", with: h.notes)
            .write(toFile: first, atomically: true, encoding: .utf8)
        try Self.device(notesPin: pin, print: "unauthorized").replacingOccurrences(of: "NOTES", with: h.notes)
            .write(toFile: second, atomically: true, encoding: .utf8)
        let agent = try world.startAgent(policy: first, log: h.root + "/agent-1.log")
        defer { world.stop(agent) }

        let watchOutput = h.root + "/watch.jsonl"
        let watch = try world.start(h.notes, ["watch", "--seconds", "60"], output: watchOutput)
        #expect(h.wait(20) { h.jsonLines(watchOutput).contains { $0["event"] as? String == "keys" } }, "the app got its keys")
        #expect(Self.isNonDumpable(watch.processIdentifier), "the app made itself non-dumpable")
        let before = try world.run(AgentHarness.sharebrokerd, ["--status"]).output
        #expect(before.contains("com.acme.notes"), "\(before)")

        // Print only: the app is entitled as before, its pin unchanged.
        let install = try world.run(AgentHarness.sharebroker, ["admin", "set-policy", second, "--timeout", "10000"])
        #expect(install.status == 0, "\(install.output) \(install.error)")
        #expect(install.output.contains("pushed"), "\(install.output)")
        #expect(!install.output.contains("rotated"), "\(install.output)")
        #expect(h.wait { h.jsonLines(watchOutput).contains { $0["event"] as? String == "policy" && ($0["push"] as? Int ?? 0) >= 2 } })
        let after = try world.run(AgentHarness.sharebrokerd, ["--status"]).output
        func key(_ status: String) -> String? {
            status.split(separator: "\n").first { $0.hasPrefix("push") }?.split(separator: ",").first { $0.contains("key") }.map(String.init)
        }
        #expect(key(before) != nil && key(before) == key(after), "before: \(before) after: \(after)")
        #expect(after.contains("com.acme.notes (pid \(watch.processIdentifier))"), "\(after)")
        #expect(!h.jsonLines(watchOutput).contains { ["keysDropped", "refused", "disconnected"].contains($0["event"] as? String ?? "") })
        #expect(!world.auditRecords.contains { $0["event"] as? String == "refused" })

        // The agent is killed and restarts. The running app, non-dumpable, lost its keys with the
        // agent; it makes itself dumpable only for its hello, is identified, and non-dumpable
        // again asks for its keys and gets them: no refusal.
        world.stop(agent, signal: SIGKILL)
        let restarted = try world.startAgent(policy: second, log: h.root + "/agent-2.log")
        defer { world.stop(restarted) }
        func events() -> [String] { h.jsonLines(watchOutput).compactMap { $0["event"] as? String } }
        #expect(h.wait(30) {
            let all = events()
            guard let lost = all.firstIndex(where: { $0 == "disconnected" || $0 == "keysDropped" }) else { return false }
            return all[lost...].contains("keys")
        }, "\(events())")
        #expect(watch.isRunning)
        #expect(Self.isNonDumpable(watch.processIdentifier), "the app is non-dumpable again, holding keys")
        let status = try world.run(AgentHarness.sharebrokerd, ["--status"]).output
        #expect(status.contains("com.acme.notes (pid \(watch.processIdentifier))"), "\(status)")
        #expect(!world.auditRecords.contains { $0["event"] as? String == "refused" }, "\(world.auditRecords)")
        #expect(!events().contains("refused"), "\(events())")
        // A new process of the app is identified too.
        let fresh = try world.run(h.notes, ["status", "--timeout", "10000"])
        #expect(fresh.output.contains("keys 0x"), "\(fresh.output) \(fresh.error)")
    }

    /// Starts the app (argv[1:]) traced from its start (PTRACE_TRACEME), and keeps it running:
    /// a tracer stays attached once the app makes itself non-dumpable.
    static let tracer = #"""
import ctypes, os, signal, sys
signal.alarm(90)
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
child = os.fork()
if child == 0:
    libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME
    os.execv(sys.argv[1], sys.argv[1:])
print('{"tracee": %d}' % child, flush=True)
while True:
    try:
        _, status = os.waitpid(child, 0x40000000)  # __WALL
    except ChildProcessError:
        break
    if not os.WIFSTOPPED(status):
        break
    sig = os.WSTOPSIG(status)
    libc.ptrace(7, child, None, ctypes.c_void_p(0 if sig == signal.SIGTRAP else sig))  # PTRACE_CONT
"""#

    @Test("Issue 29 item 1: an app with a tracer attached (a debugger that started it) is identified after an agent restart, but does not ask for its keys: the tracer would read them")
    func tracedAppGetsNoKeysAfterRestart() throws {
        let python = try #require(CustodyAttackTests.python, "python3 is needed to run the tracer")
        let world = try World()
        let h = world.h
        let policy = try Self.installPinnedNotes(h)
        let agent = try world.startAgent(policy: policy, log: h.root + "/agent-1.log")
        let script = h.root + "/tracer.py"
        try Self.tracer.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o644)
        let output = h.root + "/watch.jsonl"
        let tracer = try world.start(python, [script, h.notes, "watch", "--seconds", "60"], output: output)
        func events() -> [String] { h.jsonLines(output).compactMap { $0["event"] as? String } }
        // Traced from its start, it got its keys at its first connect (a debugger it was started
        // under is a puppet's, docs/THREAT-MODEL.md).
        #expect(h.wait(20) { events().contains("keys") }, "\(events())")
        world.stop(agent, signal: SIGKILL)
        let restarted = try world.startAgent(policy: policy, log: h.root + "/agent-2.log")
        defer { world.stop(restarted) }
        #expect(h.wait(20) { events().contains { $0 == "disconnected" || $0 == "keysDropped" } }, "\(events())")
        // Several reconnects (backoff up to 2 s): identified each time (no refusal), no keys.
        sleep(8)
        let all = events()
        let lost = all.firstIndex { $0 == "disconnected" || $0 == "keysDropped" } ?? all.endIndex
        #expect(!all[lost...].contains("keys"), "\(all)")
        #expect(tracer.isRunning)
        #expect(!world.auditRecords.contains { $0["event"] as? String == "refused" }, "\(world.auditRecords)")
        if let tracee = h.jsonLines(output).compactMap({ $0["tracee"] as? Int }).first { kill(Int32(tracee), SIGKILL) }
    }

    @Test("Issue 29 item 11: the one-user agent only warns about an unpinned app its own user can replace (the user can puppet its own apps anyway): the app gets its keys, and the agent's log names it and says to pin it")
    func unpinnedOwnAppWarned() throws {
        let world = try World()
        let h = world.h
        // The app's own copy, owned by the user, in the user's folder.
        let folder = world.runtime + "/bin", notes = folder + "/notes"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: AgentHarness.sharebroker, toPath: notes)
        #expect(chown(folder, world.user.uid, world.user.gid) == 0 && chown(notes, world.user.uid, world.user.gid) == 0)
        let policy = h.root + "/device.json"
        try Self.device(notesPin: "", print: "authorized").replacingOccurrences(of: #""sha256": "", "#, with: "")
            .replacingOccurrences(of: "NOTES", with: notes).write(toFile: policy, atomically: true, encoding: .utf8)
        let log = h.root + "/agent.log"
        let agent = try world.startAgent(policy: policy, log: log)
        defer { world.stop(agent) }
        let status = try world.run(notes, ["status", "--timeout", "10000"])
        #expect(status.output.contains("keys 0x"), "\(status.output) \(status.error)")
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(text.contains("\(notes) (com.acme.notes) is not pinned") && text.contains("pin its sha256"), "\(text)")
        #expect(!text.contains("refused to uids"), "\(text)")
    }

    static let namespaceAttacker = #"""
import json, os, signal, socket, struct, sys, time
signal.alarm(40)
sock_path, registered = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
r, w = os.pipe()
child = os.fork()
if child == 0:
    # The connector: connects, then becomes the registered binary (blocked on a pipe).
    s.connect(sock_path)
    os.dup2(r, 0); os.close(w)
    os.execv(registered, [registered, "simulate"])
os.close(r)
deadline = time.time() + 15
while time.time() < deadline:
    try:
        if os.readlink("/proc/%d/exe" % child) == registered: break
    except OSError: pass
    time.sleep(0.005)
else:
    print(json.dumps({"error": "the connector never ran the registered binary"})); os._exit(3)
os.kill(child, signal.SIGSTOP)
# Credentials naming the connector (pid, uid, gid as this namespace sees them): allowed, as this
# process holds CAP_SYS_ADMIN over the pid namespace unshare made.
creds = struct.pack("iII", child, os.getuid(), os.getgid())
def send(frame):
    s.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)])
def read_frames(timeout, until=None):
    s.settimeout(timeout)
    buf, out = b"", []
    try:
        while True:
            d = s.recv(65536)
            if not d: break
            buf += d
            out, i = [], 0
            while i + 6 <= len(buf) and i + 4 + struct.unpack(">I", buf[i:i+4])[0] <= len(buf):
                n = struct.unpack(">I", buf[i:i+4])[0]
                t, body = buf[i+5], buf[i+6:i+4+n]
                if t == 3: out.append("refused:" + json.loads(body)["reason"])
                elif t == 4: out.append("keys:%d" % len(body))
                elif t == 2: out.append("welcome")
                elif t == 11: out.append("error")
                else: out.append("type%d" % t)
                i += 4 + n
            if until and until in out: break
    except socket.timeout:
        pass
    return out
hello = json.dumps({"protocolVersion": 1, "role": "app"}).encode()
send(struct.pack(">I", len(hello) + 2) + bytes([1, 1]) + hello)
frames = read_frames(8, "welcome")
if "welcome" in frames:
    send(struct.pack(">I", 2) + bytes([1, 12]))
    frames += read_frames(5)
print(json.dumps({"connector": child, "frames": frames}), flush=True)
os.kill(child, signal.SIGKILL)
"""#

    @Test("Issue 29 item 2: a helper in a user and pid namespace of its own (unshare -Urp) sends the hello and the key request with credentials naming its connector, which runs the pinned registered binary: refused (foreignNamespace), no welcome, no keys, audited; the app itself still gets its keys",
          arguments: [true, false])
    func namespaceForgedCredentials(peerPidfd: Bool) throws {
        let python = try #require(CustodyAttackTests.python, "python3 is needed to run the attacker")
        let world = try World()
        let h = world.h
        let policy = try Self.installPinnedNotes(h)
        let agent = try world.start(AgentHarness.sharebrokerd, ["--policy", policy, "--system-log", "off"] + (peerPidfd ? [] : ["--no-peer-pidfd"]),
                                    output: h.root + "/agent.log")
        defer { world.stop(agent) }
        #expect(h.wait(15) { AgentHarness.canConnect(world.socket) })
        let script = h.root + "/namespace-attacker.py"
        try Self.namespaceAttacker.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o644)

        let run = try world.run("/usr/bin/unshare", ["--user", "--map-root-user", "--pid", "--fork", "--mount-proc", python, script, world.socket, h.notes], timeout: 60)
        let result = CustodyAttackTests.json(run.output)
        let frames = try #require(result["frames"] as? [String], "attacker output: \(run.output) \(run.error)")
        #expect(!frames.contains { $0.hasPrefix("keys") }, "\(frames)")
        #expect(!frames.contains("welcome"), "\(frames)")
        #expect(frames.contains("refused:foreignNamespace"), "\(frames)")
        #expect(h.wait { world.auditRecords.contains { $0["event"] as? String == "refused" && $0["reason"] as? String == "foreignNamespace" } })

        // The registered binary on the host, in the agent's namespaces, still gets its keys.
        let good = try world.run(h.notes, ["status", "--timeout", "10000"])
        #expect(good.output.contains("keys 0x"), "\(good.output) \(good.error)")
    }
}

/// The ordinary user the one-user tests run the agent and apps as: a throwaway user (useradd,
/// setpriv) when the tests run as root, else the test's own user.
final class DesktopUser {
    let uid: UInt32
    let gid: UInt32
    private let created: TestUser?

    static let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Why the tests cannot run, or `nil`.
    static var unavailableReason: String? {
        guard geteuid() == 0 else { return nil }
        var missing: [String] = []
        if setpriv == nil { missing.append("setpriv") }
        if !FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd") || !FileManager.default.isExecutableFile(atPath: "/usr/sbin/userdel") {
            missing.append("useradd/userdel")
        }
        return missing.isEmpty ? nil : "missing \(missing.joined(separator: ", ")) (make deps installs util-linux and passwd)"
    }

    static var skipReason: Comment { Comment(rawValue: unavailableReason ?? "") }

    init() throws {
        if geteuid() == 0 {
            let user = try TestUser()
            created = user
            uid = user.uid
            gid = user.gid
        } else {
            created = nil
            uid = geteuid()
            gid = getegid()
        }
    }

    /// The command line that runs `executable` with `arguments` as this user.
    func command(_ executable: String, _ arguments: [String]) -> (String, [String]) {
        guard created != nil else { return (executable, arguments) }
        return (Self.setpriv ?? "/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", executable] + arguments)
    }
}
