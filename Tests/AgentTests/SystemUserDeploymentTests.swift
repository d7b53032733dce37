import Foundation
import Testing

/// The deployment of deploy/systemd/sharebrokerd.service without systemd: the agent as its own
/// system user holding exactly CAP_SYS_PTRACE (what the unit grants), the desktop user's apps as
/// another user. Needs root (to create the two users); skipped, saying so, otherwise.
@Suite("agent as its own system user", .serialized,
       .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"),
       .enabled(if: SystemUsers.unavailableReason == nil, SystemUsers.skipReason))
struct SystemUserDeploymentTests {
    @Test("The desktop user cannot read the agent's state folder, and its registered apps still get their keys; an unpinned app in a folder the desktop user can write is refused (issue 29 item 11)")
    func separateAgentUser() throws {
        let h = try AgentHarness()
        let users = try SystemUsers()
        defer { users.remove() }
        let agentUser = users.agent, desktopUser = users.desktop

        // Root-owned: the policy directory and the apps' executables (what a package installs).
        let etc = h.root + "/etc-sharebroker"
        try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
        try h.standardDevice()
        // The two apps name the desktop user among those who may run them (the agent serves only
        // its own user and root otherwise).
        var device = try String(contentsOfFile: h.policyPath, encoding: .utf8)
        for app in ["com.acme.notes", "com.acme.viewer"] {
            device = device.replacingOccurrences(of: #"{"id": "\#(app)","#, with: #"{"id": "\#(app)", "users": [\#(desktopUser)],"#)
        }
        #expect(device.contains("\"users\""))
        // Issue 29 item 11: an unpinned app in a folder the desktop user owns (root-owned file):
        // that user could put any program there; this agent, of its own user, refuses it.
        let userFolder = h.root + "/desktop-apps"
        try FileManager.default.createDirectory(atPath: userFolder, withIntermediateDirectories: true)
        #expect(chown(userFolder, desktopUser, desktopUser) == 0)
        let draw = userFolder + "/draw"
        try FileManager.default.copyItem(atPath: AgentHarness.sharebroker, toPath: draw)
        device = device.replacingOccurrences(of: #""apps": ["#, with: #""apps": [{"id": "com.acme.draw", "users": [\#(desktopUser)], "executable": "\#(draw)", "appConnect": true, "policy": \#(AgentHarness.secureCopyPolicy)},"#)
        #expect(device.contains("com.acme.draw"))
        try device.write(toFile: etc + "/device.json", atomically: true, encoding: .utf8)
        // The agent's folders, owned by the agent's user (what StateDirectory= and RuntimeDirectory= make).
        let lib = h.root + "/var-lib", run = h.root + "/run"
        for folder in [lib, run] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            #expect(chown(folder, agentUser, agentUser) == 0)
        }
        #expect(chmod(run, 0o755) == 0)
        // The desktop user's own runtime folder (its host pasteboard).
        let desktopRuntime = h.root + "/desktop-runtime"
        try FileManager.default.createDirectory(atPath: desktopRuntime, withIntermediateDirectories: true)
        #expect(chown(desktopRuntime, desktopUser, desktopUser) == 0)
        #expect(chmod(desktopRuntime, 0o700) == 0)

        let socket = run + "/agent.sock"
        let agent = Process()
        agent.executableURL = URL(fileURLWithPath: SystemUsers.setpriv ?? "/usr/bin/setpriv")
        agent.arguments = ["--reuid=\(agentUser)", "--regid=\(agentUser)", "--clear-groups",
                           "--inh-caps=+sys_ptrace", "--ambient-caps=+sys_ptrace", "--",
                           AgentHarness.sharebrokerd, "--state", lib + "/state", "--socket", socket,
                           "--policy-dir", etc, "--allow-other-users"]
        let log = h.root + "/agent-user.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        agent.standardError = FileHandle(forWritingAtPath: log)
        agent.standardOutput = FileHandle.nullDevice
        try agent.run()
        defer { kill(agent.processIdentifier, SIGTERM); agent.waitUntilExit() }
        #expect(h.wait { AgentHarness.canConnect(socket) }, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        // The agent is not dumpable: a process of its own user cannot read its memory or
        // environment through /proc (issue 13, item 10).
        let peek = try h.run(SystemUsers.setpriv ?? "/usr/bin/setpriv",
                             ["--reuid=\(agentUser)", "--regid=\(agentUser)", "--clear-groups", "--",
                              "/bin/cat", "/proc/\(agent.processIdentifier)/environ"])
        #expect(peek.status != 0)
        #expect(peek.error.contains("Permission denied"), "\(peek.error)")

        func asDesktopUser(_ command: [String], input: String = "") throws -> AgentHarness.Run {
            try h.run(SystemUsers.setpriv ?? "/usr/bin/setpriv",
                      ["--reuid=\(desktopUser)", "--regid=\(desktopUser)", "--clear-groups", "--",
                       "/usr/bin/env", "SHAREBROKER_RUNTIME_DIR=\(desktopRuntime)", "SHAREBROKER_SOCKET=\(socket)", "XDG_STATE_HOME=\(desktopRuntime)/state",
                       "SHAREBROKER_AGENT_UID=\(agentUser)"] + command,
                      input: input)
        }

        // The registered apps, run by the desktop user, are identified and get the group keys.
        let copy = try asDesktopUser([h.notes, "copy", "--timeout", "10000"], input: "quarterly figures")
        #expect(copy.status == 0, "\(copy.error) \(copy.output)")
        let paste = try asDesktopUser([h.viewer, "paste", "--timeout", "10000"])
        #expect(paste.output == "quarterly figures", "\(paste.error)")
        let board = try Data(contentsOf: URL(fileURLWithPath: desktopRuntime + "/pasteboard"))
        #expect(!String(decoding: board, as: UTF8.self).contains("quarterly"), "sealed on the pasteboard")

        // The key ring on disk belongs to the agent's user alone.
        #expect(try asDesktopUser(["/bin/cat", lib + "/state/keyring"]).status != 0)
        #expect(try asDesktopUser(["/bin/ls", lib + "/state"]).status != 0)
        var info = stat()
        #expect(stat(lib + "/state/keyring", &info) == 0)
        #expect(info.st_uid == agentUser)
        #expect(info.st_mode & 0o077 == 0)

        // The unpinned app the desktop user could replace: refused, audited, and the agent said why at start.
        let drawn = try asDesktopUser([draw, "status", "--timeout", "10000"])
        #expect(!drawn.output.contains("keys 0x"), "\(drawn.output) \(drawn.error)")
        #expect(h.wait { h.jsonLines(lib + "/state/audit.jsonl").contains { $0["event"] as? String == "refused" && $0["reason"] as? String == "unsafeExecutable" } })
        let agentLog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(agentLog.contains("\(draw) (com.acme.draw) is not pinned") && agentLog.contains("refused to uids \(desktopUser)"), "\(agentLog)")

        // An unregistered program of the desktop user gets nothing.
        let stranger = try asDesktopUser([h.unmanaged, "paste", "--timeout", "10000"])
        #expect(stranger.status != 0)
        #expect(!stranger.output.contains("quarterly"))
    }
}

/// Two throwaway system users for a test (root only): the agent's and a desktop user's.
struct SystemUsers {
    static let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let useradd = ["/usr/sbin/useradd", "/sbin/useradd"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let userdel = ["/usr/sbin/userdel", "/sbin/userdel"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static let unavailableReason: String? = {
        if geteuid() != 0 { return "needs root, to create the agent's and a desktop user" }
        if setpriv == nil || useradd == nil || userdel == nil { return "needs setpriv (util-linux) and useradd/userdel (passwd)" }
        return nil
    }()
    static var skipReason: Comment { Comment(rawValue: unavailableReason ?? "") }

    let names: [String]
    let agent: UInt32
    let desktop: UInt32

    init() throws {
        let tag = "\(getpid() % 100_000)"
        names = ["sbagent\(tag)", "sbdesk\(tag)"]
        var ids: [UInt32] = []
        for name in names {
            _ = Self.runTool(Self.userdel ?? "userdel", [name])
            guard Self.runTool(Self.useradd ?? "useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name]) == 0,
                  let entry = getpwnam(name) else {
                throw HarnessError("could not create the user \(name)")
            }
            ids.append(entry.pointee.pw_uid)
        }
        agent = ids[0]
        desktop = ids[1]
    }

    func remove() {
        for name in names { _ = Self.runTool(Self.userdel ?? "userdel", [name]) }
    }

    static func runTool(_ path: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
