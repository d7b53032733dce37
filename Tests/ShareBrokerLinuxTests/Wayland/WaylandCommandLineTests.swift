import Foundation
import ShareBroker
@testable import ShareBrokerLinux
import Testing

/// More of `sharebroker copy|paste --pasteboard wayland` on a headless sway (the suite is in
/// WaylandClipboardTests.swift): the primary selection, a sealed set whose transfer broke, and
/// the messages of a managed copy without its agent.
extension WaylandCommandLineTests {
    static func run(_ tool: String, _ arguments: [String], sway: SwayHeadless, environment: [String: String] = [:],
                    input: [UInt8]? = nil) throws -> (status: Int32, output: [UInt8], error: String) {
        try X11CommandLineTests.run(tool, arguments, environment: ["WAYLAND_DISPLAY": sway.display, "HOME": "/nonexistent-sb"]
                                        .merging(environment) { _, new in new }, input: input)
    }

    @Test("paste --primary reads the primary selection, paste the clipboard")
    func pastePrimary() throws {
        guard let tool = sharebrokerTool else { return }
        let sway = try SwayHeadless()
        defer { sway.stop() }
        try sway.copy(Array("on the clipboard".utf8))
        try sway.copy(Array("only selected".utf8), primary: true)
        let primary = try Self.run(tool, ["paste", "--unmanaged", "--pasteboard", "wayland", "--primary"], sway: sway)
        #expect(primary.status == 0, "\(primary.error)")
        #expect(primary.output == Array("only selected".utf8))
        let clipboard = try Self.run(tool, ["paste", "--unmanaged", "--pasteboard", "wayland"], sway: sway)
        #expect(clipboard.output == Array("on the clipboard".utf8), "\(clipboard.error)")
    }

    @Test("a sealed set cut short, or an owner that stops sending it: the transfer broke (74), never the placeholder")
    func brokenSetFails() throws {
        guard let tool = sharebrokerTool else { return }
        let sway = try SwayHeadless()
        defer { sway.stop() }
        let set = SealedSet.encode([[UInt8](repeating: 7, count: 300)])
        // A set cut short (what a reader sees of an owner killed mid-transfer: the pipe ends early).
        try sway.copy(Array(set.prefix(100)), type: SealedSet.targetName)
        let paste = try Self.run(tool, ["paste", "--unmanaged", "--pasteboard", "wayland"], sway: sway)
        #expect(paste.status == 74, "\(paste.error)")
        #expect(paste.output.isEmpty)
        #expect(paste.error.contains("transfer broke"), "\(paste.error)")
        // An owner that stops in the middle: the read gives up after its timeout and says so.
        guard let wlCopy = WaylandTools.wlCopy else { return }
        let stopped = try sway.start(wlCopy, ["--foreground", "--type", SealedSet.targetName], input: set)
        defer { stopped.kill() }
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline, try sway.pasted(["--type", SealedSet.targetName]) != set { usleep(10_000) }
        stopped.signal(SIGSTOP)
        defer { stopped.signal(SIGCONT) }
        let reader = try WaylandPasteboard(configuration: .init(display: sway.display, readTimeout: .milliseconds(300)))
        defer { reader.close() }
        var broke = false
        do {
            _ = try reader.readSelection()
        } catch {
            if case .sealedSetBroken(let why) = error { broke = why.contains("stopped arriving") }
        }
        #expect(broke, "a sealed set that stops arriving is a broken transfer")
        #expect(reader.read().items.isEmpty, "and reads as nothing")
    }

    @Test("a managed copy with the agent down is 'agent unavailable' (69) before the clipboard is opened")
    func agentDown() throws {
        guard let tool = sharebrokerTool else { return }
        let sway = try SwayHeadless()
        defer { sway.stop() }
        try sway.copy(Array("what was there".utf8))
        let copy = try Self.run(tool, ["copy", "--pasteboard", "wayland"], sway: sway,
                                environment: ["SHAREBROKER_SOCKET": "/nonexistent-sb/agent.sock"], input: Array("secret".utf8))
        #expect(copy.status == 69, "\(copy.error)")
        #expect(copy.error.contains("agent is unavailable"), "\(copy.error)")
        #expect(try sway.pasted() == Array("what was there".utf8), "nothing was written")
    }
}
