import Logging
import Synchronization

/// The library a managed app links: it receives the server's policies, tells the app about
/// every change, and mediates every outbound transfer.
///
/// ```swift
/// let broker = ShareBroker(appID: "com.acme.notes", platform: try .embedded(entitling: "com.acme.notes"))
/// try broker.start(delegate: myDelegate)
/// // ... the server channel calls broker.apply(update) ...
/// let result = try broker.openIn(document, target: "com.acme.viewer", via: .documentInteraction)
/// ```
///
/// Every decision reads one immutable ``PolicySnapshot``; updates swap the whole snapshot.
public final class ShareBroker: Sendable {
    /// This app's bundle id.
    public let appID: String
    /// The platform adapters.
    public let platform: Platform
    /// The app's viewers (containers and web views) and their web-view policies.
    public let webViews = WebViewHierarchy()
    /// The current policy snapshot; only the lifecycle writes it.
    let store: PolicyStore
    /// Serializes updates; held while callbacks run.
    let lifecycle = Mutex(LifecycleState())
    private let delegateSlot = Mutex<(any ShareBrokerDelegate)?>(nil)
    /// The pasteboard change count of this app's last write, so a retire can take back what it wrote.
    let lastPasteboardWrite = Mutex<Int?>(nil)
    private let baseLogger: Logger

    /// Creates the library for `appID`; it is not started and not ready.
    ///
    /// - Parameters:
    ///   - appID: this app's bundle id.
    ///   - manifest: the app's static settings.
    ///   - device: the other apps on the device, as known at start.
    ///   - platform: the adapters; ``Platform/embedded(entitling:)`` keeps everything in memory.
    public init(appID: String, manifest: AppManifest = AppManifest(), device: DeviceApps = DeviceApps(),
                platform: Platform) {
        self.appID = appID
        self.platform = platform
        self.store = PolicyStore(initial: .initial(manifest: manifest, device: device,
                                                   secureServices: platform.secureServices.availability))
        self.baseLogger = Logger(label: "sharebroker")
    }

    /// Starts the library. It becomes ready when the first policy arrives (``apply(_:)``).
    public func start(delegate: any ShareBrokerDelegate) throws(ShareBrokerError) {
        try lifecycle.withLock { (state: inout LifecycleState) throws(ShareBrokerError) in
            guard !state.started else { throw .alreadyStarted }
            state.started = true
            delegateSlot.withLock { $0 = delegate }
        }
    }

    /// The delegate, taken without the update lock so transfers made from callbacks never wait on it.
    var delegate: (any ShareBrokerDelegate)? { delegateSlot.withLock { $0 } }

    /// The policies in force. Throws ``ShareBrokerError/notReady`` before the first policy.
    public func policy() throws(ShareBrokerError) -> PolicySnapshot {
        let snapshot = store.snapshot
        guard snapshot.isReady else { throw .notReady }
        return snapshot
    }

    /// The snapshot in force, ready or not. Decisions use this; apps should use ``policy()``.
    public var currentSnapshot: PolicySnapshot { store.snapshot }

    /// The library's logger, at the level the policy sets. It never logs payloads or keys.
    var logger: Logger {
        var logger = baseLogger
        logger.logLevel = store.snapshot.logLevel.loggerLevel
        return logger
    }
}

extension LogLevel {
    /// The swift-log level that corresponds to this AppConnect level.
    public var loggerLevel: Logger.Level {
        switch self {
        case .error: .error
        case .warning: .warning
        case .status: .notice
        case .info: .info
        case .verbose: .debug
        case .debug: .trace
        }
    }
}
