import Foundation
import ShareBroker
import Synchronization
import Testing

/// Runs `body` on `count` real threads and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.start()
    }
    group.wait()
}

@Suite("Concurrency torture")
struct SnapshotTortureTests {
    /// Two policies that differ in several fields at once; a decision that mixed them would show.
    static let even = PolicyUpdate(openIn: .whitelist(["org.even"]), print: .authorized, dragAndDrop: .allApps)
    static let odd = PolicyUpdate(openIn: .whitelist(["org.odd"]), print: .unauthorized, dragAndDrop: .noApps)

    @Test("decisions never mix two policies while another thread swaps them a thousand times a second")
    func noDecisionMixesPolicies() throws {
        let fixture = try Fixture(implementing: [], ready: PolicyUpdate(auth: .authorized))
        let broker = fixture.broker
        // generation -> whether the even policy was installed at that generation
        let installed = Mutex<[UInt64: Bool]>([:])
        let stop = Atomic<Bool>(false)
        let samples = Mutex<[(generation: UInt64, evenAllowed: Bool, oddAllowed: Bool, print: Bool)]>([])
        let snapshotsChecked = Atomic<Int>(0)
        let inconsistent = Atomic<Int>(0)

        onThreads(3) { index in
            if index == 0 {
                // The writer: ~1000 swaps a second for at most 1.5 seconds, then stop.
                let deadline = Date().addingTimeInterval(1.5)
                var even = true
                var swaps = 0
                while Date() < deadline && swaps < 1500 {
                    if let outcome = try? broker.applyReporting(even ? Self.even : Self.odd) {
                        installed.withLock { $0[outcome.generation] = even }
                    }
                    even.toggle()
                    swaps += 1
                    usleep(1000)
                }
                stop.store(true, ordering: .releasing)
            } else {
                var local: [(UInt64, Bool, Bool, Bool)] = []
                while !stop.load(ordering: .acquiring) {
                    let a = broker.decideOpenIn(target: "org.even", via: .documentInteraction)
                    let p = broker.print()
                    local.append((a.generation, a.allowed, false, p.allowed))
                    // A whole snapshot must be internally consistent.
                    let s = broker.currentSnapshot
                    let evenSnapshot = s.openInWhitelist == ["org.even"]
                    if s.generation > 1 && (evenSnapshot != (s.printPolicy == .authorized)
                                            || evenSnapshot != (s.dragAndDropPolicy == .allApps)) {
                        inconsistent.add(1, ordering: .relaxed)
                    }
                    snapshotsChecked.add(1, ordering: .relaxed)
                }
                samples.withLock { $0.append(contentsOf: local.map { ($0.0, $0.1, $0.2, $0.3) }) }
            }
        }

        let table = installed.withLock { $0 }
        let all = samples.withLock { $0 }
        #expect(table.count > 100, "the writer swapped too few times to mean anything")
        #expect(all.count > 1000)
        #expect(inconsistent.load(ordering: .relaxed) == 0)
        var checked = 0
        for sample in all {
            guard let even = table[sample.generation] else { continue }  // the generation of the ready policy
            #expect(sample.evenAllowed == even, "generation \(sample.generation)")
            checked += 1
        }
        #expect(checked > 1000)
    }

    @Test("copying and pasting while policies swap and secure services flap: no plaintext on the pasteboard, no mixing")
    func copyPasteTorture() throws {
        let fixture = try Fixture(implementing: [], ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        let broker = fixture.broker
        let marker = Array("PLAINTEXT-MARKER-0123456789".utf8)
        let installed = Mutex<[UInt64: PasteboardPolicy]>([:])
        let stop = Atomic<Bool>(false)
        let violations = Mutex<[String]>([])
        let copies = Atomic<Int>(0)
        let sealedReads = Atomic<Int>(0)

        onThreads(5) { index in
            switch index {
            case 0:  // policies: SecureCopy <-> Unauthorized, ~1000 swaps a second, bounded
                let deadline = Date().addingTimeInterval(1.5)
                var secure = false
                var swaps = 0
                while Date() < deadline && swaps < 1500 {
                    let policy: PasteboardPolicy = secure ? .secureCopy : .unauthorized
                    if let outcome = try? broker.applyReporting(PolicyUpdate(pasteboard: policy)) {
                        installed.withLock { $0[outcome.generation] = policy }
                    }
                    secure.toggle()
                    swaps += 1
                    usleep(1000)
                }
                stop.store(true, ordering: .releasing)
            case 1:  // secure services flap
                var up = false
                while !stop.load(ordering: .acquiring) {
                    fixture.custodian.setAvailability(up ? .available : .unavailable)
                    // Decisions at these generations are not checked against the table (the copy's
                    // rule still must be one its policy allows, which the writer's generations cover).
                    _ = try? broker.setSecureServices(up ? .available : .unavailable)
                    up.toggle()
                    usleep(3000)
                }
                fixture.custodian.setAvailability(.available)
            case 2, 3:  // copiers
                var local: [(UInt64, CopyAction, CopyRule)] = []
                while !stop.load(ordering: .acquiring) {
                    if let result = try? broker.copyResult(PasteboardItem(type: "public.data", bytes: marker)) {
                        local.append((result.decision.generation, result.action, result.decision.rule))
                        copies.add(1, ordering: .relaxed)
                    }
                }
                let table = installed.withLock { $0 }
                for (generation, action, rule) in local {
                    guard let policy = table[generation] else { continue }
                    let consistent = switch (policy, action) {
                    case (.secureCopy, .writeSealed): rule == .secureCopy
                    case (.secureCopy, .blocked): rule == .secureServicesUnavailable || rule == .noKeys
                    case (.unauthorized, .blocked): rule == .pasteboardUnauthorized
                    default: false
                    }
                    if !consistent { violations.withLock { $0.append("generation \(generation): \(policy) gave \(action) by \(rule)") } }
                }
            default:  // a watcher: what every app can read must never hold the plaintext
                while !stop.load(ordering: .acquiring) {
                    for item in fixture.pasteboard.read().items {
                        if item.type == PasteboardItem.sealedType { sealedReads.add(1, ordering: .relaxed) }
                        if DummyFilePropertyTests.sharesRun(item.bytes, marker) {
                            violations.withLock { $0.append("plaintext on the pasteboard") }
                        }
                    }
                    _ = broker.paste()
                }
            }
        }
        #expect(violations.withLock { $0 }.isEmpty, "\(violations.withLock { Array($0.prefix(5)) })")
        #expect(copies.load(ordering: .relaxed) > 500)
        #expect(sealedReads.load(ordering: .relaxed) > 0, "SecureCopy never got to seal anything")
    }
}
