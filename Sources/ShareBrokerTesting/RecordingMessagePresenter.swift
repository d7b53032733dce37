import ShareBroker

/// A ``MessagePresenter`` for tests: records the messages, in order, and reports them shown.
public final class RecordingMessagePresenter: MessagePresenter {
    private let messages = Mutex<[String]>([])

    /// Creates an empty recorder.
    public init() {}

    public func display(_ message: String) -> Bool {
        messages.withLock { $0.append(message) }
        return true
    }

    /// Every message displayed so far.
    public var displayed: [String] { messages.withLock { $0 } }
}
