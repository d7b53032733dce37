import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentClient
import ShareBrokerTesting

/// `sharebroker watch`: stays connected as a managed app and prints, one JSON object per line,
/// what happens: connection, keys, pushes applied with their acknowledgments, receipts,
/// disconnections and reconnections. The demo and the tests use it as a long-lived app.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Stay connected to the agent as a managed app and print each event as a JSON line.")

    @OptionGroup var host: HostOptions

    @Option(help: "Stop after this many seconds (0: run until killed or standard input closes).")
    var seconds: Double = 0

    @Flag(help: "Stop when standard input reaches end of file.")
    var untilEOF = false

    func run() throws {
        let pasteboard = try HostSession.pasteboard(host)
        let client = AgentClient(configuration: AgentClientConfiguration(
            socketPath: host.socketPath, handshakeTimeoutMilliseconds: host.timeout, reconnects: true,
            initialBackoffMilliseconds: 25, maximumBackoffMilliseconds: 500))
        client.setEventHandler { event in WatchCommand.print(event) }
        let started = Date()
        var welcome = try? client.connect()
        while welcome == nil {
            if seconds > 0 && Date().timeIntervalSince(started) > seconds { throw ExitCode(HostExit.unavailable) }
            usleep(100_000)
            welcome = try? client.connect()
        }
        guard let welcome else { return }
        let delegate = HostDelegate { event in WatchCommand.line(["event": "callback", "callback": event]) }
        let broker = ShareBroker(appID: welcome.app, device: client.device, platform: Platform(
            outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: client, pasteboard: pasteboard,
            secureServices: client))
        try broker.start(delegate: delegate)
        try client.attach(broker)
        WatchCommand.line(["event": "attached", "app": welcome.app])
        if untilEOF {
            DispatchQueue.global().async {
                _ = HostIO.readStandardInput(limit: .max - 1)
                client.close()
                Foundation.exit(0)
            }
        }
        while seconds == 0 || Date().timeIntervalSince(started) < seconds {
            usleep(50_000)
        }
        _ = client.flush(timeoutMilliseconds: host.timeout)
        client.close()
    }

    static func line(_ fields: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    static func print(_ event: AgentClientEvent) {
        switch event {
        case .connected(let app, let push): line(["event": "connected", "app": app, "push": push])
        case .keysInstalled(let ids): line(["event": "keys", "ids": ids.map(HostIO.hex)])
        case .keysDropped: line(["event": "keysDropped"])
        case .policyApplied(let push, let changes, let acknowledgments, let batch):
            line(["event": "policy", "push": push, "changes": changes, "acknowledgments": acknowledgments, "batch": batch])
        case .receipt(let batch, let logged): line(["event": "receipt", "batch": batch, "logged": logged])
        case .disconnected(let reason): line(["event": "disconnected", "reason": reason])
        case .refused(let reason): line(["event": "refused", "reason": reason])
        }
    }
}
