import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentProtocol
import ShareBrokerLinux

/// `sharebroker agent-demo`: the cross-process story, with real processes. It starts the agent
/// (`sharebrokerd`, next to this binary) in a fresh runtime folder on the demo's device policy
/// (``DemoDevice``, written there as device.json), installs two managed apps (copies of this
/// binary at that policy's registered paths)
/// and one unmanaged process (a copy at an unregistered path), and walks them through
/// SecureCopy, Open In, a retire, and the agent stopped and restarted, printing every command
/// and what it answered. The apps copy to and paste from the desktop clipboard when a display
/// answers (X11, else Wayland), else the host pasteboard file (`--pasteboard` chooses).
struct AgentDemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent-demo",
        abstract: "Run the cross-process demo: the agent, two managed apps and an unmanaged process.")

    @Option(help: "The runtime folder to use (default: a fresh temporary folder, removed afterwards).")
    var directory: String?

    @Flag(help: "Keep the runtime folder (logs, state, pasteboard) afterwards.")
    var keep = false

    @Option(name: .customLong("pasteboard"),
            help: "The clipboard the apps use: x11, wayland, file, or auto (the default): x11 when the X server named by DISPLAY answers, else wayland when the compositor named by WAYLAND_DISPLAY answers, else file (the host pasteboard file in the runtime folder).")
    var pasteboard: String?

    func run() throws {
        var kind: PasteboardKind?
        if let pasteboard, pasteboard != "auto" {
            guard let chosen = PasteboardKind(rawValue: pasteboard) else {
                throw ValidationError("--pasteboard \(pasteboard): expected x11, wayland, file or auto")
            }
            kind = chosen
        }
        let demo = try AgentDemo(directory: directory, clipboard: kind)
        defer { demo.finish(keep: keep || directory != nil) }
        try demo.play()
        if !demo.failures.isEmpty {
            print("\nERROR: \(demo.failures.count) step(s) did not answer as expected:")
            for failure in demo.failures { print("  - \(failure)") }
            throw ExitCode(ExitStatus.dataError)
        }
        print("\nEvery step answered as expected.")
    }
}

/// The demo's processes and steps.
final class AgentDemo {
    let base: String
    let daemon: String
    let me: String
    var agent: Process?
    var watcher: Process?
    var failures: [String] = []
    let removeAfter: Bool
    /// The clipboard the apps use.
    let clipboard: PasteboardKind
    /// The demo's own view of a desktop clipboard (nil for the file): it checks what any client
    /// of the display reads, and puts an earlier item back as any client could.
    let observer: DesktopPasteboard?
    /// Copies still serving the desktop clipboard (an X11 or Wayland copy is served by the
    /// copying process until another app copies).
    var servers: [Process] = []

    init(directory: String?, clipboard requested: PasteboardKind? = nil) throws {
        me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        daemon = (me as NSString).deletingLastPathComponent + "/sharebrokerd"
        guard FileManager.default.isExecutableFile(atPath: daemon) else {
            throw ValidationError("sharebrokerd is not next to this binary (\(daemon)); build it: swift build --product sharebrokerd")
        }
        base = directory ?? NSTemporaryDirectory() + "sharebroker-agent-demo-\(getpid())"
        removeAfter = directory == nil
        (clipboard, observer) = try Self.openClipboard(requested)
        try FileManager.default.createDirectory(atPath: base + "/apps", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/bin", withIntermediateDirectories: true)
    }

    /// The clipboard `requested` names, else the first that answers: X11 (`DISPLAY`), Wayland
    /// (`WAYLAND_DISPLAY`), the file. A desktop clipboard named explicitly must answer.
    static func openClipboard(_ requested: PasteboardKind?) throws -> (PasteboardKind, DesktopPasteboard?) {
        let environment = ProcessEnvironment.current
        for kind in requested.map({ [$0] }) ?? [.x11, .wayland, .file] {
            let variable = kind == .x11 ? "DISPLAY" : "WAYLAND_DISPLAY"
            switch kind {
            case .file:
                return (.file, nil)
            case .x11, .wayland:
                guard requested != nil || !(environment[variable] ?? "").isEmpty else { continue }
                do {
                    return (kind, try DesktopPasteboard(kind == .x11 ? .x11 : .wayland, environment: environment))
                } catch {
                    if requested != nil {
                        throw ValidationError("--pasteboard \(kind.rawValue): \(error)")
                    }
                }
            }
        }
        return (.file, nil)
    }

    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["SHAREBROKER_RUNTIME_DIR"] = base
        // The apps' offline-timer state, in the demo's folder rather than the home.
        env["XDG_STATE_HOME"] = base + "/state"
        env["SHAREBROKER_SOCKET"] = nil
        env["SHAREBROKER_PASTEBOARD"] = nil
        // sharebroker copy/paste pick x11, wayland or the file from these.
        switch clipboard {
        case .x11: env["WAYLAND_DISPLAY"] = nil
        case .wayland: env["DISPLAY"] = nil
        case .file:
            env["DISPLAY"] = nil
            env["WAYLAND_DISPLAY"] = nil
        }
        return env
    }

