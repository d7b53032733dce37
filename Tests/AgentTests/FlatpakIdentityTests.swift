import Foundation
import Testing

/// What the Flatpak identity tests need on this machine.
enum FlatpakTestEnvironment {
    static let bwrap = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Why the suite cannot run here, or `nil` (the suite is skipped, saying what it needs).
    static var skipReason: String? {
        if !AgentHarness.binariesBuilt { return "sharebroker and sharebrokerd are not built (swift build first)" }
        if bwrap == nil { return "bwrap is not installed (apt-get install bubblewrap, or make deps)" }
        if geteuid() != 0 { return "bubblewrap sandboxes with their own pid namespace need root here (run the tests as root, as CI does)" }
        return nil
    }
}

/// Flatpak identity (issue 15 item 5), with real processes: the registered app runs inside a
/// bubblewrap sandbox laid out the way `flatpak run` lays one out (the app's files at `/app`,
/// `/.flatpak-info` bound read-only from data, its own pid namespace), and the instance record
/// is written the way Flatpak writes it (`RUNTIME/UID/.flatpak/INSTANCE/info`, and
/// `bwrapinfo.json` from bubblewrap's own `--info-fd`). Then the attacks: the same fake
/// `/.flatpak-info` without a record, with a record naming another sandbox or process, as a
/// symbolic link, a FIFO, an oversized file, on a writable mount, and an installation the agent
/// does not trust or a binary that is not the installed one. Each is refused
/// (`flatpakUnverified`, or the executable checks), audited, and gets no keys.
///
/// Needs `bwrap` (apt bubblewrap, `make deps`) and root (as the CI machine runs: bubblewrap
/// without a setuid binary needs unprivileged user namespaces otherwise); skipped with the
/// reason when either is missing.
@Suite("Flatpak identity", .serialized,
       .enabled(if: FlatpakTestEnvironment.skipReason == nil,
                "needs the built sharebroker and sharebrokerd, bwrap (apt bubblewrap; make deps) and root"))
struct FlatpakIdentityTests {
    static let appID = "org.acme.Notes"
    static let instanceID = "3141592653"
    /// One sandbox layout: where its files come from and what it claims.
    final class Sandbox: @unchecked Sendable {
        let h: AgentHarness
        var installation: String { h.root + "/flatpak" }
        var runtimeRoot: String { h.root + "/run-user" }
        var record: String { "\(runtimeRoot)/\(geteuid())/.flatpak/\(FlatpakIdentityTests.instanceID)" }
        /// The deployed app's files (its /app), inside the trusted installation.
        var appPath: String { "\(installation)/app/\(FlatpakIdentityTests.appID)/x86_64/stable/0123abcd/files" }

        init(agentArguments: [String] = []) throws {
            h = try AgentHarness()
            try h.install(at: appPath + "/bin/acme-notes")
            for folder in [runtimeRoot, "\(runtimeRoot)/\(geteuid())"] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                chmod(folder, 0o700)
            }
            let device = """
                {"format": "sharebroker.device", "version": 1, "apps": [
                  {"id": "\(FlatpakIdentityTests.appID)", "executable": "/app/bin/acme-notes", "flatpak": true, "appConnect": true,
                   "policy": \(AgentHarness.secureCopyPolicy)}
                ]}
                """
            try device.write(toFile: h.policyPath, atomically: true, encoding: .utf8)
            try h.startAgent(arguments: ["--policy", h.policyPath, "--flatpak-installation", installation,
                                         "--flatpak-runtime-root", runtimeRoot] + agentArguments)
        }

        /// The `.flatpak-info` Flatpak writes for this app (`appPath` may name another place).
        func info(appPath: String? = nil, instance: String = FlatpakIdentityTests.instanceID, padding: Int = 0) -> String {
            var text = """
                [Application]
                name=\(FlatpakIdentityTests.appID)
                runtime=runtime/org.freedesktop.Platform/x86_64/23.08

                [Instance]
                instance-id=\(instance)
                app-path=\(appPath ?? self.appPath)
                branch=stable
                arch=x86_64
                flatpak-version=1.14.4

                """
            if padding > 0 { text += "# " + String(repeating: "x", count: padding) + "\n" }
            return text
        }

