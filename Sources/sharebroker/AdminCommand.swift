import ArgumentParser
import Foundation
import ShareBrokerAgentClient
import ShareBrokerAgentProtocol

/// `sharebroker admin`: administers the running agent (its own user or root only).
struct AdminCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Administer the running agent: reload its device policy, install a new one, show its status.",
        subcommands: [Reload.self, SetPolicy.self, Status.self])

    struct Reload: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-read the device policy (the --policy file, else the agent's copy) and push it to connected apps.")
        @OptionGroup var host: HostOptions
        func run() throws { try AdminCommand.send(AdminRequest(command: "reload"), host) }
    }

    struct SetPolicy: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-policy",
            abstract: "Install a device policy (sharebroker.device) in the agent, durably, and push it.")
        @Argument(help: "The device policy file.")
        var file: String
        @OptionGroup var host: HostOptions
        func run() throws {
            guard let data = FileManager.default.contents(atPath: file) else {
                HostIO.error("sharebroker admin set-policy: cannot read \(file)")
                throw ExitCode(HostExit.ioError)
            }
            try AdminCommand.send(AdminRequest(command: "setPolicy", document: String(decoding: data, as: UTF8.self)), host)
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the agent's push, current key id, entitled and connected apps.")
        @OptionGroup var host: HostOptions
        func run() throws { try AdminCommand.send(AdminRequest(command: "status"), host) }
    }

    static func send(_ request: AdminRequest, _ host: HostOptions) throws {
        do {
            let response = try AdminClient.send(request, socketPath: host.socket ?? AgentPaths.administrationSocket)
            HostIO.out(response.message)
            HostIO.out("push \(response.push), key \(response.currentKeyID ?? "-"), entitled: \(response.entitledApps.joined(separator: ", "))")
            HostIO.out("connected: \(response.connectedApps.isEmpty ? "none" : response.connectedApps.joined(separator: ", "))")
            if !response.ok { throw ExitCode(1) }
        } catch let error as AgentClientError {
            HostIO.error("sharebroker admin: \(error)")
            throw ExitCode(error.isRefusal ? HostExit.refused : HostExit.unavailable)
        }
    }
}

extension AgentClientError {
    var isRefusal: Bool {
        if case .refused = self { return true }
        return false
    }
}
