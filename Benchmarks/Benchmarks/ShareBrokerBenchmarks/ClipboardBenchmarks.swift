// The whole SecureCopy copy and paste paths through ShareBroker: snapshot, decision, key ring from
// the in-process custodian, nonce, envelope, seal, pasteboard write (copy); pasteboard read, key
// ring, envelope checks, open (paste). Compare with the raw libsodium rows of the same size.

import Benchmark
import BenchmarkSupport
import ShareBroker
import ShareBrokerTesting

let clipboardAppID = "com.acme.bench"

/// A started, ready, authorized broker under SecureCopy, with the embedded in-memory pasteboard
/// and the embedded in-process key custodian (entitling this app), and an item of `size` bytes.
final class SecureCopyFixture: @unchecked Sendable {
    let broker: ShareBroker
    let item: PasteboardItem

    init(size: Int) {
        do {
            let platform = Platform.embedded(custodian: try InProcessKeyCustodian(entitledAppIDs: [clipboardAppID]),
                                             records: false)
            broker = ShareBroker(appID: clipboardAppID, platform: platform)
            try broker.start(delegate: QuietDelegate())
            _ = try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        } catch {
            fatalError("benchmark fixture: \(error)")
        }
        item = PasteboardItem(type: PasteboardItem.textType, bytes: randomBytes(size))
        // The benchmark must time a sealed write, and the paste must read the item back.
        let action = try! broker.copy(item)
        precondition(action == .writeSealed, "copy did not seal: \(action)")
        precondition(broker.paste() == item, "paste did not give the item back")
    }
}

func clipboardBenchmarks() {
    for size in PayloadSize.all {
        let configuration = BenchmarkMode.pairedConfiguration(size)

        // Each copy replaces the pasteboard's item, so the previous envelope is freed each call.
        // Paired with raw encrypt of the same size (BenchmarkMode.measurePaired).
        Benchmark("SecureCopy copy \(size.label)", configuration: configuration) { benchmark, pair in
            let (fixture, raw) = pair
            let item = fixture.item
            let count = raw.ciphertextCount
            BenchmarkMode.measurePaired(
                benchmark,
                ours: { blackHole(try! fixture.broker.copy(item)) },
                rawFresh: { blackHole(freshBytes(count: count) { out in _ = raw.encrypt(into: out) }) },
                rawRecycled: { blackHole(raw.encrypt()) })
        } setup: {
            (SecureCopyFixture(size: size.bytes), SodiumBuffers(size: size.bytes))
        }

        // Reads the item the setup's copy sealed (this process: the cached subkey applies).
        // Paired with raw decrypt of the same size.
        Benchmark("SecureCopy paste \(size.label)", configuration: configuration) { benchmark, pair in
            let (fixture, raw) = pair
            let count = raw.size
            let out = raw.plaintextOutput
            BenchmarkMode.measurePaired(
                benchmark,
                ours: { blackHole(fixture.broker.paste()) },
                rawFresh: { blackHole(freshBytes(count: count) { out in raw.decrypt(into: out) }) },
                rawRecycled: { raw.decrypt(into: out) })
        } setup: {
            (SecureCopyFixture(size: size.bytes), SodiumBuffers(size: size.bytes))
        }
    }
}
