import Foundation
import ShareBrokerAgentProtocol
import ShareBrokerPOSIX
import Testing

/// Issue 13's attacks on key custody, each run with real processes against the built
/// `sharebrokerd`: each must get no key ring and no policy, and the agent must audit it.
/// Tests that need other users (useradd, setpriv) or root (ns_last_pid) skip with the reason
/// when they cannot run.
@Suite("CustodyAttackTests", .serialized, .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct CustodyAttackTests {
    static var python: String? {
        ["/usr/bin/python3", "/usr/local/bin/python3", "/root/.pyenv/shims/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static var asRoot: Bool { geteuid() == 0 }
    static var canMakeUsers: Bool {
        asRoot && FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd")
            && FileManager.default.isExecutableFile(atPath: "/usr/sbin/userdel")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
    }

    /// The attacker of item 1 (and of the recycled pid): Python, so the unregistered process
    /// is a real interpreter and the fork and exec are the real system calls.
    static let attacker = #"""
import json, os, signal, socket, struct, sys, time
signal.alarm(60)
mode, sock_path, registered = sys.argv[1], sys.argv[2], sys.argv[3]
hello = json.dumps({"protocolVersion": 1, "role": "app"}).encode()
frame = struct.pack(">I", len(hello) + 2) + bytes([1, 1]) + hello
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock_path)
os.set_inheritable(s.fileno(), True)

def read_frames(timeout):
    s.settimeout(timeout)
    buf = b""
    try:
        while True:
            d = s.recv(65536)
            if not d: break
            buf += d
    except socket.timeout:
        pass
    out, i = [], 0
    while i + 6 <= len(buf):
        n = struct.unpack(">I", buf[i:i+4])[0]
        t, body = buf[i+5], buf[i+6:i+4+n]
        if t == 3: out.append("refused:" + json.loads(body)["reason"])
        elif t == 4: out.append("keys:%d" % len(body))
        elif t == 2: out.append("welcome")
        elif t == 11: out.append("error")
        else: out.append("type%d" % t)
        i += 4 + n
    return out

if mode == "fork-exec":
    r, w = os.pipe()
    child = os.fork()
    if child != 0:
        # The parent becomes the registered binary (blocked reading a pipe the child holds).
        os.dup2(r, 0)
        os.close(w)
        os.execv(registered, [registered, "simulate"])
    parent = os.getppid()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if os.readlink("/proc/%d/exe" % parent) == registered: break
        except OSError: pass
        time.sleep(0.002)
    else:
        print(json.dumps({"error": "the parent never ran the registered binary"})); os._exit(3)
    os.kill(parent, signal.SIGSTOP)
    s.sendall(frame)
    frames = read_frames(5)
    print(json.dumps({"writer": os.getpid(), "connected": parent, "frames": frames}), flush=True)
    os.kill(parent, signal.SIGKILL)
    os._exit(0)

if mode in ("pre-exec", "pre-exec-pipelined"):
    # The parent writes the hello (and, pipelined, the key request) itself, then execs the
    # registered binary at once; the child keeps the socket and only reads.
    r, w = os.pipe()
    child = os.fork()
    if child != 0:
        data = frame + (struct.pack(">I", 2) + bytes([1, 12]) if mode == "pre-exec-pipelined" else b"")
        s.sendall(data)
        os.dup2(r, 0)
        os.close(w)
        os.execv(registered, [registered, "simulate"])
    parent = os.getppid()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if os.readlink("/proc/%d/exe" % parent) == registered: break
        except OSError: pass
        time.sleep(0.001)
    frames = read_frames(3)
    print(json.dumps({"connected": parent, "frames": frames}), flush=True)
    os.kill(parent, signal.SIGKILL)
    os._exit(0)

if mode == "recycle":
    # The agent is stopped (SIGSTOP) by the test. P (this process) connects and says hello,
    # then exits; its child runs the registered binary under P's pid (ns_last_pid), then
    # resumes the agent and reads what comes back.
    agent = int(sys.argv[4])
    s.close()
    p = os.fork()
    if p != 0:
        # This process reaps P, so its pid is free for reuse, then leaves C to report.
        os.waitpid(p, 0)
        os._exit(0)
    # P: connect, say hello, hand the socket to C, exit.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.sendall(frame)
    p = os.getpid()
    if os.fork() != 0:
        os._exit(0)
    while os.path.exists("/proc/%d" % p):
        time.sleep(0.002)
    impostor = None
    for attempt in range(400):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f: f.write(str(p - 1))
        except OSError as e:
            print(json.dumps({"error": "ns_last_pid: %s" % e})); os._exit(3)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.dup2(r, 0); os.close(w)
            os.execv(registered, [registered, "simulate"])
        os.close(r)
        if pid == p:
            impostor = pid
            break
        os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
    if impostor is None:
        print(json.dumps({"error": "pid %d was not recycled" % p})); os.kill(agent, signal.SIGCONT); os._exit(3)
    deadline = time.time() + 5
    while time.time() < deadline and os.readlink("/proc/%d/exe" % p) != registered: time.sleep(0.002)
    recycled = os.readlink("/proc/%d/exe" % p) == registered
    os.kill(agent, signal.SIGCONT)
    frames = read_frames(5)
    print(json.dumps({"connected": p, "recycled": recycled, "frames": frames}), flush=True)
    os.kill(impostor, signal.SIGKILL)
    os._exit(0)
"""#

    static func writeAttacker(_ h: AgentHarness) throws -> String {
        let path = h.root + "/attacker.py"
        try attacker.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func json(_ text: String) -> [String: Any] {
        for line in text.split(separator: "\n").reversed() {
            if let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] { return object }
        }
        return [:]
    }

    // MARK: Item 1: the peer that speaks is the peer that was identified

    @Test("Fork and exec: the child of an unregistered process says hello on a socket its parent connected, the parent now runs the registered binary (stopped): no key ring, refusal audited", arguments: [true, false])
    func forkAndExec(peerPidfd: Bool) throws {
        let python = try #require(Self.python, "python3 is needed to run the attacker")
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent(arguments: ["--policy", h.policyPath] + (peerPidfd ? [] : ["--no-peer-pidfd"]))
        defer { h.stopAgent() }
        let script = try Self.writeAttacker(h)

        let run = try h.run(python, [script, "fork-exec", h.socket, h.notes], timeout: 30)
        let result = Self.json(run.output)
        let frames = try #require(result["frames"] as? [String], "attacker output: \(run.output) \(run.error)")
        #expect(frames.contains("refused:speakerMismatch"))
        #expect(!frames.contains { $0.hasPrefix("keys") })
        #expect(!frames.contains("welcome"))
        let writer = try #require(result["writer"] as? Int)
        #expect(h.wait { h.auditRecords.contains {
            $0["event"] as? String == "refused" && $0["reason"] as? String == "speakerMismatch" && ($0["writerPid"] as? Int) == writer
        } })

        // The registered binary itself, on its own connection, still gets its keys.
        let good = try h.run(h.notes, ["status"])
        #expect(good.status == 0)
        #expect(good.output.contains("keys 0x"))
    }

    @Test("Write ahead, then exec: the connecting process writes the hello (and the key request) and execs the registered binary at once, its child keeps the socket: no key ring", arguments: ["pre-exec", "pre-exec-pipelined"])
    func writeAheadThenExec(mode: String) throws {
        let python = try #require(Self.python, "python3 is needed to run the attacker")
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let script = try Self.writeAttacker(h)
        for _ in 0..<3 {
            let run = try h.run(python, [script, mode, h.socket, h.notes], timeout: 30)
            let frames = try #require(Self.json(run.output)["frames"] as? [String], "attacker output: \(run.output) \(run.error)")
            print("write-ahead attack (\(mode)): \(frames)")
            #expect(!frames.contains { $0.hasPrefix("keys") }, "\(mode): \(frames)")
            if mode == "pre-exec-pipelined" { #expect(frames.contains { $0.hasPrefix("refused:") }, "\(frames)") }
        }
        #expect(try h.run(h.notes, ["status"]).output.contains("keys 0x"))
    }

    @Test("A recycled pid: the process that connected exits and the registered binary takes its pid before the agent reads the hello: no key ring, refusal audited (root: ns_last_pid)",
          .enabled(if: CustodyAttackTests.asRoot, "needs root to set /proc/sys/kernel/ns_last_pid"))
    func recycledPid() throws {
        let python = try #require(Self.python, "python3 is needed to run the attacker")
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let script = try Self.writeAttacker(h)
        let agent = try #require(h.agent)
        kill(agent.processIdentifier, SIGSTOP)
        defer { kill(agent.processIdentifier, SIGCONT) }
        let run = try h.run(python, [script, "recycle", h.socket, h.notes, "\(agent.processIdentifier)"], timeout: 60)
        kill(agent.processIdentifier, SIGCONT)
        print("recycled pid attack: \(run.output) \(run.error)")
        let result = Self.json(run.output)
        if let error = result["error"] as? String, error.contains("was not recycled") {
            // The machine's other processes took the pid every time: nothing was attempted.
            withKnownIssue("pid recycling did not land on this busy machine: \(error)") { throw HarnessError(error) }
            return
        }
        let frames = try #require(result["frames"] as? [String], "attacker output: \(run.output) \(run.error)")
        #expect(result["recycled"] as? Bool == true)
        #expect(!frames.contains { $0.hasPrefix("keys") })
        #expect(!frames.contains("welcome"))
        #expect(frames.contains { $0.hasPrefix("refused:") })
        #expect(h.wait { h.auditRecords.contains {
            $0["event"] as? String == "refused"
                && ["speakerMismatch", "processGone", "unidentified"].contains($0["reason"] as? String ?? "")
        } })
    }

    @Test("A pidfd outlives its process: once the pid is reused by another process, the pidfd says gone (SO_PEERPIDFD and pidfd_open alike)",
          .enabled(if: CustodyAttackTests.asRoot, "needs root to set /proc/sys/kernel/ns_last_pid"))
    func pidfdAfterRecycling() throws {
        let python = try #require(Self.python, "python3 is needed to run the connecting process")
        for allowPeerPidfd in [true, false] {
            // A real connection: python connects and waits; its SO_PEERCRED pid is the one at risk.
            let folder = "/tmp/sbt-pidfd-\(getpid())-\(UInt32.random(in: 0 ... .max))"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let path = folder + "/s.sock"
            let listener = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(listener) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            #expect(bound == 0 && listen(listener, 4) == 0)
            let connector = Process()
            connector.executableURL = URL(fileURLWithPath: python)
            connector.arguments = ["-c", "import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(30)", path]
            try connector.run()
            let connection = accept(listener, nil, nil)
            #expect(connection >= 0)
            defer { close(connection) }
            guard case .success(let peer) = PeerSocket.peerCredentials(connection) else { Issue.record("SO_PEERCRED"); return }
            let pid = peer.pid
            #expect(pid == connector.processIdentifier)
            let pidfd: Int32
            switch PeerSocket.peerPidfd(connection, pid: pid, allowPeerPidfd: allowPeerPidfd) {
            case .success(let result):
                pidfd = result.fd
                #expect(result.source == (allowPeerPidfd ? .peerPidfd : .pidfdOpen))
            case .failure(let error): Issue.record("pidfd: \(error)"); return
            }
            defer { close(pidfd) }
            let sleeper = connector
            #expect(PeerSocket.isAlive(pidfd: pidfd, pid: pid))
            kill(pid, SIGKILL)
            sleeper.waitUntilExit()
            #expect(!PeerSocket.isAlive(pidfd: pidfd, pid: pid))
            // Reuse the pid and check again: /proc/PID exists, the pidfd still says gone.
            var reused: Process?
            for _ in 0..<200 {
                try? "\(pid - 1)".write(toFile: "/proc/sys/kernel/ns_last_pid", atomically: false, encoding: .utf8)
                let other = Process()
                other.executableURL = URL(fileURLWithPath: "/bin/sleep")
                other.arguments = ["30"]
                try other.run()
                if other.processIdentifier == pid { reused = other; break }
                kill(other.processIdentifier, SIGKILL)
                other.waitUntilExit()
            }
            if let reused {
                #expect(FileManager.default.fileExists(atPath: "/proc/\(pid)"))
                #expect(!PeerSocket.isAlive(pidfd: pidfd, pid: pid))
                kill(reused.processIdentifier, SIGKILL)
                reused.waitUntilExit()
            } else {
                withKnownIssue("pid \(pid) was not reused on this busy machine") { throw HarnessError("not reused") }
            }
        }
    }

    // MARK: Item 2: the user is part of the app

    @Test("Another user runs a registered binary: refused unless the app names that uid in users; naming it admits that user only",
          .enabled(if: CustodyAttackTests.canMakeUsers, "needs root, useradd, userdel and setpriv to run the app as another user"))
    func otherUserRunsRegisteredBinary() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let user = try TestUser()
        chmod(h.root, 0o755)
        try h.startAgent(arguments: ["--policy", h.policyPath, "--allow-other-users"])
        defer { h.stopAgent() }
        func runAs(_ uid: UInt32, _ gid: UInt32, _ executable: String, _ arguments: [String]) throws -> AgentHarness.Run {
            try runProcess("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", executable] + arguments,
                           environment: h.environment)
        }
        // No users named: the agent's own user (root here) only.
        let stranger = try runAs(user.uid, user.gid, h.notes, ["status", "--timeout", "5000"])
        #expect(stranger.status == 77, "\(stranger.output) \(stranger.error)")
        #expect(stranger.output.contains("userNotAllowed"))
        #expect(!stranger.output.contains("keys 0x"))
        #expect(h.wait { h.auditRecords.contains {
            $0["reason"] as? String == "userNotAllowed" && ($0["uid"] as? Int) == Int(user.uid)
        } })
        #expect(try h.run(h.notes, ["status"]).output.contains("keys 0x"))

        // Naming the uid admits it, and only it: root is no longer on the list either.
        let policy = try String(contentsOfFile: h.policyPath, encoding: .utf8).replacingOccurrences(
            of: #""executable": "\#(h.notes)""#, with: #""executable": "\#(h.notes)", "users": [\#(user.uid)]"#)
        try policy.write(toFile: h.policyPath, atomically: true, encoding: .utf8)
        h.reloadAgent()
        #expect(h.wait { (try? runAs(user.uid, user.gid, h.notes, ["status", "--timeout", "5000"]).output.contains("keys 0x")) == true })
        let root = try h.run(h.notes, ["status"])
        #expect(root.status == 77)
        #expect(root.output.contains("userNotAllowed"))
    }

    // MARK: Item 10: a process with keys cannot be read by its own user

    @Test("A process of the app's own user reads the app's memory through /proc: refused once keys arrive; an ordinary process of that user is readable",
          .enabled(if: CustodyAttackTests.canMakeUsers, "needs root, useradd, userdel and setpriv to run the app and the reader as one ordinary user"))
    func sameUserCannotReadAppMemory() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let user = try TestUser()
        chmod(h.root, 0o755)
        let policy = try String(contentsOfFile: h.policyPath, encoding: .utf8).replacingOccurrences(
            of: #""executable": "\#(h.notes)""#, with: #""executable": "\#(h.notes)", "users": [\#(user.uid)]"#)
        try policy.write(toFile: h.policyPath, atomically: true, encoding: .utf8)
        try h.startAgent(arguments: ["--policy", h.policyPath, "--allow-other-users"])
        defer { h.stopAgent() }
        func start(_ executable: String, _ arguments: [String], output: String) throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", executable] + arguments
            process.environment = h.environment
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            process.standardOutput = FileHandle(forWritingAtPath: output)
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            return process
        }
        /// The attacker: `cat /proc/PID/environ` as the same ordinary user.
        func readEnviron(of pid: Int32) throws -> AgentHarness.Run {
            try runProcess("/usr/bin/setpriv", ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups",
                                                "/bin/cat", "/proc/\(pid)/environ"], environment: h.environment)
        }
        func owner(of pid: Int32) -> UInt32? {
            var info = stat()
            return stat("/proc/\(pid)/environ", &info) == 0 ? info.st_uid : nil
        }

        // The control: an ordinary process of that user is readable by it.
        let plain = try start("/bin/sleep", ["30"], output: h.root + "/sleep.out")
        defer { h.stop(plain) }
        #expect(h.wait { owner(of: plain.processIdentifier) == user.uid })
        let control = try readEnviron(of: plain.processIdentifier)
        #expect(control.status == 0, "the attack works on an unprotected process: \(control.error)")

        // The managed app, once its keys arrived.
        let watchOutput = h.root + "/watch-user.jsonl"
        let app = try start(h.notes, ["watch", "--seconds", "30"], output: watchOutput)
        defer { h.stop(app) }
        #expect(h.wait { ((try? String(contentsOfFile: watchOutput, encoding: .utf8)) ?? "").contains(#""event":"keys""#) },
                "the app got its keys")
        #expect(owner(of: app.processIdentifier) == 0, "its /proc files are root's")
        let attack = try readEnviron(of: app.processIdentifier)
        #expect(attack.status != 0)
        #expect(attack.error.contains("Permission denied"), "\(attack.error)")
        #expect(attack.output.isEmpty)
    }

    // MARK: Item 6: registered executables must be the app's own, and safe

    @Test("A copied interpreter registered as an app, and a registered binary anyone can write: refused, audited, no keys")
    func interpreterAndWritableExecutable() throws {
        let python = try #require(Self.python, "python3 is needed for the copied interpreter")
        let realPython = try #require(realpath(python, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        })
        let h = try AgentHarness()
        // A copy, not a link: the attack of issue 13 (copy python3 to a registered path).
        let copied = h.apps + "/acme-notes"
        try Data(contentsOf: URL(fileURLWithPath: realPython)).write(to: URL(fileURLWithPath: copied))
        chmod(copied, 0o755)
        let copyOfWritable = h.apps + "/writable-copy"
        try Data(contentsOf: URL(fileURLWithPath: AgentHarness.sharebroker)).write(to: URL(fileURLWithPath: copyOfWritable))
        chmod(copyOfWritable, 0o777)
        try h.writePolicy([
            ("com.acme.notes", copied, AgentHarness.secureCopyPolicy, nil),
            ("com.acme.writable", copyOfWritable, AgentHarness.secureCopyPolicy, nil),
        ])
        try h.startAgent()
        defer { h.stopAgent() }
        let script = h.root + "/hello.py"
        try #"""
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
hello = json.dumps({"protocolVersion": 1, "role": "app"}).encode()
s.sendall(struct.pack(">I", len(hello) + 2) + bytes([1, 1]) + hello)
s.settimeout(3)
buf = b""
try:
    while True:
        d = s.recv(65536)
        if not d: break
        buf += d
except socket.timeout: pass
out, i = [], 0
while i + 6 <= len(buf):
    n = struct.unpack(">I", buf[i:i+4])[0]
    t, body = buf[i+5], buf[i+6:i+4+n]
    out.append("refused:" + json.loads(body)["reason"] if t == 3 else "type%d" % t)
    i += 4 + n
print(json.dumps(out))
"""#.write(toFile: script, atomically: true, encoding: .utf8)
        let interpreted = try h.run(copied, [script, h.socket])
        #expect(interpreted.output.contains("refused:interpreter"), "\(interpreted.output) \(interpreted.error)")
        #expect(!interpreted.output.contains("type2") && !interpreted.output.contains("type4"))
        let open = try h.run(copyOfWritable, ["status"])
        #expect(open.status == 77)
        #expect(open.output.contains("unsafeExecutable"))
        #expect(!open.output.contains("keys 0x"))
        #expect(h.wait { h.auditRecords.contains { $0["reason"] as? String == "interpreter" } })
        #expect(h.wait { h.auditRecords.contains { $0["reason"] as? String == "unsafeExecutable" } })
    }

    // MARK: Item 3: a policy install re-identifies every live session

    @Test("Revoking a build revokes it: a connected app whose pin changes is closed, audited, and the key rotates; another app stays and gets the new ring")
    func revokeLiveSession() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let notesWatch = try h.startWatch(h.notes, name: "notes")
        let viewerWatch = try h.startWatch(h.viewer, name: "viewer")
        defer { h.stop(notesWatch.process); h.stop(viewerWatch.process) }
        #expect(h.wait { h.jsonLines(notesWatch.output).contains { $0["event"] as? String == "keys" } })
        #expect(h.wait { h.jsonLines(viewerWatch.output).contains { $0["event"] as? String == "keys" } })
        let before = try h.run(AgentHarness.sharebrokerd, ["--status"]).output
        #expect(before.contains("com.acme.notes"))

        // The same apps, but notes now pinned to another build: entitlement unchanged on paper.
        try h.writePolicy([
            ("com.acme.notes", h.notes, AgentHarness.secureCopyPolicy, String(repeating: "ab", count: 32)),
            ("com.acme.viewer", h.viewer, AgentHarness.secureCopyPolicy, nil),
            ("com.acme.locked", h.locked, AgentHarness.lockedPolicy, nil),
            ("org.example.sheets", h.apps + "/sheets", nil, nil),
        ])
        h.reloadAgent()
        #expect(h.wait { h.jsonLines(notesWatch.output).contains { $0["event"] as? String == "keysDropped" } })
        #expect(h.wait { h.auditRecords.contains { $0["reason"] as? String == "hashMismatch" && ($0["executable"] as? String) == h.notes } })
        let after = try h.run(AgentHarness.sharebrokerd, ["--status"]).output
        func key(_ status: String) -> String? {
            status.split(separator: "\n").first { $0.hasPrefix("push") }?
                .split(separator: ",").first { $0.contains("key") }.map { String($0) }
        }
        #expect(key(before) != nil)
        #expect(key(before) != key(after))
        #expect(!(after.split(separator: "\n").first { $0.hasPrefix("connected") } ?? "").contains("com.acme.notes"))
        // The viewer stays connected and receives the rotated ring.
        #expect(h.wait { h.jsonLines(viewerWatch.output).filter { $0["event"] as? String == "keys" }.count >= 2 })
        // The revoked build cannot come back: a new connection is refused too.
        #expect(try h.run(h.notes, ["status"]).status == 77)
    }

    // MARK: Item 4: the client checks who the agent is

    @Test("A fake agent at the socket path, run by another user: the client refuses it and sends nothing; trusting that uid explicitly does talk to it",
          .enabled(if: CustodyAttackTests.canMakeUsers, "needs root, useradd, userdel and setpriv to run a fake agent as another user"))
    func fakeAgent() throws {
        let python = try #require(Self.python, "python3 is needed to run the fake agent")
        let h = try AgentHarness()
        try h.standardDevice()
        let user = try TestUser()
        let folder = h.root + "/fake"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chown(folder, user.uid, user.gid)
        let socket = folder + "/agent.sock"
        let log = folder + "/received"
        let server = folder + "/fake.py"
        try #"""
import json, os, socket, struct, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); os.chmod(path, 0o666); s.listen(8)
while True:
    c, _ = s.accept()
    body = json.dumps({"app": "org.evil.exfil", "push": 1}).encode()
    try:
        c.sendall(struct.pack(">I", len(body) + 2) + bytes([1, 2]) + body)
        c.settimeout(2)
        data = b""
        try:
            while True:
                d = c.recv(4096)
                if not d: break
                data += d
        except socket.timeout: pass
    except OSError: data = b""
    with open(log, "a") as f: f.write("%d\n" % len(data))
    c.close()
"""#.write(toFile: server, atomically: true, encoding: .utf8)
        let fake = Process()
        fake.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        fake.arguments = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", python, server, socket, log]
        fake.standardOutput = FileHandle.nullDevice
        fake.standardError = FileHandle.nullDevice
        try fake.run()
        defer { kill(fake.processIdentifier, SIGKILL); fake.waitUntilExit() }
        #expect(h.wait { AgentHarness.canConnect(socket) })

        var env = h.environment
        env["SHAREBROKER_SOCKET"] = socket
        let refused = try runProcess(h.notes, ["status", "--timeout", "3000"], environment: env)
        #expect(refused.status != 0)
        #expect((refused.output + refused.error).contains("runs as uid \(user.uid)"))
        #expect(!(refused.output + refused.error).contains("org.evil.exfil"))
        #expect(h.wait { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").count >= 1 })
        // Nothing was sent to it: not even the hello.
        #expect((try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").first == "0")

        // Control: trusting that uid explicitly, the client talks to it (so the check is what refused).
        env["SHAREBROKER_AGENT_UID"] = "\(user.uid)"
        let trusted = try runProcess(h.notes, ["status", "--timeout", "3000"], environment: env)
        #expect(trusted.status != 0)   // the fake's welcome is not a real one
        #expect(h.wait { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").contains { $0 != "0" } })
    }

    // MARK: Item 5: no predictable fallback, no squatted folders, no links

    @Test("Without XDG_RUNTIME_DIR the agent refuses to start and says what to set; nothing is created in /tmp")
    func noFallback() throws {
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = nil
        env["SHAREBROKER_RUNTIME_DIR"] = nil
        env["SHAREBROKER_SOCKET"] = nil
        let legacy = "/tmp/sharebroker-\(getuid())"
        let existed = FileManager.default.fileExists(atPath: legacy)
        let run = try runProcess(AgentHarness.sharebrokerd, [], environment: env, timeout: 10)
        #expect(run.status == 78)
        #expect(run.error.contains("XDG_RUNTIME_DIR"))
        if !existed { #expect(!FileManager.default.fileExists(atPath: legacy)) }
    }

    @Test("A runtime folder created by another user, and a state folder that is a symbolic link: the agent refuses to start and writes no key",
          .enabled(if: CustodyAttackTests.canMakeUsers, "needs root and useradd to create the squatting user"))
    func squattedFolders() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let user = try TestUser()
        // Squatted: the folder the agent would use belongs to someone else (and is world-writable).
        let squat = h.root + "/squat"
        try FileManager.default.createDirectory(atPath: squat, withIntermediateDirectories: true)
        chown(squat, user.uid, user.gid)
        chmod(squat, 0o777)
        var env = h.environment
        env["SHAREBROKER_RUNTIME_DIR"] = squat
        let squatted = try runProcess(AgentHarness.sharebrokerd, ["--policy", h.policyPath], environment: env, timeout: 10)
        #expect(squatted.status == 71)
        #expect(squatted.error.contains("belongs to uid \(user.uid)"))
        #expect(!FileManager.default.fileExists(atPath: squat + "/agent-state/keyring"))

        // A link where the state folder goes, to a folder the other user owns.
        let runtime = h.root + "/rt"
        let target = h.root + "/elsewhere"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        chown(target, user.uid, user.gid)
        try FileManager.default.createSymbolicLink(atPath: runtime + "/agent-state", withDestinationPath: target)
        env["SHAREBROKER_RUNTIME_DIR"] = runtime
        let linked = try runProcess(AgentHarness.sharebrokerd, ["--policy", h.policyPath], environment: env, timeout: 10)
        #expect(linked.status == 71)
        #expect(linked.error.contains("symbolic link"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty)

        // A link planted for a state file in an otherwise good folder.
        let good = h.root + "/rt2"
        try FileManager.default.createDirectory(atPath: good + "/agent-state", withIntermediateDirectories: true)
        chmod(good + "/agent-state", 0o700)
        try FileManager.default.createSymbolicLink(atPath: good + "/agent-state/keyring", withDestinationPath: target + "/stolen")
        env["SHAREBROKER_RUNTIME_DIR"] = good
        let planted = try runProcess(AgentHarness.sharebrokerd, ["--policy", h.policyPath], environment: env, timeout: 10)
        #expect(planted.status == 71)
        #expect(!FileManager.default.fileExists(atPath: target + "/stolen"))
    }

    // MARK: Item 7: memory before authentication

    @Test("A flood of 900 connections that never say hello: beyond the per-user cap they are refused at once, the refusals are coalesced, agent RSS stays under 64 MiB, and an app is still served")
    func connectionFlood() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let agent = try #require(h.agent)
        #expect(try h.run(h.notes, ["status"]).status == 0)
        let baseline = try #require(Self.rss(agent.processIdentifier))

        // Each connection sends an almost-full 16 KiB pre-welcome frame and never finishes it.
        var partial = [UInt8](repeating: 0x41, count: 16 * 1024)
        partial[0] = 0; partial[1] = 0; partial[2] = 0x40; partial[3] = 0x00   // 16384-byte frame
        var fds: [Int32] = []
        defer { for fd in fds { close(fd) } }
        var refusedAtOnce = 0
        for _ in 0..<900 {
            let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0, AgentHarness.connectUnix(fd, h.socket) else { if fd >= 0 { close(fd) }; continue }
            _ = partial.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            fds.append(fd)
        }
        usleep(500_000)
        var peak = 0
        for fd in fds {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 0) > 0 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n > 6, buffer[5] == AgentFrameType.refused.rawValue,
                   String(decoding: buffer[6..<n], as: UTF8.self).contains("tooManyConnections") { refusedAtOnce += 1 }
            }
        }
        peak = Self.rss(agent.processIdentifier) ?? .max
        // 128 per user by default: everything past it is refused at accept.
        #expect(refusedAtOnce >= 900 - 128 - 5)
        #expect(peak < 64 * 1024 * 1024, "agent RSS \(peak / 1024) KiB during the flood (baseline \(baseline / 1024) KiB)")
        // One audit record per kind per second, not one per refusal.
        #expect(h.wait(5) { h.auditRecords.contains { $0["reason"] as? String == "tooManyConnections" && (($0["count"] as? Int) ?? 0) > 0 } })
        let refusalRecords = h.auditRecords.filter { $0["reason"] as? String == "tooManyConnections" }.count
        #expect(refusalRecords < 40, "\(refusalRecords) audit records for \(refusedAtOnce) refusals")
        for fd in fds { close(fd) }
        fds = []
        // Once the flood is gone, the agent serves apps as before, and its memory comes back down.
        #expect(h.wait { (try? h.run(h.notes, ["status"]).status) == 0 })
        #expect(h.wait(10) { (Self.rss(agent.processIdentifier) ?? .max) < 64 * 1024 * 1024 })
        print("flood: baseline RSS \(baseline / 1024) KiB, peak \(peak / 1024) KiB, refused at once \(refusedAtOnce), audit records \(refusalRecords)")
    }

    @Test("A frame over 16 KiB before the welcome is refused before it is buffered")
    func largeFrameBeforeWelcome() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let body = [UInt8](repeating: 0x20, count: 20_000)
        let frame = AgentFrame(type: .hello, body: body).encoded()
        let (closed, answer) = AgentEndToEndTests.exchange(h.socket, send: frame)
        #expect(closed)
        #expect(answer?.type == .error)
        #expect(answer.map { String(decoding: $0.body, as: UTF8.self).contains("before the welcome") } == true)
        #expect(try h.run(h.notes, ["status"]).status == 0)
    }

    @Test("Descriptors passed with SCM_RIGHTS alongside a hello are closed by the agent, never kept")
    func passedDescriptorsClosed() throws {
        let python = try #require(Self.python, "python3 is needed to pass descriptors")
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let agent = try #require(h.agent)
        let marker = h.root + "/passed-marker"
        _ = FileManager.default.createFile(atPath: marker, contents: Data("x".utf8))
        let script = #"""
import json, os, socket, struct, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
fds = [os.open(sys.argv[2], os.O_RDONLY) for _ in range(8)]
hello = json.dumps({"protocolVersion": 1, "role": "app"}).encode()
socket.send_fds(s, [struct.pack(">I", len(hello) + 2) + bytes([1, 1]) + hello], fds)
s.settimeout(3)
try:
    print(len(s.recv(65536)))
except socket.timeout:
    print(0)
"""#
        let path = h.root + "/pass.py"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try h.run(python, [path, h.socket, marker])
        #expect(run.status == 0, "\(run.error)")
        usleep(200_000)
        let fdDir = "/proc/\(agent.processIdentifier)/fd"
        let held = try FileManager.default.contentsOfDirectory(atPath: fdDir).filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: fdDir + "/" + $0)) == marker
        }
        #expect(held.isEmpty, "the agent holds \(held.count) descriptors of the passed file")
        #expect(h.wait { h.auditRecords.contains { $0["event"] as? String == "refused" } })
    }

    // MARK: Helpers

    static func rss(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
        }
        return nil
    }
}

/// Runs a command with an explicit environment; killed after `timeout` seconds.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String], timeout: TimeInterval = 20) throws -> AgentHarness.Run {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = environment
    let stdout = Pipe(), stderr = Pipe()
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    let outBox = DataBox(), errBox = DataBox()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async { outBox.data = stdout.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    group.enter()
    DispatchQueue.global().async { errBox.data = stderr.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    if group.wait(timeout: .now() + timeout) == .timedOut {
        kill(process.processIdentifier, SIGKILL)
        group.wait()
    }
    process.waitUntilExit()
    return AgentHarness.Run(status: process.terminationStatus, output: String(decoding: outBox.data, as: UTF8.self),
                            error: String(decoding: errBox.data, as: UTF8.self), pid: process.processIdentifier)
}

/// A throwaway system user (root only): created with useradd, removed with userdel.
final class TestUser {
    let name: String
    let uid: UInt32
    let gid: UInt32

    init() throws {
        name = "sbt\(UInt32.random(in: 10_000 ... 99_999))"
        let status = try runProcess("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                                    environment: ProcessInfo.processInfo.environment).status
        guard status == 0, let entry = getpwnam(name) else { throw HarnessError("useradd \(name) exited with \(status)") }
        uid = entry.pointee.pw_uid
        gid = entry.pointee.pw_gid
    }

    deinit {
        _ = try? runProcess("/usr/sbin/userdel", [name], environment: ProcessInfo.processInfo.environment)
    }
}
