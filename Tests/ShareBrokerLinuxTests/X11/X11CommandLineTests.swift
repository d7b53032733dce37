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
