// The X11 clipboard adapter between two apps on one X server (two connections each: the owner's
// serving thread and the paster's reading connection), on a private Xvfb this benchmark starts:
//
// * "X11 SecureCopy copy-then-paste SIZE": app A copies under SecureCopy (seal, take CLIPBOARD and
//   PRIMARY), app B pastes (TARGETS, the sealed set, open). Each sample also times the same number
//   of clear copy-then-pastes (Authorized) of the same bytes through the same adapter, interleaved,
//   and records the ratio (`ratioToClearPermille`, goal <= 1,100).
// * "X11 clear copy-then-paste SIZE": the clear path alone.
// * "X11 paste SIZE" and "xclip -o SIZE": B's paste of A's clear item next to `xclip -o` reading
//   the same bytes from the same owner (a process start included: the floor a user's tool pays).
//
// Not part of the CI allocation check (that runs --target ShareBrokerBenchmarks only). Skips, with
// the reason on standard error, where Xvfb or xclip is missing.

import Benchmark
import Foundation
import ShareBroker
@_spi(Benchmarks) import ShareBrokerLinux
import Synchronization
import ShareBrokerTesting

let ratioToClear = BenchmarkMetric.custom("ratioToClearPermille", polarity: .prefersSmaller, useScalingFactor: false)

final class BenchDisplay: @unchecked Sendable {
    let process: Process
    let name: String

    static let shared: BenchDisplay? = {
        do { return try BenchDisplay() } catch {
            FileHandle.standardError.write(Data("X11 clipboard benchmarks skipped: \(error)\n".utf8))
            return nil
        }
    }()

    init() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/xclip") else {
            throw BenchError("Xvfb or xclip is not installed (make deps)")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
        process.arguments = ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "64x64x24"]
        let out = Pipe()
        // Not the benchmark's own standard input: an Xvfb holding the pipe the benchmark tool
        // reads kept `swift package benchmark` waiting after the last benchmark.
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var number = ""
        while true {
            let byte = out.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            number += String(decoding: byte, as: UTF8.self)
        }
        guard !number.isEmpty else { throw BenchError("Xvfb did not start") }
        name = ":" + number
        // SIGKILL: the benchmark's threads block SIGTERM, and Xvfb inherits that mask, so
        // `terminate()` left one Xvfb running per benchmark process.
        atexit { if let pid = BenchDisplay.shared?.process.processIdentifier { kill(pid, SIGKILL) } }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

final class QuietDelegate: ShareBrokerDelegate {
    func appConnectIsReady() {}
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
    func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment { .applied }
    func copyAttemptedWhenUnauthorized(policy: PasteboardPolicy) {}
    func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment { .applied }
    func secureServicesAvailabilityChanged(to availability: SecureServicesAvailability) {}
    func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment { .applied }
    func logLevelChanged(to level: LogLevel) {}
    func willResignActive() {}
    func didBecomeActive() {}
}

/// Two managed apps on the display: A copies (SecureCopy and clear brokers share A's adapter),
/// B pastes.
final class TwoApps: @unchecked Sendable {
    let secureOwner: ShareBroker
    let clearOwner: ShareBroker
    let paster: ShareBroker
    let ownerPasteboard: X11Pasteboard
    let item: PasteboardItem
    let delegate: QuietDelegate

