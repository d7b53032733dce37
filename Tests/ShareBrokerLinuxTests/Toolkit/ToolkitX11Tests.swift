import Foundation
import Testing

/// A real toolkit app managed with the one call, `sb_broker_govern_clipboard`, on Xvfb: its own
/// Ctrl+C and Ctrl+X (xdotool), the clipboard actions its context menu runs (Copy, Cut) and its
/// text selection (PRIMARY), read back with xclip and xsel. The same cases for GTK 4 (Xlib) and
/// Qt 6 (libxcb).
struct X11Toolkit: Sendable, CustomStringConvertible {
    let description: String
    let window: String
    let backend: [String: String]
    let executable: @Sendable () throws -> String

    static let gtk = X11Toolkit(description: "GTK 4", window: "sbtoolkit-gtk", backend: ["GDK_BACKEND": "x11"],
                                executable: { try ToolkitApps.gtkApp.get() })
    static let gtk3 = X11Toolkit(description: "GTK 3", window: "sbtoolkit-gtk3", backend: ["GDK_BACKEND": "x11"],
                                 executable: { try ToolkitApps.gtk3App.get() })
    static let qt = X11Toolkit(description: "Qt 6", window: "sbtoolkit-qt", backend: ["QT_QPA_PLATFORM": "xcb"],
                               executable: { try ToolkitApps.qtApp.get() })

    static let text = "known-text-4711-toolkit"

    /// Starts the app on `display` under `policy` (governed unless `governed` is false), with
    /// another app's text on both selections first; waits until its window is shown.
    func start(on display: XvfbDisplay, policy: String, governed: Bool = true) throws -> ToolkitApp {
        try display.xclipIn("previous-clipboard")
        try display.xclipIn("previous-primary", selection: "primary")
        var environment = backend
        environment.merge(["DISPLAY": display.name, "SB_POLICY": policy, "SB_TEXT": Self.text,
                           "SB_GOVERN": governed ? "1" : "0"]) { $1 }
        let app = try ToolkitApp(try executable(), environment: environment)
        guard app.waitFor("ready") else { throw HarnessError("the \(self) app did not start: \(app.errorOutput)") }
        return app
    }

    /// Focuses the app's window and presses `keys` with xdotool (XTEST).
    func press(_ keys: String, on display: XvfbDisplay) throws {
        let search = try display.run(ToolkitApps.xdotool, ["search", "--sync", "--onlyvisible", "--name", "^\(window)$"])
        guard search.status == 0, let id = String(decoding: search.output, as: UTF8.self).split(separator: "\n").first else {
            throw HarnessError("xdotool found no visible window named \(window)")
        }
        try display.run(ToolkitApps.xdotool, ["windowfocus", "--sync", String(id)])
        try display.run(ToolkitApps.xdotool, ["key", "--clearmodifiers", keys])
    }

    /// Every way the app copies: Ctrl+C, the menu's Copy, a new selection, Ctrl+X, the menu's
    /// Cut. Each command is a round trip, so everything before it was handled.
    func copyEveryWay(_ app: ToolkitApp, on display: XvfbDisplay) throws {
        try press("ctrl+c", on: display)
        #expect(app.perform("copy"))
        #expect(app.perform("select"))
        try press("ctrl+x", on: display)
        #expect(app.perform("cut"))
        #expect(app.perform("select"))
    }

    func unauthorizedBlocksEverything() throws {
        let display = try XvfbDisplay()
        let app = try start(on: display, policy: "unauthorized")
        try copyEveryWay(app, on: display)
        #expect(try display.xclipOut("clipboard") == Array("previous-clipboard".utf8))
        #expect(try display.xclipOut("primary") == Array("previous-primary".utf8))
        #expect(try display.xselOut("-b") == Array("previous-clipboard".utf8))
        #expect(try display.xselOut("-p") == Array("previous-primary".utf8))
        // The app's copy_attempted_when_unauthorized ran, once per burst and selection (the
        // attempts above come less than 2 s apart on each selection).
        #expect(app.count("copy-attempted") >= 1)
        #expect(app.count("copy-attempted") <= 4)
    }

    func ungovernedAppLeaks() throws {
        let display = try XvfbDisplay()
        let app = try start(on: display, policy: "unauthorized", governed: false)
        try press("ctrl+c", on: display)
        #expect(app.perform("select"))
        #expect(try display.xclipOut("clipboard") == Array(Self.text.utf8))
        #expect(try display.xclipOut("primary") == Array(Self.text.utf8))
        #expect(app.count("copy-attempted") == 0)
    }

