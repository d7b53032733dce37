import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentClient

/// `sharebroker secure-file`: this managed app's secure files (encrypted at rest under its own
/// file keys, which the agent gives this app only), for scripts and the end-to-end tests.
struct SecureFileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secure-file",
        abstract: "Write or read this managed app's secure files (encrypted under the app's own file keys).",
        subcommands: [Write.self, Read.self])

    /// `secure-file write`: standard input into an encrypted file.
    struct Write: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Encrypt standard input into the secure file NAME of the folder.",
            discussion: "Exit status: 0 written, 1 refused (no keys, or an error: see standard error), 69 agent unavailable, 77 not a registered app.")

        @OptionGroup var host: HostOptions

        @Option(help: "The folder of the app's secure files.")
        var directory: String

        @Argument(help: "The file's name in the folder.")
        var name: String

        func run() throws {
            let session = try SecureFileCommand.open(host, directory: directory)
            var bytes = HostIO.readStandardInput(limit: 64 << 20)
            defer { bytes.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
            do {
                try session.broker.secureFiles(directory: directory).write(bytes, to: name)
            } catch {
                HostIO.error("sharebroker secure-file write: \(name): \(error)")
                _ = session.confirm(host)
                throw ExitCode(HostExit.nothing)
            }
            _ = session.confirm(host)
        }
    }

    /// `secure-file read`: encrypted files to standard output.
    struct Read: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decrypt the secure files NAME... of the folder to standard output, each followed by a newline.",
            discussion: "A file that does not open is named on standard error with the reason, and the others are still read. Exit status: 0 every file read, 1 one or more refused, 69 agent unavailable, 77 not a registered app.")

        @OptionGroup var host: HostOptions

        @Option(help: "The folder of the secure files.")
        var directory: String

        @Argument(help: "The files' names in the folder.")
        var names: [String]

        func run() throws {
            let session = try SecureFileCommand.open(host, directory: directory)
            var failed = 0
            for name in names {
                do {
                    var bytes = try session.broker.secureFiles(directory: directory).read(name)
                    FileHandle.standardOutput.write(Data(bytes + [0x0A]))
                    bytes.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
                } catch {
                    failed += 1
                    HostIO.error("sharebroker secure-file read: \(name): \(error)")
                }
            }
            _ = session.confirm(host)
            if failed > 0 { throw ExitCode(HostExit.nothing) }
        }
    }

    /// Attaches to the agent as this managed app, with `directory` as its secure-file folder, or
    /// exits with its failure.
    static func open(_ host: HostOptions, directory: String) throws -> HostSession {
        switch HostSession.open(host, secureFileDirectories: [directory]) {
        case .success(let session): return session
        case .failure(let failure):
            HostIO.error("sharebroker secure-file: \(failure)")
            throw ExitCode(failure.exitCode)
        }
    }
}