    init(display: String, size: Int) throws {
        let delegate = QuietDelegate()
        self.delegate = delegate
        let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.a", "com.acme.b"])
        ownerPasteboard = try X11Pasteboard(configuration: .init(display: display))
        let pasterPasteboard = try X11Pasteboard(configuration: .init(display: display))
        let broker = { (id: String, pasteboard: X11Pasteboard, policy: PasteboardPolicy) throws -> ShareBroker in
            let broker = ShareBroker(appID: id, platform: Platform.embedded(custodian: custodian).using(pasteboard))
            try broker.start(delegate: delegate)
            _ = try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: policy))
            return broker
        }
        let ownerPasteboard = ownerPasteboard
        secureOwner = try broker("com.acme.a", ownerPasteboard, .secureCopy)
        clearOwner = try broker("com.acme.a", ownerPasteboard, .authorized)
        paster = try broker("com.acme.b", pasterPasteboard, .authorized)
        item = PasteboardItem(type: PasteboardItem.textType, bytes: (0..<size).map { UInt8(ascii: "a") + UInt8($0 % 26) })
        guard try secureOwner.copy(item) == .writeSealed, paster.paste() == item,
              try clearOwner.copy(item) == .writeClear, paster.paste() == item else {
            throw BenchError("the copy-then-paste round trip did not give the item back")
        }
    }

    func secureRound() -> Bool { (try? secureOwner.copy(item)) == .writeSealed && paster.paste()?.bytes.count == item.bytes.count }
    func clearRound() -> Bool { (try? clearOwner.copy(item)) == .writeClear && paster.paste()?.bytes.count == item.bytes.count }
}

func xclipOut(display: String) -> Int {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/xclip")
    process.arguments = ["-o", "-selection", "clipboard"]
    process.environment = ["DISPLAY": display]
    process.standardInput = FileHandle.nullDevice
    let out = Pipe()
    process.standardOutput = out
    guard (try? process.run()) != nil else { return 0 }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return data.count
}

func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) / 1e18
}

let benchmarks: @Sendable () -> Void = {
    guard let display = BenchDisplay.shared else { return }
    let configuration = Benchmark.Configuration(metrics: [.wallClock, ratioToClear], timeUnits: .microseconds,
                                                warmupIterations: 3, scalingFactor: .one,
                                                maxDuration: .seconds(3), maxIterations: 300)
    for (size, label) in [(64, "64 B"), (1 << 20, "1 MiB")] {
        Benchmark("X11 SecureCopy copy-then-paste \(label)", configuration: configuration) { (benchmark: Benchmark, apps: TwoApps) in
            // Interleaved in each sample: secure, then clear, the same number of rounds.
            let rounds = size < 4096 ? 20 : 3
            var secure = ContinuousClock.Duration.zero
            var clear = ContinuousClock.Duration.zero
            benchmark.startMeasurement()
            for _ in 0..<rounds {
                let start = ContinuousClock.now
                precondition(apps.secureRound())
                secure += ContinuousClock.now - start
                let middle = ContinuousClock.now
                precondition(apps.clearRound())
                clear += ContinuousClock.now - middle
            }
            benchmark.stopMeasurement()
            let secureSeconds: Double = seconds(secure)
            let clearSeconds: Double = max(1e-12, seconds(clear))
            benchmark.measurement(ratioToClear, Int(secureSeconds / clearSeconds * 1000))
        } setup: {
            try TwoApps(display: display.name, size: size)
        }

        Benchmark("X11 clear copy-then-paste \(label)", configuration: configuration) { (benchmark: Benchmark, apps: TwoApps) in
            for _ in benchmark.scaledIterations { precondition(apps.clearRound()) }
        } setup: {
            try TwoApps(display: display.name, size: size)
        }

        Benchmark("X11 paste \(label)", configuration: configuration) { (benchmark: Benchmark, apps: TwoApps) in
            for _ in benchmark.scaledIterations { blackHole(apps.paster.paste()) }
        } setup: { () throws -> TwoApps in
            let apps = try TwoApps(display: display.name, size: size)
            _ = try apps.clearOwner.copy(apps.item)
            return apps
        }

        Benchmark("xclip -o \(label)", configuration: configuration) { (benchmark: Benchmark, apps: TwoApps) in
            for _ in benchmark.scaledIterations { precondition(xclipOut(display: display.name) == size) }
        } setup: { () throws -> TwoApps in
            let apps = try TwoApps(display: display.name, size: size)
            _ = try apps.clearOwner.copy(apps.item)
            return apps
        }
    }
}
