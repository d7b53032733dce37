import ArgumentParser
import Foundation
import ShareBroker
import ShareBrokerAgentClient
import ShareBrokerCrypto

/// `sharebroker copy`: standard input to the host pasteboard, through the broker: the agent
/// identifies this process, its pasteboard policy decides (clear, sealed, or nothing), and a
/// blocked copy is audited by the agent.
struct CopyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy standard input to the host pasteboard as this app's policy says (clear, SecureCopy, or nothing).",
        discussion: """
            Prints one line: `copied sealed CHANGE`, `copied clear CHANGE`, or `blocked RULE` (nothing \
            written). With --pasteboard x11 the item is served by this process: it is handed to a \
            running clipboard manager (SAVE_TARGETS), or else served until another app copies; with \
            --pasteboard wayland it is served until another app copies. Exit status: 0 copied, 3 blocked, 69 agent unavailable, 77 not a registered app \
            (nothing written in both cases), 74 the pasteboard could not be written, 75 the agent did not \
            confirm the audit record of a blocked copy.
            """)

    @OptionGroup var host: HostOptions

    @Option(help: "The item type.")
    var type: String = PasteboardItem.textType

    @Flag(help: "Act as an unmanaged process: write in the clear without asking the agent (any process can).")
    var unmanaged = false

    @Option(help: ArgumentHelp("When the policy warns (issue 33), play the user: proceed or cancel. Without it a warned copy is blocked (no handler).",
                               valueName: "proceed|cancel"))
    var answer: String?

    @Option(help: "With --answer proceed: the reason code the user picks.")
    var reason: String?

    @Option(help: "With --answer proceed: the user's own text.")
    var text: String?

    func run() throws {
        let bytes = HostIO.readStandardInput(limit: EnvelopeFormat.maxPlaintextSize)
        guard bytes.count <= EnvelopeFormat.maxPlaintextSize else {
            HostIO.error("sharebroker copy: the input is over \(EnvelopeFormat.maxPlaintextSize) bytes; nothing was written")
            throw ExitCode(HostExit.ioError)
        }
        let item = PasteboardItem(type: type, bytes: bytes)
        if unmanaged {
            let pasteboard = try HostSession.hostPasteboard(host)
            let count: Int
            do {
                count = try pasteboard.pasteboard.write([item])
            } catch {
                HostIO.error("sharebroker copy: \(error); nothing was written")
                throw ExitCode(HostExit.ioError)
            }
            HostIO.out("copied clear \(count)")
            pasteboard.holdAfterCopy()
            return
        }
        let session: HostSession
        switch HostSession.open(host) {
        case .success(let opened): session = opened
        case .failure(let failure):
            HostIO.error("sharebroker copy: \(failure); nothing was written")
            throw ExitCode(failure.exitCode)
        }
        if let answer {
            try copyAnswering(item, answer: answer, session: session)
            return
        }
        let result: CopyResult
        do {
            result = try session.broker.copyResult(item)
        } catch {
            HostIO.error("sharebroker copy: \(error)")
            _ = session.confirm(host)
            throw ExitCode(HostExit.ioError)
        }
        switch result.action {
        case .writeClear, .writeSealed:
            let confirmed = session.confirm(host)
            HostIO.out("copied \(result.action == .writeSealed ? "sealed" : "clear") \(session.pasteboard.pasteboard.read().changeCount)")
            session.pasteboard.holdAfterCopy()
            if !confirmed { throw ExitCode(HostExit.unconfirmed) }
        case .blocked:
            let confirmed = session.confirm(host)
            HostIO.out("blocked \(result.decision.rule.rawValue)")
            HostIO.error("sharebroker copy: blocked by the policy (\(result.decision.rule.rawValue)); nothing was written" +
                         (confirmed ? "; the agent logged the attempt" : ""))
            throw ExitCode(confirmed ? HostExit.blocked : HostExit.unconfirmed)
        }
    }

    /// A copy that may warn, with the user played by `answer` (answered at once, from another
    /// thread, as a dialog would). Prints `warned OUTCOME` before the usual line.
    private func copyAnswering(_ item: PasteboardItem, answer: String, session: HostSession) throws {
        let played: WarnAnswer
        switch answer {
        case "proceed": played = .proceed(reasonCode: reason, text: text)
        case "cancel":
            guard reason == nil, text == nil else {
                HostIO.error("sharebroker copy: --reason and --text go only with --answer proceed; nothing was written")
                throw ExitCode(HostExit.usage)
            }
            played = .cancel
        default:
            HostIO.error("sharebroker copy: --answer takes proceed or cancel, not '\(answer)'; nothing was written")
            throw ExitCode(HostExit.usage)
        }
        session.broker.setWarnAsker { ticket in
            Thread.detachNewThread { ticket.answer(played) }
        }
        let copied: WarnedCopy
        do {
            copied = try session.broker.copyWaitingForAnswer(item)
        } catch {
            HostIO.error("sharebroker copy: \(error)")
            _ = session.confirm(host)
            throw ExitCode(HostExit.ioError)
        }
        let confirmed = session.confirm(host)
        // The usual line first (the agent demo reads it to know a copy serves the clipboard).
        switch copied.action {
        case .writeClear, .writeSealed:
            HostIO.out("copied \(copied.action == .writeSealed ? "sealed" : "clear") \(session.pasteboard.pasteboard.read().changeCount)")
            if let outcome = copied.outcome { HostIO.out("warned \(outcome.rawValue)") }
            session.pasteboard.holdAfterCopy()
            if !confirmed { throw ExitCode(HostExit.unconfirmed) }
        case .blocked:
            HostIO.out("blocked \(copied.outcome.map { "warned \($0.rawValue)" } ?? copied.decision?.rule.rawValue ?? "")")
            HostIO.error("sharebroker copy: blocked; nothing was written" + (confirmed ? "; the agent logged the attempt" : ""))
            throw ExitCode(confirmed ? HostExit.blocked : HostExit.unconfirmed)
        }
    }
}
