import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentClient

/// `sharebroker paste`: the host pasteboard's first readable item to standard output. Clear
/// items read for anyone, agent or not; sealed items only for a managed app the agent gave the
/// keys to.
struct PasteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paste",
        abstract: "Write the host pasteboard's item to standard output (sealed items only for managed apps holding the keys).",
        discussion: "Exit status: 0 printed, 1 nothing readable (empty, or sealed and this process has no keys).")

    @OptionGroup var host: HostOptions

    @Flag(help: "Act as an unmanaged process: do not ask the agent for keys.")
    var unmanaged = false

    @Flag(help: "For a sealed item, also write the app that sealed it and when (Unix seconds) to standard error.")
    var origin = false

    func run() throws {
        var item: PasteboardItem?
        if unmanaged {
            item = PasteboardReader.readable(try HostSession.hostPasteboard(host).pasteboard.read().items, keyRing: nil)
        } else {
            switch HostSession.open(host) {
            case .success(let session):
                let pasted = session.broker.pasteWithOrigin()
                item = pasted?.item
                if origin, let pasted, pasted.wasSealed {
                    HostIO.error("sharebroker paste: sealed by \(pasted.sealer.map { $0.isEmpty ? "(unnamed)" : $0 } ?? "(version 1 item: unknown)")"
                                 + " at \(pasted.sealedAt.map(String.init) ?? "(unknown)")")
                }
                _ = session.confirm(host)
            case .failure(let failure):
                HostIO.error("sharebroker paste: \(failure); reading clear items only")
                item = PasteboardReader.readable(try HostSession.hostPasteboard(host).pasteboard.read().items, keyRing: nil)
            }
        }
        guard let item else {
            HostIO.error("sharebroker paste: nothing readable on the pasteboard (empty, or sealed for managed apps)")
            throw ExitCode(HostExit.nothing)
        }
        FileHandle.standardOutput.write(Data(item.bytes))
    }
}
