/// What a refused transfer attempted, as the audit log names it (the raw value is the name the
/// server and the agent's log receive).
package enum TransferAction: String, Sendable, Hashable, CaseIterable {
    /// A copy to the general pasteboard (``ShareBroker/copy(_:fromWebView:)-(PasteboardItem,_)``,
    /// or a toolkit's copy a hook saw).
    case copy
    /// A paste from the general pasteboard.
    case paste
    /// A document handed to another app (``ShareBroker/openIn(_:named:target:via:)``).
    case openIn
    /// A URL opened in another app (``ShareBroker/openURL(_:)``).
    case openURL
    /// The in-app mail composer (``ShareBroker/composeMail()``).
    case composeMail
    /// Printing (``ShareBroker/print()``).
    case print
    /// A drop onto another app (``ShareBroker/dragAndDrop(to:)``).
    case dragAndDrop
    /// A document received from another app (``ShareBroker/openFrom(_:source:)``).
    case openFrom
    /// A notification's text (``ShareBroker/notification(title:body:)``).
    case notification
}

/// A transfer the broker refused, as the server's audit log receives it. Never carries content.
package struct BlockedAttemptRecord: Sendable, Hashable {
    /// What was attempted.
    package var action: TransferAction
    /// The app the transfer was headed to, when known.
    package var target: String?
    /// The rule that refused it (a ``DecisionRule`` raw value; for a sealed item refused on paste,
    /// `sealedItemForged`, `sealedItemTooOld`, `sealedItemFromTheFuture` or `sealedItemBroken`).
    package var rule: String
    /// The snapshot generation the decision read.
    package var generation: UInt64

    /// Creates a record.
    package init(action: TransferAction, target: String?, rule: String, generation: UInt64) {
        self.action = action
        self.target = target
        self.rule = rule
        self.generation = generation
    }
}

/// Where the library reports to the management server: acknowledgments and blocked attempts.
///
/// The embedded default, `RecordingReportSink`, keeps them in memory. A host process plugs in
/// a sink that forwards them to the real server (or to the agent).
package protocol ServerReportSink: Sendable {
    /// The app acknowledged a policy change.
    func acknowledged(_ record: AcknowledgmentRecord)
    /// The broker refused a transfer.
    func blockedAttempt(_ record: BlockedAttemptRecord)
    /// A retire wiped the app: what was erased and what could not be.
    func wiped(_ report: WipeReport)
    /// A warned attempt ended (issue 33): one record per attempt, never content.
    func warnedAttempt(_ record: WarnedAttemptRecord)
}

extension ServerReportSink {
    /// A sink that knows no warned records gets each as a blocked attempt whose rule names the
    /// outcome (`warn-proceeded`, `warn-cancelled`...): the audit never loses one.
    package func warnedAttempt(_ record: WarnedAttemptRecord) {
        blockedAttempt(BlockedAttemptRecord(action: record.exit.transferAction, target: record.target,
                                            rule: "warn-" + record.outcome.rawValue, generation: record.generation))
    }
}

extension WarnExit {
    /// The audit's name of the transfer.
    package var transferAction: TransferAction {
        switch self {
        case .copy: .copy
        case .openIn: .openIn
        case .print: .print
        case .dragAndDrop: .dragAndDrop
        }
    }
}
