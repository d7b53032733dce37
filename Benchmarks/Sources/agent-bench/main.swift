// agent-bench: benchmarks of the secure-services agent (BENCHMARK CODE, not shipped).
//
// Three measurements, in one process (agent core + socket server + clients over a real Unix
// socket), printed with their goals:
//   1. handshake to ready: connect, identify (SO_PEERCRED, /proc/self/exe), welcome, keys,
//      broker started and ready                                        goal: median < 10 ms
//   2. a policy change pushed to 100 connected clients until the agent has logged (fsynced)
//      every client's acknowledgment and each client has its receipt    goal: p99 < 20 ms
//   3. the copy path (64-byte SecureCopy) with AgentClient as secure services, against the
//      in-process embedded default (InProcessKeyCustodian)            goal: ratio <= 1.05
// And, with --reports (alone): 4. the copy path while every copy's report is exported to the
//   system log (a real datagram receiver) against export off, same run   goal: ratio <= 1.05
// Run a release build: swift run -c release agent-bench [--quick] [--reports]
import Foundation
import Logging
import ShareBroker
import ShareBrokerAgent
import ShareBrokerAgentClient
import ShareBrokerAgentProtocol
import Synchronization
import ShareBrokerTesting

let quick = CommandLine.arguments.contains("--quick")
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}

func now() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func ms(_ ns: Double) -> String { String(format: "%.3f ms", ns / 1e6) }

final class BenchDelegate: ShareBrokerDelegate {
    func appConnectIsReady() {}
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
    func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment { .applied }
    func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment { .applied }
    func openInPolicyChanged(to policy: OpenInPolicy, whitelist: Set<String>) -> Acknowledgment { .applied }
    func configChanged(to config: [String: String]) -> Acknowledgment { .applied }
    func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment { .applied }
}

let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
let base = NSTemporaryDirectory() + "agent-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: base) }

func device(print: String) -> String {
    #"{"format": "sharebroker.device", "version": 1, "apps": [{"id": "com.bench.app", "executable": "\#(exe)", "appConnect": true, "policy": {"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "secureCopy", "print": "\#(print)"}}]}"#
}
// 4. (--reports, on its own) issue 17: reports exported while many apps copy (ReportsBench.swift).
if CommandLine.arguments.contains("--reports") {
    do {
        try runReportsBenchmark(quick: quick, executable: exe, base: base)
    } catch {
        FileHandle.standardError.write(Data("agent-bench: \(error)\n".utf8))
        try? FileManager.default.removeItem(atPath: base)
        exit(1)
    }
    try? FileManager.default.removeItem(atPath: base)
    exit(0)
}

try device(print: "authorized").write(toFile: base + "/device.json", atomically: true, encoding: .utf8)
let core = try AgentCore(configuration: AgentConfiguration(
    stateDirectory: base + "/state", socketPath: base + "/agent.sock", policyFile: base + "/device.json"))
let server = try AgentServer.start(core: core)
defer { server.stop() }
let socketPath = base + "/agent.sock"

func connectedBroker() throws -> (AgentClient, ShareBroker) {
    let client = AgentClient(configuration: AgentClientConfiguration(socketPath: socketPath, reconnects: false))
    let welcome = try client.connect()
    let broker = client.makeBroker(for: welcome, platform: try .embedded(entitling: welcome.app))
    try broker.start(delegate: BenchDelegate())
    try client.attach(broker)
    return (client, broker)
}

// 1. Handshake to ready.
do {
    var samples: [Double] = []
    for index in 0..<(quick ? 30 : 300) {
        let start = now()
        let (client, broker) = try connectedBroker()
        let end = now()
        precondition((try? broker.policy()) != nil)
        if index >= 5 { samples.append(Double(end - start)) }
        client.close()
    }
    let median = percentile(samples, 0.5)
    print("1. handshake to ready: median \(ms(median)), p99 \(ms(percentile(samples, 0.99)))  (goal: < 10 ms) "
          + (median < 10e6 ? "OK" : "MISSED"))
}

