import Foundation
import ShareBroker
import Testing

/// The built sharebrokerd next to the test bundle, if there is one.
let sharebrokerdTool: String? = sharebrokerTool.map { ($0 as NSString).deletingLastPathComponent + "/sharebrokerd" }
    .flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }

/// Whether this test process runs under AddressSanitizer or ThreadSanitizer (`make sanitize`):
/// their runtimes export `__asan_init` / `__tsan_init`.
let underSanitizer: Bool = dlsym(nil, "__asan_init") != nil || dlsym(nil, "__tsan_init") != nil

/// Two managed processes on one Wayland desktop: copies of the built `sharebroker` registered
/// with a real `sharebrokerd` (the agent identifies each from its executable and hands it the
/// group keys), copying and pasting through `--pasteboard wayland` on a headless sway.
@Suite("managed processes share a SecureCopy item through the Wayland clipboard",
       .enabled(if: WaylandTools.available, WaylandTools.skipReason),
       .enabled(if: sharebrokerTool != nil && sharebrokerdTool != nil, "build the sharebroker and sharebrokerd products before swift test"),
       .disabled(if: underSanitizer, "the agent's end-to-end runs are left out under the sanitizers, as make sanitize skips AgentTests (time limits)"))
struct WaylandAgentTests {
    static let secret = "Q3 numbers: revenue 4.2M, do not forward"

    @Test("notes copies sealed; viewer (another process) pastes it; wl-paste and an unmanaged process get the placeholder")
    func twoProcesses() throws {
        guard let tool = sharebrokerTool, let daemon = sharebrokerdTool else { return }
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let root = try SwayHeadless.temporaryDirectory("sbwa")
        defer { try? FileManager.default.removeItem(atPath: root) }
        for name in ["apps", "bin"] { try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true) }
        let notes = root + "/apps/notes", viewer = root + "/apps/viewer", unmanaged = root + "/bin/unmanaged"
        for path in [notes, viewer, unmanaged] where link(tool, path) != 0 {
            try FileManager.default.copyItem(atPath: tool, toPath: path)
        }
        let policy = #"{"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "secureCopy", "print": "authorized", "dragAndDrop": "appConnectApps"}"#
        let device = #"{"format": "sharebroker.device", "version": 1, "apps": ["#
            + #"{"id": "com.acme.notes", "executable": "\#(notes)", "appConnect": true, "policy": \#(policy)},"#
            + #"{"id": "com.acme.viewer", "executable": "\#(viewer)", "appConnect": true, "policy": \#(policy)}]}"#
        try device.write(toFile: root + "/device.json", atomically: true, encoding: .utf8)
        let environment = ["PATH": "/usr/bin:/bin", "SHAREBROKER_RUNTIME_DIR": root, "WAYLAND_DISPLAY": sway.display,
                           "XDG_RUNTIME_DIR": root, "HOME": root]
        let agent = try Child(daemon, ["--policy", root + "/device.json"], environment: environment, input: nil)
        defer {
            agent.signal(SIGTERM)
            if !agent.wait(timeout: .seconds(3)) { agent.kill() }
        }
        let started = ContinuousClock.now
        while !FileManager.default.fileExists(atPath: root + "/agent.sock") && ContinuousClock.now - started < .seconds(10) {
            usleep(20_000)
        }
        func run(_ path: String, _ arguments: [String], input: [UInt8]? = nil) throws -> (status: Int32, output: [UInt8]) {
            let child = try Child(path, arguments, environment: environment, input: input)
            let output = child.readAll(until: .now + .seconds(10))
            guard child.wait(timeout: .seconds(5)) else {
                child.kill()
                throw HarnessError("\(arguments) did not finish")
            }
            return (child.status, output)
        }

        try sway.copy(Array("before".utf8))
        // notes copies (WAYLAND_DISPLAY set, DISPLAY not: the Wayland clipboard) and keeps serving.
        let copier = try Child(notes, ["copy"], environment: environment, input: Array(Self.secret.utf8))
        defer { copier.kill() }
        let line = copier.readLine(until: .now + .seconds(10))
        #expect(line.hasPrefix("copied sealed"), "notes copies under SecureCopy: \(line)")
        let placeholder = Array(ServerConfigKey.defaultClipboardPlaceholder.utf8)
        #expect(try sway.pasted() == placeholder)
        #expect(try sway.pasted(["--primary"]) == placeholder)
        #expect(try sway.types().contains(SealedSet.targetName))
        let sealed = try sway.pasted(["--type", SealedSet.targetName])
        #expect(!sealed.isEmpty && !sealed.containsRun(of: Array(Self.secret.utf8)))

        let pasted = try run(viewer, ["paste", "--pasteboard", "wayland"])
        #expect(pasted.status == 0)
        #expect(pasted.output == Array(Self.secret.utf8), "the second managed process opens the sealed set")
        let stranger = try run(unmanaged, ["paste", "--unmanaged"])
        #expect(stranger.output == placeholder, "an unmanaged process pastes the placeholder")
        #expect(try run(unmanaged, ["paste"]).output == placeholder,
                "an unregistered process, refused by the agent, reads clear items only: the placeholder")

        // Another app copies: notes stops serving; its item is gone; the new text pastes in the clear.
        try sway.copy(Array("after".utf8))
        #expect(copier.wait(timeout: .seconds(5)) && copier.status == 0, "the copier exits once another app copied")
        #expect(try run(viewer, ["paste"]).output == Array("after".utf8))
    }

    @Test("agent-demo --pasteboard wayland plays every step through the Wayland clipboard and leaves nothing on it")
    func agentDemoOnWayland() throws {
        guard let tool = sharebrokerTool, sharebrokerdTool != nil else { return }
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let demo = try sway.start(tool, ["agent-demo", "--pasteboard", "wayland"])
        let bytes = demo.readAll(until: .now + .seconds(150))
        guard demo.wait(timeout: .seconds(10)) else {
            demo.kill()
            Issue.record("agent-demo did not finish: \(String(decoding: bytes, as: UTF8.self).suffix(3000))")
            return
        }
        let output = String(decoding: bytes, as: UTF8.self)
        #expect(demo.status == 0, "\(output.suffix(3000))")
        #expect(output.contains("Clipboard: wayland, the compositor at \(sway.display)"))
        #expect(output.contains("[serving the wayland clipboard in the background"), "the copies serve the Wayland clipboard")
        #expect(output.contains("ok: the wayland clipboard offers the sealed item and a placeholder, not the text"))
        #expect(output.contains("ok: wl-paste reads the sealed type and the placeholder, never the text"))
        #expect(output.contains("ok: the viewer reads the notes app's SecureCopy item"))
        #expect(output.contains("ok: the unmanaged process reads the placeholder, not the text"))
        #expect(output.contains("ok: the pasteboard kept exactly what it had"))
        #expect(!output.contains("NOT OK"))
        #expect(output.contains("Every step answered as expected."))
        // Every copy that served the clipboard is gone with the demo: nothing is offered any more.
        #expect(try sway.pasted().isEmpty, "no process of the demo still serves the clipboard")
        #expect(try sway.pasted(["--primary"]).isEmpty, "nor the primary selection")
    }
}
