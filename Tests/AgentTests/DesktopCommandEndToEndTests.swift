import Foundation
import Testing

/// `sharebroker open-in --handoff desktop` and `open-url` with a real agent and real desktop
/// entries (a temporary XDG tree given to the processes through their environment; GIO needs no
/// display or D-Bus session to start an entry, so none is started).
@Suite("desktop host commands end to end", .serialized,
       .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct DesktopCommandEndToEndTests {
    /// Desktop entries for the standard device's ids plus a mail handler; each records what it got.
    func makeDesktop(_ h: AgentHarness) throws -> (records: String, runtime: String) {
        let xdg = h.root + "/xdg"
        let records = h.root + "/records"
        let runtime = h.root + "/xdg-runtime"
        for dir in [xdg + "/data/applications", xdg + "/config", xdg + "/configdirs", records, runtime] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        chmod(runtime, 0o700)
        let recorder = xdg + "/record"
        try """
            #!/bin/sh
            out="$1"; shift
            mkdir -p "$out"
            n="$(date +%s%N)-$$"
            printf '%s' "$1" > "$out/$n.arg"
            if [ -f "$1" ]; then cp -- "$1" "$out/$n.data"; fi
            : > "$out/$n.done"

            """.write(toFile: recorder, atomically: true, encoding: .utf8)
        chmod(recorder, 0o755)
        for id in ["com.acme.viewer", "org.example.sheets", "org.example.Mail"] {
            try """
                [Desktop Entry]
                Type=Application
                Name=\(id)
                Exec=\(recorder) \(records)/\(id) %u

                """.write(toFile: xdg + "/data/applications/\(id).desktop", atomically: true, encoding: .utf8)
        }
        try """
            [Default Applications]
            x-scheme-handler/viewer=com.acme.viewer.desktop
            x-scheme-handler/sheets=org.example.sheets.desktop
            x-scheme-handler/mailto=org.example.Mail.desktop

            """.write(toFile: xdg + "/config/mimeapps.list", atomically: true, encoding: .utf8)
        h.extraEnvironment = ["XDG_DATA_HOME": xdg + "/data", "XDG_DATA_DIRS": "/usr/share",
                              "XDG_CONFIG_HOME": xdg + "/config", "XDG_CONFIG_DIRS": xdg + "/configdirs",
                              "XDG_RUNTIME_DIR": runtime]
        return (records, runtime)
    }

    func waitForRecord(_ folder: String, timeout: TimeInterval = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let done = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).first(where: { $0.hasSuffix(".done") }) {
                return folder + "/" + String(done.dropLast(5))
            }
            usleep(50_000)
        }
        return nil
    }

    @Test("open-in starts the whitelisted app with a private copy, a blocked one with a dummy; bad ids start nothing")
    func openInOnTheDesktop() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let (records, runtime) = try makeDesktop(h)
        try h.startAgent()
        defer { h.stopAgent() }
        let document = h.root + "/Q3 plan.txt"
        try "quarterly".write(toFile: document, atomically: true, encoding: .utf8)

        let delivered = try h.run(h.notes, ["open-in", document, "--to", "com.acme.viewer", "--handoff", "desktop"])
        #expect(delivered.status == 0, "\(delivered.error)")
        let copy = delivered.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(copy.hasPrefix(runtime + "/app/com.acme.viewer/"))
        #expect(copy.hasSuffix("/Q3 plan.txt"))
        let viewerRecord = try #require(waitForRecord(records + "/com.acme.viewer"))
        #expect(FileManager.default.contents(atPath: viewerRecord + ".data") == Data("quarterly".utf8))

        let blocked = try h.run(h.notes, ["open-in", document, "--to", "org.example.sheets", "--handoff", "desktop"])
        #expect(blocked.status == 3, "\(blocked.error)")
        let sheetsRecord = try #require(waitForRecord(records + "/org.example.sheets"))
        #expect(FileManager.default.contents(atPath: sheetsRecord + ".data") == Data())
        let argument = (try? String(contentsOfFile: sheetsRecord + ".arg", encoding: .utf8)) ?? ""
        #expect(argument.hasSuffix(".sbwithheld"))
        #expect(!argument.contains("Q3"))
        #expect(h.auditRecords.contains { $0["action"] as? String == "openIn" && $0["target"] as? String == "org.example.sheets" })

        let unknown = try h.run(h.notes, ["open-in", document, "--to", "org.example.Nothing", "--handoff", "desktop"])
        #expect(unknown.status == 64)
        #expect(unknown.error.contains("no desktop entry"))
        let vanished = try h.run(h.notes, ["open-in", h.root + "/gone.txt", "--to", "com.acme.viewer", "--handoff", "desktop"])
        #expect(vanished.status == 74)
        usleep(300_000)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: records + "/com.acme.viewer")) ?? []).count == 3)
    }

    @Test("open-url follows the desktop's scheme associations under the Open In rules")
    func openURLOnTheDesktop() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let (records, _) = try makeDesktop(h)
        try h.startAgent()
        defer { h.stopAgent() }

        let opened = try h.run(h.notes, ["open-url", "viewer:doc/42", "--handoff", "desktop"])
        #expect(opened.status == 0, "\(opened.error)")
        #expect(opened.output.trimmingCharacters(in: .whitespacesAndNewlines) == "com.acme.viewer")
        let record = try #require(waitForRecord(records + "/com.acme.viewer"))
        #expect((try? String(contentsOfFile: record + ".arg", encoding: .utf8)) == "viewer:doc/42")

        // sheets: is handled by an unmanaged app outside the notes app's whitelist.
        #expect(try h.run(h.notes, ["open-url", "sheets:x", "--handoff", "desktop"]).status == 3)
        // mailto: the desktop's handler is not native mail on this device (the Apple ids), and
        // not whitelisted: blocked.
        #expect(try h.run(h.notes, ["open-url", "mailto:a@example.org", "--handoff", "desktop"]).status == 3)
        #expect(try h.run(h.notes, ["open-url", "nosuch:x", "--handoff", "desktop"]).status == 1)
        usleep(300_000)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: records + "/org.example.sheets")) ?? []).isEmpty)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: records + "/org.example.Mail")) ?? []).isEmpty)
    }

    @Test("The device document names native mail: mailto reaches it only through the seed rules (MI_AC_DISABLE_SCHEME_BLOCKING honoured)")
    func nativeMailFromTheDeviceDocument() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.writePolicy([
            ("com.acme.notes", h.notes, #"{"auth": "authorized", "openIn": "appConnectApps", "config": {"MI_AC_DISABLE_SCHEME_BLOCKING": "true"}}"#, nil),
            ("com.acme.viewer", h.viewer, AgentHarness.secureCopyPolicy, nil),
        ])
        let text = try String(contentsOfFile: h.policyPath, encoding: .utf8)
        try text.replacingOccurrences(of: #""version": 1,"#, with: #""version": 1, "nativeMail": ["org.example.Mail"],"#)
            .write(toFile: h.policyPath, atomically: true, encoding: .utf8)
        let (records, _) = try makeDesktop(h)
        try h.startAgent()
        defer { h.stopAgent() }

        // The viewer's whitelist (its managed peers) lacks native mail, and nothing overrides: blocked.
        #expect(try h.run(h.viewer, ["open-url", "mailto:a@example.org", "--handoff", "desktop"]).status == 3)
        usleep(300_000)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: records + "/org.example.Mail")) ?? []).isEmpty)
        // The notes app's config sets MI_AC_DISABLE_SCHEME_BLOCKING: native mail opens anyway.
        let opened = try h.run(h.notes, ["open-url", "mailto:b@example.org", "--handoff", "desktop"])
        #expect(opened.status == 0, "\(opened.error)")
        let record = try #require(waitForRecord(records + "/org.example.Mail"))
        #expect((try? String(contentsOfFile: record + ".arg", encoding: .utf8)) == "mailto:b@example.org")
    }

    @Test("issue 31.10: no silent folder fallback, no ignored --to, a hint for '.desktop', honest blocked messages")
    func honestMessages() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.writePolicy([
            ("com.acme.notes", h.notes, AgentHarness.secureCopyPolicy, nil),
            ("com.acme.viewer", h.viewer, #"{"auth": "unauthorized", "openIn": "authorized"}"#, nil),
        ])
        let (records, _) = try makeDesktop(h)
        let document = h.root + "/Q3.txt"
        try "quarterly".write(toFile: document, atomically: true, encoding: .utf8)
        // Outside a desktop session, auto does not fall back to a folder and report a delivery.
        let desktopEnvironment = h.extraEnvironment
        h.extraEnvironment["XDG_RUNTIME_DIR"] = ""
        h.extraEnvironment["DISPLAY"] = ""
        h.extraEnvironment["WAYLAND_DISPLAY"] = ""
        try h.startAgent()
        defer { h.stopAgent() }
        let noSession = try h.run(h.notes, ["open-in", document, "--to", "com.acme.viewer"])
        #expect(noSession.status == 69, "\(noSession.error)")
        #expect(noSession.error.contains("no desktop session"))
        #expect(noSession.output.isEmpty)
        #expect(try h.run(h.notes, ["open-url", "viewer:doc/1"]).status == 69)
        h.extraEnvironment = desktopEnvironment
        // --to with the activity sheet is refused, not ignored.
        let sheet = try h.run(h.notes, ["open-in", document, "--to", "com.acme.viewer", "--via", "activitySheet", "--handoff", "desktop"])
        #expect(sheet.status == 64)
        #expect(sheet.error.contains("cannot go with --via activitySheet"))
        // A desktop file name instead of an id gets a hint.
        let suffixed = try h.run(h.notes, ["open-in", document, "--to", "com.acme.viewer.desktop", "--handoff", "desktop"])
        #expect(suffixed.status == 64)
        #expect(suffixed.error.contains("without '.desktop' (com.acme.viewer)"))
        // An unauthorized user's URL: no "no app was not started".
        let blocked = try h.run(h.viewer, ["open-url", "viewer:doc/2", "--handoff", "desktop"])
        #expect(blocked.status == 3)
        #expect(!blocked.error.contains("no app was not started"))
        #expect(blocked.error.contains("nothing was opened"))
        usleep(300_000)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: records + "/com.acme.viewer")) ?? []).isEmpty)
    }

    /// Runs `argv` (raw bytes: arguments need not be UTF-8) with the harness's environment;
    /// returns the exit status and standard output.
    func spawnRaw(_ h: AgentHarness, _ argv: [[UInt8]]) throws -> (status: Int32, output: [UInt8]) {
        let outPath = h.root + "/raw-\(UInt32.random(in: 0 ... .max)).out"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { bytes in
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (i, b) in bytes.enumerated() { buffer[i] = CChar(bitPattern: b) }
            buffer[bytes.count] = 0
            return buffer
        } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = h.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in cArgs { p?.deallocate() }
            for p in cEnv { free(p) }
        }
        guard let executable = cArgs[0] else { throw POSIXError(.EINVAL) }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, &cArgs, &cEnv)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let output = FileManager.default.contents(atPath: outPath).map(Array.init) ?? []
        return ((status >> 8) & 0xFF, output)
    }

    @Test("issue 31.8: open-in hands over a document whose name is not UTF-8 under its own bytes")
    func nonUTF8Name() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let (records, runtime) = try makeDesktop(h)
        try h.startAgent()
        defer { h.stopAgent() }
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".txt".utf8)
        let path = Array(h.root.utf8) + [UInt8(ascii: "/")] + name
        let fd = open(path.map { CChar(bitPattern: $0) } + [0], O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(fd >= 0)
        _ = Array("menu".utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let run = try spawnRaw(h, [Array(h.notes.utf8), Array("open-in".utf8), path, Array("--to".utf8), Array("com.acme.viewer".utf8),
                                   Array("--handoff".utf8), Array("desktop".utf8), Array("--timeout".utf8), Array("10000".utf8)])
        #expect(run.status == 0)
        let printed = Array(run.output.prefix { $0 != 0x0A })
        #expect(printed.starts(with: Array((runtime + "/app/com.acme.viewer/").utf8)))
        #expect(printed.suffix(name.count + 1).elementsEqual([UInt8(ascii: "/")] + name), "the path printed is the file's bytes")
        let record = try #require(waitForRecord(records + "/com.acme.viewer"))
        #expect(FileManager.default.contents(atPath: record + ".data") == Data("menu".utf8))
    }
}
