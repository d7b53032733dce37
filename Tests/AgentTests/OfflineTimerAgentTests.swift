import Foundation
import ShareBroker
import ShareBrokerLinux
import ShareBrokerTesting
import Testing

/// The offline timers of an attached app (``ManagedApp``), with a real agent: confirmed while the
/// agent is there, failing closed within a second of the access-check period once it is gone,
/// and authorized again when it returns.
@Suite("offline timers with the agent", .serialized,
       .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct OfflineTimerAgentTests {
    final class Delegate: ShareBrokerDelegate, @unchecked Sendable {
        let lock = NSLock()
        var auth: [(AuthState, String)] = []
        func appConnectIsReady() {}
        func authStateChanged(to state: AuthState, message: String) -> Acknowledgment {
            lock.lock()
            auth.append((state, message))
            lock.unlock()
            return .applied
        }
        var last: (AuthState, String)? {
            lock.lock()
            defer { lock.unlock() }
            return auth.last
        }
    }

    @Test("The agent connected for longer than the period: still authorized. The agent gone: within a second past the period every copy is blocked and the app is told why; back: authorized again; the confirmation is kept on disk")
    func offlinePeriodWithTheAgent() throws {
        let h = try AgentHarness()
        let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let policy = #"{"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "secureCopy", "print": "authorized", "dragAndDrop": "appConnectApps", "offlineAccessCheckSeconds": 3}"#
        let device = #"{"format": "sharebroker.device", "version": 2, "apps": [{"id": "com.acme.tests", "executable": "\#(me)", "appConnect": true, "policy": \#(policy)}]}"#
        try device.write(toFile: h.policyPath, atomically: true, encoding: .utf8)
        try h.startAgent()
        defer { h.stopAgent() }

        let state = h.root + "/app-state"
        let delegate = Delegate()
        var configuration = ManagedApp.Configuration(
            socketPath: h.socket, pasteboard: .file(path: h.root + "/pasteboard"),
            broker: ShareBroker.Configuration(stateDirectory: state))
        configuration.outbox = InMemoryOutbox()
        let app = try ManagedApp.attach(configuration, delegate: delegate)
        defer { app.close() }
        #expect(h.wait { app.broker.currentSnapshot.secureServices == .available })
        #expect(try app.broker.policy().offlinePolicy.accessCheckAfter == .seconds(3))
        #expect(try app.broker.copyResult(.text("sealed")).action == .writeSealed)

        // Connected for twice the period: the watchdog's confirmations keep it authorized.
        Thread.sleep(forTimeInterval: 4)
        #expect(try app.broker.policy().authState == .authorized)
        #expect(try app.broker.copyResult(.text("still sealed")).action == .writeSealed)
        #expect(FileManager.default.fileExists(atPath: state + "/offline-confirmation"))

        // The agent goes away: past the period (and the watchdog's next second) copies fail closed.
        h.stopAgent(signal: SIGKILL)
        #expect(h.wait(10) { (try? app.broker.policy().authState) == .unauthorized })
        #expect(try app.broker.copyResult(.text("must not be written")).action == .blocked)
        #expect(delegate.last?.0 == .unauthorized)
        #expect(delegate.last?.1.contains("not confirmed") == true, "\(String(describing: delegate.last))")

        // It returns: the client reconnects, the policy is confirmed, the user is authorized again.
        try h.startAgent()
        // Authorized again and the key ring back (the reconnection installs both).
        #expect(h.wait(10) { (try? app.broker.policy().authState) == .authorized
            && app.agent.availability == .available && app.broker.currentSnapshot.secureServices == .available })
        #expect(try app.broker.copyResult(.text("sealed again")).action == .writeSealed)
    }
}
