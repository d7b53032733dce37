// ShareBroker's benchmarks, with raw libsodium baselines measured in the same run.
//
//   cd Benchmarks && swift package --allow-writing-to-package-directory benchmark
//
// Names here are the keys of Benchmarks/goals.json: scripts/performance-report.py matches on them.

import Benchmark
import BenchmarkSupport
import CSodiumBench
@_spi(Benchmarks) import ShareBroker
import ShareBrokerTesting

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
func benchmarkWhitelist(extra: Int) -> Set<String> {
    var whitelist: Set<String> = ["com.acme.documentviewer", "com.acme.mail", "com.acme.notes",
                                  "com.acme.browser", "com.acme.pdf"]
    for i in 0 ..< extra { whitelist.insert("com.example.managed.app\(i)") }
    return whitelist
}

/// `update` is applied after the whitelist (issue 18's decisions set their own policy).
func makeBroker(extra: Int, offlineTimers: Bool = false, update: PolicyUpdate? = nil,
                offlinePolicySeconds: (accessCheck: Int, wipe: Int)? = nil) -> ShareBroker {
    let whitelist = benchmarkWhitelist(extra: extra)
    let broker: ShareBroker
    do {
        let platform = Platform.embedded(custodian: try InProcessKeyCustodian(entitledAppIDs: ["com.acme.bench"]),
                                          records: false)
        broker = ShareBroker(appID: "com.acme.bench", platform: platform)
        if offlineTimers { try broker.benchmarkEnableOfflineTimers() }
        try broker.start(delegate: QuietDelegate())
        _ = try broker.apply(PolicyUpdate(auth: .authorized, openIn: .whitelist(whitelist)))
        if let update { _ = try broker.apply(update) }
        if let offline = offlinePolicySeconds {
            try broker.benchmarkApplyOfflinePolicy(accessCheckSeconds: offline.accessCheck, wipeSeconds: offline.wipe)
        }
    } catch {
        fatalError("benchmark fixture: \(error)")
    }
    precondition(broker.decideOpenIn(target: whitelistedTarget(), via: .documentInteraction).allowed)
    precondition(!broker.decideOpenIn(target: blockedTarget(), via: .documentInteraction).allowed)
    return broker
}

// MARK: - Benchmarks

let benchmarks: @Sendable () -> Void = {
    // Every time figure is recorded in nanoseconds so integer rounding never hides a decision.
    // In allocations-only mode (the CI check) every sample is one call, so allocation counts are
    // exact per call; see BenchmarkMode.swift.
    Benchmark.defaultConfiguration = BenchmarkMode.configuration(scaling: .one)
    let nanoConfiguration = BenchmarkMode.configuration(scaling: .kilo)

    // Decisions: a snapshot load and a set lookup. .kilo: each sample times 1,000 decisions.
    for (label, extra) in [("small whitelist", 0), ("10k whitelist", 10_000)] {
        Benchmark("OpenIn decision allowed (\(label))", configuration: nanoConfiguration) { benchmark, broker in
            let target = whitelistedTarget()
            BenchmarkMode.measure(benchmark) {
                blackHole(broker.decideOpenIn(target: target, via: .documentInteraction))
            }
        } setup: {
            makeBroker(extra: extra)
        }
    }

    // The decisions of issue 18: each a snapshot load and at most a set lookup.
    for (label, extra) in [("small whitelist", 0), ("10k whitelist", 10_000)] {
        Benchmark("OpenFrom decision allowed (\(label))", configuration: nanoConfiguration) { benchmark, broker in
            let source = whitelistedTarget()
            BenchmarkMode.measure(benchmark) {
                blackHole(broker.decideOpenFrom(source: source))
            }
        } setup: {
            makeBroker(extra: extra, update: PolicyUpdate(openFrom: .whitelist(benchmarkWhitelist(extra: extra))))
        }
    }
    Benchmark("Notification decision (blockOrgData)", configuration: nanoConfiguration) { benchmark, broker in
        BenchmarkMode.measure(benchmark) {
            blackHole(broker.benchmarkNotificationDecision())
        }
    } setup: {
        makeBroker(extra: 0, update: PolicyUpdate(notifications: .blockOrgData))
    }
    Benchmark("PasteIn decision (managedApps)", configuration: nanoConfiguration) { benchmark, broker in
        BenchmarkMode.measure(benchmark) {
            blackHole(broker.decidePasteIn(writtenByThisApp: false))
        }
    } setup: {
        makeBroker(extra: 0, update: PolicyUpdate(pasteIn: .managedApps))
    }
    Benchmark("Copy decision with character exception", configuration: nanoConfiguration) { benchmark, broker in
        BenchmarkMode.measure(benchmark) {
            blackHole(broker.benchmarkCopyDecision(characters: 20))
        }
    } setup: {
        makeBroker(extra: 0, update: PolicyUpdate(pasteboard: .secureCopy, clipboardExceptionLength: 20))
    }
    // The offline timers' check within the access-check period: a CLOCK_BOOTTIME read (vDSO), two
    // lock-protected loads and a comparison; what an app calls on a timer.
    Benchmark("Offline timers check (within the period)", configuration: nanoConfiguration) { benchmark, broker in
        BenchmarkMode.measure(benchmark) {
            do {
                blackHole(try broker.benchmarkCheckOfflineTimers())
            } catch {
                fatalError("checkOfflineTimers: \(error)")
            }
        }
    } setup: {
        makeBroker(extra: 0, offlineTimers: true, offlinePolicySeconds: (accessCheck: 3_600, wipe: 86_400))
    }
    // Counting the characters of a 20-character text with emoji (what a copy does before the
    // decision when the exception could apply): the String it decodes allocates once.
    Benchmark("Clipboard exception character count (20 characters)", configuration: nanoConfiguration) { benchmark, item in
        BenchmarkMode.measure(benchmark) {
            blackHole(item.characterCount(limit: 20))
        }
    } setup: {
        PasteboardItem.text(String(repeating: "ab👍🏽d", count: 5))
    }

    // Blocked Open In: decision, dummy with a mangled name through the (discarding) outbox, the
    // blocked-attempt report, the delegate callback. One call per sample, so p99 is per call.
    for (label, extra) in [("small whitelist", 0), ("10k whitelist", 10_000)] {
        Benchmark("OpenIn blocked with dummy (\(label))") { benchmark, broker in
            let document = (name: "Q3 forecast.xlsx", bytes: [UInt8](repeating: 0x5A, count: 4096))
            let target = blockedTarget()
            BenchmarkMode.measure(benchmark) {
                do {
                    blackHole(try broker.openIn(document.bytes, named: document.name, target: target, via: .documentInteraction))
                } catch {
                    fatalError("openIn: \(error)")
                }
            }
        } setup: {
            makeBroker(extra: extra)
        }
    }

    // Raw libsodium baselines, same run, same process kind: XChaCha20-Poly1305-IETF encrypt, no
    // AAD, output buffer reused (recycled memory). Small payloads use .kilo so each sample covers
    // 1,000 seals. The fresh-output and decrypt baselines are in SealingBenchmarks.swift.
    for size in PayloadSize.all {
        Benchmark("libsodium xchacha20poly1305 encrypt \(size.label)",
                  configuration: BenchmarkMode.configuration(scaling: size.scaling)) { benchmark, buffers in
            BenchmarkMode.measure(benchmark) {
                blackHole(buffers.encrypt())
            }
            blackHole(buffers.output.pointee)
        } setup: {
            SodiumBuffers(size: size.bytes)
        }
    }

    sealingBenchmarks()
    clipboardBenchmarks()
    warnBenchmarks()
    webViewBenchmarks()
}
