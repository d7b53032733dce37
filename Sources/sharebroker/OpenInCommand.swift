import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentClient
import ShareBrokerAgentProtocol

/// `sharebroker open-in FILE --to APP`: hands a document to another app through the broker and
/// prints the path of what the target gets: the document, or an empty dummy when blocked.
struct OpenInCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-in",
        abstract: "Hand FILE to another app through the broker; print the path to hand over (the document, or a dummy).",
        discussion: "Exit status: 0 delivered, 3 blocked (a dummy was handed over), 69 agent unavailable, 77 not a registered app.")

    @Argument(help: "The document to hand over.")
    var file: String

    @Option(help: "The target app's bundle id.")
    var to: String

    @Option(help: "documentInteraction, previewController or activitySheet.")
    var via: String = TransferChannel.documentInteraction.rawValue

    @Option(help: "Where handed-over files go (each hand-over in a fresh sub-folder). Default: RUNTIME/outbox/PID.")
    var outbox: String?

    @OptionGroup var host: HostOptions

    func run() throws {
        guard let channel = TransferChannel(rawValue: via) else {
            throw ValidationError("unknown channel '\(via)'; use \(TransferChannel.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let data = FileManager.default.contents(atPath: file) else {
            HostIO.error("sharebroker open-in: cannot read \(file); check the path")
            throw ExitCode(HostExit.ioError)
        }
        let folder: FolderOutbox
        do {
            folder = try FolderOutbox(directory: (outbox ?? AgentPaths.runtimeDirectory + "/outbox") + "/\(getpid())")
        } catch {
            HostIO.error("sharebroker open-in: \(error)")
            throw ExitCode(HostExit.ioError)
        }
        let session: HostSession
        switch HostSession.open(host, outbox: folder) {
        case .success(let opened): session = opened
        case .failure(let failure):
            HostIO.error("sharebroker open-in: \(failure); nothing was handed over")
            throw ExitCode(failure.exitCode)
        }
        let name = URL(fileURLWithPath: file).lastPathComponent
        let result: TransferResult
        do {
            result = try session.broker.openIn(OutboundDocument(name: name, bytes: Array(data)), target: to, via: channel)
        } catch {
            HostIO.error("sharebroker open-in: \(error)")
            _ = session.confirm(host)
            throw ExitCode(HostExit.ioError)
        }
        let confirmed = session.confirm(host)
        HostIO.out(result.file.path)
        switch result.outcome {
        case .delivered:
            HostIO.error("delivered to \(to) (\(result.decision.rule.rawValue))")
        case .dummy:
            HostIO.error("blocked (\(result.decision.rule.rawValue)): \(to) gets an empty dummy" +
                         (confirmed ? "; the agent logged the attempt" : ""))
            throw ExitCode(confirmed ? HostExit.blocked : HostExit.unconfirmed)
        }
    }
}
