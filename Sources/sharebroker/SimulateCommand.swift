import ArgumentParser
import Foundation
import ShareBrokerSimulator

struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay server policies and user actions (JSON Lines, contract version 1) against the real library.",
        discussion: "Reads one JSON object per line on standard input and writes one result per non-blank line. Exit status 0 when every line was accepted, 65 when any was rejected, 74 on an I/O failure.")

    @Option(help: "Where files handed to other apps are written (default: a fresh temporary folder).")
    var outbox: String?

    func run() throws {
        let directory: String
        if let outbox {
            directory = URL(fileURLWithPath: outbox).standardizedFileURL.path
        } else {
            directory = NSTemporaryDirectory() + "sharebroker-outbox-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0 ... .max))"
        }
        let simulator = PolicySimulator(outboxDirectory: directory)
        var ioFailed = false
        let lines = AnyIterator { readLine(strippingNewline: true) }
        let rejected = simulator.run(lines: lines) { output in
            do {
                try FileHandle.standardOutput.write(contentsOf: Data((output + "\n").utf8))
            } catch {
                ioFailed = true
            }
        }
        if ioFailed { throw ExitCode(ExitStatus.ioError) }
        if rejected { throw ExitCode(ExitStatus.dataError) }
    }
}

