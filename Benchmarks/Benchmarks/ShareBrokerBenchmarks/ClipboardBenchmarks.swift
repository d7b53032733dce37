// The whole SecureCopy copy and paste paths through ShareBroker: snapshot, decision, key ring from
// the in-process custodian, nonce, envelope, seal, pasteboard write (copy); pasteboard read, key
// ring, envelope checks, open (paste). Compare with the raw libsodium rows of the same size.

import Benchmark
import ShareBroker

let clipboardAppID = "com.acme.bench"

/// A started, ready, authorized broker under SecureCopy, with the embedded in-memory pasteboard
/// and the embedded in-process key custodian (entitling this app), and an item of `size` bytes.
final class SecureCopyFixture: @unchecked Sendable {
    let broker: ShareBroker
    let item: PasteboardItem

    init(size: Int) {
        let platform: Platform
        do {
            platform = Platform(outbox: DiscardingOutbox(), urlOpener: DiscardingURLOpener(),
                                reportSink: DiscardingReportSink(), pasteboard: InMemoryPasteboard(),
                                secureServices: try InProcessKeyCustodian(entitledAppIDs: [clipboardAppID]))
            broker = ShareBroker(appID: clipboardAppID, platform: platform)
            try broker.start(delegate: QuietDelegate())
            _ = try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        } catch {
            fatalError("benchmark fixture: \(error)")
        }
        item = PasteboardItem(type: PasteboardItem.textType, bytes: randomBytes(size))
        // The benchmark must time a sealed write, and the paste must read the item back.
        let result = try! broker.copy(item)
        precondition(result.action == .writeSealed, "copy did not seal: \(result.decision)")
        precondition(platform.pasteboard.read().items.first?.type == PasteboardItem.sealedType)
        precondition(broker.paste() == item, "paste did not give the item back")
    }
}

func clipboardBenchmarks() {
    for size in PayloadSize.all {
        let configuration = BenchmarkMode.configuration(scaling: size.scaling)

        // Each copy replaces the pasteboard's item, so the previous envelope is freed each call.
        Benchmark("SecureCopy copy \(size.label)", configuration: configuration) { benchmark, fixture in
            let item = fixture.item
            BenchmarkMode.measure(benchmark) {
                blackHole(try! fixture.broker.copy(item))
            }
        } setup: {
            SecureCopyFixture(size: size.bytes)
        }

        // Reads the item the setup's copy sealed (this process: the cached subkey applies).
        Benchmark("SecureCopy paste \(size.label)", configuration: configuration) { benchmark, fixture in
            BenchmarkMode.measure(benchmark) {
                blackHole(fixture.broker.paste())
            }
        } setup: {
            SecureCopyFixture(size: size.bytes)
        }
    }
}
