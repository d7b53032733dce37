import Foundation
import Testing

/// A headless GNOME compositor (mutter 43: `--headless --wayland --no-x11`) on a private D-Bus
/// session bus, with a keyboard from its RemoteDesktop API (Toolkit/Apps/mutter_keys.c, kept
/// running: the seat has a keyboard only while its session lives). mutter offers no data-control
/// protocol at all, so the in-process layer on the app's own `wl_data_device` is what governs here.
final class MutterHeadless: @unchecked Sendable {
    static let mutter = X11Tools.find("mutter")
    static let dbusDaemon = X11Tools.find("dbus-daemon")

    static let unavailable: String? = {
        if mutter == nil || dbusDaemon == nil || WaylandTools.wlPaste == nil || WaylandTools.wlCopy == nil {
            return "mutter, dbus-daemon or wl-clipboard is missing (make deps installs mutter dbus wl-clipboard)"
        }
        if ToolkitApps.gcc == nil || !ToolkitApps.hasModule("gio-2.0") { return "gcc or GIO's headers are missing" }
        return nil
    }()

    static let keysApp = Result { () throws(HarnessError) -> String in
        do { return try ToolkitApps.build("mutter_keys.c", compiler: ToolkitApps.gcc, module: "gio-2.0", extra: ["-std=gnu11"], named: "mutter_keys") } catch let e as HarnessError { throw e } catch {
            throw HarnessError("\(error)")
        }
    }

    let runtime: String
    let socket: String
    let bus: String
    private let dbus: Child
    private let server: Child
    let keys: ToolkitApp
    private var copiers: [Child] = []

    init() throws {
        guard let mutter = Self.mutter, let dbusDaemon = Self.dbusDaemon else { throw HarnessError("mutter is not installed") }
        runtime = try SwayHeadless.temporaryDirectory("sbtk-mutter")
        chmod(runtime, 0o700)
        let base = ["PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": runtime, "HOME": runtime]
        // A bus of its own that activates no services: the session configuration would start the
        // accessibility bus (at-spi-bus-launcher) for mutter, which outlives the bus and mutter.
        let config = runtime + "/bus.conf"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:dir=\(runtime)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(toFile: config, atomically: true, encoding: .utf8)
        dbus = try Child(dbusDaemon, ["--config-file=" + config, "--nofork", "--print-address=1"], environment: base, input: nil)
        bus = dbus.readLine(until: .now + .seconds(10))
        guard !bus.isEmpty else { throw HarnessError("dbus-daemon printed no address: \(dbus.errorOutput)") }
        var environment = base
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus
        environment["NO_AT_BRIDGE"] = "1"
        server = try Child(mutter, ["--headless", "--wayland", "--no-x11", "--virtual-monitor", "1280x800",
                                    "--wayland-display=sbtk-mutter"], environment: environment, input: nil)
        socket = runtime + "/sbtk-mutter"
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: socket) {
            guard ContinuousClock.now < deadline, !server.wait(timeout: .zero) else {
                throw HarnessError("mutter opened no Wayland socket: \(server.errorOutput.suffix(2000))")
            }
            usleep(20_000)
        }
        keys = try ToolkitApp(try Self.keysApp.get(), environment: environment)
        guard keys.waitFor("ready") else { throw HarnessError("no RemoteDesktop keyboard: \(keys.errorOutput)") }
    }

    deinit {
        for copier in copiers { copier.kill() }
        server.kill()
        dbus.kill()
        try? FileManager.default.removeItem(atPath: runtime)
    }

    /// What a client of this compositor gets.
    var environment: [String: String] {
        ["PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": runtime, "HOME": runtime, "WAYLAND_DISPLAY": socket,
         "DBUS_SESSION_BUS_ADDRESS": bus]
    }

    /// Presses keys (`ctrl+c`) through RemoteDesktop; they go to the focused surface.
    func press(_ combo: String) -> Bool { keys.perform("keys " + combo) }

    /// `wl-paste --no-newline [ARGS]`: the bytes, empty when nothing is offered.
    func pasted(_ arguments: [String] = []) throws -> [UInt8] {
        guard let tool = WaylandTools.wlPaste else { throw HarnessError("wl-paste is not installed") }
        let child = try Child(tool, ["--no-newline"] + arguments, environment: environment, input: nil)
        let output = child.readAll(until: .now + .seconds(5))
        guard child.wait(timeout: .seconds(5)) else { child.kill(); throw HarnessError("wl-paste hung") }
        return child.status == 0 ? output : []
    }

    /// `pasted(arguments)` once it equals `expected`, or what it is after `timeout` (a toolkit
    /// sends its request from its event loop, after the command that made it was answered).
    func pasted(_ arguments: [String] = [], becoming expected: [UInt8], timeout: Duration = .seconds(3)) throws -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        var last = try pasted(arguments)
        while last != expected && ContinuousClock.now < deadline {
            usleep(50_000)
            last = try pasted(arguments)
        }
        return last
    }

    /// An unmanaged app copies `text` (`wl-copy --foreground`, ended with the compositor).
    func copy(_ text: String, primary: Bool = false) throws {
        // (The primary selection's previous owner is not set up on mutter: see MutterToolkit.start.)
        guard let tool = WaylandTools.wlCopy else { throw HarnessError("wl-copy is not installed") }
        // wl-copy takes the selection with the serial of its popup surface's keyboard focus; under
        // load that focus sometimes never came: a second or third wl-copy then gets it.
        for _ in 0..<3 {
            let child = try Child(tool, ["--foreground"] + (primary ? ["--primary"] : []), environment: environment,
                                  input: Array(text.utf8))
            copiers.append(child)
            let deadline = ContinuousClock.now + .seconds(4)
            while ContinuousClock.now < deadline {
                if try pasted(primary ? ["--primary"] : []) == Array(text.utf8) { return }
                usleep(20_000)
            }
            child.kill()
        }
        throw HarnessError("wl-copy's \(text) never appeared on mutter")
    }
}

