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
        if mutter == nil || dbusDaemon == nil || WaylandTools.wlPaste == nil || WaylandTools.wlCopy == nil
            || X11Tools.find("Xwayland") == nil || X11Tools.xclip == nil {
            return "mutter, Xwayland, dbus-daemon, xclip or wl-clipboard is missing (make deps installs mutter xwayland dbus xclip wl-clipboard)"
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
    /// With Xwayland: its display and the authority file X11 clients need.
    private(set) var x11: (display: String, authority: String)?

    /// Starts mutter, Wayland only or (`xwayland`) with Xwayland for X11 apps.
    init(xwayland: Bool = false) throws {
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
        server = try Child(mutter, ["--headless", "--wayland"] + (xwayland ? [] : ["--no-x11"])
                           + ["--virtual-monitor", "1280x800", "--wayland-display=sbtk-mutter"],
                           environment: environment, input: nil)
        socket = runtime + "/sbtk-mutter"
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: socket) {
            guard ContinuousClock.now < deadline, !server.wait(timeout: .zero) else {
                throw HarnessError("mutter opened no Wayland socket: \(server.errorOutput.suffix(2000))")
            }
            usleep(20_000)
        }
        if xwayland {
            // mutter logs "Using public X11 display :N, (using :M for managed services)".
            while x11 == nil {
                let log = server.errorOutput
                if let range = log.range(of: "Using public X11 display :"),
                   let number = log[range.upperBound...].prefix(while: \.isNumber).nilIfEmpty,
                   let authority = try? FileManager.default.contentsOfDirectory(atPath: runtime)
                       .first(where: { $0.hasPrefix(".mutter-Xwaylandauth.") }) {
                    x11 = (":" + number, runtime + "/" + authority)
                    break
                }
                guard ContinuousClock.now < deadline, !server.wait(timeout: .zero) else {
                    throw HarnessError("mutter started no Xwayland: \(log.suffix(2000))")
                }
                usleep(20_000)
            }
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

    /// The environment of an X11 client of the Xwayland server.
    var x11Environment: [String: String] {
        var environment = self.environment
        environment["DISPLAY"] = x11?.display
        environment["XAUTHORITY"] = x11?.authority
        return environment
    }

    /// `xclip -o` of `selection` through Xwayland: the bytes, empty when it fails.
    func xclipOut(_ selection: String) throws -> [UInt8] {
        guard let tool = X11Tools.xclip else { throw HarnessError("xclip is not installed") }
        let child = try Child(tool, ["-o", "-selection", selection], environment: x11Environment, input: nil)
        let output = child.readAll(until: .now + .seconds(5))
        guard child.wait(timeout: .seconds(5)) else { child.kill(); throw HarnessError("xclip hung") }
        return child.status == 0 ? output : []
    }

    /// `xclip -i`: an unmanaged X11 app owns `selection` with `text` (until Xwayland ends).
    func xclipIn(_ text: String, selection: String) throws {
        guard let tool = X11Tools.xclip else { throw HarnessError("xclip is not installed") }
        // An xclip that cannot connect exits before reading its input: its writer must not kill
        // the test process with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        // Xwayland may still be starting when mutter names its display: try again until it serves.
        let deadline = ContinuousClock.now + .seconds(10)
        var errors = ""
        while ContinuousClock.now < deadline {
            let child = try Child(tool, ["-i", "-selection", selection], environment: x11Environment, input: Array(text.utf8))
            _ = child.wait(timeout: .seconds(5))
            errors = child.errorOutput
            for _ in 0..<10 {
                if try xclipOut(selection) == Array(text.utf8) { return }
                usleep(20_000)
            }
            usleep(200_000)
        }
        throw HarnessError("xclip -i did not take \(selection) on Xwayland: \(errors)")
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

    /// `wl-paste --no-newline [ARGS]`, or nothing when it does not finish in 5 s (reading an X11
    /// owner through mutter's bridge sometimes never answered here).
    func pastedOrNothing(_ arguments: [String] = []) throws -> [UInt8] {
        do { return try pasted(arguments) } catch { return [] }
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

extension Substring {
    var nilIfEmpty: Substring? { isEmpty ? nil : self }
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

/// The governed GTK 4 app as an X11 client of mutter's Xwayland: the X11 path (Xlib) under GNOME,
/// read from both sides of mutter's clipboard bridge (xclip on X11, wl-paste on Wayland).
enum MutterXwaylandToolkit {
    static func start(on mutter: MutterHeadless, governed: Bool) throws -> ToolkitApp {
        try mutter.xclipIn("previous-clipboard", selection: "clipboard")
        var environment = mutter.x11Environment
        environment.merge(["GDK_BACKEND": "x11", "SB_POLICY": "unauthorized", "SB_TEXT": X11Toolkit.text,
                           "SB_GOVERN": governed ? "1" : "0"]) { $1 }
        let app = try ToolkitApp(try ToolkitApps.gtkApp.get(), environment: environment)
        guard app.waitFor("ready") else { throw HarnessError("the GTK 4 app did not start: \(app.errorOutput)") }
        guard app.waitFor("active") else { throw HarnessError("mutter never focused the GTK 4 X11 window") }
        return app
    }

    static func unauthorized() throws {
        let mutter = try MutterHeadless(xwayland: true)
        let app = try start(on: mutter, governed: true)
        #expect(mutter.press("ctrl+a"))
        #expect(mutter.press("ctrl+c"))
        #expect(app.perform("copy"))
        #expect(app.perform("select"))
        usleep(500_000)
        #expect(try mutter.xclipOut("clipboard") == Array("previous-clipboard".utf8))
        #expect(!(try mutter.xclipOut("primary")).containsRun(of: Array(X11Toolkit.text.utf8)))
        // Wayland clients, through mutter's bridge: never the text.
        #expect(!(try mutter.pastedOrNothing()).containsRun(of: Array(X11Toolkit.text.utf8)))
        #expect(!(try mutter.pastedOrNothing(["--primary"])).containsRun(of: Array(X11Toolkit.text.utf8)))
        #expect(app.count("copy-attempted") >= 1)
    }

    static func ungoverned() throws {
        let mutter = try MutterHeadless(xwayland: true)
        let app = try start(on: mutter, governed: false)
        #expect(mutter.press("ctrl+a"))
        #expect(mutter.press("ctrl+c"))
        #expect(app.perform("copy"))
        let text = Array(X11Toolkit.text.utf8)
        #expect(try mutter.xclipOut("clipboard") == text)
        #expect(try mutter.pasted(becoming: text) == text)
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

    @Suite("A GTK 4 app's own clipboard writes on GNOME through Xwayland (X11), governed", .serialized,
           .enabled(if: ToolkitApps.gtkUnavailable == nil && MutterHeadless.unavailable == nil,
                    Comment(rawValue: ToolkitApps.gtkUnavailable ?? MutterHeadless.unavailable ?? "")))
    struct ToolkitGTKXwaylandTests {
        @Test("unauthorized: neither X11 nor Wayland clients read the text; the previous X11 owner keeps the clipboard")
        func unauthorized() throws { try MutterXwaylandToolkit.unauthorized() }

        @Test("the same app without the call: its Ctrl+C reaches X11 and, through mutter's bridge, Wayland clients")
        func ungoverned() throws { try MutterXwaylandToolkit.ungoverned() }
    }
}
