import Dispatch
import ShareBroker
import ShareBrokerCrypto
import ShareBrokerTesting
import Synchronization
import Testing

/// Issue 33: exits that warn instead of only blocking. Every outcome, the timeout, the
/// time-limited proceed, the rate limit, answers from other threads, a double answer, a reason
/// not offered, over-long and control-character text.
@Suite("Warn: the user may go on with a reason")
struct WarnTests {
    static let secret = PasteboardItem(type: "public.utf8-plain-text", bytes: Array("the merger plan".utf8))
    static let reasons = [WarnReason(code: "customer-request", label: "A customer asked for it"),
                          WarnReason(code: "internal", label: "Internal use")]

    /// Collects the questions asked (the C interface's way: a ticket answered later).
    final class Asker: Sendable {
        let tickets = Mutex<[WarnTicket]>([])
        var count: Int { tickets.withLock { $0.count } }
        var last: WarnTicket? { tickets.withLock { $0.last } }
        var function: @Sendable (WarnTicket) -> Void { { ticket in self.tickets.withLock { $0.append(ticket) } } }
    }

    /// A completion's value, set from any thread.
    final class Box<T: Sendable>: Sendable {
        private let value = Mutex<T?>(nil)
        func set(_ new: T) { value.withLock { $0 = new } }
        func withLock<R>(_ body: (T?) throws -> R) rethrows -> R { try value.withLock { try body($0) } }
    }

    struct Fixture {
        let broker: ShareBroker
        let pasteboard = InMemoryPasteboard()
        let sink = RecordingReportSink()
        let outbox = InMemoryOutbox()

        init(warn: WarnPolicy, update: PolicyUpdate = PolicyUpdate(auth: .authorized, openIn: .whitelist(["com.acme.viewer"]),
                                                                 pasteboard: .unauthorized, print: .unauthorized,
                                                                 dragAndDrop: .noApps)) throws {
            broker = ShareBroker(appID: "com.acme.notes",
                                 platform: Platform(outbox: outbox, urlOpener: RecordingURLOpener(), reportSink: sink,
                                                    pasteboard: pasteboard, secureServices: try InProcessKeyCustodian()))
            try broker.start(delegate: RecordingDelegate(implementing: []))
            var update = update
            update.warn = warn
            try broker.apply(update)
            broker.setMonotonicClock(to: 1_000_000_000)
        }

        var pasteboardText: String? {
            pasteboard.read().items.first.map { String(decoding: $0.bytes, as: UTF8.self) }
        }
    }

    static func copyWarn(_ settings: WarnSettings = WarnSettings(reasonRequired: true, reasons: reasons,
                                                                 freeTextAllowed: true)) -> WarnPolicy {
        WarnPolicy([.copy: settings])
    }

    /// Starts a warned copy and returns its completion's box and the ticket asked.
    static func startCopy(_ fixture: Fixture, asker: Asker) -> Box<Result<WarnedCopy, ShareBrokerError>> {
        let box = Box<Result<WarnedCopy, ShareBrokerError>>()
        fixture.broker.copyAsking(CollectionOfOne(secret)) { result in box.set(result) }
        return box
    }

    @Test("no handler: blocked at once, recorded as noHandler, the pasteboard keeps what it had")
    func noHandler() async throws {
        let fixture = try Fixture(warn: Self.copyWarn())
        let result = try await fixture.broker.copyAsking(Self.secret)
        #expect(result == WarnedCopy(action: .blocked, outcome: .noHandler))
        #expect(fixture.pasteboard.read().items.isEmpty)
        #expect(fixture.sink.warnedAttempts.map(\.outcome) == [.noHandler])
        #expect(fixture.sink.warnedAttempts.first?.exit == .copy)
    }

