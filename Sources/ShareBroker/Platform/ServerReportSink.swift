/// A transfer the broker refused, as the server's audit log receives it. Never carries content.
package struct BlockedAttemptRecord: Sendable, Hashable {
    /// What was attempted: `openIn`, `openURL`, `composeMail`, `print`, `dragAndDrop`, `copy`.
    package var action: String
    /// The app the transfer was headed to, when known.
    package var target: String?
    /// The rule that refused it (a ``DecisionRule`` raw value; for a sealed item refused on paste,
    /// `sealedItemForged`, `sealedItemTooOld` or `sealedItemFromTheFuture`).
    package var rule: String
    /// The snapshot generation the decision read.
    package var generation: UInt64

    /// Creates a record.
    package init(action: String, target: String?, rule: String, generation: UInt64) {
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
}
