import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentClient

/// `sharebroker status`: who the agent says this process is, its policy, secure services, and
/// what is on the host pasteboard (types and sizes only).
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show who the agent identifies this process as, its policy, secure services and the host pasteboard.",
        discussion: "Exit status: 0 a managed app, 69 agent unavailable, 77 not a registered app.")

    @OptionGroup var host: HostOptions

    func run() throws {
        let pasteboard = try HostSession.pasteboard(host)
        let (items, changeCount) = pasteboard.read()
        let board = items.isEmpty ? "empty" : items.map { item in
            item.type == PasteboardItem.sealedType ? "sealed item (\(item.bytes.count) bytes)" : "\(item.type) (\(item.bytes.count) bytes)"
        }.joined(separator: ", ")
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        switch HostSession.open(host) {
        case .failure(let failure):
            HostIO.out("process: pid \(getpid()), \(executable)")
            HostIO.out("agent: \(failure)")
            HostIO.out("pasteboard: change \(changeCount), \(board)")
            throw ExitCode(failure.exitCode)
        case .success(let session):
            let snapshot = session.broker.currentSnapshot
            HostIO.out("app: \(session.welcome.app) (pid \(session.welcome.peer.pid), uid \(session.welcome.peer.uid), \(session.welcome.peer.executable ?? executable))")
            HostIO.out("policy: push \(session.welcome.push), auth \(snapshot.authState), pasteboard \(snapshot.pasteboardPolicy), openIn \(snapshot.openInPolicy)"
                       + (snapshot.openInPolicy == .whitelist ? " [\(snapshot.openInWhitelist.sorted().joined(separator: ", "))]" : ""))
            let keys = (try? session.client.keyRing(for: session.welcome.app)).map { ring in
                ring.keyIDs.map(HostIO.hex).joined(separator: ", ")
            }
            let fileKeys = (try? session.client.fileKeys(for: session.welcome.app)).map { keys in
                "; file keys \(keys.keyIDs.map(HostIO.hex).joined(separator: ", ")) (this app's own)"
            }
            HostIO.out("secure services: \(session.client.availability == .available ? "available" : "unavailable")"
                       + (keys.map { ", keys \($0)" } ?? ", no keys") + (fileKeys ?? ""))
            HostIO.out("pasteboard: change \(changeCount), \(board)")
            _ = session.confirm(host)
        }
    }
}
