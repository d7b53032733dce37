// How the benchmarks run: a full timed run (the report) or a short allocations-only run (the CI
// check), and the loop every benchmark measures.

import Benchmark
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum BenchmarkMode {
    /// `SHAREBROKER_BENCH_ALLOCATIONS_ONLY=1` (set by `scripts/performance-report.py
    /// --check-allocations`): every sample is exactly one call (scaling factor 1) so the
    /// `mallocCountTotal` of each sample is the exact count of one call, never an average rounded
    /// down; a few dozen samples per benchmark, so the whole pass takes seconds. Wall-clock figures
    /// from this mode mean nothing.
    static let allocationsOnly: Bool = {
        guard let value = getenv("SHAREBROKER_BENCH_ALLOCATIONS_ONLY") else { return false }
        let text = String(cString: value)
        return !text.isEmpty && text != "0"
    }()

    /// Minor page faults during the measured loop (`getrusage`), per call. Shows whether a
    /// benchmark writes into fresh pages (the kernel maps and zeroes each 4 KiB page on first
    /// touch) or recycled ones.
    static let pageFaults = BenchmarkMetric.custom("pageFaults", polarity: .prefersSmaller, useScalingFactor: true)

    /// The configuration for a benchmark whose samples each time `scaling` calls.
    static func configuration(scaling: BenchmarkScalingFactor) -> Benchmark.Configuration {
        if allocationsOnly {
            return .init(
                metrics: [.mallocCountTotal],
                timeUnits: .nanoseconds,
                warmupIterations: 10, // caches (nonce epoch, cached subkey) fill here, as in the timed run
                scalingFactor: .one,
                maxDuration: .milliseconds(200),
                maxIterations: 50
            )
        }
        return .init(
            metrics: [.wallClock, .mallocCountTotal, .throughput, pageFaults],
            timeUnits: .nanoseconds,
            warmupIterations: 10,
            scalingFactor: scaling,
            maxDuration: .seconds(1),
            maxIterations: 1_000_000
        )
    }

    /// Runs `body` `benchmark.scaledIterations` times between start and stop of the measurement,
    /// and records the minor page faults of the loop.
    @inline(__always)
    static func measure(_ benchmark: Benchmark, _ body: () -> Void) {
        let faultsBefore = minorPageFaults()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            body()
        }
        benchmark.stopMeasurement()
        benchmark.measurement(pageFaults, minorPageFaults() - faultsBefore)
    }

    static func minorPageFaults() -> Int {
        var usage = rusage()
        #if canImport(Glibc)
        let who = __rusage_who_t(RUSAGE_SELF.rawValue)
        #else
        let who = RUSAGE_SELF
        #endif
        guard getrusage(who, &usage) == 0 else { return 0 }
        return Int(usage.ru_minflt)
    }
}

/// Payload sizes of the sealing, copy and paste benchmarks. Names end with the label, e.g.
/// "KeyRing seal 64 KiB"; Benchmarks/goals.json and scripts/performance-report.py key on them.
struct PayloadSize: @unchecked Sendable {
    let label: String
    let bytes: Int
    /// Calls per sample in the timed run: 1,000 for the small sizes so a sample is long enough
    /// to time to the nanosecond.
    let scaling: BenchmarkScalingFactor

    static let all: [PayloadSize] = [
        PayloadSize(label: "64 B", bytes: 64, scaling: .kilo),
        PayloadSize(label: "1 KiB", bytes: 1024, scaling: .kilo),
        PayloadSize(label: "64 KiB", bytes: 64 << 10, scaling: .one),
        PayloadSize(label: "1 MiB", bytes: 1 << 20, scaling: .one),
        PayloadSize(label: "16 MiB", bytes: 16 << 20, scaling: .one),
    ]
}
