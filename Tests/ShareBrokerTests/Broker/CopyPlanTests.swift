import ShareBroker
import ShareBrokerTesting
import Testing

/// The seams an in-process hook uses: a copy split into ``ShareBroker/prepareCopy`` (decide,
/// make the items) and ``ShareBroker/commit`` (record the write, or report the block once per
/// burst), and a paste of items the hook already read (``ShareBroker/paste(from:changeCount:)``).
@Suite("Copy plans, blocked bursts and paste from items")
struct CopyPlanTests {
    static let secret = "the plan the hook offers"

    @Test("a plan writes nothing by itself; it holds what copy would write, in the clear or sealed")
    func prepareWritesNothing() throws {
        for policy in [PasteboardPolicy.authorized, .secureCopy, .unauthorized] {
            let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: policy))
            fixture.pasteboard.write([.text("before")])
            let plan = try fixture.broker.prepareCopy(.text(Self.secret))
            #expect(fixture.pasteboard.read().items == [.text("before")], "\(policy): prepare must not write")
            #expect(fixture.sink.blockedAttempts.isEmpty, "\(policy): nothing is reported before the commit")
            #expect(fixture.delegate.calls.isEmpty)
            switch policy {
            case .authorized:
                #expect(plan.action == .writeClear)
                #expect(plan.itemArray == [.text(Self.secret)])
            case .secureCopy:
                #expect(plan.action == .writeSealed)
                #expect(plan.itemArray.map(\.type) == [PasteboardItem.sealedType])
                #expect(plan.itemArray.first?.bytes != Array(Self.secret.utf8))
                // The receiving side opens what the plan holds.
                #expect(fixture.broker.paste(from: plan.itemArray, changeCount: -1)?.item == .text(Self.secret))
            case .unauthorized:
                #expect(plan.action == .blocked)
                #expect(plan.itemArray.isEmpty)
            }
        }
    }

    @Test("the plan owns its bytes: a borrowed buffer rewritten after prepare changes nothing in it")
    func planOwnsBorrowedBytes() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .authorized))
        var buffer = Array(Self.secret.utf8)
        let plan = try buffer.withUnsafeBytes { bytes in
            try fixture.broker.prepareCopy(BorrowedRepresentation(type: PasteboardItem.textType, bytes: bytes))
        }
        for index in buffer.indices { buffer[index] = 0x58 }
        #expect(plan.itemArray == [.text(Self.secret)])
    }

    @Test("commit records the write as this app's: paste-in from managed apps reads it back, a retire takes it")
    func commitRecordsTheWrite() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .authorized, pasteIn: .managedApps))
        let plan = try fixture.broker.prepareCopy(.text(Self.secret))
        let count = fixture.pasteboard.write(plan.itemArray)
        // Not committed yet: the clear item is another app's as far as the broker knows.
        #expect(fixture.broker.paste() == nil)
        fixture.broker.commit(plan, changeCount: count)
        #expect(fixture.broker.paste() == .text(Self.secret))
        #expect(fixture.broker.paste(from: plan.itemArray, changeCount: count)?.item == .text(Self.secret))
        #expect(fixture.broker.paste(from: plan.itemArray, changeCount: count + 1) == nil,
                "another change count is another app's write")
    }

    @Test("a blocked plan is reported and calls the delegate at its commit, once per call")
    func blockedPlanReportsAtCommit() throws {
        let fixture = try Fixture(implementing: [.copyBlocked], ready: PolicyUpdate(auth: .authorized, pasteboard: .unauthorized))
        for round in 1...3 {
            let plan = try fixture.broker.prepareCopy(.text(Self.secret))
            fixture.broker.commit(plan, changeCount: nil)
            #expect(fixture.delegate.calls == Array(repeating: "copyBlocked", count: round))
            #expect(fixture.sink.blockedAttempts.count == round)
        }
        #expect(fixture.sink.blockedAttempts.allSatisfy { $0.action == .copy && $0.rule == "pasteboardUnauthorized" })
    }

    @Test("a burst of blocked toolkit copies on one selection is one attempt; a pause, the other selection or a new policy starts another")
    func toolkitBursts() throws {
        let fixture = try Fixture(implementing: [.copyBlocked], ready: PolicyUpdate(auth: .authorized, pasteboard: .unauthorized))
        let broker = fixture.broker
        var now: UInt64 = 1_000_000_000
        broker.setMonotonicClock(to: now)
        func dragStep(_ selection: CopySelection, after nanoseconds: UInt64) throws {
            now += nanoseconds
            broker.setMonotonicClock(to: now)
            broker.commit(try broker.prepareCopy(.text(Self.secret)), changeCount: nil, origin: .toolkit(selection))
        }
        // A drag: 40 selection changes 50 ms apart, 2 s in all, is one attempt.
        for _ in 0..<40 { try dragStep(.primary, after: 50_000_000) }
        #expect(fixture.sink.blockedAttempts.count == 1)
        #expect(fixture.delegate.calls == ["copyBlocked"])
        // Ctrl+C during the drag is an attempt on the clipboard: its own burst.
        try dragStep(.clipboard, after: 10_000_000)
        #expect(fixture.sink.blockedAttempts.count == 2)
        // The drag goes on: still its first burst.
        try dragStep(.primary, after: 10_000_000)
        #expect(fixture.sink.blockedAttempts.count == 2)
        // A pause longer than the window: the next selection is a new attempt.
        try dragStep(.primary, after: CopyAttemptBursts.window + 1)
        #expect(fixture.sink.blockedAttempts.count == 3)
        // A new policy (another rule) within the window: a new attempt.
        try broker.apply(PolicyUpdate(auth: .unauthorized))
        try dragStep(.primary, after: 1_000_000)
        #expect(fixture.sink.blockedAttempts.count == 4)
        #expect(fixture.sink.blockedAttempts.last?.rule == "notAuthorized")
        // The app's own calls are never coalesced.
        for _ in 0..<3 { broker.commit(try broker.prepareCopy(.text(Self.secret)), changeCount: nil) }
        #expect(fixture.sink.blockedAttempts.count == 7)
    }

    @Test("the burst rule: inside the window continues, past it or with another rule or generation starts anew")
    func burstRule() {
        var bursts = CopyAttemptBursts()
        let w = CopyAttemptBursts.window
        func starts(_ selection: CopySelection, _ rule: CopyRule, _ generation: UInt64, at now: UInt64) -> Bool {
            bursts.startsBurst(selection, rule: rule, generation: generation, at: now)
        }
        #expect(starts(.clipboard, .pasteboardUnauthorized, 1, at: 10))
        #expect(!starts(.clipboard, .pasteboardUnauthorized, 1, at: 10 + w))
        // The window slides from the last attempt, not from the first.
        #expect(!starts(.clipboard, .pasteboardUnauthorized, 1, at: 10 + 2 * w))
        #expect(starts(.clipboard, .pasteboardUnauthorized, 1, at: 11 + 3 * w))
        #expect(starts(.primary, .pasteboardUnauthorized, 1, at: 11 + 3 * w))
        #expect(starts(.primary, .secureServicesUnavailable, 1, at: 12 + 3 * w))
        #expect(starts(.primary, .secureServicesUnavailable, 2, at: 13 + 3 * w))
        // A clock that went backwards never hides an attempt.
        #expect(starts(.primary, .secureServicesUnavailable, 2, at: 5))
    }

    @Test("reportBlockedCopy: a hook's block without a plan is audited and told to the delegate like a plan's")
    func reportWithoutPlan() throws {
        let fixture = try Fixture(implementing: [.copyBlocked], ready: PolicyUpdate(auth: .authorized, pasteboard: .unauthorized))
        fixture.broker.setMonotonicClock(to: 5_000_000_000)
        let decision = fixture.broker.decideCopy(characters: nil)
        #expect(decision.action == .blocked)
        fixture.broker.reportBlockedCopy(decision, origin: .toolkit(.clipboard))
        fixture.broker.reportBlockedCopy(decision, origin: .toolkit(.clipboard))
        #expect(fixture.sink.blockedAttempts.map(\.action) == [.copy])
        #expect(fixture.delegate.calls == ["copyBlocked"])
    }

    @Test("paste from supplied items: sealed opens for an authorized reader, the placeholder is what an unmanaged one gets")
    func pasteFromItems() throws {
        let writer = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        let plan = try writer.broker.prepareCopy(.text(Self.secret))
        let offered = plan.itemArray + [.text("placeholder")]
        let pasted = writer.broker.paste(from: offered, changeCount: 0)
        #expect(pasted?.item == .text(Self.secret))
        #expect(pasted?.wasSealed == true)
        #expect(pasted?.sealer == "com.acme.notes")
        // A sealed item cut short or altered, for a reader with the keys: nothing, not the placeholder.
        let envelope = plan.itemArray[0].bytes
        var altered = envelope
        altered[altered.count - 1] ^= 1
        for broken in [Array(envelope.dropLast(7)), altered, [0x89, 0x53]] {
            let offer = [PasteboardItem(type: PasteboardItem.sealedType, bytes: broken), .text("placeholder")]
            #expect(writer.broker.paste(from: offer, changeCount: 0) == nil)
            #expect(writer.sink.blockedAttempts.last?.rule == "sealedItemBroken")
            #expect(writer.sink.blockedAttempts.last?.action == .paste)
        }
        // Secure services down: the sealed item does not open; the clear placeholder is read.
        writer.custodian.setAvailability(.unavailable)
        try writer.broker.setSecureServices(.unavailable)
        #expect(writer.broker.paste(from: offered, changeCount: 0) == PastedItem(item: .text("placeholder"), wasSealed: false))
        #expect(writer.broker.paste(from: plan.itemArray, changeCount: 0) == nil)
    }

    @Test("audit actions are typed and keep the names the server and the agent's log receive")
    func transferActionNames() {
        #expect(TransferAction.allCases.map(\.rawValue) == ["copy", "paste", "openIn", "openURL", "composeMail", "print",
                                                             "dragAndDrop", "openFrom", "notification"])
    }
}
