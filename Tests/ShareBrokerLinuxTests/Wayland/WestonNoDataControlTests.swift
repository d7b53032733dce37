import Foundation
import ShareBroker
@testable import ShareBrokerLinux
import Testing

/// A compositor that offers no data-control protocol at all (neither ext nor wlr), as GNOME's
/// mutter: weston 10 headless plays it. The adapter says so, naming both protocols and the way
/// out, and the automatic choice uses the X11 clipboard (through Xwayland on a real desktop; a
/// private Xvfb here) when `DISPLAY` is set.
@Suite("a Wayland compositor without data-control (weston headless)", .serialized,
       .enabled(if: WestonHeadless.weston != nil, "weston is not installed (make deps installs it)"),
       .enabled(if: X11Tools.available, X11Tools.skipReason),
       .enabled(if: sharebrokerTool != nil, "build the sharebroker product before swift test"))
struct WestonNoDataControlTests {
    @Test("the adapter refuses with a message naming both protocols; the CLI without DISPLAY says so (74)")
    func noDataControl() throws {
        guard let tool = sharebrokerTool else { return }
        let weston = try WestonHeadless()
        defer { weston.stop() }
        var refusal: WaylandPasteboardError?
        do {
            _ = try WaylandPasteboard(configuration: .init(display: weston.display))
        } catch {
            refusal = error
        }
        #expect(refusal == .noDataControl)
        let copy = try X11CommandLineTests.run(tool, ["copy", "--unmanaged"], environment: ["WAYLAND_DISPLAY": weston.display],
                                               input: Array("nowhere to go".utf8))
        #expect(copy.status == 74, "\(copy.error)")
        #expect(copy.error.contains("ext_data_control_manager_v1") && copy.error.contains("zwlr_data_control_manager_v1"), "\(copy.error)")
    }

    @Test("with DISPLAY set too, the automatic choice copies through the X11 clipboard and says why")
    func fallsBackToX11() throws {
        guard let tool = sharebrokerTool else { return }
        let weston = try WestonHeadless()
        defer { weston.stop() }
        let display = try XvfbDisplay()
        let copier = try Child(tool, ["copy", "--unmanaged"],
                               environment: ["PATH": "/usr/bin:/bin", "WAYLAND_DISPLAY": weston.display, "DISPLAY": display.name],
                               input: Array("through Xwayland".utf8))
        defer { copier.kill() }
        var seen: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            seen = try display.xclipOut()
            if !seen.isEmpty { break }
            usleep(20_000)
        }
        #expect(seen == Array("through Xwayland".utf8), "\(copier.errorOutput)")
        #expect(copier.errorOutput.contains("using the X11 clipboard through Xwayland"), "\(copier.errorOutput)")
        // An explicit --pasteboard wayland does not fall back.
        let explicit = try X11CommandLineTests.run(tool, ["paste", "--unmanaged", "--pasteboard", "wayland"],
                                                   environment: ["WAYLAND_DISPLAY": weston.display, "DISPLAY": display.name])
        #expect(explicit.status == 74, "\(explicit.error)")
    }
}

/// weston headless in a runtime folder of its own, its socket given by absolute path; stopped
/// (and the folder removed) by ``stop()``.
final class WestonHeadless: @unchecked Sendable {
    static let weston = X11Tools.find("weston")

    /// The compositor's socket (absolute path): a `WAYLAND_DISPLAY`.
    let display: String
    private let runtime: String
    private let server: Child

    init() throws {
        guard let weston = Self.weston else { throw HarnessError("weston is not installed") }
        runtime = try SwayHeadless.temporaryDirectory("sbweston")
        chmod(runtime, 0o700)
        display = runtime + "/wayland-weston"
        server = try Child(weston, ["--backend=headless-backend.so", "--socket=wayland-weston", "--idle-time=0",
                                    "--shell=kiosk-shell.so", "--no-config"],
                           environment: ["PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": runtime, "HOME": runtime], input: nil)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            // Ready once a client gets past the registry: the adapter's own refusal says so.
            do {
                _ = try WaylandPasteboard(configuration: .init(display: display, requestTimeout: .seconds(2)))
                return
            } catch {
                if error == .noDataControl { return }
            }
            if server.wait(timeout: .zero) { break }
            usleep(20_000)
        }
        stop()
        throw HarnessError("weston did not answer within 10 s: \(server.errorOutput)")
    }

    deinit { stop() }

    func stop() {
        server.kill()
        try? FileManager.default.removeItem(atPath: runtime)
    }
}
