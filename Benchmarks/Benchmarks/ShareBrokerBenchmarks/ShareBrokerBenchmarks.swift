// ShareBroker's benchmarks, with raw libsodium baselines measured in the same run.
//
//   cd Benchmarks && swift package --allow-writing-to-package-directory benchmark
//
// Names here are the keys of Benchmarks/goals.json: scripts/performance-report.py matches on them.

import Benchmark
import CSodiumBench
import ShareBroker

// MARK: - Discarding platform adapters (the embedded ones record everything and grow without bound)

/// Drops every hand-over. Returns the name as the path too, so the benchmark itself allocates nothing.
final class DiscardingOutbox: Outbox {
    func handOver(name: String, bytes: [UInt8]) throws(OutboxError) -> HandedOverFile {
        HandedOverFile(path: name, name: name)
    }
}

/// Drops every report.
final class DiscardingReportSink: ServerReportSink {
    func acknowledged(_ record: AcknowledgmentRecord) {}
    func blockedAttempt(_ record: BlockedAttemptRecord) {}
    func wiped(_ report: WipeReport) {}
}

/// Drops every URL.
final class DiscardingURLOpener: URLOpener {
    func open(_ url: String, in handler: String) {}
}

/// Answers every callback and does nothing else.
final class QuietDelegate: ShareBrokerDelegate {
    func appConnectIsReady() {}
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
}

// MARK: - Fixtures

/// A target that is whitelisted, built at run time so it does not share storage with the
/// whitelist's own copy (String == would otherwise short-circuit on identical storage).
/// 23 UTF-8 bytes: longer than a small (inline) string, like most real bundle ids.
func whitelistedTarget() -> String { ["com", "acme", "documentviewer"].joined(separator: ".") }

/// A target that no whitelist here holds.
func blockedTarget() -> String { ["com", "unmanaged", "filesharer"].joined(separator: ".") }

/// A broker that is started, ready, authorized, with an Open In whitelist of `extra` filler ids
/// plus the whitelisted target.
func makeBroker(extra: Int) -> ShareBroker {
    var whitelist: Set<String> = ["com.acme.documentviewer", "com.acme.mail", "com.acme.notes",
                                  "com.acme.browser", "com.acme.pdf"]
    for i in 0 ..< extra { whitelist.insert("com.example.managed.app\(i)") }
    let platform = Platform(outbox: DiscardingOutbox(), urlOpener: DiscardingURLOpener(),
                            reportSink: DiscardingReportSink())
    let broker = ShareBroker(appID: "com.acme.bench", platform: platform)
    do {
        try broker.start(delegate: QuietDelegate())
        _ = try broker.apply(PolicyUpdate(auth: .authorized, openIn: .whitelist(whitelist)))
    } catch {
        fatalError("benchmark fixture: \(error)")
    }
    precondition(broker.decideOpenIn(target: whitelistedTarget(), via: .documentInteraction).allowed)
    precondition(!broker.decideOpenIn(target: blockedTarget(), via: .documentInteraction).allowed)
    return broker
}

/// Buffers for the raw libsodium baselines, allocated and touched once, reused by every call.
final class SodiumBuffers: @unchecked Sendable {
    let size: Int
    let key: UnsafeMutablePointer<UInt8>
    let nonce: UnsafeMutablePointer<UInt8>
    let message: UnsafeMutablePointer<UInt8>
    let output: UnsafeMutablePointer<UInt8>

    init(size: Int) {
        precondition(sodium_init() >= 0, "sodium_init failed")
        self.size = size
        key = .allocate(capacity: Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES))
        nonce = .allocate(capacity: Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES))
        message = .allocate(capacity: size)
        output = .allocate(capacity: size + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
        crypto_aead_xchacha20poly1305_ietf_keygen(key)
        randombytes_buf(nonce, Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES))
        randombytes_buf(message, size)
        // Touch every output page now: the benchmark measures recycled memory, not page faults.
        output.initialize(repeating: 0, count: size + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
    }

    /// One seal into the reused output buffer. The nonce is fixed: this measures the cipher, not
    /// nonce generation (never reuse a nonce outside a benchmark).
    @inline(__always)
    func encrypt() -> Int32 {
        crypto_aead_xchacha20poly1305_ietf_encrypt(output, nil, message, UInt64(size), nil, 0, nil, nonce, key)
    }
}

// MARK: - Benchmarks

let benchmarks: @Sendable () -> Void = {
    // Every time figure is recorded in nanoseconds so integer rounding never hides a decision.
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        timeUnits: .nanoseconds,
        warmupIterations: 10,
        maxDuration: .seconds(1),
        maxIterations: 1_000_000
    )
    let nanoConfiguration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        timeUnits: .nanoseconds,
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 1_000_000
    )

    // Decisions: a snapshot load and a set lookup. .kilo: each sample times 1,000 decisions.
    for (label, extra) in [("small whitelist", 0), ("10k whitelist", 10_000)] {
        Benchmark("OpenIn decision allowed (\(label))", configuration: nanoConfiguration) { benchmark, broker in
            let target = whitelistedTarget()
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(broker.decideOpenIn(target: target, via: .documentInteraction))
            }
            benchmark.stopMeasurement()
        } setup: {
            makeBroker(extra: extra)
        }
    }

    // Blocked Open In: decision, dummy with a mangled name through the (discarding) outbox, the
    // blocked-attempt report, the delegate callback. One call per sample, so p99 is per call.
    for (label, extra) in [("small whitelist", 0), ("10k whitelist", 10_000)] {
        Benchmark("OpenIn blocked with dummy (\(label))") { benchmark, broker in
            let document = OutboundDocument(name: "Q3 forecast.xlsx", bytes: [UInt8](repeating: 0x5A, count: 4096))
            let target = blockedTarget()
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                do {
                    blackHole(try broker.openIn(document, target: target, via: .documentInteraction))
                } catch {
                    fatalError("openIn: \(error)")
                }
            }
            benchmark.stopMeasurement()
        } setup: {
            makeBroker(extra: extra)
        }
    }

    // Raw libsodium baselines, same run, same process kind: XChaCha20-Poly1305-IETF encrypt, no
    // AAD, output buffer reused. Small payloads use .kilo so each sample covers 1,000 seals.
    let sizes: [(label: String, bytes: Int, scaling: BenchmarkScalingFactor)] = [
        ("64 B", 64, .kilo), ("1 KiB", 1024, .kilo), ("64 KiB", 65_536, .one), ("1 MiB", 1 << 20, .one),
    ]
    for size in sizes {
        var configuration = Benchmark.defaultConfiguration
        configuration.scalingFactor = size.scaling
        Benchmark("libsodium xchacha20poly1305 encrypt \(size.label)", configuration: configuration) { benchmark, buffers in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(buffers.encrypt())
            }
            benchmark.stopMeasurement()
            blackHole(buffers.output.pointee)
        } setup: {
            SodiumBuffers(size: size.bytes)
        }
    }
}
