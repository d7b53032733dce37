#if canImport(Glibc)
import Glibc
#endif
import ShareBroker

/// Why the Wayland pasteboard could not connect, copy or paste.
public enum WaylandPasteboardError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No Wayland compositor answered at `display` (`errno` `code`).
    case cannotConnect(display: String, code: Int32)
    /// The compositor does not offer the wlr data-control protocol (`zwlr_data_control_manager_v1`),
    /// or withdrew it.
    case noDataControl
    /// The compositor has no seat (or removed it), so there is no clipboard.
    case noSeat
    /// The primary selection needs data-control version 2; the compositor offers version 1.
    case noPrimarySelection
    /// The connection to the compositor broke (protocol or socket error `code`).
    case connectionLost(code: Int32)
    /// The pasteboard was closed.
    case closed
    /// The compositor did not answer in time.
    case timedOut(operation: String)
    /// A system call failed.
    case system(operation: String, code: Int32)

    public var description: String {
        switch self {
        case .cannotConnect(let display, let code):
            "could not connect to the Wayland compositor at \(display): \(String(cString: strerror(code))); check WAYLAND_DISPLAY and XDG_RUNTIME_DIR, or use the file pasteboard"
        case .noDataControl:
            "the Wayland compositor does not offer the wlr data-control protocol (zwlr_data_control_manager_v1); use a wlroots compositor (sway, ...) or the file pasteboard"
        case .noSeat:
            "the Wayland compositor has no seat, so there is no clipboard; use the file pasteboard"
        case .noPrimarySelection:
            "the compositor's data-control protocol is version 1, without the primary selection; govern the clipboard only"
        case .connectionLost(let code):
            "the connection to the Wayland compositor broke (error \(code)); create a new pasteboard once the compositor is back"
        case .closed:
            "the Wayland pasteboard was closed; create a new one"
        case .timedOut(let operation):
            "the Wayland compositor did not answer in time (\(operation)); nothing was changed on this side; try again"
        case .system(let operation, let code):
            "could not \(operation): \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}

/// The desktop clipboard of a Wayland session, through the wlr data-control protocol (what
/// `wl-clipboard` uses; sway and other wlroots compositors offer it).
///
/// The broker decides what is written (``ShareBroker/copy(_:fromWebView:)``); this adapter
/// decides how it is offered to the other clients of the compositor:
///
/// * **Clear items** (the Authorized policy): each item under its MIME types (UTF-8 text under
///   `text/plain;charset=utf-8`, `text/plain`, `UTF8_STRING`, `STRING`, `TEXT`; `public.html` as
///   `text/html`; `public.png` as `image/png`; MIME-type item types as themselves).
/// * **A sealed item** (SecureCopy): the envelope under `application/x-sharebroker-sealed` and
///   ``Configuration/placeholder`` under every text type; never the plaintext, and never a
///   clear item beside a sealed one.
/// * **Nothing written** (Unauthorized, secure services down): the selection is not touched;
///   its owner keeps it.
/// * **Serving** runs on a thread per reader, off the app's threads, writing non-blocking with
///   ``Configuration/transferTimeout``: a reader that stops reading is dropped, never waited for.
///   At most ``Configuration/maxConcurrentTransfers`` readers are served at once.
/// * **Paste** lists the offered types and reads the sealed envelope first (the broker opens it
///   when this app may), then the best text type; else one known or MIME type.
/// * **Retire** (``clear(ifChangeCount:)``) releases the selection only if this pasteboard
///   still owns it and nothing changed since.
/// * When the pasteboard is closed or the process exits, the compositor drops the selection:
///   nothing of it survives unless a clipboard manager copied it (then only what was offered).
///
/// Use one instance per selection: ``Selection/clipboard`` for copy and paste, and a second one
/// with ``Selection/primary`` where the app sets the primary (middle-click) selection, so it is
/// governed exactly like the clipboard.
public final class WaylandPasteboard: Pasteboard {
    /// Which selection of the seat a pasteboard governs.
    public enum Selection: Sendable, Hashable {
        /// The clipboard (copy and paste).
        case clipboard
        /// The primary selection (select and middle-click); needs data-control version 2.
        case primary
    }

    /// How the pasteboard connects and serves.
    public struct Configuration: Sendable, Hashable {
        /// The Wayland display: a socket name in `XDG_RUNTIME_DIR` or an absolute path; `nil`
        /// uses `WAYLAND_DISPLAY` (libwayland's rule).
        public var display: String?
        /// The selection governed.
        public var selection: Selection
        /// What text readers get in place of a sealed item (UTF-8).
        public var placeholder: String
        /// How long a request may wait for the compositor.
        public var requestTimeout: Duration
        /// How long a transfer (serving or reading) may wait for the other side to make progress.
        public var transferTimeout: Duration
        /// The most readers served at the same time; a reader beyond that gets no data.
        public var maxConcurrentTransfers: Int
        /// The largest representation a paste reads; a larger one reads as absent.
        public var maxReadSize: Int

        /// The placeholder of a policy that sets none.
        public static let defaultPlaceholder = "Your organization's data cannot be pasted here."

        /// Creates a configuration.
        public init(display: String? = nil, selection: Selection = .clipboard,
                    placeholder: String = Configuration.defaultPlaceholder,
                    requestTimeout: Duration = .seconds(5), transferTimeout: Duration = .seconds(5),
                    maxConcurrentTransfers: Int = 16, maxReadSize: Int = FilePasteboard.maxFileSize) {
            self.display = display
            self.selection = selection
            self.placeholder = placeholder
            self.requestTimeout = requestTimeout
            self.transferTimeout = transferTimeout
            self.maxConcurrentTransfers = maxConcurrentTransfers
            self.maxReadSize = maxReadSize
        }
    }

    /// The configuration it was made with.
    public let configuration: Configuration
    private let connection: WaylandConnection
    private let lastError = Locked<WaylandPasteboardError?>(nil)

    /// Connects to the compositor and binds the data-control protocol.
    /// - Throws: ``WaylandPasteboardError`` when there is no compositor, no data-control
    ///   protocol (or version 1 for the primary selection), or no seat.
    public init(configuration: Configuration = Configuration()) throws(WaylandPasteboardError) {
        self.configuration = configuration
        connection = try WaylandConnection(configuration: configuration)
    }

    deinit {
        connection.shutdown()
    }

    /// Disconnects now (the compositor drops a selection this pasteboard still owns). Later
    /// writes fail with ``WaylandPasteboardError/closed``.
    public func close() {
        connection.shutdown()
    }

    /// The connection (tests drive it directly to play a misbehaving reader).
    var connectionForTests: WaylandConnection { connection }

    /// The error of the last ``write(_:)`` or ``clear(ifChangeCount:)`` that failed; `nil` after
    /// one that succeeded.
    public var lastWriteError: WaylandPasteboardError? { lastError.withLock { $0 } }

    /// Sets the selection to `items` as described above (empty `items` releases it, if owned),
    /// returning the new change count once the compositor has processed it.
    /// - Throws: ``WaylandPasteboardError``; the selection is then unchanged by this call.
    @discardableResult
    public func setSelection(_ items: [PasteboardItem]) throws(WaylandPasteboardError) -> Int {
        let offers = WaylandRepresentations.offers(for: items, placeholder: Array(configuration.placeholder.utf8))
        return try connection.perform("set the selection", timeout: configuration.requestTimeout) { connection, completion in
            connection.setSelection(items, offers: offers, completion: completion)
        }
    }

    /// What the selection offers now, read as items: the sealed envelope first when offered, then
    /// the best text representation (or one other type). Empty when there is nothing readable.
    /// - Throws: ``WaylandPasteboardError`` when the compositor does not answer or is gone.
    public func readSelection() throws(WaylandPasteboardError) -> [PasteboardItem] {
        let reading: WaylandConnection.Reading = try connection.perform("list the offered types",
                                                                        timeout: configuration.requestTimeout) { connection, completion in
            connection.startReading(completion: completion)
        }
        switch reading {
        case .own(let items):
            return items
        case .transfers(let pipes):
            var items: [PasteboardItem] = []
            for pipe in pipes {
                let result = readAllAndClose(pipe.fd, limit: configuration.maxReadSize, idleTimeout: configuration.transferTimeout)
                if case .complete(let bytes) = result {
                    items.append(PasteboardItem(type: WaylandRepresentations.itemType(forMimeType: pipe.mimeType), bytes: bytes))
                }
            }
            return items
        }
    }

    // MARK: Pasteboard

    /// ``readSelection()`` and the change count; a failure reads as no items.
    public func read() -> (items: [PasteboardItem], changeCount: Int) {
        let items = (try? readSelection()) ?? []
        return (items, connection.changeCount)
    }

    /// ``setSelection(_:)``; on failure the change count is the unchanged one and
    /// ``lastWriteError`` says why.
    @discardableResult
    public func write(_ items: [PasteboardItem]) -> Int {
        do {
            let count = try setSelection(items)
            lastError.withLock { $0 = nil }
            return count
        } catch {
            lastError.withLock { $0 = error }
            return connection.changeCount
        }
    }

    /// Releases the selection if this pasteboard still owns it and its change count is
    /// `changeCount` (nobody, here or in another client, set it since).
    @discardableResult
    public func clear(ifChangeCount changeCount: Int) -> Bool {
        do {
            let cleared: Bool = try connection.perform("release the selection", timeout: configuration.requestTimeout) { connection, completion in
                connection.release(ifChangeCount: changeCount, completion: completion)
            }
            lastError.withLock { $0 = nil }
            return cleared
        } catch {
            lastError.withLock { $0 = error }
            return false
        }
    }
}
