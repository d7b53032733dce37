import Foundation
import ShareBroker
@testable import ShareBrokerLinux
import Testing

/// `sharebroker copy|paste --pasteboard x11` (unmanaged: no agent) against a private Xvfb.
@Suite("sharebroker copy and paste on X11", .serialized,
       .enabled(if: X11Tools.available, X11Tools.skipReason),
       .enabled(if: sharebrokerTool != nil, "build the sharebroker product before swift test"))
struct X11CommandLineTests {
    static var sharebroker: String? { sharebrokerTool }
}

/// The built sharebroker next to the test bundle, if there is one.
let sharebrokerTool: String? = {
    let here = Bundle.main.bundleURL
    for candidate in [here.deletingLastPathComponent(), here] {
        let path = candidate.appendingPathComponent("sharebroker").path
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}()

extension X11CommandLineTests {
    @Test("copy serves the X11 clipboard until another app copies; paste reads xclip's text; the default follows DISPLAY")
    func copyAndPaste() throws {
        guard let tool = Self.sharebroker else { return }
        let display = try XvfbDisplay()
        // The default with DISPLAY set is x11.
        let copier = try display.start(tool, ["copy", "--unmanaged"], input: Array("from the command line".utf8))
        var seen: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            seen = try display.xclipOut()
            if !seen.isEmpty { break }
            usleep(20_000)
        }
        #expect(seen == Array("from the command line".utf8), "copier said: \(copier.errorOutput)")
        #expect(!copier.wait(timeout: .milliseconds(100)), "the copier keeps serving while it owns the clipboard: \(copier.errorOutput)")
        try display.xclipIn("from xclip")
        #expect(copier.wait(timeout: .seconds(3)), "the copier exits once another app copied")
        #expect(copier.status == 0, "copier said: \(copier.errorOutput)")
        let paste = try display.run(tool, ["paste", "--unmanaged", "--pasteboard", "x11"])
        #expect(paste.status == 0)
        #expect(paste.output == Array("from xclip".utf8))
        let wayland = try display.run(tool, ["paste", "--unmanaged", "--pasteboard", "nonsense"])
        #expect(wayland.status != 0, "an unknown pasteboard kind is refused")
    }
}

extension X11CommandLineTests {
    @Test("agent-demo on a display chooses the X11 clipboard and plays every step through it; --pasteboard file still plays on the file")
    func agentDemoOnX11() throws {
        guard let tool = Self.sharebroker else { return }
        let daemon = URL(fileURLWithPath: tool).deletingLastPathComponent().appendingPathComponent("sharebrokerd").path
        try #require(FileManager.default.isExecutableFile(atPath: daemon), "build the sharebrokerd product before swift test")
        let display = try XvfbDisplay()
        let run = try display.run(tool, ["agent-demo"], timeout: .seconds(120))
        let output = String(decoding: run.output, as: UTF8.self)
        #expect(run.status == 0, "\(output.suffix(3000))")
        #expect(output.contains("Clipboard: x11, the X server at \(display.name)"), "the default with a working DISPLAY is x11")
        #expect(output.contains("[serving the x11 clipboard in the background"), "the copies serve the X11 clipboard")
        #expect(output.contains("ok: the x11 clipboard offers the sealed item and a placeholder, not the text"))
        #expect(output.contains("ok: xclip reads the sealed target and the placeholder, never the text"))
        #expect(output.contains("ok: the viewer reads the notes app's SecureCopy item"))
        #expect(output.contains("ok: the unmanaged process reads the placeholder, not the text"))
        #expect(output.contains("ok: the pasteboard kept exactly what it had"))
        #expect(!output.contains("NOT OK"))
        #expect(output.contains("Every step answered as expected."))
        // What the demo left on the display: nothing; every copy that served the clipboard is gone.
        #expect(try display.xclipOut().isEmpty, "no process of the demo still serves the clipboard")
        #expect(try display.xclipOut("primary").isEmpty, "nor the primary selection")

        let file = try display.run(tool, ["agent-demo", "--pasteboard", "file"], timeout: .seconds(120))
        let fileOutput = String(decoding: file.output, as: UTF8.self)
        #expect(file.status == 0, "\(fileOutput.suffix(3000))")
        #expect(fileOutput.contains("Clipboard: file,"), "--pasteboard file overrides DISPLAY")
        #expect(fileOutput.contains("ok: the host pasteboard holds sealed bytes, not the text"))
        #expect(fileOutput.contains("Every step answered as expected."))
    }
}

