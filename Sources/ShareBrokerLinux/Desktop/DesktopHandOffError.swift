import ShareBroker

/// Why the desktop adapter refused a hand-off or could not start the target. Every case is
/// raised before anything is started (except ``launchFailed(appID:reason:)``, raised when GIO
/// could not start an app the broker had decided on). Messages never hold a document's name or
/// content.
public enum DesktopHandOffError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The id is not a desktop app id (empty, too long, or holds characters other than letters,
    /// digits, `.`, `_` and `-`, or a `..`).
    case invalidAppID(String)
    /// No desktop entry of that id in `XDG_DATA_HOME`, `XDG_DATA_DIRS` or the Flatpak exports.
    case unknownApp(String)
    /// The entry exists but GLib cannot parse it.
    case unparsableEntry(appID: String, path: String, reason: String)
    /// The entry parses but has no `Exec` line, so nothing could start it.
    case noExec(appID: String, path: String)
    /// The entry parses but is not a launchable application (`Type` or a failing `TryExec`).
    case notLaunchable(appID: String, path: String)
    /// The entry is deleted (`Hidden=true`): the desktop treats it as not installed.
    case hiddenEntry(appID: String, path: String)
    /// The entry's `Exec` takes no URL (no `%u` or `%U`), so a URL cannot be handed to it.
    case cannotTakeURL(appID: String, path: String)
    /// The document name is empty, `.`/`..`, or holds `/` or NUL.
    case invalidDocumentName
    /// The document cannot be opened (vanished, unreadable, a link that dangles or was swapped
    /// in during the hand-off: `errno`).
    case documentUnreadable(errno: Int32)
    /// The document is in, or its path leads into, the broker's own hand-off folders.
    case documentInBrokerFolder
    /// The document is not a regular file (a FIFO, a device, a folder).
    case documentNotRegular
    /// No app handles the document's type (the "whatever the user picks" channel).
    case noHandlerForType(String)
    /// The app's runtime folder could not be made or is not private.
    case runtimeFolder(path: String, reason: String)
    /// Copying into the private copy failed (`errno`).
    case copyFailed(errno: Int32)
    /// GIO could not start the app.
    case launchFailed(appID: String, reason: String)
    /// The broker refused the request before deciding (bad name, outbox failure).
    case transfer(ShareBrokerError)

    public var description: String {
        switch self {
        case .invalidAppID(let id):
            "'\(id)' is not a desktop app id (reverse-DNS letters, digits, '.', '_' or '-', such as org.gnome.TextEditor)"
        case .unknownApp(let id) where id.hasSuffix(".desktop"):
            "no desktop entry \(id).desktop in XDG_DATA_HOME, XDG_DATA_DIRS or the Flatpak exports; give the desktop app id without '.desktop' (\(id.dropLast(8)))"
        case .unknownApp(let id):
            "no desktop entry \(id).desktop in XDG_DATA_HOME, XDG_DATA_DIRS or the Flatpak exports; install the app or check the id (ids match exactly, case included)"
        case .unparsableEntry(let id, let path, let reason):
            "the desktop entry of \(id) (\(path)) does not parse: \(reason); fix or reinstall it"
        case .noExec(let id, let path):
            "the desktop entry of \(id) (\(path)) has no Exec line, so nothing can start it; nothing was started"
        case .notLaunchable(let id, let path):
            "the desktop entry of \(id) (\(path)) is not a launchable application (check Type=Application and TryExec)"
        case .hiddenEntry(let id, let path):
            "the desktop entry of \(id) (\(path)) has Hidden=true: it is deleted, and the desktop treats the app as not installed; nothing was started"
        case .cannotTakeURL(let id, let path):
            "the desktop entry of \(id) (\(path)) takes files only (its Exec has no %u or %U), so it cannot open a URL; nothing was started"
        case .invalidDocumentName:
            "the document name must not be empty, '.' or '..', nor contain '/' or NUL; rename the document"
        case .documentUnreadable(let code):
            "cannot open the document (errno \(code)\(code == 2 ? ": it, or the file its link points to, does not exist" : code == 40 ? ": a symbolic link appeared on its path while it was handed over" : "")); nothing was handed over"
        case .documentInBrokerFolder:
            "the document is in, or links into, the broker's own hand-off folders (a copy handed to another app); hand over the original instead; nothing was handed over"
        case .documentNotRegular:
            "the document is not a regular file (a FIFO, device or folder); nothing was handed over"
        case .noHandlerForType(let type):
            "no app handles \(type) on this desktop; nothing was started"
        case .runtimeFolder(let path, let reason):
            "cannot use the app's runtime folder \(path): \(reason)"
        case .copyFailed(let code):
            "could not make the private copy (errno \(code)); check free space in XDG_RUNTIME_DIR"
        case .launchFailed(let id, let reason):
            "could not start \(id): \(reason)"
        case .transfer(let error):
            error.description
        }
    }
}
