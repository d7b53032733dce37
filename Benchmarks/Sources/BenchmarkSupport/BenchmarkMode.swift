// How the benchmarks run: a full timed run (the report) or a short allocations-only run (the CI
// check), and the loop every benchmark measures.

import Benchmark
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public enum BenchmarkMode {
    /// `SHAREBROKER_BENCH_ALLOCATIONS_ONLY=1` (set by `make bench-check-allocations`, the
    /// package-benchmark thresholds check against Benchmarks/Thresholds/): every sample is exactly one call (scaling factor 1) so the
    /// `mallocCountTotal` of each sample is the exact count of one call, never an average rounded
    /// down; a few dozen samples per benchmark, so the whole pass takes seconds. Wall-clock figures
    /// from this mode mean nothing.
    public static let allocationsOnly: Bool = {
        guard let value = getenv("SHAREBROKER_BENCH_ALLOCATIONS_ONLY") else { return false }
        let text = String(cString: value)
        return !text.isEmpty && text != "0"
    }()

    /// Minor page faults during the measured loop (`getrusage`), per call. Shows whether a
    /// benchmark writes into fresh pages (the kernel maps and zeroes each 4 KiB page on first
    /// touch) or recycled ones.
    public static let pageFaults = BenchmarkMetric.custom("pageFaults", polarity: .prefersSmaller, useScalingFactor: true)

    /// `SHAREBROKER_BENCH_SECONDS=N`: run each benchmark for N seconds instead of 1 (3 for the
    /// paired ones of 1 MiB and more), e.g. to attach `perf record -a` to one benchmark.
    static let seconds: Int? = getenv("SHAREBROKER_BENCH_SECONDS").flatMap { Int(String(cString: $0)) }

    /// The configuration for a benchmark whose samples each time `scaling` calls.
    public static func configuration(scaling: BenchmarkScalingFactor) -> Benchmark.Configuration {
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
        // Custom metrics get units picked from their magnitude unless fixed: `.count` exports
        // them exactly, divided by the scaling factor (per call).
        return .init(
            metrics: [.wallClock, .mallocCountTotal, .throughput, pageFaults],
            timeUnits: .nanoseconds,
            units: [pageFaults: .count],
            warmupIterations: 10,
            scalingFactor: scaling,
            maxDuration: .seconds(seconds ?? 1),
            maxIterations: 1_000_000
        )
    }

    /// Runs `body` `benchmark.scaledIterations` times between start and stop of the measurement,
    /// and records the minor page faults of the loop.
    @inlinable
    public static func measure(_ benchmark: Benchmark, _ body: () -> Void) {
        let faultsBefore = minorPageFaults()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            body()
        }
        benchmark.stopMeasurement()
        benchmark.measurement(pageFaults, minorPageFaults() - faultsBefore)
    }

    // MARK: Paired measurement: ours and raw libsodium interleaved, sample by sample

    /// Per call, from the paired loops' own clock: ours, raw with fresh output, raw with recycled
    /// output, each timed over the same number of calls within one sample.
    public static let pairedOurs = BenchmarkMetric.custom("pairedOursNs", polarity: .prefersSmaller, useScalingFactor: true)
    public static let pairedRawFresh = BenchmarkMetric.custom("pairedRawFreshNs", polarity: .prefersSmaller, useScalingFactor: true)
    public static let pairedRawRecycled = BenchmarkMetric.custom("pairedRawRecycledNs", polarity: .prefersSmaller, useScalingFactor: true)
    /// Ours over raw, per sample, in thousandths (1,000 = the same time).
    public static let ratioFresh = BenchmarkMetric.custom("ratioToRawFreshPermille", polarity: .prefersSmaller, useScalingFactor: false)
    public static let ratioRecycled = BenchmarkMetric.custom("ratioToRawRecycledPermille", polarity: .prefersSmaller, useScalingFactor: false)

    /// The configuration of a paired benchmark: the usual metrics plus the paired ones. Samples of
    /// 1 MiB and more take three loops of tens of milliseconds each, so they get more time.
    public static func pairedConfiguration(_ size: PayloadSize) -> Benchmark.Configuration {
        var configuration = configuration(scaling: size.scaling)
        guard !allocationsOnly else { return configuration }
        let paired = [pairedOurs, pairedRawFresh, pairedRawRecycled, ratioFresh, ratioRecycled]
        configuration.metrics += paired
        for metric in paired {
            configuration.units[metric] = .count
        }
        if size.bytes >= 1 << 20 && seconds == nil {
            configuration.maxDuration = .seconds(3)
        }
        return configuration
    }

    @usableFromInline
    static let pairedSamples = Atomic<Int>(0)

    /// One sample of a paired benchmark: `ours` inside the measurement (wall clock, allocations,
    /// page faults as in ``measure(_:_:)``), and `rawFresh` and `rawRecycled` for as many calls
    /// right before or right after it (alternating from sample to sample), outside it. Load from
    /// other processes drifts over seconds, so a ratio taken within one sample is far steadier on
    /// a shared machine than a ratio of two benchmarks run seconds apart.
    @inlinable
    public static func measurePaired(_ benchmark: Benchmark, ours: () -> Void, rawFresh: () -> Void, rawRecycled: () -> Void) {
        if allocationsOnly {
            measure(benchmark, ours)
            return
        }
        let rawFirst = pairedSamples.wrappingAdd(1, ordering: .relaxed).oldValue & 1 == 0
        var fresh = 0, recycled = 0
        if rawFirst {
            fresh = time(benchmark, rawFresh)
            recycled = time(benchmark, rawRecycled)
        }
        let faultsBefore = minorPageFaults()
        benchmark.startMeasurement()
        let start = now()
        for _ in benchmark.scaledIterations {
            ours()
        }
        let oursNs = now() - start
        benchmark.stopMeasurement()
        benchmark.measurement(pageFaults, minorPageFaults() - faultsBefore)
        if !rawFirst {
            recycled = time(benchmark, rawRecycled)
            fresh = time(benchmark, rawFresh)
        }
        benchmark.measurement(pairedOurs, oursNs)
        benchmark.measurement(pairedRawFresh, fresh)
        benchmark.measurement(pairedRawRecycled, recycled)
        // package-benchmark 1.38 divides every exported custom metric by the scaling factor
        // (useScalingFactor notwithstanding), so a ratio is recorded times the calls per sample.
        let calls = benchmark.scaledIterations.count
        benchmark.measurement(ratioFresh, oursNs * 1000 * calls / max(1, fresh))
        benchmark.measurement(ratioRecycled, oursNs * 1000 * calls / max(1, recycled))
    }

    @inlinable
    static func time(_ benchmark: Benchmark, _ body: () -> Void) -> Int {
        let start = now()
        for _ in benchmark.scaledIterations {
            body()
        }
        return now() - start
    }

    @inlinable
    public static func now() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int(ts.tv_sec) * 1_000_000_000 + Int(ts.tv_nsec)
    }

    @usableFromInline
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
public struct PayloadSize: @unchecked Sendable {
    public let label: String
    public let bytes: Int
    /// Calls per sample in the timed run: 1,000 for the small sizes so a sample is long enough
    /// to time to the nanosecond.
    public let scaling: BenchmarkScalingFactor

    public init(label: String, bytes: Int, scaling: BenchmarkScalingFactor) {
        self.label = label
        self.bytes = bytes
        self.scaling = scaling
    }

    public static let all: [PayloadSize] = [
        PayloadSize(label: "64 B", bytes: 64, scaling: .kilo),
        PayloadSize(label: "1 KiB", bytes: 1024, scaling: .kilo),
        PayloadSize(label: "64 KiB", bytes: 64 << 10, scaling: .one),
        PayloadSize(label: "1 MiB", bytes: 1 << 20, scaling: .one),
        PayloadSize(label: "16 MiB", bytes: 16 << 20, scaling: .one),
    ]
}
