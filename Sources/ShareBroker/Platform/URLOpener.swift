import Synchronization

/// How the platform opens a URL in another app, once the broker has allowed it.
public protocol URLOpener: Sendable {
    /// Opens `url` in the app `handler`.
    func open(_ url: String, in handler: String)
}

/// The embedded default ``URLOpener``: records what was opened, in order.
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
