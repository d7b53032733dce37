import Foundation
import ShareBroker
import ShareBrokerTesting
import Synchronization
import Testing

@Suite("Offline timers")
struct OfflineTimerTests {
    static let offline = OfflinePolicy(accessCheckAfter: .seconds(3_600), wipeAfter: .seconds(86_400))
    static let policy = PolicyUpdate(auth: .authorized, authMessage: "Welcome", openIn: .authorized,
                                     pasteboard: .authorized, offline: offline)

    static func folder() -> String { NSTemporaryDirectory() + "sb-offline-\(UUID().uuidString)" }

    func fixture(clock: ManualBootClock, directory: String?, apply update: PolicyUpdate? = policy) throws -> Fixture {
        let f = try Fixture()
        try f.broker.enableOfflineTimers(clock: clock, directory: directory)
        if let update { try f.broker.apply(update) }
        f.delegate.reset()
        return f
    }

    @Test("within the access-check period nothing changes; past it transfers fail closed and the app is told; a confirmation restores")
    func accessCheck() throws {
        let clock = ManualBootClock()
        let f = try fixture(clock: clock, directory: nil)
        clock.advance(.seconds(3_600))
        #expect(try f.broker.checkOfflineTimers() == .confirmed(elapsed: .seconds(3_600)))
        #expect(try f.broker.copyResult(.text("x")).action == .writeClear)
        clock.advance(.seconds(1))
        #expect(try f.broker.checkOfflineTimers() == .accessCheckDue(elapsed: .seconds(3_601)))
        #expect(f.delegate.calls == ["auth"], "the app is told through authStateChanged")
        let snapshot = try f.broker.policy()
        #expect(snapshot.authState == .unauthorized)
        #expect(snapshot.authMessage.contains("1 hour allowed offline"))
        #expect(snapshot.authMessage.contains("Connect to the management agent"))
        #expect(try f.broker.copyResult(.text("x")).action == .blocked)
        #expect(!f.broker.decideOpenIn(target: "org.example.sheets", via: .documentInteraction).allowed)
        #expect(try f.broker.checkOfflineTimers() == .accessCheckDue(elapsed: .seconds(3_601)), "checking again changes nothing")
        #expect(f.delegate.calls.filter { $0 == "auth" }.count == 1, "told once")
        try f.broker.confirmPolicy()
        #expect(try f.broker.policy().authState == .authorized)
        #expect(try f.broker.policy().authMessage == "Welcome", "the server's message comes back")
        #expect(try f.broker.copyResult(.text("x")).action == .writeClear)
        #expect(try f.broker.checkOfflineTimers() == .confirmed(elapsed: .zero))
    }

    @Test("past the wipe period the app retires itself and wipes")
    func wipe() throws {
        let clock = ManualBootClock()
        let f = try fixture(clock: clock, directory: nil)
        clock.advance(.seconds(86_401))
        #expect(try f.broker.checkOfflineTimers() == .wiped(elapsed: .seconds(86_401)))
        #expect(try f.broker.policy().authState == .retired)
        #expect(f.sink.wipeReports.count == 1)
        #expect(try f.broker.checkOfflineTimers() == .confirmed(elapsed: nil), "a retired app has nothing left to time")
    }

    @Test("without timers in the policy, or before any policy, nothing happens")
    func noTimers() throws {
        let clock = ManualBootClock()
        let f = try fixture(clock: clock, directory: nil, apply: PolicyUpdate(auth: .authorized))
        clock.advance(.seconds(10_000_000))
        #expect(try f.broker.checkOfflineTimers() == .confirmed(elapsed: .seconds(10_000_000)))
        #expect(try f.broker.policy().authState == .authorized)
        let notReady = try fixture(clock: clock, directory: nil, apply: nil)
        #expect(try notReady.broker.checkOfflineTimers() == .confirmed(elapsed: nil))
    }