    var notes: String { base + "/apps/acme-notes" }
    /// The app whose copies warn (issue 33).
    var drafts: String { base + "/apps/acme-drafts" }
    var viewer: String { base + "/apps/acme-viewer" }
    var stranger: String { base + "/bin/random-tool" }

    func install(_ path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: me, toPath: path)
    }

    func short(_ path: String) -> String {
        path.hasPrefix(base + "/") ? String(path.dropFirst(base.count + 1)) : path
    }

    func section(_ title: String) {
        print("\n== \(title)")
    }

    /// Runs a command, prints it and its answer, and checks its exit status.
    @discardableResult
    func step(_ executable: String, _ arguments: [String], input: String? = nil, expect: Int32 = 0,
              note: String? = nil) -> (status: Int32, output: String) {
        let shown = (input.map { "echo '\($0)' | " } ?? "") + ([short(executable)] + arguments.map(short)).joined(separator: " ")
        print("$ \(shown)" + (note.map { "    # \($0)" } ?? ""))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = stepEnvironment ?? environment
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        do { try process.run() } catch {
            failures.append("\(shown): could not start (\(error))")
            return (-1, "")
        }
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try? stdin.fileHandleForWriting.close()
        let errors = DemoBox()
        let reader = Thread { errors.set(stderr.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        errors.waitUntilSet()
        let output = String(decoding: out, as: UTF8.self)
        for line in output.split(separator: "\n") {
            print("  \(line)")
        }
        for line in String(decoding: errors.data, as: UTF8.self).split(separator: "\n")
            where !line.contains("[ShareBrokerAgentClient]") {
            print("  (stderr) \(line)")
        }
        print("  [exit \(process.terminationStatus)]")
        if process.terminationStatus != expect {
            failures.append("\(shown): exit \(process.terminationStatus), expected \(expect)")
        }
        return (process.terminationStatus, output)
    }

    func check(_ condition: Bool, _ what: String) {
        print(condition ? "  ok: \(what)" : "  NOT OK: \(what)")
        if !condition { failures.append(what) }
    }

    // MARK: The clipboard

    /// Runs a copy command. On the file it is a plain ``step``; on a desktop clipboard the
    /// copying process serves its item until another app copies, so the demo reads its answer
    /// line and leaves it serving in the background (its exit status is checked once it ends).
    @discardableResult
    func copy(_ executable: String, _ arguments: [String] = ["copy"], input: String, expect: Int32 = 0,
              note: String? = nil) -> (status: Int32, output: String) {
        guard clipboard != .file else { return step(executable, arguments, input: input, expect: expect, note: note) }
        let shown = "echo '\(input)' | " + ([short(executable)] + arguments.map(short)).joined(separator: " ")
        print("$ \(shown)" + (note.map { "    # \($0)" } ?? ""))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        let log = base + "/clipboard-servers.log"
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let errors = FileHandle(forWritingAtPath: log)
        errors?.seekToEndOfFile()
        process.standardError = errors ?? FileHandle.nullDevice
        do { try process.run() } catch {
            failures.append("\(shown): could not start (\(error))")
            return (-1, "")
        }
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try? stdin.fileHandleForWriting.close()
        let line = Self.readLine(stdout.fileHandleForReading.fileDescriptor, timeout: .seconds(30)) ?? ""
        if !line.isEmpty { print("  \(line)") }
        if line.hasPrefix("copied ") {
            print("  [serving the \(clipboard.rawValue) clipboard in the background, pid \(process.processIdentifier), until another app copies]")
            servers.append(process)
            if expect != 0 { failures.append("\(shown): copied, expected exit \(expect)") }
            return (0, line)
        }
        // Not serving (blocked or refused): it ends by itself.
        for _ in 0..<3_000 where process.isRunning { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        print("  [exit \(process.terminationStatus)]")
        if process.terminationStatus != expect {
            failures.append("\(shown): exit \(process.terminationStatus), expected \(expect)")
        }
        return (process.terminationStatus, line)
    }

    /// A paste by a process that may not open the sealed item on the clipboard: on the file it
    /// reads nothing (exit 1); on a desktop clipboard it reads what any other app reads, the
    /// placeholder. Never the text.
    func pasteWithoutKeys(_ executable: String, secret: String, note: String, who: String) {
        let desktop = clipboard != .file
        let paste = step(executable, ["paste"], expect: desktop ? 0 : 1, note: note + (desktop ? "; it reads the placeholder" : ""))
        if desktop {
            check(!paste.output.isEmpty && !paste.output.contains(secret), "\(who) reads the placeholder, not the text")
        } else {
            check(paste.output.isEmpty, "\(who) reads nothing")
        }
    }

    /// The first line `fd` gives within `timeout`, or `nil` at end of file or time-out.
    static func readLine(_ fd: Int32, timeout: Duration) -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            guard read(fd, &byte, 1) == 1 else { return nil }
            if byte == 10 { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    /// Checks that the clipboard holds `secret` sealed (and never in the clear): the pasteboard
    /// file's bytes, or what any client of the desktop reads (the sealed target first, the
    /// placeholder under the text targets; on X11 also what `xclip` reads, when installed).
    func checkSealed(_ secret: String) {
        let plain = Array(secret.utf8)
        guard let observer else {
            let raw = (try? Data(contentsOf: URL(fileURLWithPath: base + "/pasteboard"))) ?? Data()
            check(!String(decoding: raw, as: UTF8.self).contains(secret), "the host pasteboard holds sealed bytes, not the text")
            return
        }
        let items = desktopItems(observer)
        print("$ (read the \(clipboard.rawValue) clipboard as any client of the display)")
        for item in items {
            print("  \(item.type): \(item.bytes.count) bytes" + (item.type == PasteboardItem.sealedType ? "" : " \"\(String(decoding: item.bytes, as: UTF8.self))\""))
        }
        check(items.first?.type == PasteboardItem.sealedType && items.contains { $0.type != PasteboardItem.sealedType }
              && !items.contains { Self.contains($0.bytes, plain) },
              "the \(clipboard.rawValue) clipboard offers the sealed item and a placeholder, not the text")
        // What the desktop's own tools read, when installed: the offered types, the clipboard and
        // the primary selection.
        let reader: (path: String, types: [String], text: [String], primary: [String], what: String)
        switch clipboard {
        case .x11:
            reader = ("xclip", ["-o", "-selection", "clipboard", "-t", "TARGETS"], ["-o", "-selection", "clipboard"],
                      ["-o", "-selection", "primary"], "xclip reads the sealed target and the placeholder, never the text")
        case .wayland:
            reader = ("wl-paste", ["--list-types"], ["--no-newline"], ["--no-newline", "--primary"],
                      "wl-paste reads the sealed type and the placeholder, never the text")
        case .file:
            return
        }
        guard let path = ["/usr/bin/", "/bin/"].map({ $0 + reader.path }).first(where: FileManager.default.isExecutableFile(atPath:)) else { return }
        let types = tool(path, reader.types)
        let text = tool(path, reader.text)
        let primary = tool(path, reader.primary)
        print("$ \(reader.path) \(reader.types.joined(separator: " "))")
        for name in types.split(separator: "\n") { print("  \(name)") }
        print("$ \(reader.path) \(reader.text.joined(separator: " ")); \(reader.path) \(reader.primary.joined(separator: " "))")
        print("  \(text)")
        print("  \(primary)")
        check(types.contains(SealedSet.targetName) && !text.isEmpty && !text.contains(secret) && !primary.contains(secret),
              reader.what)
    }

    /// What a desktop clipboard offers now, read through the display (not this process's own copy).
    func desktopItems(_ observer: DesktopPasteboard) -> [PasteboardItem] {
        if let x11 = observer.x11 { return (try? x11.readSelection("CLIPBOARD")) ?? [] }
        if let wayland = observer.wayland { return (try? wayland.readSelection()) ?? [] }
        return observer.pasteboard.read().items
    }

    /// What the clipboard holds now: the file's bytes, or the sealed items a desktop clipboard offers.
    func clipboardSnapshot() -> Data {
        guard let observer else { return (try? Data(contentsOf: URL(fileURLWithPath: base + "/pasteboard"))) ?? Data() }
        return Data(SealedSet.encode(desktopItems(observer).filter { $0.type == PasteboardItem.sealedType }.map(\.bytes)))
    }

    /// Puts a ``clipboardSnapshot()`` back, as any process could: the file's bytes, or (on a
    /// desktop) the sealed items, offered by this process.
    func restoreClipboard(_ snapshot: Data) {
        guard let observer else {
            try? snapshot.write(to: URL(fileURLWithPath: base + "/pasteboard"))
            return
        }
        guard let envelopes = try? SealedSet.decode(Array(snapshot)) else {
            failures.append("nothing sealed to put back on the \(clipboard.rawValue) clipboard")
            return
        }
        do {
            _ = try observer.pasteboard.write(envelopes.map { PasteboardItem(type: PasteboardItem.sealedType, bytes: $0) })
            print("$ (put the earlier sealed item back on the \(clipboard.rawValue) clipboard, as any client could)")
        } catch {
            failures.append("could not put the earlier sealed item back on the \(clipboard.rawValue) clipboard: \(error)")
        }
    }

    /// Runs a tool (`xclip`) with the apps' environment; its standard output, empty on failure.
    func tool(_ path: String, _ arguments: [String]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "" }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : ""
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// Checks that every copy that served the desktop clipboard ended well once another app
    /// copied, and stops the one still serving.
    func stopServers() {
        for (index, server) in servers.enumerated() {
            let last = index == servers.count - 1
            for _ in 0..<(last ? 0 : 300) where server.isRunning { usleep(10_000) }
            if server.isRunning {
                if !last { failures.append("a copy (pid \(server.processIdentifier)) kept serving after another app copied") }
                server.terminate()
                server.waitUntilExit()
            } else if server.terminationStatus != 0 {
                failures.append("a copy that served the clipboard (pid \(server.processIdentifier)) exited \(server.terminationStatus)")
            }
        }
        servers = []
    }

    /// Starts the agent: the first time with the demo's device policy (`--policy`), later with
    /// no arguments, so it takes the policy it last installed (a retire included) from its state.
    func startAgent() throws {
        let device = base + "/device.json"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: daemon)
        process.environment = environment
        if FileManager.default.fileExists(atPath: base + "/agent-state/device.json") {
            print("$ sharebrokerd &    # its state folder holds the policy it last installed")
            process.arguments = []
        } else {
            try Data(DemoDevice.documentText(appsDirectory: base + "/apps").utf8).write(to: URL(fileURLWithPath: device))
            print("$ sharebrokerd --policy device.json &    # the demo's device policy; state and socket under \(base)")
            process.arguments = ["--policy", device]
        }
        let log = base + "/agent.log"
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let handle = FileHandle(forWritingAtPath: log)
        handle?.seekToEndOfFile()
        process.standardError = handle
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        agent = process
        let socket = base + "/agent.sock"
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: socket) || !canConnect(socket) {
            usleep(10_000)
        }
        check(canConnect(socket), "the agent listens on \(short(socket)) (pid \(process.processIdentifier))")
    }

    func stopAgent() {
        guard let agent else { return }
        print("$ kill -TERM \(agent.processIdentifier)    # stop the agent")
        kill(agent.processIdentifier, SIGTERM)
        agent.waitUntilExit()
        self.agent = nil
    }

    func canConnect(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8).prefix(107)) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    func play() throws {
        print("ShareBroker agent demo: the agent, two managed apps and one unmanaged process, as real processes.")
        print("Runtime folder: \(base)   (SHAREBROKER_RUNTIME_DIR)")
        switch clipboard {
        case .x11: print("Clipboard: x11, the X server at \(environment["DISPLAY"] ?? "")   (--pasteboard chooses)")
        case .wayland: print("Clipboard: wayland, the compositor at \(environment["WAYLAND_DISPLAY"] ?? "")   (--pasteboard chooses)")
        case .file: print("Clipboard: file, the host pasteboard file in the runtime folder   (--pasteboard chooses)")
        }

        section("Install: copies of this binary at the demo policy's registered paths, and one elsewhere")
        for path in [notes, viewer, drafts, stranger] {
            try install(path)
            print("$ cp sharebroker \(short(path))")
        }
        print("  apps/acme-notes is com.acme.notes, apps/acme-viewer is com.acme.viewer (SecureCopy, authorized);")
        print("  apps/acme-drafts is com.acme.drafts (copies warn: the user may go on with a reason);")
        print("  bin/random-tool is registered nowhere: the agent identifies each process from the kernel, not its word.")
        try startAgent()

        section("Who is who")
        step(notes, ["status"])
        step(stranger, ["status"], expect: 77)

        section("SecureCopy across managed apps")
        copy(notes, input: "Q3 revenue: 4.2M")
        checkSealed("Q3 revenue: 4.2M")
        let viewerPaste = step(viewer, ["paste"], note: "another managed app holds the group keys")
        check(viewerPaste.output == "Q3 revenue: 4.2M", "the viewer reads the notes app's SecureCopy item")
        pasteWithoutKeys(stranger, secret: "Q3 revenue: 4.2M", note: "the unmanaged process has no keys", who: "the unmanaged process")

        section("Plain items are for everyone")
        copy(stranger, ["copy", "--unmanaged"], input: "lunch at noon?")
        let plain = step(notes, ["paste"])
        check(plain.output == "lunch at noon?", "a managed app reads an unmanaged process's clear item")

        section("Open In follows each app's policy")
        let document = base + "/Q3.txt"
        try "Q3 revenue: 4.2M\n".write(toFile: document, atomically: true, encoding: .utf8)
        try makeDesktop(targets: ["com.acme.viewer", "org.example.sheets", "com.acme.notes"])
        openInOnDesktop(notes, document: document, to: "com.acme.viewer", expect: 0, note: "the notes app's whitelist names the viewer")
        openInOnDesktop(notes, document: document, to: "org.example.sheets", expect: 3, note: "not whitelisted: an empty dummy")
        openInOnDesktop(viewer, document: document, to: "com.acme.notes", expect: 0,
                        note: "\"All AppConnect apps\": the agent expands it to the authorized managed apps")
        stepEnvironment = nil

        section("Warn: the drafts app's copies ask the user, who may go on with a reason")
        copy(drafts, ["copy", "--answer", "cancel"], input: "draft price list", expect: 3,
             note: "the user cancels: blocked, nothing is written")
        copy(drafts, ["copy", "--answer", "proceed", "--reason", "customer-request", "--text", "quote for ACME-42"],
             input: "draft price list", note: "the user goes on with a reason: written in the clear")
        let warnedPaste = step(stranger, ["paste", "--unmanaged"], note: "any app reads it: the user chose to let it out")
        check(warnedPaste.output == "draft price list", "a proceeded warned copy is written in the clear")
        let warnedLines = ((try? String(contentsOfFile: base + "/agent-state/audit.jsonl", encoding: .utf8)) ?? "")
            .split(separator: "\n").filter { $0.contains("\"warned\"") }
        print("$ grep warned agent-state/audit.jsonl")
        for line in warnedLines { print("  \(line)") }
        check(warnedLines.count == 2 && warnedLines[0].contains("cancelled") && warnedLines[1].contains("proceeded")
              && warnedLines[1].contains("customer-request") && warnedLines[1].contains("quote for ACME-42"),
              "the agent logged both warned copies, with the outcome, the reason and the text")
        check(!warnedLines.contains { $0.contains("price list") }, "the warned records hold no content")

        section("Retire: the viewer is retired; the agent rotates the group key")
        let watch = Process()
        watch.executableURL = URL(fileURLWithPath: viewer)
        watch.arguments = ["watch", "--seconds", "120"]
        watch.environment = environment
        let watchLog = base + "/viewer-watch.jsonl"
        _ = FileManager.default.createFile(atPath: watchLog, contents: nil)
        watch.standardOutput = FileHandle(forWritingAtPath: watchLog)
        watch.standardError = FileHandle.nullDevice
        watch.standardInput = FileHandle.nullDevice
        try watch.run()
        watcher = watch
        print("$ apps/acme-viewer watch > viewer-watch.jsonl &    # the viewer stays connected, as an app would")
        for _ in 0..<300 where !((try? String(contentsOfFile: watchLog, encoding: .utf8)) ?? "").contains("attached") {
            usleep(10_000)
        }
        copy(notes, input: "sealed just before the retire")
        let sealedBefore = clipboardSnapshot()
        let policy = try String(contentsOfFile: base + "/agent-state/device.json", encoding: .utf8)
        let retired = retire(viewerIn: policy)
        try retired.write(toFile: base + "/retire-viewer.json", atomically: true, encoding: .utf8)
        print("  (retire-viewer.json: the demo policy with com.acme.viewer's auth set to \"retired\")")
        step(notes, ["admin", "set-policy", base + "/retire-viewer.json"])
        for _ in 0..<300 where !((try? String(contentsOfFile: watchLog, encoding: .utf8)) ?? "").contains("\"push\":2") {
            usleep(10_000)
        }
        usleep(200_000)
        print("$ cat viewer-watch.jsonl    # what the connected viewer saw")
        for line in ((try? String(contentsOfFile: watchLog, encoding: .utf8)) ?? "").split(separator: "\n") {
            print("  \(line)")
        }
        pasteWithoutKeys(viewer, secret: "sealed just before the retire", note: "retired: no keys", who: "the retired viewer")
        let before = step(notes, ["paste"], note: "sealed before the rotation: still readable by the authorized app")
        check(before.output == "sealed just before the retire", "items sealed just before the retire stay readable to authorized apps")
        copy(notes, input: "after the retire")
        pasteWithoutKeys(viewer, secret: "after the retire", note: "sealed under the new key: the viewer never had it", who: "the retired viewer")
        restoreClipboard(sealedBefore)

        section("The agent goes away")
        stopAgent()
        copy(notes, input: "while the agent is down", expect: 69, note: "fails closed: nothing is written")
        let kept = clipboardSnapshot()
        check(kept == sealedBefore && !kept.isEmpty, "the pasteboard kept exactly what it had")
        copy(stranger, ["copy", "--unmanaged"], input: "plain while the agent is down")
        let downPaste = step(notes, ["paste"], note: "plain items stay readable")
        check(downPaste.output == "plain while the agent is down", "plain items are readable while the agent is down")

        section("The agent comes back: same keys, same policy, the retire stands")
        try startAgent()
        restoreClipboard(sealedBefore)
        let back = step(notes, ["paste"], note: "an item sealed before the restart")
        check(back.output == "sealed just before the retire", "the key ring survived the restart")
        let viewerStatus = step(viewer, ["status"])
        check(viewerStatus.output.contains("auth retired"), "the retire survived the restart")
        for _ in 0..<300 where ((try? String(contentsOfFile: watchLog, encoding: .utf8)) ?? "")
            .components(separatedBy: "\"connected\"").count < 3 {
            usleep(10_000)
        }
        check(((try? String(contentsOfFile: watchLog, encoding: .utf8)) ?? "").components(separatedBy: "\"event\":\"connected\"").count >= 3,
              "the connected viewer reconnected by itself")

        section("What the agent logged (durably; never content)")
        for name in ["acknowledgments.jsonl", "audit.jsonl"] {
            print("$ tail -n 4 agent-state/\(name)")
            let lines = ((try? String(contentsOfFile: base + "/agent-state/" + name, encoding: .utf8)) ?? "").split(separator: "\n")
            for line in lines.suffix(4) { print("  \(line)") }
        }
        let logs = ((try? String(contentsOfFile: base + "/agent-state/audit.jsonl", encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: base + "/agent-state/acknowledgments.jsonl", encoding: .utf8)) ?? "")
        check(!logs.contains("4.2M") && !logs.contains("lunch"), "the logs hold no content")
        stopServers()
    }

    // MARK: Open In on the desktop

    /// The environment of the next steps instead of ``environment``, or `nil`.
    var stepEnvironment: [String: String]?
    /// The desktop tree ``makeDesktop(targets:)`` made: where the recording apps write.
    var desktopRecords = ""

    /// A temporary XDG tree under the demo's folder: for each of `targets`, a desktop entry
    /// (`<id>.desktop`) whose `Exec` is a small script recording the file it was given (its path
    /// and a copy of its bytes), and a private runtime folder for the hand-off's copies. GIO
    /// starts such an entry with neither a display nor a D-Bus session, so this runs anywhere.
    func makeDesktop(targets: [String]) throws {
        let desktop = base + "/desktop"
        desktopRecords = desktop + "/records"
        for folder in ["/data/applications", "/config", "/configdirs", "/bin", "/records", "/runtime"] {
            try FileManager.default.createDirectory(atPath: desktop + folder, withIntermediateDirectories: true)
        }
        chmod(desktop + "/runtime", 0o700)
        let recorder = """
            #!/bin/sh
            # What a target app received: the path it was started with, and that file's bytes.
            out="$1"; shift
            mkdir -p "$out"
            printf '%s' "$1" > "$out/path"
            cp -- "$1" "$out/data" 2>/dev/null || : > "$out/missing"
            : > "$out/done"

            """
        try Data(recorder.utf8).write(to: URL(fileURLWithPath: desktop + "/bin/record-file"))
        chmod(desktop + "/bin/record-file", 0o755)
        for id in targets {
            let entry = """
                [Desktop Entry]
                Type=Application
                Name=\(id) (records what it opens)
                Exec=\(desktop)/bin/record-file \(desktopRecords)/\(id) %f
                MimeType=text/plain;

                """
            try Data(entry.utf8).write(to: URL(fileURLWithPath: desktop + "/data/applications/\(id).desktop"))
        }
        var env = environment
        env["XDG_DATA_HOME"] = desktop + "/data"
        env["XDG_DATA_DIRS"] = "/usr/local/share:/usr/share"
        env["XDG_CONFIG_HOME"] = desktop + "/config"
        env["XDG_CONFIG_DIRS"] = desktop + "/configdirs"
        env["XDG_RUNTIME_DIR"] = desktop + "/runtime"
        env["DBUS_SESSION_BUS_ADDRESS"] = nil
        stepEnvironment = env
        print("$ export XDG_DATA_HOME=desktop/data XDG_RUNTIME_DIR=desktop/runtime    # desktop entries of \(targets.joined(separator: ", ")); no display, no D-Bus")
        print("  each entry's Exec is desktop/bin/record-file, which records the path and the bytes it was started with")
    }

    /// `open-in` with the desktop hand-off (GIO starts the target's desktop entry), then what
    /// the target app received: the document's exact bytes in a private copy when allowed, an
    /// empty file with a mangled name when blocked.
    func openInOnDesktop(_ app: String, document: String, to target: String, expect: Int32, note: String) {
        let records = desktopRecords + "/" + target
        try? FileManager.default.removeItem(atPath: records)
        let result = step(app, ["open-in", document, "--to", target, "--handoff", "desktop"], expect: expect, note: note)
        for _ in 0..<1_000 where !FileManager.default.fileExists(atPath: records + "/done") {
            usleep(10_000)
        }
        guard FileManager.default.fileExists(atPath: records + "/done"),
              let path = try? String(contentsOfFile: records + "/path", encoding: .utf8) else {
            check(false, "\(target) was started by GIO and recorded what it received")
            return
        }
        let received = (try? Data(contentsOf: URL(fileURLWithPath: records + "/data"))) ?? Data()
        let original = (try? Data(contentsOf: URL(fileURLWithPath: document))) ?? Data()
        let name = (path as NSString).lastPathComponent
        print("  \(target) received \(short(path)): \(received.count) bytes")
        let inRuntime = path.hasPrefix(base + "/desktop/runtime/app/\(target)/")
        check(path == result.output.trimmingCharacters(in: .whitespacesAndNewlines),
              "\(target) was started with the file open-in printed")
        if expect == 0 {
            check(inRuntime && path != document && received == original,
                  "\(target) got a private copy under the runtime folder with the document's exact bytes")
        } else {
            let originalName = (document as NSString).lastPathComponent
            check(inRuntime && received.isEmpty && name != originalName && !name.contains((originalName as NSString).deletingPathExtension),
                  "\(target) got an empty file with a mangled name (\(name)), not the document")
        }
    }

    /// The demo policy with the viewer retired (a small, exact text edit of the agent's copy).
    func retire(viewerIn policy: String) -> String {
        guard let start = policy.range(of: "\"id\": \"com.acme.viewer\""),
              let auth = policy.range(of: "\"auth\": \"authorized\"", range: start.upperBound..<policy.endIndex) else {
            return policy
        }
        return policy.replacingCharacters(in: auth, with: "\"auth\": \"retired\"")
    }

    func finish(keep: Bool) {
        for server in servers where server.isRunning { server.terminate(); server.waitUntilExit() }
        observer?.close(handOffTimeout: .zero)
        if let watcher, watcher.isRunning { kill(watcher.processIdentifier, SIGKILL); watcher.waitUntilExit() }
        if let agent, agent.isRunning { kill(agent.processIdentifier, SIGTERM); agent.waitUntilExit() }
        if keep {
            print("\nKept \(base): agent.log, agent-state/, pasteboard.")
        } else {
            try? FileManager.default.removeItem(atPath: base)
        }
    }
}

/// What a reader thread read, handed to the thread that waits for it (a condition lock, so the
/// hand-over is ordered for ThreadSanitizer too).
final class DemoBox: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Data?

    func set(_ data: Data) {
        condition.lock()
        value = data
        condition.signal()
        condition.unlock()
    }

    /// Waits until ``set(_:)`` was called.
    func waitUntilSet() {
        condition.lock()
        while value == nil { condition.wait() }
        condition.unlock()
    }

    var data: Data {
        condition.lock()
        defer { condition.unlock() }
        return value ?? Data()
    }
}