        /// Writes the instance record's `info` (bwrapinfo.json comes from bwrap, or `bwrapInfo`).
        func writeRecord(info: String, bwrapInfo: String? = nil) throws {
            try FileManager.default.createDirectory(atPath: record, withIntermediateDirectories: true)
            chmod(runtimeRoot + "/\(geteuid())/.flatpak", 0o755)
            try info.write(toFile: record + "/info", atomically: true, encoding: .utf8)
            if let bwrapInfo { try bwrapInfo.write(toFile: record + "/bwrapinfo.json", atomically: true, encoding: .utf8) }
        }

        enum InfoFile {
            /// `--ro-bind-data`: what flatpak run does.
            case data(String)
            /// A read-write bind of a host file.
            case writable(String)
            /// A symbolic link to a copy of the info inside the sandbox.
            case symlink(String)
            /// A FIFO bound over it.
            case fifo
        }

        /// Runs `command` (arguments to the app) as `/app/bin/acme-notes` in a sandbox whose
        /// `/app` is `app` and whose `/.flatpak-info` is `infoFile`; bwrap's `--info-fd` goes to
        /// `bwrapInfoPath` (the record's `bwrapinfo.json` by default).
        func run(_ command: [String], infoFile: InfoFile, app: String? = nil, bwrapInfoPath: String? = nil) throws -> AgentHarness.Run {
            try h.run("/bin/sh", ["-c", shellLine(command, infoFile: infoFile, app: app, bwrapInfoPath: bwrapInfoPath)], timeout: 30)
        }

        /// As ``run(_:infoFile:app:bwrapInfoPath:)``, in the background: standard output goes to
        /// the returned file.
        func start(_ command: [String], infoFile: InfoFile, name: String) throws -> (process: Process, output: String) {
            let output = h.root + "/\(name).out"
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", try shellLine(command, infoFile: infoFile, app: nil, bwrapInfoPath: nil)]
            process.environment = h.environment
            process.standardOutput = FileHandle(forWritingAtPath: output)
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            return (process, output)
        }

