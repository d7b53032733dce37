import ShareBrokerCrypto

/// What went wrong in a call on the library, and what to do about it: the one error type of the
/// broker's calls (the lifecycle, transfers, the clipboard and web views). A policy block is not
/// an error: it is a normal outcome of the call.
///
/// The platform adapters throw it too (a hand-over that failed, a key custodian without keys),
/// so one type says what went wrong wherever it happened; secure files throw
/// ``SecureFileError``, whose codes follow AppConnect's `ACError`.
public enum ShareBrokerError: Error, Sendable, Hashable, CustomStringConvertible {
    // MARK: Lifecycle

    /// ``ShareBroker/start(delegate:)`` has not been called. Call it first, once.
    case notStarted
    /// ``ShareBroker/start(delegate:)`` was called twice. Call it once per process.
    case alreadyStarted
    /// No policy has arrived yet. Wait for ``ShareBrokerDelegate/appConnectIsReady()``.
    case notReady
    /// The offline timers could not record a confirmation in their folder; `reason` names the
    /// operation, the path and the fix (make the folder writable, or free space).
    case offlineTimers(reason: String)

    /// ``ShareBroker/secureFiles(directory:maximumFileSize:)`` was asked for a folder that
    /// ``ShareBroker/Configuration/secureFileDirectories`` does not name. Add it to the
    /// configuration, so that a retire erases it.
    case secureFileDirectoryNotConfigured(String)

    // MARK: Transfers

    /// The document name is empty, `.`/`..`, or holds `/` or NUL; nothing was handed over
    /// (``ShareBroker/openIn(_:named:target:via:)``). Rename the document.
    case invalidDocumentName
    /// The file system refused the hand-over's write (`errno`); nothing was handed over. Check
    /// the outbox folder and free space.
    case handOverWriteFailed(path: String, errno: Int32)
    /// A platform adapter could not hand the file to the target app; `reason` says why and what
    /// to do (never the document's name or content).
    case handOffFailed(reason: String)
    /// The URL has no valid scheme (RFC 3986: a letter, then letters, digits, `+`, `-` or `.`,
    /// then `:`); nothing was opened. Pass a URL such as `mailto:...` or `sheets:...`.
    case missingScheme
    /// `http` and `https` URLs are web navigation, not transfers; nothing was opened. Decide them
    /// with the web view's ``ShareBroker/navigate(_:to:)``.
    case webScheme(String)

    // MARK: The clipboard

    /// The item is larger than `EnvelopeFormat/maxPlaintextSize`; nothing was written. Copy less.
    case itemTooLarge(size: Int, limit: Int)
    /// The item type is empty, longer than `EnvelopeFormat/maxItemTypeLength` bytes, or the
    /// library's own sealed type; nothing was written.
    case invalidItemType
    /// A copy of several representations gave none, more than 16 (the sealed set's limit,
    /// docs/FORMATS.md), or the same type twice; nothing was written.
    case invalidRepresentations(count: Int)
    /// The platform's pasteboard refused the write (`reason` is the adapter's error); the
    /// pasteboard keeps what it had. Try again, or check the pasteboard adapter.
    case pasteboardWriteFailed(reason: String)

    // MARK: Secure services (the key custodian)

    /// Secure services are unavailable (no keys delivered, or the keys were wiped): SecureCopy
    /// writes fail and nothing is written; pastes read unsecured content only.
    case secureServicesUnavailable
    /// The app with this bundle id is not entitled to the group's keys (never entitled, or
    /// revoked). Ids are matched exactly, never by prefix or case-insensitively.
    case notEntitled(String)

    // MARK: Web views

    /// No web view or container has this id. Declare it first
    /// (``WebViewHierarchy/declare(_:parent:policy:externalURLDelegate:)``).
    case unknownNode(String)
    /// The web-view handle was made by another ``WebViewHierarchy``. Use handles only with the
    /// hierarchy that returned them.
    case foreignHandle
    /// Putting web-view node `node` under `parent` would make a cycle: `parent` is `node` itself
    /// or lies in its subtree. The hierarchy is unchanged.
    case cycle(node: String, parent: String)
    /// The web-view hierarchy already holds the most nodes it can index (`Int32.max`). Nothing
    /// was added.
    case capacityExceeded

    public var description: String {
        switch self {
        case .notStarted: "the library has not been started; call start(delegate:) first"
        case .alreadyStarted: "the library was already started; call start(delegate:) once per process"
        case .notReady: "no policy has arrived yet; wait for appConnectIsReady before reading policies"
        case .offlineTimers(let reason): "the offline timers could not record the confirmation: \(reason)"
        case .secureFileDirectoryNotConfigured(let folder):
            "'\(folder)' is not one of the configuration's secure-file folders; add it to "
                + "ShareBroker.Configuration.secureFileDirectories, so that a retire erases it"
        case .invalidDocumentName:
            "the document name must not be empty, '.' or '..', nor contain '/' or NUL; rename the document"
        case .handOverWriteFailed(let path, let code):
            "could not write \(path) (errno \(code)); check that the outbox folder exists and is writable"
        case .handOffFailed(let reason):
            reason
        case .secureServicesUnavailable:
            "secure services are unavailable; SecureCopy writes fail until keys are delivered"
        case .notEntitled(let appID):
            "the app '\(appID)' is not entitled to the group's keys; entitle it with the key custodian"
        case .missingScheme: URLRequestError.missingScheme.description
        case .webScheme(let scheme): URLRequestError.webScheme(scheme).description
        case .itemTooLarge(let size, let limit):
            "the item is \(size) bytes, more than the \(limit)-byte limit; nothing was written"
        case .invalidItemType:
            "the item type must be 1 to \(EnvelopeFormat.maxItemTypeLength) bytes of UTF-8; nothing was written"
        case .invalidRepresentations(let count):
            "a copy carries 1 to \(SealedSet.maxEnvelopes) representations of distinct types (this one had \(count)); nothing was written"
        case .pasteboardWriteFailed(let reason):
            "the pasteboard refused the write (\(reason)); nothing was written"
        case .unknownNode(let id):
            "no web view or container has the id '\(id)'; declare it before asking about it"
        case .foreignHandle:
            "the web-view handle belongs to another hierarchy; use handles only with the hierarchy that returned them"
        case .cycle(let node, let parent):
            "putting '\(node)' under '\(parent)' would make a cycle ('\(parent)' is '\(node)' or lies under it); "
                + "the hierarchy is unchanged: move '\(parent)' out of the subtree first or choose another parent"
        case .capacityExceeded:
            "the web-view hierarchy is full (\(Int32.max) nodes); nothing was added"
        }
    }
}
