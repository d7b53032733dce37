import ShareBroker
import Synchronization

/// The desktop's `URLOpener`: a scheme's handler is the desktop's `x-scheme-handler/<scheme>`
/// association (GIO's default, as `xdg-mime query default` answers; `mailto:` included), and an
/// allowed URL starts that desktop entry with it.
///
/// ``ShareBroker/openURL(_:)`` cannot fail once decided, so a launch that fails is recorded
/// here (``failures``) and passed to `onFailure`; the URL itself is never logged.
public final class DesktopURLOpener: URLOpener, SchemeAssociating {
    /// A URL the desktop could not open.
    public struct Failure: Sendable, Hashable {
        /// The handler's app id.
        public var handler: String
        /// Why.
        public var error: DesktopHandOffError
    }

    /// The desktop: GIO unless a test gives another.
    public let desktop: any DesktopApps
    private let failed = Mutex<[Failure]>([])
    private let opened = Mutex<[String]>([])
    private let onFailure: (@Sendable (Failure) -> Void)?

    /// Opens URLs on `desktop`.
    public init(desktop: any DesktopApps = GIODesktop(), onFailure: (@Sendable (Failure) -> Void)? = nil) {
        self.desktop = desktop
        self.onFailure = onFailure
    }

    package func association(forScheme scheme: String) -> SchemeAssociation {
        desktop.handler(forScheme: scheme).map(SchemeAssociation.app) ?? .none
    }

    public func open(_ url: String, in handler: String) {
        do throws(DesktopHandOffError) {
            let entry = try desktop.entry(for: handler)
            try desktop.launch(entry, uri: url)
            opened.withLock { $0.append(handler) }
        } catch {
            let failure = Failure(handler: handler, error: error)
            failed.withLock { $0.append(failure) }
            onFailure?(failure)
        }
    }

    /// Every launch that failed, in order.
    public var failures: [Failure] { failed.withLock { $0 } }
    /// The handlers started so far, in order.
    public var started: [String] { opened.withLock { $0 } }
}