    @Test("cancel: blocked, recorded as cancelled; nothing written")
    func cancel() throws {
        let fixture = try Fixture(warn: Self.copyWarn())
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        let box = Self.startCopy(fixture, asker: asker)
        #expect(box.withLock { $0 } == nil, "the copy waits for the answer; the caller was not blocked")
        let ticket = try #require(asker.last)
        #expect(ticket.question.exit == .copy && ticket.question.reasons == Self.reasons)
        #expect(ticket.answer(.cancel) == .accepted)
        #expect(try box.withLock { $0 }?.get() == WarnedCopy(action: .blocked, outcome: .cancelled))
        #expect(fixture.pasteboard.read().items.isEmpty)
        #expect(fixture.sink.warnedAttempts.map(\.outcome) == [.cancelled])
        #expect(fixture.sink.blockedAttempts.isEmpty, "one record per warned attempt, not a blocked one as well")
    }

    @Test("proceed with a reason: written in the clear, the record keeps the code and the text, never the content")
    func proceed() throws {
        let fixture = try Fixture(warn: Self.copyWarn())
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        let box = Self.startCopy(fixture, asker: asker)
        let ticket = try #require(asker.last)
        ticket.answer(.proceed(reasonCode: "internal", text: "for the board pack"))
        #expect(try box.withLock { $0 }?.get() == WarnedCopy(action: .writeClear, outcome: .proceeded))
        #expect(fixture.pasteboardText == "the merger plan")
        let record = try #require(fixture.sink.warnedAttempts.first)
        #expect(record.outcome == .proceeded && record.reasonCode == "internal" && record.text == "for the board pack")
        #expect(!"\(record)".contains("merger"))
    }

    @Test("the Swift async handler: a proceed from the handler's task writes the copy")
    func swiftHandler() async throws {
        final class Handler: WarnHandler {
            let asked = Mutex<[WarnQuestion]>([])
            func answer(_ question: WarnQuestion) async -> WarnAnswer {
                asked.withLock { $0.append(question) }
                return .proceed(reasonCode: "customer-request", text: nil)
            }
        }
        let fixture = try Fixture(warn: Self.copyWarn())
        let handler = Handler()
        fixture.broker.setWarnHandler(handler)
        let result = try await fixture.broker.copyAsking(Self.secret)
        #expect(result == WarnedCopy(action: .writeClear, outcome: .proceeded))
        #expect(handler.asked.withLock { $0.count } == 1)
        #expect(fixture.sink.warnedAttempts.first?.reasonCode == "customer-request")
    }

    @Test("a handler that never answers: timed out and blocked; a late answer is ignored and changes nothing")
    func timeout() async throws {
        let fixture = try Fixture(warn: Self.copyWarn(WarnSettings(answerTimeoutMilliseconds: 50)))
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        let result = try await fixture.broker.copyAsking(Self.secret)
        #expect(result == WarnedCopy(action: .blocked, outcome: .timedOut))
        let ticket = try #require(asker.last)
        #expect(ticket.answer(.proceed(reasonCode: nil, text: nil)) == .ignoredLate)
        #expect(fixture.pasteboard.read().items.isEmpty)
        #expect(fixture.sink.warnedAttempts.map(\.outcome) == [.timedOut])
    }

    @Test("a double answer: the second is ignored (a cancel after a proceed does not undo it, and no second record)")
    func doubleAnswer() throws {
        let fixture = try Fixture(warn: Self.copyWarn(WarnSettings()))
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        let box = Self.startCopy(fixture, asker: asker)
        let ticket = try #require(asker.last)
        #expect(ticket.answer(.proceed(reasonCode: nil, text: nil)) == .accepted)
        #expect(ticket.answer(.cancel) == .ignoredDuplicate)
        #expect(try box.withLock { $0 }?.get() == WarnedCopy(action: .writeClear, outcome: .proceeded))
        #expect(fixture.sink.warnedAttempts.count == 1)
        #expect(!ticket.isOpen)
    }