extension X11CommandLineTests {
    /// Runs the built tool with exactly `environment` (plus a plain PATH); its status, output and error output.
    static func run(_ tool: String, _ arguments: [String], environment: [String: String], input: [UInt8]? = nil,
                    timeout: Duration = .seconds(10)) throws -> (status: Int32, output: [UInt8], error: String) {
        let child = try Child(tool, arguments, environment: environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a }, input: input)
        let deadline = ContinuousClock.now + timeout
        let output = child.readAll(until: deadline)
        guard child.wait(timeout: ContinuousClock.now.duration(to: deadline)) else {
            child.kill()
            throw HarnessError("sharebroker \(arguments) did not finish in \(timeout)")
        }
        return (child.status, output, child.errorOutput)
    }

    @Test("paste --primary reads the primary selection; paste --help names every exit status")
    func pastePrimaryAndHelp() throws {
        guard let tool = Self.sharebroker else { return }
        let display = try XvfbDisplay()
        try display.xclipIn("on the clipboard")
        try display.xclipIn("only selected", selection: "primary")
        let primary = try Self.run(tool, ["paste", "--unmanaged", "--primary"], environment: ["DISPLAY": display.name])
        #expect(primary.status == 0, "\(primary.error)")
        #expect(primary.output == Array("only selected".utf8))
        let clipboard = try Self.run(tool, ["paste", "--unmanaged"], environment: ["DISPLAY": display.name])
        #expect(clipboard.output == Array("on the clipboard".utf8))
        let help = String(decoding: try Self.run(tool, ["paste", "--help"], environment: [:]).output, as: UTF8.self)
        for words in ["--primary", "0 printed", "1 nothing readable", "74 the pasteboard could not be read", "transfer broke"] {
            #expect(help.contains(words), "paste --help says \(words)")
        }
        let file = try Self.run(tool, ["paste", "--unmanaged", "--primary", "--pasteboard", "file", "--pasteboard-file", "/nonexistent-sb/pb"],
                                environment: [:])
        #expect(file.status == 74 && file.error.contains("no primary selection"), "\(file.error)")
    }

    @Test("a sealed set cut short on X11: paste says the transfer broke (74), never the placeholder offered with it")
    func brokenSetFails() throws {
        guard let tool = Self.sharebroker else { return }
        let display = try XvfbDisplay()
        // An owner that lists the sealed target and serves a set cut short, with a placeholder as text.
        let set = SealedSet.encode([[UInt8](repeating: 7, count: 300)])
        let owner = try SelectionServer(display: display.name, selections: ["CLIPBOARD"], transferTimeout: .seconds(5))
        owner.start()
        defer { owner.stop() }
        let offer = SelectionOffer(targets: [.init(SealedSet.targetName, Array(set.prefix(100))), .init("UTF8_STRING", Array("placeholder".utf8))])
        #expect(owner.perform { (try? $0.own(offer)) != nil } == true)
        let paste = try Self.run(tool, ["paste", "--unmanaged"], environment: ["DISPLAY": display.name])
        #expect(paste.status == 74, "\(paste.error)")
        #expect(paste.output.isEmpty, "nothing is printed, not the placeholder")
        #expect(paste.error.contains("transfer broke"), "\(paste.error)")
    }

    @Test("messages: a refused X11 connection names XAUTHORITY; a managed copy with the agent down is 'agent unavailable' (69) and opens no clipboard")
    func messages() throws {
        guard let tool = Self.sharebroker else { return }
        if let xauth = X11Tools.xauth {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sb-xauth-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let cookie = "0123456789abcdef0123456789abcdef"
            // The server loads every key of its file whatever display the entry names.
            #expect(try Self.run(xauth, ["-q", "-f", folder + "/server", "add", ":0", ".", cookie], environment: [:]).status == 0)
            let display = try XvfbDisplay(authority: folder + "/server")
            let refused = try Self.run(tool, ["paste", "--unmanaged"], environment: ["DISPLAY": display.name, "HOME": folder])
            #expect(refused.status == 74)
            #expect(refused.error.contains("refused the connection") && refused.error.contains("XAUTHORITY is not set"), "\(refused.error)")
            let wrong = try Self.run(tool, ["paste", "--unmanaged"], environment: ["DISPLAY": display.name, "XAUTHORITY": folder + "/none"])
            #expect(wrong.error.contains("XAUTHORITY names (\(folder)/none) has no key"), "\(wrong.error)")
            #expect(try Self.run(xauth, ["-q", "-f", folder + "/client", "add", display.name, ".", cookie], environment: [:]).status == 0)
            let allowed = try Self.run(tool, ["paste", "--unmanaged"], environment: ["DISPLAY": display.name, "XAUTHORITY": folder + "/client"])
            #expect(allowed.status == 1, "with the key the clipboard is read (and is empty): \(allowed.error)")
        } else {
            Issue.record("xauth is not installed (make deps installs it)")
        }
        let display = try XvfbDisplay()
        try display.xclipIn("what was there")
        let copy = try Self.run(tool, ["copy"], environment: ["DISPLAY": display.name, "SHAREBROKER_SOCKET": "/nonexistent-sb/agent.sock"],
                                input: Array("secret".utf8))
        #expect(copy.status == 69, "\(copy.error)")
        #expect(copy.error.contains("agent is unavailable"), "\(copy.error)")
        #expect(try display.xclipOut() == Array("what was there".utf8), "nothing was written")
        let noRuntime = try Self.run(tool, ["copy"], environment: ["DISPLAY": display.name], input: Array("secret".utf8))
        #expect(noRuntime.status == 69, "\(noRuntime.error)")
        #expect(noRuntime.error.contains("XDG_RUNTIME_DIR") && !noRuntime.error.contains("/proc/"), "\(noRuntime.error)")
    }
}
