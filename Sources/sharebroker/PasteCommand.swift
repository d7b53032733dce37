import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentClient
import ShareBrokerLinux

/// `sharebroker paste`: the host pasteboard's first readable item to standard output. Clear
/// items read for anyone, agent or not; sealed items only for a managed app the agent gave the
/// keys to.
struct PasteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paste",
        abstract: "Write the host pasteboard's item to standard output (sealed items only for managed apps holding the keys).",
        discussion: """
            Exit status: 0 printed; 1 nothing readable (empty, or sealed and this process may not \
            open it); 74 the pasteboard could not be read: no display or compositor, an owner that \
            did not answer, a sealed item whose transfer broke (cut short or malformed: never read as \
            the placeholder), or --primary on the file pasteboard. Without the agent (down, or this \
            is not a registered app) it says so on standard error and reads clear items only.
            """)

    @OptionGroup var host: HostOptions

    @Flag(help: "Act as an unmanaged process: do not ask the agent for keys.")
    var unmanaged = false

    @Flag(help: "Read the primary selection (what was last selected; middle-click pastes it) instead of the clipboard. X11 and Wayland only.")
    var primary = false

    @Flag(help: "For a sealed item, also write the app that sealed it and when (Unix seconds) to standard error.")
    var origin = false

    func run() throws {
        let selection: DesktopPasteboard.Selection = primary ? .primary : .clipboard
        var item: PasteboardItem?
        var sealedOnBoard = false
        if unmanaged {
            let read = try Self.read(try HostSession.hostPasteboard(host), selection)
            sealedOnBoard = read.items.contains { $0.type == PasteboardItem.sealedType }
            item = PasteboardReader.readable(read.items, keyRing: nil)
        } else {
            switch HostSession.open(host) {
            case .success(let session):
                let read: (items: [PasteboardItem], changeCount: Int)
                do {
                    read = try Self.read(session.pasteboard, selection)
                } catch {
                    _ = session.confirm(host)
                    throw error
                }
                sealedOnBoard = read.items.contains { $0.type == PasteboardItem.sealedType }
                let pasted = session.broker.paste(from: read.items, changeCount: read.changeCount)
                item = pasted?.item
                if origin, let pasted, pasted.wasSealed {
                    HostIO.error("sharebroker paste: sealed by \(pasted.sealer.map { $0.isEmpty ? "(unnamed)" : $0 } ?? "(version 1 item: unknown)")"
                                 + " at \(pasted.sealedAt.map(String.init) ?? "(unknown)")")
                }
                _ = session.confirm(host)
            case .failure(let failure):
                HostIO.error("sharebroker paste: \(failure); reading clear items only")
                let read = try Self.read(try HostSession.hostPasteboard(host), selection)
                sealedOnBoard = read.items.contains { $0.type == PasteboardItem.sealedType }
                item = PasteboardReader.readable(read.items, keyRing: nil)
            }
        }
        guard let item else {
            let what = primary ? "the primary selection" : "the pasteboard"
            HostIO.error("sharebroker paste: nothing readable on \(what) "
                         + (sealedOnBoard ? "(a sealed item this process may not open, or one that is forged or broken)" : "(empty)"))
            throw ExitCode(HostExit.nothing)
        }
        FileHandle.standardOutput.write(Data(item.bytes))
    }

    /// `selection` of `pasteboard`, or exit 74 saying why it could not be read.
    static func read(_ pasteboard: DesktopPasteboard, _ selection: DesktopPasteboard.Selection) throws -> (items: [PasteboardItem], changeCount: Int) {
        do {
            return try pasteboard.read(selection)
        } catch {
            HostIO.error("sharebroker paste: \(error)")
            throw ExitCode(HostExit.ioError)
        }
    }
}
