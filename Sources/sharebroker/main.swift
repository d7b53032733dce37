import ArgumentParser
import Foundation
import ShareBrokerSimulator

/// `sharebroker`: the command-line face of the library.
struct ShareBrokerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sharebroker",
        abstract: "A data-loss-prevention layer for managed apps: simulator, demo, policy documents and host tools.",
        subcommands: [
            Simulate.self,
            DemoCommand.self,
            PolicyCommand.self,
            ExplainCommand.self,
            CopyCommand.self,
            PasteCommand.self,
            OpenInCommand.self,
            OpenURLCommand.self,
            StatusCommand.self,
            WatchCommand.self,
            SecureFileCommand.self,
            AdminCommand.self,
            AgentDemoCommand.self,
        ])
}

/// Exit codes of the sysexits convention, as the simulator contract uses them.
enum ExitStatus {
    static let dataError: Int32 = 65
    static let ioError: Int32 = 74
}

ShareBrokerCommand.main()
