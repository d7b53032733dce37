import ArgumentParser
import Foundation
import ShareBrokerSimulator

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Walk a managed app through the policies and print what the library decided and why.")

    func run() throws {
        let directory = NSTemporaryDirectory() + "sharebroker-demo-\(ProcessInfo.processInfo.processIdentifier)"
        let result = Demo.run(outboxDirectory: directory)
        print("ShareBroker demo: one managed app (com.acme.notes) under a sequence of server policies\n")
        print(result.table)
        print("Files handed to other apps are under \(directory)")
        if !result.ok { throw ExitCode(ExitStatus.dataError) }
    }
}

