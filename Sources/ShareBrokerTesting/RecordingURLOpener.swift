import ShareBroker

/// The embedded default `URLOpener`: records what was opened, in order.
public final class RecordingURLOpener: URLOpener {
    private let opened = Mutex<[(url: String, handler: String)]>([])

    /// Creates an empty recorder.
    public init() {}

    public func open(_ url: String, in handler: String) {
        opened.withLock { $0.append((url, handler)) }
    }

    /// Every URL opened so far, with its handler.
    public var openedURLs: [(url: String, handler: String)] { opened.withLock { $0 } }
}
