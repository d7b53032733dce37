import ShareBroker

/// The embedded default `ServerReportSink`: records everything in memory, in order.
public final class RecordingReportSink: ServerReportSink {
    private let state = Mutex<([AcknowledgmentRecord], [BlockedAttemptRecord], [WipeReport])>(([], [], []))

    /// Creates an empty sink.
    public init() {}

    /// Records an acknowledgment.
    package func acknowledged(_ record: AcknowledgmentRecord) {
        state.withLock { $0.0.append(record) }
    }

    /// Records a blocked attempt.
    package func blockedAttempt(_ record: BlockedAttemptRecord) {
        state.withLock { $0.1.append(record) }
    }

    /// Records a wipe report.
    package func wiped(_ report: WipeReport) {
        state.withLock { $0.2.append(report) }
    }

    /// Every wipe report so far, in order.
    package var wipeReports: [WipeReport] { state.withLock { $0.2 } }

    /// Every acknowledgment so far, in order.
    package var acknowledgments: [AcknowledgmentRecord] { state.withLock { $0.0 } }

    /// Every blocked attempt so far, in order.
    package var blockedAttempts: [BlockedAttemptRecord] { state.withLock { $0.1 } }

    private let warned = Mutex<[WarnedAttemptRecord]>([])

    /// Records a warned attempt.
    package func warnedAttempt(_ record: WarnedAttemptRecord) {
        warned.withLock { $0.append(record) }
    }

    /// Every warned attempt so far, in order.
    package var warnedAttempts: [WarnedAttemptRecord] { warned.withLock { $0 } }
}
