// The Linux desktop hand-off's own cost (ShareBrokerLinux/Desktop): decision + target entry
// lookup + private copy or dummy, before the target's process starts (the adapter is made with
// `startsApps: false`), for a 1 MiB document; and the private copy against `cp` of the same file
// measured in the same samples.
//
//   cd Benchmarks && swift package benchmark --target DesktopBenchmarks
//
// Not part of the CI allocation check (which runs ShareBrokerBenchmarks only): these benchmarks
// do file I/O, whose allocation counts belong to GLib and the file system, not to the library.

import Benchmark
import ShareBroker
import ShareBrokerLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import ShareBrokerTesting

/// Per call: `cp SRC DST` (a process, as a user or script would copy), timed inside each sample of
/// the paired benchmark, and ours over it in thousandths.
let cpNs = BenchmarkMetric.custom("cpNs", polarity: .prefersSmaller, useScalingFactor: false)
let ratioToCp = BenchmarkMetric.custom("ratioToCpPermille", polarity: .prefersSmaller, useScalingFactor: false)

final class QuietDelegate: ShareBrokerDelegate {
    func appConnectIsReady() {}
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
}


/// A temporary XDG tree with two entries (`/bin/true %f`), a private runtime folder and a 1 MiB
/// document, all on the same file system. XDG_DATA_HOME is set before the first GIO call.
struct DesktopBench: @unchecked Sendable {
    let root: String
    let runtime: String
    let document: String
    let broker: ShareBroker
    let handOff: DesktopHandOff

    static let allowed = "org.example.BenchViewer"
    static let blocked = "org.example.BenchOther"

    init() throws {
        let base = (getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/sharebroker-desktop-bench-\(getpid())"
        root = base
        benchRoot.withLock { $0 = base }
        atexit {
            if let root = benchRoot.withLock({ $0 }) {
                let argv: [UnsafeMutablePointer<CChar>?] = [strdup("rm"), strdup("-rf"), strdup(root), nil]
                var pid: pid_t = 0
                if posix_spawn(&pid, "/bin/rm", nil, nil, argv, environ) == 0 { waitpid(pid, nil, 0) }
                for arg in argv { free(arg) }
            }
        }
        runtime = base + "/runtime"
        for dir in [base, base + "/data", base + "/data/applications", runtime] { mkdir(dir, 0o700) }
        for id in [Self.allowed, Self.blocked] {
            try Self.write(Array("[Desktop Entry]\nType=Application\nName=\(id)\nExec=/bin/true %f\n".utf8),
                           to: base + "/data/applications/\(id).desktop")
        }
        document = base + "/Quarterly report.pdf"
        var rng = SystemRandomNumberGenerator()
        try Self.write((0 ..< (1 << 20)).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }, to: document)
        setenv("XDG_DATA_HOME", base + "/data", 1)
        setenv("XDG_CONFIG_HOME", base + "/config", 1)
        let platform = Platform.embedded(custodian: try InProcessKeyCustodian(entitledAppIDs: ["com.acme.bench"]),
                                         records: false)
        broker = ShareBroker(appID: "com.acme.bench", platform: platform)
        try broker.start(delegate: QuietDelegate())
        _ = try broker.apply(PolicyUpdate(auth: .authorized, openIn: .whitelist([Self.allowed])))
        handOff = try DesktopHandOff(runtimeDirectory: runtime, startsApps: false)
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchError("cannot create \(path)") }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress.map { $0 + done }, bytes.count - done) }
            guard n > 0 else { throw BenchError("cannot write \(path)") }
            done += n
        }
    }

    /// One hand-off; returns the file and its folder for clean-up outside the measurement.
    func run(_ target: String) -> String {
        do {
            let result = try handOff.openIn(file: document, target: target, broker: broker)
            return result.transfer.path
        } catch {
            fatalError("desktop hand-off failed: \(error)")
        }
    }

    static func remove(_ file: String) {
        unlink(file)
        if let slash = file.utf8.lastIndex(of: UInt8(ascii: "/")) {
            rmdir(String(file[..<slash]))
        }
    }

    /// `cp SRC DST` as a process; returns nanoseconds.
    func cp(to destination: String) -> Int {
        let start = ContinuousClock.now
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("cp"), strdup(document), strdup(destination), nil]
        defer { for arg in argv { free(arg) } }
        guard posix_spawn(&pid, "/bin/cp", nil, nil, argv, environ) == 0 else { fatalError("cannot start cp") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds) * 1_000_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000)
    }
}

/// The fixture's folder, removed at exit.
let benchRoot = Mutex<String?>(nil)

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let benchmarks: @Sendable () -> Void = {
    let bench: DesktopBench
    do {
        bench = try DesktopBench()
    } catch {
        fatalError("desktop benchmark fixture: \(error)")
    }
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        timeUnits: .microseconds, warmupIterations: 5, scalingFactor: .one,
        maxDuration: .seconds(2), maxIterations: 2_000)

    Benchmark("Desktop hand-off allowed 1 MiB (decision + entry + private copy)", configuration: configuration) { benchmark in
        benchmark.startMeasurement()
        let file = bench.run(DesktopBench.allowed)
        benchmark.stopMeasurement()
        DesktopBench.remove(file)
    }

    Benchmark("Desktop hand-off blocked 1 MiB (decision + entry + dummy)", configuration: configuration) { benchmark in
        benchmark.startMeasurement()
        let file = bench.run(DesktopBench.blocked)
        benchmark.stopMeasurement()
        DesktopBench.remove(file)
    }

    var paired = configuration
    paired.metrics += [cpNs, ratioToCp]
    paired.units = [cpNs: .count, ratioToCp: .count]
    let order = Atomic<Int>(0)
    Benchmark("Desktop private copy 1 MiB vs cp (paired)", configuration: paired) { benchmark in
        let destination = bench.root + "/cp-copy"
        var cpTime = 0
        let cpFirst = order.wrappingAdd(1, ordering: .relaxed).oldValue & 1 == 0
        if cpFirst { cpTime = bench.cp(to: destination); unlink(destination) }
        let start = ContinuousClock.now
        benchmark.startMeasurement()
        let file = bench.run(DesktopBench.allowed)
        benchmark.stopMeasurement()
        let elapsed = ContinuousClock.now - start
        DesktopBench.remove(file)
        if !cpFirst { cpTime = bench.cp(to: destination); unlink(destination) }
        let ours = Int(elapsed.components.seconds) * 1_000_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000)
        benchmark.measurement(cpNs, cpTime)
        benchmark.measurement(ratioToCp, cpTime > 0 ? ours * 1000 / cpTime : 0)
    }
}
