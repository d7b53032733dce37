import Synchronization

/// Shows a message to the user on the app's behalf: AppConnect's `displayMessage:` development
/// aid, where the management client displays the authorization message while the app cannot.
public protocol MessagePresenter: Sendable {
    /// Displays `message`; returns whether it was shown.
    func display(_ message: String) -> Bool
}

/// The embedded default ``MessagePresenter``: records the messages, in order, and reports them shown.
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