/// The governed toolkit apps on mutter (GNOME), natively on Wayland.
struct MutterToolkit: Sendable, CustomStringConvertible {
    let description: String
    let backend: [String: String]
    let executable: @Sendable () throws -> String

    static let gtk = MutterToolkit(description: "GTK 4", backend: ["GDK_BACKEND": "wayland"],
                                   executable: { try ToolkitApps.gtkApp.get() })

    func start(on mutter: MutterHeadless, policy: String, governed: Bool = true) throws -> ToolkitApp {
        // Only the clipboard gets a previous owner: a second wl-copy (for the primary selection)
        // did not always get the focus its serial needs on mutter, and mutter resets the primary
        // selection when a window maps anyway.
        try mutter.copy("previous-clipboard")
        var environment = mutter.environment
        environment.merge(backend) { $1 }
        environment.merge(["SB_POLICY": policy, "SB_TEXT": X11Toolkit.text, "SB_GOVERN": governed ? "1" : "0"]) { $1 }
        let app = try ToolkitApp(try executable(), environment: environment)
        guard app.waitFor("ready") else { throw HarnessError("the \(self) app did not start: \(app.errorOutput)") }
        // Keys go to the focused surface: wait until mutter gave the window the focus.
        guard app.waitFor("active") else { throw HarnessError("mutter never focused the \(self) app's window") }
        return app
    }

    /// Ctrl+A (mutter resets PRIMARY when a window maps: select after focus), Ctrl+C, then the
    /// menu's Copy and Cut and a new selection, which reuse the keys' serial.
    func copyEveryWay(_ app: ToolkitApp, on mutter: MutterHeadless) {
        #expect(mutter.press("ctrl+a"))
        #expect(mutter.press("ctrl+c"))
        #expect(app.perform("copy"))
        #expect(app.perform("select"))
        #expect(app.perform("cut"))
        #expect(app.perform("select"))
    }

    func unauthorizedBlocksEverything() throws {
        let mutter = try MutterHeadless()
        let app = try start(on: mutter, policy: "unauthorized")
        copyEveryWay(app, on: mutter)
        // What a leak would need to show (the ungoverned case shows it within this).
        usleep(500_000)
        #expect(try mutter.pasted() == Array("previous-clipboard".utf8))
        #expect(!(try mutter.pasted(["--primary"])).containsRun(of: Array(X11Toolkit.text.utf8)))
        #expect(app.count("copy-attempted") >= 1)
    }

    func ungovernedAppLeaks() throws {
        let mutter = try MutterHeadless()
        let app = try start(on: mutter, policy: "unauthorized", governed: false)
        #expect(mutter.press("ctrl+a"))
        #expect(mutter.press("ctrl+c"))
        #expect(app.perform("copy"))
        let clipboard = try mutter.pasted(becoming: Array(X11Toolkit.text.utf8))
        #expect(clipboard == Array(X11Toolkit.text.utf8), "clipboard: \(String(decoding: clipboard, as: UTF8.self))")
        // (The primary selection is not asserted here: after a programmatic re-selection it
        // reached mutter in some runs only, so it cannot be a reliable control.)
    }

    func authorizedUnchanged() throws {
        let mutter = try MutterHeadless()
        let app = try start(on: mutter, policy: "authorized")
        #expect(mutter.press("ctrl+a"))
        #expect(mutter.press("ctrl+c"))
        #expect(app.perform("copy"))
        #expect(try mutter.pasted(becoming: Array(X11Toolkit.text.utf8)) == Array(X11Toolkit.text.utf8))
        #expect(app.count("copy-attempted") == 0)
    }
}

/// One mutter at a time (each needs most of a core while it starts). GTK 4 only: Qt 6's copies on
/// headless mutter were intermittently refused by mutter even without the call (an empty
/// selection after Ctrl+C in 3 of 5 runs), so its control case cannot show a leak reliably here.
@Suite("Governed toolkit apps on GNOME (mutter)", .serialized,
       .enabled(if: MutterHeadless.unavailable == nil, Comment(rawValue: MutterHeadless.unavailable ?? "")))
struct ToolkitMutterTests {
    @Suite("A GTK 4 app's own clipboard writes on GNOME (mutter, Wayland only), governed", .serialized,
           .enabled(if: ToolkitApps.gtkUnavailable == nil && MutterHeadless.unavailable == nil,
                    Comment(rawValue: ToolkitApps.gtkUnavailable ?? MutterHeadless.unavailable ?? "")))
    struct ToolkitGTKMutterTests {
        @Test("unauthorized: Ctrl+C, menu Copy/Cut and selecting change neither the clipboard nor the primary selection")
        func unauthorized() throws { try MutterToolkit.gtk.unauthorizedBlocksEverything() }

        @Test("the same app without the call: its Ctrl+C reaches the clipboard (what the call prevents)")
        func ungoverned() throws { try MutterToolkit.gtk.ungovernedAppLeaks() }

        @Test("authorized: the toolkit's own offer goes out unchanged")
        func authorized() throws { try MutterToolkit.gtk.authorizedUnchanged() }
    }
}