// 2. Policy change pushed to 100 clients until all acknowledged (logged, receipted).
do {
    let clientCount = 100
    let receipts = Atomic<Int>(0)
    let allAcknowledged = DispatchSemaphore(value: 0)
    var clients: [AgentClient] = []
    var brokers: [ShareBroker] = []
    for _ in 0..<clientCount {
        let (client, broker) = try connectedBroker()
        clients.append(client)
        brokers.append(broker)
    }
    _ = clients.map { $0.flush(timeoutMilliseconds: 5_000) }
    let expected = Mutex<Set<String>>([])
    for client in clients {
        client.setEventHandler { event in
            switch event {
            case .policyApplied(_, _, let acknowledgments, let batch) where acknowledgments > 0:
                expected.withLock { _ = $0.insert(batch) }
            case .receipt(let batch, true):
                if expected.withLock({ $0.remove(batch) != nil }),
                   receipts.add(1, ordering: .relaxed).newValue == clientCount {
                    allAcknowledged.signal()
                }
            default: break
            }
        }
    }
    var samples: [Double] = []
    var installs: [Double] = []
    for round in 0..<(quick ? 10 : 60) {
        receipts.store(0, ordering: .relaxed)
        let start = now()
        let response = core.setPolicy(device(print: round % 2 == 0 ? "unauthorized" : "authorized"))
        installs.append(Double(now() - start))
        precondition(response.ok, response.message)
        if allAcknowledged.wait(timeout: .now() + 5) == .timedOut {
            FileHandle.standardError.write(Data("agent-bench: push round \(round) timed out\n".utf8))
            exit(1)
        }
        samples.append(Double(now() - start))
    }
    let p99 = percentile(samples, 0.99)
    print("   (of which validating, persisting and queueing the policy: median \(ms(percentile(installs, 0.5))))")
    print("2. push to \(clientCount) clients until all acknowledged: median \(ms(percentile(samples, 0.5))), p99 \(ms(p99))  (goal: p99 < 20 ms) "
          + (p99 < 20e6 ? "OK" : "MISSED"))
    for client in clients { client.close() }
    withExtendedLifetime(brokers) {}
}

// 3. The copy path: agent client vs the in-process embedded default.
do {
    let item = PasteboardItem.text(String(repeating: "x", count: 64))
    let (client, agentBroker) = try connectedBroker()
    let embedded = ShareBroker(appID: "com.bench.app", platform: try .embedded(entitling: "com.bench.app"))
    try embedded.start(delegate: BenchDelegate())
    try embedded.apply(PolicyUpdate(auth: .authorized, openIn: .authorized, pasteboard: .secureCopy))
    let iterations = quick ? 20_000 : 200_000
    func measure(_ broker: ShareBroker) throws -> Double {
        let start = now()
        for _ in 0..<iterations {
            let action = try broker.copy(item)
            precondition(action == .writeSealed)
        }
        return Double(now() - start) / Double(iterations)
    }
    var agentTimes: [Double] = [], embeddedTimes: [Double] = []
    for _ in 0..<(quick ? 3 : 7) {
        embeddedTimes.append(try measure(embedded))
        agentTimes.append(try measure(agentBroker))
    }
    let a = percentile(agentTimes, 0.5), e = percentile(embeddedTimes, 0.5)
    let ratio = a / e
    print(String(format: "3. copy 64 B SecureCopy: agent client %.0f ns, in-process %.0f ns, ratio %.3f  (goal: <= 1.05) ", a, e, ratio)
          + (ratio <= 1.05 ? "OK" : "MISSED"))
    client.close()
}

// Where the time of a push goes, per client, without the network (--breakdown).
if CommandLine.arguments.contains("--breakdown") {
    let update = PolicyUpdate(auth: .authorized, openIn: .whitelist(["a", "b"]), pasteboard: .secureCopy, print: .authorized)
    let push = PolicyPushMessage(push: 7, policy: WirePolicy(update, expandedWhitelist: []), device: [])
    let body = AgentMessage.encode(push)
    let acks = AcknowledgmentBatch(id: "123-abcdef-9", push: 7, records: [WireAcknowledgment(
        id: "123-abcdef-8", kind: "print", state: 1, message: "", generation: 4)])
    let ackBody = AgentMessage.encode(acks)
    func time(_ label: String, _ body: () -> Void) {
        let n = 20_000
        let start = now()
        for _ in 0..<n { body() }
        print(String(format: "   %@: %.1f us", label, Double(now() - start) / Double(n) / 1000))
    }
    time("encode push") { _ = AgentMessage.encode(push) }
    time("decode push") { _ = try? AgentMessage.decode(PolicyPushMessage.self, from: body) }
    time("encode ack batch") { _ = AgentMessage.encode(acks) }
    time("decode ack batch") { _ = try? AgentMessage.decode(AcknowledgmentBatch.self, from: ackBody) }
    time("encode receipt") { _ = AgentMessage.encode(ReceiptMessage(batch: "123-abcdef-9", logged: true)) }
}
