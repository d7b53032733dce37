import Foundation
import ShareBroker
import ShareBrokerAgentClient
import ShareBrokerLinux
import ShareBrokerTesting
import Testing

@Suite("ManagedApp: the one call that wires an app")
struct ManagedAppTests {
    @Test("automatic picks Wayland, then X11, then the pasteboard file; a named file always wins")
    func automaticChoice() {
        #expect(PasteboardChoice.automatic.resolved(in: ["DISPLAY": ":3", "WAYLAND_DISPLAY": "wayland-1"]) == .wayland,
                "a Wayland session first (the X11 fallback is the adapter's, when the compositor has no data-control)")
        #expect(PasteboardChoice.automatic.resolved(in: ["DISPLAY": ":3"]) == .x11)
        #expect(PasteboardChoice.automatic.resolved(in: ["WAYLAND_DISPLAY": "wayland-1"]) == .wayland)
        #expect(PasteboardChoice.automatic.resolved(in: ["DISPLAY": "", "WAYLAND_DISPLAY": ""])
                    .isFile)
        #expect(PasteboardChoice.automatic.resolved(in: ["DISPLAY": ":3", "SHAREBROKER_PASTEBOARD": "/run/x/pb"])
                    == .file(path: "/run/x/pb"))
        #expect(PasteboardChoice.wayland.resolved(in: ["DISPLAY": ":3"]) == .wayland, "an explicit choice stays")
    }

    @Test("no agent on the socket: attach fails saying so, and nothing was started")
    func noAgent() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("managedapp-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let delegate = CountingDelegate()
        var configuration = ManagedApp.Configuration(
            socketPath: folder + "/agent.sock", handshakeTimeoutMilliseconds: 500, reconnects: false,
            pasteboard: .file(path: folder + "/pasteboard"))
        configuration.outbox = InMemoryOutbox()
        configuration.urlOpener = RecordingURLOpener()
        #expect {
            _ = try ManagedApp.attach(configuration, delegate: delegate)
        } throws: { error in
            guard let error = error as? ManagedAppError, case .agent = error else { return false }
            return error.description.contains("agent")
        }
        #expect(delegate.readyCount == 0, "the delegate heard nothing")
    }

    @Test("the agent is asked before the clipboard is opened: with the agent down and a pasteboard that cannot be opened, the agent's error")
    func agentBeforePasteboard() {
        // A folder path through a regular file: no one (root included) can make it.
        let configuration = ManagedApp.Configuration(
            socketPath: "/nonexistent/agent.sock", handshakeTimeoutMilliseconds: 200, reconnects: false,
            pasteboard: .file(path: "/etc/hostname/sharebroker/pasteboard"))
        #expect {
            _ = try ManagedApp.attach(configuration, delegate: CountingDelegate())
        } throws: { error in
            // Not the pasteboard's setup error: a managed copy with its agent down says "agent unavailable" (issue 31).
            guard let error = error as? ManagedAppError, case .agent = error else { return false }
            return error.description.contains("agent is unavailable")
        }
    }
}

extension PasteboardChoice {
    var isFile: Bool { if case .file = self { true } else { false } }
}

private final class CountingDelegate: ShareBrokerDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var ready = 0
    var readyCount: Int { lock.withLock { ready } }
    func appConnectIsReady() { lock.withLock { ready += 1 } }
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
    func configChanged(to config: [String: String]) -> Acknowledgment { .applied }
    func openInPolicyChanged(to policy: OpenInPolicy, whitelist: Set<String>) -> Acknowledgment { .applied }
    func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment { .applied }
    func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment { .applied }
    func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment { .applied }
}