    @Test("a restart in the middle of the grace period does not reset it: the confirmation is persisted")
    func restart() throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualBootClock()
        _ = try fixture(clock: clock, directory: directory)
        clock.advance(.seconds(1_800))
        // The app restarts while offline and applies the policy it kept.
        let again = try fixture(clock: clock, directory: directory, apply: nil)
        try again.broker.applyCached(Self.policy)
        #expect(try again.broker.checkOfflineTimers() == .confirmed(elapsed: .seconds(1_800)))
        clock.advance(.seconds(1_801))
        #expect(try again.broker.checkOfflineTimers() == .accessCheckDue(elapsed: .seconds(3_601)))
        // An unreadable file counts from the start of this boot, never from now.
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: directory + "/offline-confirmation"))
        let third = try fixture(clock: clock, directory: directory, apply: nil)
        try third.broker.applyCached(Self.policy)
        #expect(try third.broker.checkOfflineTimers() == .accessCheckDue(elapsed: clock.now().sinceBoot))
    }

    @Test("setting the wall clock back or forward changes nothing within a boot; across a reboot the time since boot is the least")
    func wallClockJump() throws {
        let clock = ManualBootClock()
        let f = try fixture(clock: clock, directory: nil)
        clock.setWallClock(by: .seconds(-30 * 86_400))
        clock.advance(.seconds(60))
        #expect(try f.broker.checkOfflineTimers() == .confirmed(elapsed: .seconds(60)))
        clock.setWallClock(by: .seconds(365 * 86_400))
        #expect(try f.broker.checkOfflineTimers() == .confirmed(elapsed: .seconds(60)), "a wall clock set forward wipes nothing")

        let a = BootInstant(bootID: "b1", sinceBoot: .seconds(500), wallClock: .seconds(10_000))
        let rebootedWallBack = BootInstant(bootID: "b2", sinceBoot: .seconds(7_200), wallClock: .seconds(5_000))
        #expect(rebootedWallBack.elapsed(since: a) == .seconds(7_200), "never less than the time since this boot")
        let rebootedLater = BootInstant(bootID: "b2", sinceBoot: .seconds(100), wallClock: .seconds(100_000))
        #expect(rebootedLater.elapsed(since: a) == .seconds(90_000))
    }

    @Test("issue 31.1: a wipe is terminal: a confirmation after block-then-wipe does not authorize again; only the server does")
    func wipeIsTerminal() throws {
        let clock = ManualBootClock()
        let f = try fixture(clock: clock, directory: nil)
        clock.advance(.seconds(3_601))
        #expect(try f.broker.checkOfflineTimers() == .accessCheckDue(elapsed: .seconds(3_601)))
        clock.advance(.seconds(86_400))
        #expect(try f.broker.checkOfflineTimers() == .wiped(elapsed: .seconds(90_001)))
        f.delegate.reset()
        try f.broker.confirmPolicy()
        #expect(try f.broker.policy().authState == .retired, "the confirmation gave back the authorization held before the wipe")
        #expect(f.delegate.calls.isEmpty, "no authStateChanged after a wipe")
        #expect(try f.broker.copyResult(.text("x")).action == .blocked)
        // A push that does not restate the authorization does not undo the wipe either.
        try f.broker.apply(PolicyUpdate(pasteboard: .authorized))
        #expect(try f.broker.policy().authState == .retired)
        // The server itself authorizing the app again does.
        try f.broker.apply(PolicyUpdate(auth: .authorized, authMessage: "Enrolled again"))
        #expect(try f.broker.policy().authState == .authorized)
    }

    @Test("issue 31.2: a policy push after an offline block restores the held authorization; one that restates auth wins")
    func pushAfterBlock() throws {
        let clock = ManualBootClock()
        let f = try fixture(clock: clock, directory: nil)
        clock.advance(.seconds(3_601))
        #expect(try f.broker.checkOfflineTimers() == .accessCheckDue(elapsed: .seconds(3_601)))
        f.delegate.reset()
        try f.broker.apply(PolicyUpdate(print: .authorized))
        #expect(try f.broker.policy().authState == .authorized, "every push is a confirmation")
        #expect(try f.broker.policy().authMessage == "Welcome")
        #expect(f.delegate.calls.contains("auth"))
        #expect(try f.broker.copyResult(.text("x")).action == .writeClear)
        // Held again; a push without auth keeps the saved authorization for a later confirmation too.
        clock.advance(.seconds(3_601))
        #expect(try f.broker.checkOfflineTimers() == .accessCheckDue(elapsed: .seconds(3_601)))
        try f.broker.apply(PolicyUpdate(authMessage: "New message", print: .unauthorized))
        #expect(try f.broker.policy().authState == .authorized)
        #expect(try f.broker.policy().authMessage == "New message", "a message the push gives wins over the held one")
        // A push that restates auth decides.
        clock.advance(.seconds(3_601))
        #expect(try f.broker.checkOfflineTimers() == .accessCheckDue(elapsed: .seconds(3_601)))
        try f.broker.apply(PolicyUpdate(auth: .unauthorized, authMessage: "Suspended"))
        try f.broker.confirmPolicy()
        #expect(try f.broker.policy().authState == .unauthorized, "the server's own unauthorized is not undone by a confirmation")
    }

    @Test("issue 31.3: past a period an action fails closed at once, before any check; the check then tells the app")
    func decidedAtTheAction() throws {
        let clock = ManualBootClock()
        let f = try fixture(clock: clock, directory: nil)
        clock.advance(.seconds(3_660))
        #expect(try f.broker.copyResult(.text("x")).action == .blocked, "61 minutes into a 1-hour period")
        #expect(f.pasteboard.read().items.isEmpty)
        #expect(!f.broker.decideOpenIn(target: "org.example.sheets", via: .documentInteraction).allowed)
        #expect(try !f.broker.openIn(Array("q3".utf8), named: "q3.txt", target: "org.example.sheets", via: .documentInteraction).delivered)
        #expect(!f.broker.print().allowed)
        #expect(f.broker.openFrom("doc", source: "org.example.sheets") == nil)
        #expect(f.broker.notificationContent(title: "t").title == nil)
        #expect(try f.broker.policy().authState == .authorized, "the state changes only at the check")
        #expect(try f.broker.checkOfflineTimers() == .accessCheckDue(elapsed: .seconds(3_660)))
        #expect(f.delegate.calls.contains("auth"))
        try f.broker.confirmPolicy()
        #expect(try f.broker.copyResult(.text("x")).action == .writeClear)
        // Past the wipe period, the same before the check wipes.
        clock.advance(.seconds(86_401))
        #expect(try f.broker.copyResult(.text("y")).action == .blocked)
        #expect(f.pasteboard.read().items == [.text("x")])
        #expect(try f.broker.checkOfflineTimers() == .wiped(elapsed: .seconds(86_401)))
    }

    @Test("the system clock counts from boot and moves forward")
    func systemClock() {
        let clock = SystemBootClock()
        let a = clock.now()
        let b = clock.now()
        #expect(a.sinceBoot > .zero)
        #expect(b.sinceBoot >= a.sinceBoot)
        #expect(!a.bootID.isEmpty && a.bootID != "unknown-boot")
    }
}
