import Foundation
import ShareBroker
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
