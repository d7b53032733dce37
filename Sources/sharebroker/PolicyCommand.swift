import ArgumentParser
import Foundation
import ShareBrokerPolicyDocument

/// `sharebroker policy`: native policy documents.
struct PolicyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Validate native policy documents and import Intune app protection policies.",
        discussion: "The format is described in docs/POLICY-DOCUMENTS.md; examples are under examples/.",
        subcommands: [PolicyCheck.self, PolicyImport.self])
}

/// `sharebroker policy check FILE`.
struct PolicyCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a policy or device document and summarize what it allows and blocks.",
        discussion: "Exit status 0 when the document is valid (warnings included), 65 when it has errors (printed one "
            + "per line with their JSON paths), 74 when the file cannot be read.")

    @Argument(help: "The document (JSON); '-' reads standard input.")
    var file: String

    func run() throws {
        let bytes = try readDocument(file)
        do {
            let checked = try PolicyDocument.parse(bytes)
            print(PolicySummary.render(checked), terminator: "")
        } catch {
            let count = error.issues.count + error.omitted
            print("\(file): invalid, \(count) error\(count == 1 ? "" : "s"); nothing in it applies")
            for issue in error.issues { print("\(file): \(issue)") }
            if error.omitted > 0 { print("\(file): … and \(error.omitted) more") }
            throw ExitCode(ExitStatus.dataError)
        }
    }
}

/// `sharebroker policy import --from intune FILE`.
struct PolicyImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Convert a Microsoft Graph iosManagedAppProtection or androidManagedAppProtection body to a native policy.",
        discussion: """
            Writes the native policy to --output and the report (every input field: mapped, approximated or not \
            supported) to standard output; without --output the policy goes to standard output and the report to \
            standard error. Unknown fields, odd durations and contradictions are warnings. Exit status 0 on success, \
            65 when the input cannot be imported, 74 on an I/O failure.
            """)

    enum Source: String, ExpressibleByArgument, CaseIterable {
        case intune
    }

    @Option(help: "The format of the input: intune (a Graph app protection body).")
    var from: Source

    @Argument(help: "The Graph JSON body; '-' reads standard input.")
    var file: String

    @Option(name: .shortAndLong, help: "Where to write the native policy (default: standard output).")
    var output: String?

    @Option(help: "The bundle id the policy is for (needed when the body targets no app or several).")
    var app: String?

    func run() throws {
        let bytes = try readDocument(file)
        let imported: IntuneImport
        do {
            imported = try IntuneImporter.importPolicy(bytes, appID: app)
        } catch {
            printError("\(file): cannot import: \(error)")
            throw ExitCode(ExitStatus.dataError)
        }
        let text = imported.document.jsonText
        if let output {
            do {
                try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
            } catch {
                printError("\(output): cannot write the policy (\(error.localizedDescription))")
                throw ExitCode(ExitStatus.ioError)
            }
            print(imported.report, terminator: "")
            print("Wrote \(output). Check it with: sharebroker policy check \(output)")
        } else {
            print(text, terminator: "")
            printError(imported.report)
        }
    }
}

/// Reads a document with the size limit, turning failures into the right exit status.
func readDocument(_ path: String) throws -> [UInt8] {
    do {
        return try PolicyDocumentFile.read(path)
    } catch {
        printError("\(error)")
        throw ExitCode(error.tooLarge ? ExitStatus.dataError : ExitStatus.ioError)
    }
}

/// Writes one message to standard error.
func printError(_ message: String) {
    let line = message.hasSuffix("\n") ? message : message + "\n"
    try? FileHandle.standardError.write(contentsOf: Data(line.utf8))
}
