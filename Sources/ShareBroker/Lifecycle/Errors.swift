/// What went wrong in the library's lifecycle, and what to do about it.
public enum ShareBrokerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// ``ShareBroker/start(delegate:)`` has not been called. Call it first, once.
    case notStarted
    /// ``ShareBroker/start(delegate:)`` was called twice. Call it once per process.
    case alreadyStarted
    /// No policy has arrived yet. Wait for ``ShareBrokerDelegate/appConnectIsReady()``.
    case notReady
    /// The offline timers could not record a confirmation in their folder; `reason` names the
    /// operation, the path and the fix (make the folder writable, or free space).
    case offlineTimers(reason: String)

    public var description: String {
        switch self {
        case .notStarted: "the library has not been started; call start(delegate:) first"
        case .alreadyStarted: "the library was already started; call start(delegate:) once per process"
        case .notReady: "no policy has arrived yet; wait for appConnectIsReady before reading policies"
        case .offlineTimers(let reason): "the offline timers could not record the confirmation: \(reason)"
        }
    }
}

/// Why a transfer could not be carried out at all (as opposed to being blocked by policy,
/// which is a normal outcome).
public enum TransferError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The hand-over could not be written; nothing was handed over.
    case outbox(OutboxError)
    /// The URL has no valid scheme (RFC 3986: a letter, then letters, digits, `+`, `-` or `.`,
    /// then `:`); nothing was opened. Pass a URL such as `mailto:...` or `sheets:...`.
    case missingScheme
    /// `http` and `https` URLs are web navigation, not transfers; nothing was opened. Decide them
    /// with the web view's ``ShareBroker/navigate(_:to:)``.
    case webScheme(String)

    public var description: String {
        switch self {
        case .outbox(let e): e.description
        case .missingScheme: URLRequestError.missingScheme.description
        case .webScheme(let scheme): URLRequestError.webScheme(scheme).description
        }
    }
}
