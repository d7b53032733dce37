// agent-bench --reports: issue 17's benchmark (BENCHMARK CODE, not shipped).
//
// Reports exported to the system log while many apps copy at full speed cost the copy path
// nothing measurable. Two real agents in this process (core + socket server), identical but for
// the system log: one with `--system-log off`, one exporting RFC 5424 records to a real Unix
// datagram receiver (a thread of this process that reads and discards). The same number of app
// clients (AgentClient over the real socket, each with its own ShareBroker) is connected to each;
// every copy is blocked by the policy, so every copy makes a report (a blocked-attempt audit
// record: audit log fsync, and on the exporting agent one system-log datagram). Phases alternate
// off / on (the order flipped every pair, so neither always runs second); in each phase every app
// thread copies for a fixed time; the figure is the apps' own time per copy (first copy to last,
// summed over apps, over the copies); the ratio on/off is
// taken per pair and the median is compared with the goal (<= 1.05).
import Foundation
import ShareBroker
import ShareBrokerAgent
import ShareBrokerAgentClient
import Synchronization
import ShareBrokerTesting

/// A Unix datagram socket that reads and discards, counting what it received.
final class DatagramSink: Sendable {
    let path: String
    let received = Atomic<Int>(0)
    let stopped = Atomic<Bool>(false)
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw BenchError("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw BenchError("socket path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw BenchError("bind \(path): errno \(errno)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !self.stopped.load(ordering: .relaxed) {
                let count = buffer.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress, $0.count, 0) }
                if count > 0 { self.received.add(1, ordering: .relaxed) }
            }
            close(self.descriptor)
        }
        thread.name = "agent-bench-datagram-sink"
        thread.start()
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
}

