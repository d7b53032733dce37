import Foundation
import Testing

/// The governed toolkit apps on a headless sway, natively on Wayland: keys by wtype (sway offers
/// the virtual-keyboard protocol; a Wayland compositor takes a selection only with the serial of
/// an input event, so each case starts with a real key), read back with wl-paste.
struct WaylandToolkit: Sendable, CustomStringConvertible {
    let description: String
    let backend: [String: String]
    let executable: @Sendable () throws -> String

    static let gtk = WaylandToolkit(description: "GTK 4", backend: ["GDK_BACKEND": "wayland"],
                                    executable: { try ToolkitApps.gtkApp.get() })
    static let gtk3 = WaylandToolkit(description: "GTK 3", backend: ["GDK_BACKEND": "wayland"],
                                     executable: { try ToolkitApps.gtk3App.get() })
    static let qt = WaylandToolkit(description: "Qt 6", backend: ["QT_QPA_PLATFORM": "wayland"],
                                   executable: { try ToolkitApps.qtApp.get() })

    static let text = X11Toolkit.text

    /// Starts the app on `sway` under `policy`, with another app's text on both selections first.
    func start(on sway: SwayHeadless, policy: String, governed: Bool = true, runtime: String) throws -> ToolkitApp {
        try sway.copy(Array("previous-clipboard".utf8))
        try sway.copy(Array("previous-primary".utf8), primary: true)
        var environment = backend
        environment.merge(["WAYLAND_DISPLAY": sway.display, "XDG_RUNTIME_DIR": runtime, "HOME": runtime,
                           "SB_POLICY": policy, "SB_TEXT": Self.text, "SB_GOVERN": governed ? "1" : "0"]) { $1 }
        let app = try ToolkitApp(try executable(), environment: environment)
        guard app.waitFor("ready") else { throw HarnessError("the \(self) app did not start: \(app.errorOutput)") }
        return app
    }

    /// Presses keys with wtype (its virtual keyboard gives the app focus; the sleep lets the
    /// toolkit bind the new keyboard first).
    func type(_ arguments: [String], on sway: SwayHeadless) throws {
        guard let wtype = ToolkitApps.wtype else { throw HarnessError("wtype is not installed") }
        let child = try sway.start(wtype, ["-s", "600"] + arguments)
        guard child.wait(timeout: .seconds(10)) else { throw HarnessError("wtype \(arguments) did not finish") }
    }

    /// Ctrl+C, then the menu's Copy and Cut, a new selection (with the key's serial).
    func copyEveryWay(_ app: ToolkitApp, on sway: SwayHeadless) throws {
        try type(["-M", "ctrl", "c", "-m", "ctrl"], on: sway)
        #expect(app.perform("copy"))
        #expect(app.perform("select"))
        #expect(app.perform("cut"))
        #expect(app.perform("select"))
    }

    func withSway(_ body: (SwayHeadless, String) throws -> Void) throws {
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let runtime = try SwayHeadless.temporaryDirectory("sbtk-run")
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        chmod(runtime, 0o700)
        try body(sway, runtime)
    }

    func unauthorizedBlocksEverything() throws {
        try withSway { sway, runtime in
            let app = try start(on: sway, policy: "unauthorized", runtime: runtime)
            try copyEveryWay(app, on: sway)
            #expect(try sway.pasted() == Array("previous-clipboard".utf8))
            #expect(try sway.pasted(["--primary"]) == Array("previous-primary".utf8))
            #expect(app.count("copy-attempted") >= 1)
        }
    }

    func ungovernedAppLeaks() throws {
        try withSway { sway, runtime in
            let app = try start(on: sway, policy: "unauthorized", governed: false, runtime: runtime)
            try type(["-M", "ctrl", "c", "-m", "ctrl"], on: sway)
            #expect(app.perform("copy"))
            #expect(app.perform("select"))
            #expect(try sway.pasted() == Array(Self.text.utf8))
            #expect(try sway.pasted(["--primary"]) == Array(Self.text.utf8))
        }
    }

    func authorizedUnchanged() throws {
        try withSway { sway, runtime in
            let app = try start(on: sway, policy: "authorized", runtime: runtime)
            try type(["-M", "ctrl", "c", "-m", "ctrl"], on: sway)
            #expect(app.perform("copy"))
            #expect(try sway.pasted() == Array(Self.text.utf8))
            #expect(app.count("copy-attempted") == 0)
        }
    }
}

@Suite("A GTK 4 app's own clipboard writes on Wayland (sway), governed", .serialized,
       .enabled(if: ToolkitApps.gtkUnavailable == nil && WaylandTools.available && ToolkitApps.wtype != nil,
                Comment(rawValue: ToolkitApps.gtkUnavailable ?? WaylandTools.unavailableReason ?? "wtype is not installed (make deps)")))
struct ToolkitGTKWaylandTests {
    @Test("unauthorized: Ctrl+C, menu Copy/Cut and selecting change neither the clipboard nor the primary selection")
    func unauthorized() throws { try WaylandToolkit.gtk.unauthorizedBlocksEverything() }

    @Test("the same app without the call: its Ctrl+C and selection reach both selections (what the call prevents)")
    func ungoverned() throws { try WaylandToolkit.gtk.ungovernedAppLeaks() }

    @Test("authorized: the toolkit's own offer goes out unchanged")
    func authorized() throws { try WaylandToolkit.gtk.authorizedUnchanged() }
}

@Suite("A Qt 6 app's own clipboard writes on Wayland (sway), governed", .serialized,
       .enabled(if: ToolkitApps.qtUnavailable == nil && WaylandTools.available && ToolkitApps.wtype != nil,
                Comment(rawValue: ToolkitApps.qtUnavailable ?? WaylandTools.unavailableReason ?? "wtype is not installed (make deps)")))
struct ToolkitQtWaylandTests {
    @Test("unauthorized: Ctrl+C, copy()/cut() and the selection clipboard change neither the clipboard nor the primary selection")
    func unauthorized() throws { try WaylandToolkit.qt.unauthorizedBlocksEverything() }

    @Test("the same app without the call: its Ctrl+C and selection reach both selections (what the call prevents)")
    func ungoverned() throws { try WaylandToolkit.qt.ungovernedAppLeaks() }

    @Test("authorized: the toolkit's own offer goes out unchanged")
    func authorized() throws { try WaylandToolkit.qt.authorizedUnchanged() }
}

@Suite("A GTK 3 app's own clipboard writes on Wayland (sway), governed", .serialized,
       .enabled(if: ToolkitApps.gtk3Unavailable == nil && WaylandTools.available && ToolkitApps.wtype != nil,
                Comment(rawValue: ToolkitApps.gtk3Unavailable ?? WaylandTools.unavailableReason ?? "wtype is not installed (make deps)")))
struct ToolkitGTK3WaylandTests {
    @Test("unauthorized: Ctrl+C, the copy/cut-clipboard signals and selecting change neither the clipboard nor the primary selection")
    func unauthorized() throws { try WaylandToolkit.gtk3.unauthorizedBlocksEverything() }

    @Test("the same app without the call: its Ctrl+C and selection reach both selections (what the call prevents)")
    func ungoverned() throws { try WaylandToolkit.gtk3.ungovernedAppLeaks() }

    @Test("authorized: the toolkit's own offer goes out unchanged")
    func authorized() throws { try WaylandToolkit.gtk3.authorizedUnchanged() }
}
