// swift-crypto's ChaChaPoly on the payload sizes of ShareBrokerBenchmarks. ChaChaPoly is
// ChaCha20-Poly1305 IETF (96-bit nonce) through BoringSSL, not XChaCha20: a labelled comparison,
// the peer a Swift developer would otherwise pick, not a baseline that a goal is measured against.
//
// Measured like the library: a fresh output per call (`seal` returns a SealedBox holding new
// `Data`, `open` returns new `Data`), no AAD, fixed key and nonce (a real caller also needs a
// unique nonce per message; `ChaChaPoly.seal` without one draws it from the OS per call).
// Each sample is paired with raw libsodium XChaCha20-Poly1305 of the same size (BenchmarkSupport's
// measurePaired), so the report can compare ShareBroker and swift-crypto through raw libsodium
// even though they are separate benchmarks. Names end with the payload label; the report keys on
// them.

import Benchmark
import BenchmarkSupport
import Crypto
import Foundation

final class ChaChaFixture: @unchecked Sendable {
    let key = SymmetricKey(size: .bits256)
    let nonce = ChaChaPoly.Nonce()
    let plaintext: [UInt8]
    let box: ChaChaPoly.SealedBox

    init(size: Int) {
        plaintext = randomBytes(size)
        box = try! ChaChaPoly.seal(plaintext, using: key, nonce: nonce)
        precondition(Array(try! ChaChaPoly.open(box, using: key)) == plaintext)
    }
}

let benchmarks: @Sendable () -> Void = {
    for size in PayloadSize.all {
        let configuration = BenchmarkMode.pairedConfiguration(size)

        Benchmark("swift-crypto ChaChaPoly seal \(size.label)", configuration: configuration) { benchmark, pair in
            let (fixture, raw) = pair
            let plaintext = fixture.plaintext
            let count = raw.ciphertextCount
            BenchmarkMode.measurePaired(
                benchmark,
                ours: { blackHole(try! ChaChaPoly.seal(plaintext, using: fixture.key, nonce: fixture.nonce)) },
                rawFresh: { blackHole(freshBytes(count: count) { out in _ = raw.encrypt(into: out) }) },
                rawRecycled: { blackHole(raw.encrypt()) })
        } setup: {
            (ChaChaFixture(size: size.bytes), SodiumBuffers(size: size.bytes))
        }

        Benchmark("swift-crypto ChaChaPoly open \(size.label)", configuration: configuration) { benchmark, pair in
            let (fixture, raw) = pair
            let box = fixture.box
            let count = raw.size
            let out = raw.plaintextOutput
            BenchmarkMode.measurePaired(
                benchmark,
                ours: { blackHole(try! ChaChaPoly.open(box, using: fixture.key)) },
                rawFresh: { blackHole(freshBytes(count: count) { out in raw.decrypt(into: out) }) },
                rawRecycled: { raw.decrypt(into: out) })
        } setup: {
            (ChaChaFixture(size: size.bytes), SodiumBuffers(size: size.bytes))
        }
    }
}
