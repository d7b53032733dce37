// capi-bench: an Open In decision and a 64-byte SecureCopy copy through the C interface
// (libsharebroker, called from C) against the same calls from Swift, in the same run, timed
// back to back in each sample; prints the medians and the median of the per-sample ratios (the goal:
// at most 1.10x).
//
//   make capi-bench     (at the root: builds libsharebroker-c.so in release first, runs this in
//                        7 processes and prints the median over them: scripts/capi-bench.sh)
import CCapiBench
import Glibc
import ShareBroker
import ShareBrokerTesting

final class QuietDelegate: ShareBrokerDelegate {
    func appConnectIsReady() {}
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
}

func nowNanoseconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) * 1e9 + Double(ts.tv_nsec)
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

let broker: ShareBroker
do {
    broker = ShareBroker(appID: "com.acme.bench", platform: try .embedded(entitling: "com.acme.bench"))
    try broker.start(delegate: QuietDelegate())
    try broker.apply(PolicyUpdate(auth: .authorized, openIn: .whitelist([
        "com.acme.documentviewer", "com.acme.mail", "com.acme.notes", "com.acme.browser", "com.acme.pdf"]),
        pasteboard: .secureCopy))
} catch {
    fatalError("capi-bench setup: \(error)")
}
guard capi_bench_setup() == 0 else { fatalError("capi-bench: the C setup failed") }

// Built at run time, as in the Swift benchmarks, so it shares no storage with the whitelist.
let target = ["com", "acme", "documentviewer"].joined(separator: ".")
let item = PasteboardItem(type: PasteboardItem.textType, bytes: (0..<64).map { UInt8(97 + $0 % 26) })
var sink = 0

@MainActor
func swiftOpenIn(_ iterations: Int) -> Double {
    let start = nowNanoseconds()
    for _ in 0..<iterations {
        sink &+= broker.decideOpenIn(target: target, via: .documentInteraction).allowed ? 1 : 0
    }
    return (nowNanoseconds() - start) / Double(iterations)
}

@MainActor
func swiftCopy(_ iterations: Int) -> Double {
    let start = nowNanoseconds()
    for _ in 0..<iterations {
        do {
            sink &+= try broker.copy(item) == .writeSealed ? 1 : 0
        } catch {
            fatalError("copy: \(error)")
        }
    }
    return (nowNanoseconds() - start) / Double(iterations)
}

// Paired samples: each sample times a short run of the C call and of the Swift call back to back
// (the order flipped every sample), and the figure is the median of the per-sample ratios, with
// the 25th-75th percentiles: load that comes and goes on a shared machine hits both sides of a
// pair alike, which a ratio of two separate medians does not cancel.
let samples = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 301
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
func rounded(_ value: Double, _ places: Double = 10) -> Double { (value * places).rounded() / places }

_ = swiftOpenIn(200_000); _ = capi_bench_open_in(200_000)     // warm up
_ = swiftCopy(20_000); _ = capi_bench_copy64(20_000)
var times: [String: [Double]] = [:]
var ratios: [String: [Double]] = [:]
for sample in 0..<samples {
    let openIn: (c: Double, swift: Double)
    let copy: (c: Double, swift: Double)
    if sample % 2 == 0 {
        let c = capi_bench_open_in(20_000)
        openIn = (c, swiftOpenIn(20_000))
        let cc = capi_bench_copy64(2_000)
        copy = (cc, swiftCopy(2_000))
    } else {
        let swift = swiftOpenIn(20_000)
        openIn = (capi_bench_open_in(20_000), swift)
        let sc = swiftCopy(2_000)
        copy = (capi_bench_copy64(2_000), sc)
    }
    for (name, pair) in [("openIn", openIn), ("copy64", copy)] {
        times["\(name).c", default: []].append(pair.c)
        times["\(name).swift", default: []].append(pair.swift)
        ratios[name, default: []].append(pair.c / pair.swift)
    }
}
capi_bench_teardown()
for name in ["openIn", "copy64"] {
    let c = percentile(times["\(name).c", default: [0]], 0.5)
    let swift = percentile(times["\(name).swift", default: [0]], 0.5)
    let values = ratios[name, default: [0]]
    let ratio = percentile(values, 0.5)
    print("\(name): C \(rounded(c)) ns, Swift \(rounded(swift)) ns (medians), ratio \(rounded(ratio, 100))x "
          + "(p25 \(rounded(percentile(values, 0.25), 100)), p75 \(rounded(percentile(values, 0.75), 100)); "
          + "\(values.count) paired samples)" + (ratio <= 1.10 ? " within 1.10x" : " OVER 1.10x"))
}
if sink == 42 { print("") }