        private func shellLine(_ command: [String], infoFile: InfoFile, app: String?, bwrapInfoPath: String?) throws -> String {
            let scratch = h.root + "/scratch-\(UInt32.random(in: 0 ... .max))"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            var args = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
            if FileManager.default.fileExists(atPath: "/opt") { args += ["--ro-bind", "/opt", "/opt"] }
            for link in ["/lib", "/lib64", "/bin", "/sbin"] {
                if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link) {
                    args += ["--symlink", target, link]
                } else if FileManager.default.fileExists(atPath: link) {
                    args += ["--ro-bind", link, link]
                }
            }
            args += ["--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent",
                     // The agent's socket and the client's state folder, not the records.
                     "--bind", h.root, h.root, "--tmpfs", runtimeRoot, "--tmpfs", installation,
                     "--ro-bind", app ?? appPath, "/app"]
            var redirects = "3>" + shellQuote(bwrapInfoPath ?? record + "/bwrapinfo.json")
            switch infoFile {
            case .data(let text):
                try text.write(toFile: scratch + "/info", atomically: true, encoding: .utf8)
                args += ["--ro-bind-data", "4", "/.flatpak-info"]
                redirects += " 4<" + shellQuote(scratch + "/info")
            case .writable(let text):
                try text.write(toFile: scratch + "/info", atomically: true, encoding: .utf8)
                args += ["--bind", scratch + "/info", "/.flatpak-info"]
            case .symlink(let text):
                try text.write(toFile: scratch + "/info", atomically: true, encoding: .utf8)
                args += ["--ro-bind", scratch + "/info", "/run/info", "--symlink", "/run/info", "/.flatpak-info"]
            case .fifo:
                guard mkfifo(scratch + "/fifo", 0o644) == 0 else { throw HarnessError("mkfifo failed") }
                args += ["--ro-bind", scratch + "/fifo", "/.flatpak-info"]
            }
            args += ["--info-fd", "3", "/app/bin/acme-notes"] + command
            return "exec " + ([FlatpakTestEnvironment.bwrap ?? "bwrap"] + args).map(shellQuote).joined(separator: " ") + " " + redirects
        }

        /// A long-lived sandbox of this app (`sleep`, not the app), for records that name it.
        func startSleepingSandbox(info: String) throws -> Process {
            try info.write(toFile: h.root + "/sleeper-info", atomically: true, encoding: .utf8)
            let args = ["--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                        "--symlink", "usr/bin", "/bin", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent",
                        "--ro-bind-data", "4", "/.flatpak-info", "--info-fd", "3", "/usr/bin/sleep", "60"]
            let line = "exec " + ([FlatpakTestEnvironment.bwrap ?? "bwrap"] + args).map(shellQuote).joined(separator: " ")
                + " 3>" + shellQuote(record + "/bwrapinfo.json") + " 4<" + shellQuote(h.root + "/sleeper-info")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", line]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            _ = h.wait(10) { ((try? String(contentsOfFile: record + "/bwrapinfo.json", encoding: .utf8)) ?? "").contains("child-pid") }
            return process
        }

        func refusals(_ reason: String) -> [[String: Any]] {
            h.auditRecords.filter { $0["event"] as? String == "refused" && $0["reason"] as? String == reason }
        }

        var agentLog: String { (try? String(contentsOfFile: h.root + "/agent-1.log", encoding: .utf8)) ?? "" }
    }

    static func shellQuote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    @Test("The same with the pidfd_open fallback (kernels before 6.5)")
    func sandboxedAppWithoutPeerPidfd() throws {
        let s = try Sandbox(agentArguments: ["--no-peer-pidfd"])
        let info = s.info()
        try s.writeRecord(info: info)
        let status = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
        #expect(status.status == 0, "\(status.output) \(status.error)")
        #expect(status.text.contains("app: \(Self.appID)"), "\(status.output)")
    }

    @Test("A connected Flatpak app stays through a policy install (re-identified from its sandbox), and loses its keys when the device no longer registers it as a Flatpak")
    func reidentifiedAtPolicyInstall() throws {
        let s = try Sandbox()
        let info = s.info()
        try s.writeRecord(info: info)
        let watch = try s.start(["watch", "--seconds", "30"], infoFile: .data(info), name: "watch")
        defer { s.h.stop(watch.process) }
        func events(_ name: String) -> Int { s.h.jsonLines(watch.output).filter { $0["event"] as? String == name }.count }
        #expect(s.h.wait(15) { events("keys") >= 1 }, "\(s.agentLog)")
        // The same document again: re-identified (no pidfd of the connection at hand), kept,
        // and the push reaches it.
        s.h.reloadAgent()
        #expect(s.h.wait(15) { events("policy") >= 1 }, "\(s.h.jsonLines(watch.output))")
        let status = try s.h.run(AgentHarness.sharebrokerd, ["--status"]).output
        #expect(status.contains(Self.appID), "\(status)")
        #expect(s.refusals("flatpakUnverified").isEmpty && events("keysDropped") == 0)
        // Now registered as a host app at that path: the sandboxed process is no longer it.
        let device = """
            {"format": "sharebroker.device", "version": 1, "apps": [
              {"id": "\(Self.appID)", "executable": "/app/bin/acme-notes", "appConnect": true, "policy": \(AgentHarness.secureCopyPolicy)}
            ]}
            """
        try device.write(toFile: s.h.policyPath, atomically: true, encoding: .utf8)
        s.h.reloadAgent()
        #expect(s.h.wait { events("keysDropped") >= 1 }, "\(s.h.jsonLines(watch.output))")
        #expect(s.h.wait { !s.refusals("unregistered").isEmpty })
    }

    @Test("Attack: a FUSE file system that never answers, mounted over a connected app's instance record, does not hold policy installs back (a revocation still lands)",
          .enabled(if: FileManager.default.fileExists(atPath: "/dev/fuse"), "needs /dev/fuse (the kernel's FUSE device)"))
    func stalledRecordDoesNotBlockInstalls() throws {
        let s = try Sandbox()
        let info = s.info()
        try s.writeRecord(info: info)
        let watch = try s.start(["watch", "--seconds", "60"], infoFile: .data(info), name: "watch")
        defer { s.h.stop(watch.process) }
        func events(_ name: String) -> Int { s.h.jsonLines(watch.output).filter { $0["event"] as? String == name }.count }
        #expect(s.h.wait(15) { events("keys") >= 1 }, "\(s.agentLog)")
        // The user's own runtime folder is the user's: fusermount lets them mount a FUSE file
        // system over the instance folder (root stands in for fusermount here). This one never
        // answers (FUSE_INIT is never read), so every lookup, stat or open in it waits forever.
        let fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC)
        try #require(fuse >= 0, "no /dev/fuse")
        var fuseOpen = true
        defer {
            // Closing the device aborts the file system: whatever still waits on it fails.
            if fuseOpen { close(fuse) }
            umount2(s.record, Int32(MNT_DETACH))
        }
        try #require(mount("sharebroker-stall", s.record, "fuse", 0, "fd=\(fuse),rootmode=40000,user_id=0,group_id=0") == 0,
                     "mounting FUSE failed: \(String(cString: strerror(errno)))")
        // The same document again: the push reaches the app (its re-identification does not
        // read the record it verified at connect).
        let pushes = events("policy")
        s.h.reloadAgent()
        #expect(s.h.wait(15) { events("policy") > pushes }, "the policy install stalled on the FUSE mount: \(s.h.jsonLines(watch.output))")
        // A revocation (the id now registered as a host app) lands too: keys dropped.
        let device = """
            {"format": "sharebroker.device", "version": 1, "apps": [
              {"id": "\(Self.appID)", "executable": "/app/bin/acme-notes", "appConnect": true, "policy": \(AgentHarness.secureCopyPolicy)}
            ]}
            """
        try device.write(toFile: s.h.policyPath, atomically: true, encoding: .utf8)
        s.h.reloadAgent()
        #expect(s.h.wait(15) { events("keysDropped") >= 1 }, "the revocation stalled on the FUSE mount: \(s.h.jsonLines(watch.output))")
        close(fuse)
        fuseOpen = false
    }

    @Test("Attack: a folder of the trusted installation that others can write (above or below the app's own folder) is not trusted: its app is refused")
    func writableInstallationFolder() throws {
        let s = try Sandbox()
        let info = s.info()
        try s.writeRecord(info: info)
        // Whoever can write such a folder can rename another app's folder (or a hard link of
        // another root-owned binary) into the app's path: the app's own files are not its own.
        for folder in [s.installation + "/app", s.installation + "/app/\(Self.appID)/x86_64", s.appPath + "/bin"] {
            #expect(chmod(folder, 0o777) == 0)
            let refused = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
            #expect(refused.status == 77, "\(folder): \(refused.output) \(refused.error)")
            #expect(refused.text.contains("flatpakUnverified") && refused.text.contains("nobody else can write"), "\(folder): \(refused.output)")
            #expect(chmod(folder, 0o755) == 0)
        }
        // Owned by another user (a per-user installation, named to an agent that is not that user).
        let bin = s.appPath + "/bin"
        #expect(chown(bin, 65534, 65534) == 0)
        let foreign = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
        #expect(foreign.status == 77 && foreign.text.contains("nobody else can write"), "\(foreign.output) \(foreign.error)")
        #expect(chown(bin, 0, 0) == 0)
        let genuine = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
        #expect(genuine.status == 0 && genuine.text.contains("app: \(Self.appID)"), "\(genuine.output) \(genuine.error)")
    }

    @Test("Attack: an instance record reached through a symbolic link (the instance folder, or its info file) is refused")
    func linkedInstanceRecord() throws {
        let s = try Sandbox()
        let info = s.info()
        // The instance folder is a link to a folder holding a record that matches.
        let elsewhere = s.h.root + "/record-elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try info.write(toFile: elsewhere + "/info", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: s.runtimeRoot + "/\(geteuid())/.flatpak", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: s.record, withDestinationPath: elsewhere)
        let linkedFolder = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
        #expect(linkedFolder.status == 77 && linkedFolder.text.contains("flatpakUnverified"), "\(linkedFolder.output) \(linkedFolder.error)")
        #expect(linkedFolder.text.contains("Flatpak keeps no record of that instance"), "\(linkedFolder.output)")
        // A real folder whose info is a link to a file that matches.
        try FileManager.default.removeItem(atPath: s.record)
        try FileManager.default.createDirectory(atPath: s.record, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: s.record + "/info", withDestinationPath: elsewhere + "/info")
        let linkedInfo = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
        #expect(linkedInfo.status == 77 && linkedInfo.text.contains("flatpakUnverified"), "\(linkedInfo.output) \(linkedInfo.error)")
        // The same record as plain files is accepted (the link was the only difference).
        try FileManager.default.removeItem(atPath: s.record + "/info")
        try s.writeRecord(info: info)
        let genuine = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
        #expect(genuine.status == 0 && genuine.text.contains("app: \(Self.appID)"), "\(genuine.output) \(genuine.error)")
    }

    @Test("Attack: a newline in a claim's app path (a key-file escape) or in a host executable's path does not forge a line of the agent's log")
    func refusalCannotForgeLogLines() throws {
        let s = try Sandbox()
        let forgedLine = "sharebrokerd-forged: app connected app=\(Self.appID)"
        // GKeyFile turns `\n` in a value into a newline; the app path is quoted in the refusal.
        let forged = s.info(appPath: "/forged\\n" + forgedLine.replacingOccurrences(of: " ", with: "_"))
        try s.writeRecord(info: forged)
        let flatpak = try s.run(["status", "--timeout", "10000"], infoFile: .data(forged))
        #expect(flatpak.status == 77 && flatpak.text.contains("flatpakUnverified"), "\(flatpak.output) \(flatpak.error)")
        // A host binary whose file name holds a newline.
        let host = s.h.root + "/bin\n" + forgedLine.replacingOccurrences(of: " ", with: "_")
        try FileManager.default.createDirectory(atPath: host, withIntermediateDirectories: true)
        try AgentHarness.copyOfTheTool(to: host + "/notes")
        let unregistered = try s.h.run(host + "/notes", ["status"])
        #expect(unregistered.status == 77, "\(unregistered.output) \(unregistered.error)")
        #expect(s.h.wait { s.agentLog.contains("reason=flatpakUnverified") && s.agentLog.contains("reason=unregistered") }, "\(s.agentLog)")
        let lines = s.agentLog.split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("sharebrokerd-forged") }, "\(s.agentLog)")
        #expect(s.agentLog.contains("\\nsharebrokerd-forged"), "the escaped newline is in the log: \(s.agentLog)")
    }

    @Test("Attack: an app path through a symbolic link inside the trusted installation (as Flatpak's own `active` link) is refused, even to the right files")
    func linkedAppPath() throws {
        let s = try Sandbox()
        // stable/active -> 0123abcd, as Flatpak lays out a deployment; the claim names the link.
        let active = s.installation + "/app/\(Self.appID)/x86_64/stable/active"
        try FileManager.default.createSymbolicLink(atPath: active, withDestinationPath: "0123abcd")
        let linked = s.info(appPath: active + "/files")
        try s.writeRecord(info: linked)
        let refused = try s.run(["status", "--timeout", "10000"], infoFile: .data(linked))
        #expect(refused.status == 77 && refused.text.contains("goes through a symbolic link"), "\(refused.output) \(refused.error)")
        // The resolved path, as Flatpak writes it, is the app.
        let info = s.info()
        try s.writeRecord(info: info)
        let genuine = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
        #expect(genuine.status == 0 && genuine.text.contains("app: \(Self.appID)"), "\(genuine.output) \(genuine.error)")
    }

    @Test("A Flatpak app in a real bubblewrap sandbox, with the record Flatpak writes, is identified by its app id and gets its keys")
    func sandboxedAppIsIdentified() throws {
        let s = try Sandbox()
        let info = s.info()
        try s.writeRecord(info: info)
        let status = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
        #expect(status.status == 0, "\(status.output) \(status.error)")
        #expect(status.text.contains("app: \(Self.appID)"), "\(status.output)")
        #expect(status.text.contains("secure services: available"), "\(status.output)")
        // The same binary outside the sandbox (no /.flatpak-info) is not that app: the device
        // registers it by app id, not by a host path.
        let host = try s.h.run(s.appPath + "/bin/acme-notes", ["status"])
        #expect(host.status == 77)
        #expect(host.text.contains("unregistered"), "\(host.output)")
        #expect(s.refusals("flatpakUnverified").isEmpty)
    }

    @Test("Attack: a fake /.flatpak-info with no instance record is refused")
    func noInstanceRecord() throws {
        let s = try Sandbox()
        let refused = try s.run(["status", "--timeout", "10000"], infoFile: .data(s.info()), bwrapInfoPath: s.h.root + "/elsewhere.json")
        #expect(refused.status == 77, "\(refused.output) \(refused.error)")
        #expect(refused.text.contains("flatpakUnverified"), "\(refused.output)")
        #expect(!refused.text.contains("secure services: available"))
        #expect(s.h.wait { !s.refusals("flatpakUnverified").isEmpty })
        // The agent's log says why (the record it looked for), with no keys or content.
        #expect(s.h.wait { s.agentLog.contains("reason=flatpakUnverified") && s.agentLog.contains("Flatpak keeps no record of that instance") },
                "\(s.agentLog)")
    }

    @Test("Attack: a record that names another sandbox of the app, or a host process, does not vouch for the faker")
    func recordNamesAnotherProcess() throws {
        let s = try Sandbox()
        let info = s.info()
        try s.writeRecord(info: info)
        // A genuine instance of the app is running (its record is the real one); the attacker
        // claims that instance from a sandbox of its own.
        let genuine = try s.startSleepingSandbox(info: info)
        defer { s.h.stop(genuine) }
        let bwrapInfo = try String(contentsOfFile: s.record + "/bwrapinfo.json", encoding: .utf8)
        #expect(bwrapInfo.contains("child-pid"))
        let claimed = try s.run(["status", "--timeout", "10000"], infoFile: .data(info), bwrapInfoPath: s.h.root + "/attacker.json")
        #expect(claimed.status == 77, "\(claimed.output)")
        #expect(claimed.text.contains("flatpakUnverified"), "\(claimed.output)")
        #expect(claimed.text.contains("does not run inside that instance's sandbox") || claimed.text.contains("not the file the sandbox process"),
                "\(claimed.output)")
        // A record whose child-pid is a host process (the agent's own pid namespace).
        try s.writeRecord(info: info, bwrapInfo: #"{"child-pid": \#(genuine.processIdentifier)}"#)
        let hostPid = try s.run(["status", "--timeout", "10000"], infoFile: .data(info), bwrapInfoPath: s.h.root + "/attacker2.json")
        #expect(hostPid.status == 77, "\(hostPid.output)")
        #expect(hostPid.text.contains("flatpakUnverified"), "\(hostPid.output)")
        // A record that names a pid no process has.
        try s.writeRecord(info: info, bwrapInfo: #"{"child-pid": 2147483000}"#)
        let gone = try s.run(["status", "--timeout", "10000"], infoFile: .data(info), bwrapInfoPath: s.h.root + "/attacker3.json")
        #expect(gone.status == 77 && gone.text.contains("is not running"), "\(gone.output)")
    }

    @Test("Attack: /.flatpak-info as a symbolic link, a FIFO, an oversized file or on a writable mount is refused (and a FIFO does not hang the agent)")
    func unsafeInfoFiles() throws {
        let s = try Sandbox()
        let info = s.info()
        try s.writeRecord(info: info)
        let link = try s.run(["status", "--timeout", "10000"], infoFile: .symlink(info))
        #expect(link.status == 77 && link.text.contains("symbolic link"), "\(link.output)")
        let started = Date()
        let fifo = try s.run(["status", "--timeout", "10000"], infoFile: .fifo)
        #expect(fifo.status == 77 && fifo.text.contains("not a regular file (a FIFO)"), "\(fifo.output)")
        #expect(Date().timeIntervalSince(started) < 8, "the agent waited on the FIFO")
        let big = s.info(padding: 70 * 1024)
        try s.writeRecord(info: big)
        let oversized = try s.run(["status", "--timeout", "10000"], infoFile: .data(big))
        #expect(oversized.status == 77 && oversized.text.contains("more than the 65536 accepted"), "\(oversized.output)")
        try s.writeRecord(info: info)
        let writable = try s.run(["status", "--timeout", "10000"], infoFile: .writable(info))
        #expect(writable.status == 77 && writable.text.contains("not on a read-only mount"), "\(writable.output)")
        #expect(s.h.wait { s.refusals("flatpakUnverified").count >= 1 })
        // And the genuine layout still works with the same agent.
        let genuine = try s.run(["status", "--timeout", "10000"], infoFile: .data(info))
        #expect(genuine.status == 0 && genuine.text.contains("app: \(Self.appID)"), "\(genuine.output) \(genuine.error)")
    }

    @Test("Attack: a complete forgery (own namespace, own record) still needs the installed app's own file: another installation or another binary is refused")
    func forgeryNeedsTheInstalledFile() throws {
        let s = try Sandbox()
        // An installation the agent does not trust, made by the attacker, with every record consistent.
        let evil = s.h.root + "/evil/app/\(Self.appID)/x86_64/stable/0123abcd/files"
        try s.h.install(at: evil + "/bin/acme-notes")
        let forged = s.info(appPath: evil)
        try s.writeRecord(info: forged)
        let untrusted = try s.run(["status", "--timeout", "10000"], infoFile: .data(forged), app: evil)
        #expect(untrusted.status == 77, "\(untrusted.output)")
        #expect(untrusted.text.contains("not inside a trusted Flatpak installation"), "\(untrusted.output)")
        // The record names the trusted installation, but /app is the attacker's own copy of a binary.
        let own = s.h.root + "/own-files"
        try FileManager.default.createDirectory(atPath: own + "/bin", withIntermediateDirectories: true)
        try AgentHarness.copyOfTheTool(to: own + "/bin/acme-notes")
        let info = s.info()
        try s.writeRecord(info: info)
        let copied = try s.run(["status", "--timeout", "10000"], infoFile: .data(info), app: own)
        #expect(copied.status == 77, "\(copied.output)")
        #expect(copied.text.contains("executableChanged"), "\(copied.output)")
        #expect(s.h.wait { !s.refusals("flatpakUnverified").isEmpty && !s.refusals("executableChanged").isEmpty })
    }
}

extension AgentHarness.Run {
    /// Standard output and standard error together (refusals go to the latter).
    var text: String { output + error }
}
