// capi-bench: an Open In decision and a 64-byte SecureCopy copy through the C interface
// (libsharebroker, called from C) against the same calls from Swift, in the same run, rounds
// interleaved; prints the medians and the ratios (the goal: at most 1.10x).
//
//   make capi-bench     (at the root: builds libsharebroker-c.so in release first)
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
            sink &+= try broker.copy(item).action == .writeSealed ? 1 : 0
        } catch {
            fatalError("copy: \(error)")
        }
    }
    return (nowNanoseconds() - start) / Double(iterations)
}

let rounds = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 9
var results: [String: [Double]] = [:]
_ = swiftOpenIn(100_000); _ = capi_bench_open_in(100_000)     // warm up
_ = swiftCopy(10_000); _ = capi_bench_copy64(10_000)
for _ in 0..<rounds {
    results["openIn.c", default: []].append(capi_bench_open_in(1_000_000))
    results["openIn.swift", default: []].append(swiftOpenIn(1_000_000))
    results["copy64.c", default: []].append(capi_bench_copy64(100_000))
    results["copy64.swift", default: []].append(swiftCopy(100_000))
}
capi_bench_teardown()
for name in ["openIn", "copy64"] {
    let c = median(results["\(name).c", default: [0]])
    let swift = median(results["\(name).swift", default: [0]])
    let ratio = c / swift
    print("\(name): C \(Double(Int(c * 10)) / 10) ns, Swift \(Double(Int(swift * 10)) / 10) ns, ratio \(Double(Int(ratio * 100)) / 100)x"
          + (ratio <= 1.10 ? " (within 1.10x)" : " (over 1.10x)"))
}
if sink == 42 { print("") }