/// A counter the copy threads share.
final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func runReportsBenchmark(quick: Bool, executable: String, base: String) throws {
    let apps = quick ? 20 : 100
    let pairs = quick ? 3 : 11
    let phaseNanoseconds: UInt64 = quick ? 500_000_000 : 1_000_000_000
    let device = #"{"format": "sharebroker.device", "version": 1, "apps": [{"id": "com.bench.app", "executable": "\#(executable)", "appConnect": true, "policy": {"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "unauthorized", "print": "authorized"}}]}"#
    let sink = try DatagramSink(path: base + "/log.sock")
    defer { sink.stop() }

    struct Agent {
        var name: String
        var core: AgentCore
        var server: AgentServer
        var clients: [AgentClient] = []
        var brokers: [ShareBroker] = []
    }
    func start(_ name: String, _ systemLog: AgentSystemLog) throws -> Agent {
        let folder = base + "/" + name
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try device.write(toFile: folder + "/device.json", atomically: true, encoding: .utf8)
        let core = try AgentCore(configuration: AgentConfiguration(
            stateDirectory: folder + "/state", socketPath: folder + "/agent.sock", policyFile: folder + "/device.json",
            systemLog: systemLog))
        var agent = Agent(name: name, core: core, server: try AgentServer.start(core: core))
        for _ in 0..<apps {
            let client = AgentClient(configuration: AgentClientConfiguration(socketPath: folder + "/agent.sock", reconnects: false))
            let welcome = try client.connect()
            let broker = client.makeBroker(for: welcome, platform: try .embedded(entitling: welcome.app))
            try broker.start(delegate: BenchDelegate())
            try client.attach(broker)
            agent.clients.append(client)
            agent.brokers.append(broker)
        }
        return agent
    }
    let off = try start("export-off", .off)
    let on = try start("export-on", .syslog(socket: sink.path))
    defer {
        for agent in [off, on] {
            for client in agent.clients { client.close() }
            agent.server.stop()
        }
    }

    let item = PasteboardItem.text(String(repeating: "x", count: 64))
    /// One phase: every app of `agent` copies for the phase's time; nanoseconds per copy per app.
    func cpuNanoseconds() -> UInt64 {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func ns(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1_000 }
        return ns(usage.ru_utime) + ns(usage.ru_stime)
    }
    func phase(_ agent: Agent) -> (perCopy: Double, copies: Int, cpuPerCopy: Double) {
        let copies = Counter()
        // Each app's own time from its first copy to the end of its last: thread start-up and
        // scheduling delays before the first copy are not the copy path's.
        let busy = Counter()
        let go = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let brokers = agent.brokers
        for broker in brokers {
            done.enter()
            Thread {
                go.wait()
                let begin = now()
                let end = begin + phaseNanoseconds
                var count = 0
                var last = begin
                while last < end {
                    // A blocked copy: the decision, and the report sent to the agent.
                    guard let action = try? broker.copy(item), action == .blocked else {
                        FileHandle.standardError.write(Data("agent-bench: a copy was not blocked\n".utf8))
                        exit(1)
                    }
                    count += 1
                    last = now()
                }
                copies.value.add(count, ordering: .relaxed)
                busy.value.add(Int(last - begin), ordering: .relaxed)
                done.leave()
            }.start()
        }
        let cpuBefore = cpuNanoseconds()
        for _ in brokers { go.signal() }
        done.wait()
        // Outside the timing: the agent logs every report (receipts), and the exporter's
        // datagrams all arrive, so nothing of this phase spills into the next.
        for client in agent.clients { _ = client.flush(timeoutMilliseconds: 30_000) }
        var last = -1
        while last != sink.received.load(ordering: .relaxed) {
            last = sink.received.load(ordering: .relaxed)
            usleep(200_000)
        }
        let total = copies.value.load(ordering: .relaxed)
        // The process's CPU time (apps, agent, exporter and receiver threads), up to the end of
        // the drain: what every copy cost the machine, whatever else the machine was doing.
        let cpu = Double(cpuNanoseconds() - cpuBefore)
        return (Double(busy.value.load(ordering: .relaxed)) / Double(max(1, total)), total, cpu / Double(max(1, total)))
    }

    _ = phase(off)
    _ = phase(on)  // warm-up of both
    let receivedBefore = sink.received.load(ordering: .relaxed)
    var ratios: [Double] = [], offTimes: [Double] = [], onTimes: [Double] = [], cpuRatios: [Double] = []
    var onCopies = 0
    for pair in 0..<pairs {
        let first = pair % 2 == 0 ? off : on
        let second = pair % 2 == 0 ? on : off
        let a = phase(first), b = phase(second)
        let (offPhase, onPhase) = pair % 2 == 0 ? (a, b) : (b, a)
        offTimes.append(offPhase.perCopy)
        onTimes.append(onPhase.perCopy)
        onCopies += onPhase.copies
        ratios.append(onPhase.perCopy / offPhase.perCopy)
        cpuRatios.append(onPhase.cpuPerCopy / offPhase.cpuPerCopy)
        print(String(format: "   pair %d: off %.0f ns/copy (%d copies, CPU %.1f us/copy), on %.0f ns/copy (%d copies, CPU %.1f us/copy), ratio %.3f, CPU ratio %.3f",
                     pair + 1, offPhase.perCopy, offPhase.copies, offPhase.cpuPerCopy / 1000, onPhase.perCopy, onPhase.copies,
                     onPhase.cpuPerCopy / 1000, ratios[ratios.count - 1], cpuRatios[cpuRatios.count - 1]))
    }
    let received = sink.received.load(ordering: .relaxed) - receivedBefore
    let ratio = percentile(ratios, 0.5)
    print(String(format: "   system-log datagrams received during the measured on-phases: %d for %d blocked copies", received, onCopies))
    print(String(format: "   process CPU per copy (apps + agent + exporter + receiver), on/off: median %.3f (p25 %.3f, p75 %.3f)",
                 percentile(cpuRatios, 0.5), percentile(cpuRatios, 0.25), percentile(cpuRatios, 0.75)))
    print(String(format: "4. copy path (64 B, blocked, reported) with %d apps copying: export off %.0f ns/copy, export on %.0f ns/copy, ratio %.3f (p25 %.3f, p75 %.3f)  (goal: <= 1.05) ",
                 apps, percentile(offTimes, 0.5), percentile(onTimes, 0.5), ratio, percentile(ratios, 0.25), percentile(ratios, 0.75))
          + (ratio <= 1.05 ? "OK" : "MISSED"))
}
