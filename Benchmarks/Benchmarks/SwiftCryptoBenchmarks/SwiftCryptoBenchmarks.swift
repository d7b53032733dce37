// swift-crypto's ChaChaPoly on the payload sizes of ShareBrokerBenchmarks, for the report's
// throughput plot. ChaChaPoly is ChaCha20-Poly1305 IETF (96-bit nonce) through BoringSSL, not
// XChaCha20: a labelled comparison, not a baseline that any goal is measured against.
//
// Measured like the library: a fresh output per call (`seal` returns a SealedBox holding new
// `Data`, `open` returns new `Data`), no AAD, fixed key and nonce (a real caller also needs a
// unique nonce per message; `ChaChaPoly.seal` without one draws it from the OS per call).
// Names end with the payload label; scripts/performance-report.py keys on them.

import Benchmark
import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct PayloadSize: @unchecked Sendable {
    let label: String
    let bytes: Int
    let scaling: BenchmarkScalingFactor

    static let all: [PayloadSize] = [
        PayloadSize(label: "64 B", bytes: 64, scaling: .kilo),
        PayloadSize(label: "1 KiB", bytes: 1024, scaling: .kilo),
        PayloadSize(label: "64 KiB", bytes: 64 << 10, scaling: .one),
        PayloadSize(label: "1 MiB", bytes: 1 << 20, scaling: .one),
        PayloadSize(label: "16 MiB", bytes: 16 << 20, scaling: .one),
    ]
}

final class ChaChaFixture: @unchecked Sendable {
    let key = SymmetricKey(size: .bits256)
    let nonce = ChaChaPoly.Nonce()
    let plaintext: [UInt8]
    let box: ChaChaPoly.SealedBox

    init(size: Int) {
        var generator = SystemRandomNumberGenerator()
        plaintext = (0 ..< size).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
        box = try! ChaChaPoly.seal(plaintext, using: key, nonce: nonce)
        precondition(Array(try! ChaChaPoly.open(box, using: key)) == plaintext)
    }
}

let benchmarks: @Sendable () -> Void = {
    for size in PayloadSize.all {
        let configuration = Benchmark.Configuration(
            metrics: [.wallClock, .mallocCountTotal, .throughput],
            timeUnits: .nanoseconds,
            warmupIterations: 10,
            scalingFactor: size.scaling,
            maxDuration: .seconds(1),
            maxIterations: 1_000_000
        )
        Benchmark("swift-crypto ChaChaPoly seal \(size.label)", configuration: configuration) { benchmark, fixture in
            let plaintext = fixture.plaintext
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try! ChaChaPoly.seal(plaintext, using: fixture.key, nonce: fixture.nonce))
            }
            benchmark.stopMeasurement()
        } setup: {
            ChaChaFixture(size: size.bytes)
        }

        Benchmark("swift-crypto ChaChaPoly open \(size.label)", configuration: configuration) { benchmark, fixture in
            let box = fixture.box
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try! ChaChaPoly.open(box, using: fixture.key))
            }
            benchmark.stopMeasurement()
        } setup: {
            ChaChaFixture(size: size.bytes)
        }
    }
}