    func authorizedUnchanged() throws {
        let display = try XvfbDisplay()
        let app = try start(on: display, policy: "authorized")
        try press("ctrl+c", on: display)
        #expect(app.perform("select"))
        #expect(try display.xclipOut("clipboard") == Array(Self.text.utf8))
        #expect(try display.xclipOut("primary") == Array(Self.text.utf8))
        #expect(try display.xclipOut("clipboard", target: "UTF8_STRING") == Array(Self.text.utf8))
        #expect(app.count("copy-attempted") == 0)
    }

    func secureCopyNoPlaintext() throws {
        let display = try XvfbDisplay()
        let app = try start(on: display, policy: "securecopy")
        try copyEveryWay(app, on: display)
        for selection in ["clipboard", "primary"] {
            #expect(!(try display.xclipOut(selection)).containsRun(of: Array(Self.text.utf8)))
        }
    }
}

@Suite("A GTK 4 app's own clipboard writes on X11, governed", .serialized,
       .enabled(if: ToolkitApps.gtkUnavailable == nil, Comment(rawValue: ToolkitApps.gtkUnavailable ?? "")))
struct ToolkitGTKX11Tests {
    @Test("unauthorized: Ctrl+C, Ctrl+X, menu Copy/Cut and selecting change neither CLIPBOARD nor PRIMARY; the app is told")
    func unauthorized() throws { try X11Toolkit.gtk.unauthorizedBlocksEverything() }

    @Test("the same app without the call: its Ctrl+C and selection reach both selections (what the call prevents)")
    func ungoverned() throws { try X11Toolkit.gtk.ungovernedAppLeaks() }

    @Test("authorized: the toolkit's own offer goes out unchanged on both selections")
    func authorized() throws { try X11Toolkit.gtk.authorizedUnchanged() }

    @Test("SecureCopy: no plaintext reaches either selection (fails closed until the sealed offer exists)")
    func secureCopy() throws { try X11Toolkit.gtk.secureCopyNoPlaintext() }
}

@Suite("A Qt 6 app's own clipboard writes on X11 (xcb), governed", .serialized,
       .enabled(if: ToolkitApps.qtUnavailable == nil, Comment(rawValue: ToolkitApps.qtUnavailable ?? "")))
struct ToolkitQtX11Tests {
    @Test("unauthorized: Ctrl+C, Ctrl+X, copy()/cut() and the selection clipboard change neither CLIPBOARD nor PRIMARY; the app is told")
    func unauthorized() throws { try X11Toolkit.qt.unauthorizedBlocksEverything() }

    @Test("the same app without the call: its Ctrl+C and selection reach both selections (what the call prevents)")
    func ungoverned() throws { try X11Toolkit.qt.ungovernedAppLeaks() }

    @Test("authorized: the toolkit's own offer goes out unchanged on both selections")
    func authorized() throws { try X11Toolkit.qt.authorizedUnchanged() }

    @Test("SecureCopy: no plaintext reaches either selection (fails closed until the sealed offer exists)")
    func secureCopy() throws { try X11Toolkit.qt.secureCopyNoPlaintext() }
}

@Suite("A GTK 3 app's own clipboard writes on X11, governed", .serialized,
       .enabled(if: ToolkitApps.gtk3Unavailable == nil, Comment(rawValue: ToolkitApps.gtk3Unavailable ?? "")))
struct ToolkitGTK3X11Tests {
    @Test("unauthorized: Ctrl+C, Ctrl+X, the copy/cut-clipboard signals and selecting change neither CLIPBOARD nor PRIMARY; the app is told")
    func unauthorized() throws { try X11Toolkit.gtk3.unauthorizedBlocksEverything() }

    @Test("the same app without the call: its Ctrl+C and selection reach both selections (what the call prevents)")
    func ungoverned() throws { try X11Toolkit.gtk3.ungovernedAppLeaks() }

    @Test("authorized: the toolkit's own offer goes out unchanged on both selections")
    func authorized() throws { try X11Toolkit.gtk3.authorizedUnchanged() }

    @Test("SecureCopy: no plaintext reaches either selection (fails closed until the sealed offer exists)")
    func secureCopy() throws { try X11Toolkit.gtk3.secureCopyNoPlaintext() }
}
