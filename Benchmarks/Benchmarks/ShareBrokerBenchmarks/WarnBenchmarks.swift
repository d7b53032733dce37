// Issue 33: a copy under `warn` that the host answers at once, against an allowed copy of the
// same item. The warned copy does the question's bookkeeping: the decision, the ledger, the
// item held in sodium_malloc memory and freed, the ticket, the answer's checks, the re-check of
// the policy, the audit record, and the clear write. Goal: at most 1.2x the allowed copy.

import Benchmark
import BenchmarkSupport
import ShareBroker
import ShareBrokerTesting
import Synchronization

/// A ready broker whose copies warn (pasteboard unauthorized, copy warnings, an asker that
/// proceeds at once on the calling thread), or one whose copies are allowed in the clear.
final class WarnCopyFixture: @unchecked Sendable {
    let broker: ShareBroker
    let item = PasteboardItem(type: PasteboardItem.textType, bytes: randomBytes(64))

    init(warned: Bool) {
        do {
            let platform = Platform.embedded(custodian: try InProcessKeyCustodian(entitledAppIDs: [clipboardAppID]),
                                             records: false)
            broker = ShareBroker(appID: clipboardAppID, platform: platform)
            try broker.start(delegate: QuietDelegate())
            var update = PolicyUpdate(auth: .authorized, pasteboard: warned ? .unauthorized : .authorized)
            update.warn = warned ? WarnPolicy([.copy: WarnSettings()]) : WarnPolicy.none
            _ = try broker.apply(update)
            broker.setWarnAsker { ticket in ticket.answer(.proceed(reasonCode: nil, text: nil)) }
        } catch {
            fatalError("benchmark fixture: \(error)")
        }
        // The benchmark must time what it says: a proceeded warned copy, or an allowed one.
        let outcome = Atomic<Int>(-1)
        broker.copyAsking(item) { result in
            if case .success(let copied) = result, copied.action == .writeClear {
                outcome.store(copied.outcome == .proceeded ? 1 : 0, ordering: .relaxed)
            }
        }
        precondition(outcome.load(ordering: .relaxed) == (warned ? 1 : 0), "the fixture's copy is not what it claims")
    }
}

func warnBenchmarks() {
    // BenchmarkMode's configuration: one call per sample in the allocations-only mode
    // (make bench-check-allocations against Benchmarks/Thresholds/).
    let configuration = BenchmarkMode.configuration(scaling: .one)
    Benchmark("Copy allowed in the clear 64 B (the warn reference)", configuration: configuration) { benchmark, fixture in
        let item = fixture.item
        BenchmarkMode.measure(benchmark) { fixture.broker.copyAsking(item) { blackHole($0) } }
    } setup: {
        WarnCopyFixture(warned: false)
    }

    Benchmark("Copy under warn answered at once 64 B", configuration: configuration) { benchmark, fixture in
        let item = fixture.item
        BenchmarkMode.measure(benchmark) { fixture.broker.copyAsking(item) { blackHole($0) } }
    } setup: {
        WarnCopyFixture(warned: true)
    }
}
