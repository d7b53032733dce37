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
                    if let outcome = try? broker.apply(even ? Self.even : Self.odd) {
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
}
