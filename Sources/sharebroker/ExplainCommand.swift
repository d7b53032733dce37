import ArgumentParser
import Foundation
import ShareBrokerPolicyDocument
import ShareBrokerSimulator

/// `sharebroker explain --policy FILE -- ACTION`.
struct ExplainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show what the library decides for one action under a policy, and the rule that decided.",
        discussion: """
            Builds the world from the document (the app under test with its policy; for a device document, its other \
            apps too), performs one action of the simulator's vocabulary (docs/SIMULATE.md) through the real library, \
            and prints the outcome with its reason, e.g.
              sharebroker explain --policy examples/policies/whitelist.json -- \
            '{"op":"openIn","document":"Q3.pdf","content":"x","target":"org.example.sheets"}'
            Exit status 0 when the action was carried out (allowed or blocked), 65 when the document or the action is \
            invalid, 74 when a file cannot be read.
            """)

    @Option(help: "The policy or device document.")
    var policy: String

    @Option(help: "A device document whose apps surround the app of an app policy document.")
    var device: String?

    @Option(help: "The app under test, when a device document has several AppConnect apps.")
    var app: String?

    @Option(help: "The action: one simulator op as a JSON object (or give it after --).")
    var action: String?

    @Argument(help: "The action, when not given with --action.")
    var actionArgument: String?

    @Flag(help: "Print the simulator's result line as it is.")
    var json = false

    func validate() throws {
        guard (action == nil) != (actionArgument == nil) else {
            throw ValidationError("give exactly one action, with --action JSON or after --")
        }
    }

    func run() throws {
        let document = try load(policy)
        var registry: DeviceRegistry?
        if let device {
            guard case .device(let r) = try load(device) else {
                printError("\(device): --device needs a device document (\"format\": \"\(PolicyDocument.deviceFormat)\")")
                throw ExitCode(ExitStatus.dataError)
            }
            registry = r
        }
        let outbox = NSTemporaryDirectory() + "sharebroker-explain-\(ProcessInfo.processInfo.processIdentifier)-"
            + "\(UInt32.random(in: 0 ... .max))"
        defer { try? FileManager.default.removeItem(atPath: outbox) }
        let simulator = PolicySimulator(outboxDirectory: outbox)
        let explanation: PolicyExplanation
        do {
            explanation = try PolicyExplainer.explain(document, app: app, device: registry, action: action ?? actionArgument ?? "") {
                simulator.handle(line: $0, number: $1)?.json.serialized()
            }
        } catch {
            printError("explain: \(error)")
            throw ExitCode(ExitStatus.dataError)
        }
        print(json ? explanation.result : explanation.text)
        if explanation.rejected { throw ExitCode(ExitStatus.dataError) }
    }

    private func load(_ path: String) throws -> PolicyDocument {
        let bytes = try readDocument(path)
        do {
            return try PolicyDocument.parse(bytes).document
        } catch {
            printError("\(path): invalid; run `sharebroker policy check \(path)` for a summary")
            for issue in error.issues { printError("\(path): \(issue)") }
            throw ExitCode(ExitStatus.dataError)
        }
    }
}