    @Test("answers from other threads: many racing answers, exactly one accepted")
    func otherThreads() throws {
        let fixture = try Fixture(warn: Self.copyWarn(WarnSettings()))
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        let box = Self.startCopy(fixture, asker: asker)
        let ticket = try #require(asker.last)
        let accepted = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let status = ticket.answer(index % 2 == 0 ? .proceed(reasonCode: nil, text: "t\(index)") : .cancel)
            if status == .accepted { accepted.wrappingAdd(1, ordering: .relaxed) }
        }
        #expect(accepted.load(ordering: .relaxed) == 1)
        #expect(try box.withLock { $0 }?.get().outcome != nil)
        #expect(fixture.sink.warnedAttempts.count == 1)
    }

    @Test("the synchronous form blocks its caller until another thread answers")
    func synchronousForm() throws {
        let fixture = try Fixture(warn: Self.copyWarn(WarnSettings()))
        fixture.broker.setWarnAsker { ticket in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) {
                ticket.answer(.proceed(reasonCode: nil, text: nil))
            }
        }
        let result = try fixture.broker.copyWaitingForAnswer(Self.secret)
        #expect(result == WarnedCopy(action: .writeClear, outcome: .proceeded))
        #expect(fixture.pasteboardText == "the merger plan")
    }

    @Test("a reason the policy does not offer: blocked (invalidAnswer), and the code is not recorded")
    func reasonNotOffered() throws {
        let fixture = try Fixture(warn: Self.copyWarn())
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        let box = Self.startCopy(fixture, asker: asker)
        try #require(asker.last).answer(.proceed(reasonCode: "because-i-said-so", text: nil))
        #expect(try box.withLock { $0 }?.get() == WarnedCopy(action: .blocked, outcome: .invalidAnswer))
        #expect(fixture.pasteboard.read().items.isEmpty)
        #expect(fixture.sink.warnedAttempts.first?.reasonCode == nil)
    }

    @Test("a required reason missing: blocked (invalidAnswer)")
    func reasonMissing() throws {
        let fixture = try Fixture(warn: Self.copyWarn())
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        let box = Self.startCopy(fixture, asker: asker)
        try #require(asker.last).answer(.proceed(reasonCode: nil, text: "no code"))
        #expect(try box.withLock { $0 }?.get().outcome == .invalidAnswer)
        #expect(fixture.pasteboard.read().items.isEmpty)
    }

    @Test("over-long text is cut to 256 scalars; control characters, quotes and backslashes are escaped in the record")
    func text() throws {
        let fixture = try Fixture(warn: Self.copyWarn())
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        _ = Self.startCopy(fixture, asker: asker)
        try #require(asker.last).answer(.proceed(reasonCode: "internal", text: String(repeating: "é", count: 1_000)))
        let long = try #require(fixture.sink.warnedAttempts.last?.text)
        #expect(long.unicodeScalars.count == WarnSettings.maxTextLength)

        _ = Self.startCopy(fixture, asker: asker)
        try #require(asker.last).answer(.proceed(reasonCode: "internal", text: "ok\n\u{1B}[31mFAKE\u{7}\"x\"\\\u{202E}"))
        let escaped = try #require(fixture.sink.warnedAttempts.last?.text)
        #expect(escaped == "ok\\u{A}\\u{1B}[31mFAKE\\u{7}\\u{22}x\\u{22}\\u{5C}\\u{202E}")
        #expect(!escaped.unicodeScalars.contains { $0.properties.generalCategory == .control })
    }

    @Test("free text when the policy allows none: dropped, the proceed stands")
    func textNotAllowed() throws {
        let fixture = try Fixture(warn: Self.copyWarn(WarnSettings(reasons: Self.reasons)))
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        let box = Self.startCopy(fixture, asker: asker)
        try #require(asker.last).answer(.proceed(reasonCode: "internal", text: "secret words"))
        #expect(try box.withLock { $0 }?.get().outcome == .proceeded)
        #expect(fixture.sink.warnedAttempts.last?.text == nil)
    }

    @Test("a time-limited proceed: the same exit and target go on without a question until it ends")
    func proceedLifetime() throws {
        let fixture = try Fixture(warn: WarnPolicy([.openIn: WarnSettings(proceedLifetimeMinutes: 5)]))
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        func open(_ target: String) -> Box<Result<WarnedTransfer, ShareBrokerError>> {
            let box = Box<Result<WarnedTransfer, ShareBrokerError>>()
            let outbox = fixture.outbox
            fixture.broker.openInAsking(documentNamed: "q3.pdf", target: target, via: .documentInteraction,
                                        handOff: { request throws(ShareBrokerError) in
                                            try outbox.handOver(name: request.name, bytes: request.delivers ? [1, 2, 3] : [])
                                        }, completion: { result in box.set(result) })
            return box
        }
        let first = open("com.other.editor")
        try #require(asker.last).answer(.proceed(reasonCode: nil, text: nil))
        #expect(try first.withLock { $0 }?.get().delivered == true)
        #expect(fixture.outbox.handedOver.last?.name == "q3.pdf")
        // Within 5 minutes: no question.
        fixture.broker.setMonotonicClock(to: 1_000_000_000 + 4 * 60_000_000_000)
        let second = open("com.other.editor")
        #expect(asker.count == 1)
        #expect(try second.withLock { $0 }?.get().outcome == .remembered)
        // Another target asks.
        _ = open("com.third.app")
        #expect(asker.count == 2)
        try #require(asker.last).answer(.cancel)
        #expect(fixture.outbox.handedOver.last?.name != "q3.pdf", "a cancelled Open In hands over a dummy")
        // After 5 minutes: asks again.
        fixture.broker.setMonotonicClock(to: 1_000_000_000 + 6 * 60_000_000_000)
        _ = open("com.other.editor")
        #expect(asker.count == 3)
        #expect(fixture.sink.warnedAttempts.map(\.outcome) == [.proceeded, .remembered, .cancelled])
        #expect(fixture.sink.warnedAttempts.allSatisfy { !"\($0)".contains("q3.pdf") }, "never a document name")
    }

    @Test("the rate limit: past N proceeds in M minutes, blocked without a question for the rest of the window")
    func rateLimit() throws {
        let fixture = try Fixture(warn: WarnPolicy([.print: WarnSettings(rateLimit: WarnRateLimit(proceeds: 2, minutes: 10))]))
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        func print() -> Box<WarnedDecision> {
            let box = Box<WarnedDecision>()
            fixture.broker.printAsking { decision in box.set(decision) }
            return box
        }
        for _ in 0..<2 {
            let box = print()
            try #require(asker.last).answer(.proceed(reasonCode: nil, text: nil))
            #expect(box.withLock { $0 }?.allowed == true)
        }
        fixture.broker.setMonotonicClock(to: 1_000_000_000 + 9 * 60_000_000_000)
        let third = print()
        #expect(asker.count == 2, "no question once the window's proceeds are used up")
        #expect(third.withLock { $0 } == WarnedDecision(allowed: false, decision: fixture.broker.print(), outcome: .rateLimited))
        fixture.broker.setMonotonicClock(to: 1_000_000_000 + 11 * 60_000_000_000)
        _ = print()
        #expect(asker.count == 3, "a new window asks again")
    }

    @Test("the policy changes while the user decides: a proceed after the exit stopped warning is blocked")
    func policyChanged() throws {
        let fixture = try Fixture(warn: WarnPolicy([.dragAndDrop: WarnSettings()]))
        let asker = Asker()
        fixture.broker.setWarnAsker(asker.function)
        let box = Box<WarnedDecision>()
        fixture.broker.dragAndDropAsking(to: "com.other.app") { decision in box.set(decision) }
        var update = PolicyUpdate()
        update.warn = WarnPolicy.none
        try fixture.broker.apply(update)
        try #require(asker.last).answer(.proceed(reasonCode: nil, text: nil))
        #expect(box.withLock { $0 }?.outcome == .policyChanged)
        #expect(box.withLock { $0 }?.allowed == false)
    }

    @Test("exits that do not warn behave as before: allowed copies write, fail-closed states never ask")
    func notWarned() async throws {
        let allowed = try Fixture(warn: Self.copyWarn(), update: PolicyUpdate(auth: .authorized, pasteboard: .authorized))
        let asker = Asker()
        allowed.broker.setWarnAsker(asker.function)
        let written = try await allowed.broker.copyAsking(Self.secret)
        #expect(written.action == .writeClear && written.outcome == nil && written.decision?.rule == .pasteboardAuthorized)
        let unauthorized = try Fixture(warn: Self.copyWarn(), update: PolicyUpdate(auth: .unauthorized, pasteboard: .unauthorized))
        unauthorized.broker.setWarnAsker(asker.function)
        let refused = try await unauthorized.broker.copyAsking(Self.secret)
        #expect(refused.action == .blocked && refused.outcome == nil && refused.decision?.rule == .notAuthorized)
        #expect(asker.count == 0)
        #expect(unauthorized.sink.blockedAttempts.map(\.rule) == ["notAuthorized"])
        // A whitelisted target needs no question.
        let whitelisted = try Fixture(warn: WarnPolicy([.openIn: WarnSettings()]))
        whitelisted.broker.setWarnAsker(asker.function)
        let result = try await whitelisted.broker.openInAsking([1], named: "a.pdf", target: "com.acme.viewer")
        #expect(result.delivered && result.outcome == nil && asker.count == 0)
    }

    @Test("settings with a problem never reach the snapshot: that exit blocks")
    func invalidSettings() throws {
        let bad = WarnSettings(reasonRequired: true, reasons: [], freeTextAllowed: false)
        #expect(bad.problem != nil)
        #expect(WarnSettings(reasons: [WarnReason(code: "bad code!", label: "x")]).problem != nil)
        #expect(WarnSettings(answerTimeoutMilliseconds: 0).problem != nil)
        let fixture = try Fixture(warn: WarnPolicy([.print: bad, .copy: WarnSettings()]))
        let snapshot = try fixture.broker.policy()
        #expect(snapshot.warnPolicy[.print] == nil && snapshot.warnPolicy[.copy] != nil)
    }

    @Test("a held copy lives in protected memory until released, then holds nothing")
    func heldCopy() throws {
        let held = try HeldCopy([Self.secret, PasteboardItem(type: "public.html", bytes: Array("<b>x</b>".utf8))])
        #expect(held.isHeld)
        #expect(held.items() == [Self.secret, PasteboardItem(type: "public.html", bytes: Array("<b>x</b>".utf8))])
        held.release()
        #expect(!held.isHeld && held.items().isEmpty)
        held.release()
    }

    @Test("the ledger alone: a grant ends with its lifetime, a window resets after its minutes")
    func ledger() {
        var ledger = WarnLedger()
        let minute: UInt64 = 60_000_000_000
        let settings = WarnSettings(proceedLifetimeMinutes: 1, rateLimit: WarnRateLimit(proceeds: 1, minutes: 2))
        let before = ledger.remembered(.copy, target: nil, at: 0)
        #expect(before == nil)
        ledger.recordProceed(.copy, target: nil, reasonCode: "a", settings: settings, at: 0)
        let during = ledger.remembered(.copy, target: nil, at: minute - 1)
        #expect(during == .some("a"))
        let after = ledger.remembered(.copy, target: nil, at: minute)
        #expect(after == nil)
        let limited = ledger.isRateLimited(.copy, limit: settings.rateLimit, at: 2 * minute - 1)
        #expect(limited)
        let reset = ledger.isRateLimited(.copy, limit: settings.rateLimit, at: 2 * minute)
        #expect(!reset)
        let other = ledger.isRateLimited(.print, limit: settings.rateLimit, at: 0)
        #expect(!other)
    }
}
