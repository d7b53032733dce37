#if canImport(Glibc)
import Glibc
#endif
import ShareBroker

/// Why the Wayland pasteboard could not connect, copy or paste.
public enum WaylandPasteboardError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No Wayland compositor answered at `display` (`errno` `code`).
    case cannotConnect(display: String, code: Int32)
    /// The compositor offers neither data-control protocol (`ext_data_control_manager_v1`,
    /// `zwlr_data_control_manager_v1`), or withdrew it: GNOME's mutter offers none, and sway 1.9+
    /// and Hyprland hide them from sandboxed clients.
    case noDataControl
    /// The compositor has no seat (or removed it), so there is no clipboard.
    case noSeat
    /// The connection to the compositor broke (protocol or socket error `code`).
    case connectionLost(code: Int32)
    /// The pasteboard was closed.
    case closed
    /// The compositor did not answer in time.
    case timedOut(operation: String)
    /// The items cannot be offered (a sealed item mixed with clear ones, too many sealed ones,
    /// or no type to offer them under).
    case unsupportedItems(String)
    /// A system call failed.
    case system(operation: String, code: Int32)
    /// The owner's sealed set (SecureCopy) arrived cut short, late, too large, or does not decode
    /// (`why`); nothing was pasted, not even the placeholder. Copy the item again in the app that
    /// owns it.
    case sealedSetBroken(String)

    public var description: String {
        switch self {
        case .cannotConnect(let display, let code):
            "could not connect to the Wayland compositor at \(display): \(String(cString: strerror(code))); check WAYLAND_DISPLAY and XDG_RUNTIME_DIR, or use --pasteboard file"
        case .noDataControl:
            "the Wayland compositor offers no data-control protocol (neither ext_data_control_manager_v1 nor zwlr_data_control_manager_v1: "
                + "GNOME offers none, a sandbox may hide them), so this process cannot use the Wayland clipboard; "
                + "with DISPLAY set the X11 clipboard works through Xwayland (--pasteboard x11, the default then), else use --pasteboard file"
        case .noSeat:
            "the Wayland compositor has no seat, so there is no clipboard; use --pasteboard file"
        case .connectionLost(let code):
            "the connection to the Wayland compositor broke (error \(code)); the clipboard is no longer served (restart the app)"
        case .closed:
            "the Wayland pasteboard was closed; create a new one"
        case .timedOut(let operation):
            "the Wayland compositor did not answer in time (\(operation)); try again"
        case .unsupportedItems(let why):
            "the items cannot be offered on the Wayland clipboard: \(why); nothing was written"
        case .system(let operation, let code):
            "could not \(operation): \(String(cString: strerror(code))) (errno \(code))"
        case .sealedSetBroken(let why):
            "the clipboard transfer broke: \(why); nothing was pasted, not even the placeholder (copy it again in the app that owns it)"
        }
    }
}

/// The Wayland clipboard as the general `Pasteboard`: the seat's clipboard and primary
/// selections through a data-control protocol (what `wl-clipboard` uses): the standard
/// `ext_data_control_manager_v1` when the compositor offers it (KDE Plasma 6.5, wlroots 0.19),
/// else wlr's `zwlr_data_control_manager_v1` (sway, KWin 5.27; ``dataControlProtocol`` says which).
/// GNOME offers neither (``WaylandPasteboardError/noDataControl``: use the X11 adapter through
/// Xwayland there). It behaves as ``X11Pasteboard`` does:
///
/// * **Copy** (``write(_:)``, called by the broker after its policy decision) sets the
///   clipboard and the primary selection (a managed app's selection is offered exactly like its
///   copies) to a source this adapter serves: clear items under their MIME types, or a sealed
///   (SecureCopy) copy as the ``SealedSet`` under ``SealedSet/targetName`` plus the placeholder
///   under every text type, never the plaintext (``DesktopOffer``), with the clipboard-manager secret hint. Nothing the broker
///   blocks reaches this adapter, so the previous owner keeps the clipboard.
/// * **Serving** runs off the app's threads: the compositor hands the adapter a pipe per reader
///   and a thread of its own writes it, non-blocking, giving up after
///   ``Configuration/transferTimeout`` without progress: a reader that stops reading is
///   dropped, never waited for. At most ``Configuration/maxConcurrentTransfers`` at once.
/// * **Paste** (``read()``) lists the offered types and reads the sealed set and the best text
///   type, each bounded by ``Configuration/maxReadSize``, ``Configuration/readTimeout`` without
///   progress and ``Configuration/maxReadDuration`` in all; a sealed set reads as its sealed items followed by the clear text (the
///   placeholder), so the broker opens it if this app may and otherwise pastes what any other
///   app would; without a sealed set, the text, else `text/html`, `image/png` or `image/jpeg`.
///   While this app owns the clipboard it reads its own offer without a round trip.
/// * **Change count**: bumped by this adapter's writes and releases and each time another
///   client sets the clipboard.
/// * **Retire** (``clear(ifChangeCount:)``) releases both selections if this app still owns them
///   and nobody copied since.
/// * **Exit**: the compositor drops the selections of a client that disconnects (``close()``);
///   a clipboard manager that copied them keeps only what was offered (sealed).
public final class WaylandPasteboard: Pasteboard {
    /// A selection of the seat.
    public enum Selection: Sendable, Hashable {
        /// The clipboard (copy and paste).
        case clipboard
        /// The primary selection (select and middle-click); data-control version 2.
        case primary
    }

    /// How the pasteboard connects and serves.
    public struct Configuration: Sendable, Hashable {
        /// The Wayland display: a socket name in `XDG_RUNTIME_DIR` or an absolute path; `nil`
        /// uses `WAYLAND_DISPLAY` (libwayland's rule).
        public var display: String?
        /// Whether a copy also sets the primary selection (default: yes, so a managed app's
        /// selection is governed like its copies). Ignored where the compositor's data-control
        /// is version 1 (no primary selection): see ``WaylandPasteboard/governsPrimary``.
        public var primary: Bool
        /// How long a request may wait for the compositor.
        public var requestTimeout: Duration
        /// How long serving a reader may wait for it to make progress before it is dropped.
        public var transferTimeout: Duration
        /// How long a paste may wait for the owner to make progress.
        public var readTimeout: Duration
        /// How long a whole paste may take (a hostile owner trickling bytes cannot hold the app
        /// longer).
        public var maxReadDuration: Duration
        /// The most readers served at the same time; a reader beyond that gets no data.
        public var maxConcurrentTransfers: Int
        /// The largest representation a paste reads; a larger one reads as absent.
        public var maxReadSize: Int
        /// The default ``maxReadSize``: the largest sealed set a copy can make (docs/FORMATS.md).
        public static let defaultMaxReadSize = SealedSet.maxSize

        /// Creates a configuration.
        public init(display: String? = nil, primary: Bool = true,
                    requestTimeout: Duration = .seconds(5), transferTimeout: Duration = .seconds(5),
                    readTimeout: Duration = .seconds(2), maxReadDuration: Duration = .seconds(20),
                    maxConcurrentTransfers: Int = 16, maxReadSize: Int = defaultMaxReadSize) {
            self.display = display
            self.primary = primary
            self.requestTimeout = requestTimeout
            self.transferTimeout = transferTimeout
            self.readTimeout = readTimeout
            self.maxReadDuration = maxReadDuration
            self.maxConcurrentTransfers = max(1, maxConcurrentTransfers)
            self.maxReadSize = maxReadSize
        }
    }

    /// The configuration it was made with.
    public let configuration: Configuration
    private let connection: WaylandConnection
    private let placeholderSource = Mutex<(@Sendable () -> String?)?>(nil)

    /// Connects to the compositor and binds the data-control protocol and the seat.
    /// - Throws: ``WaylandPasteboardError`` when there is no compositor, no data-control
    ///   protocol, or no seat.
    public init(configuration: Configuration = Configuration()) throws(WaylandPasteboardError) {
        self.configuration = configuration
        connection = try WaylandConnection(configuration: configuration)
    }

    deinit {
        connection.shutdown()
    }

    /// Disconnects now: the compositor drops the selections this pasteboard still owns, and later
    /// writes fail with ``WaylandPasteboardError/closed``.
    public func close() {
        connection.shutdown()
    }

    /// Where the placeholder text comes from, read at each sealed copy: typically the app
    /// config's ``ServerConfigKey/clipboardPlaceholder``. `nil` (or a provider returning `nil`
    /// or an empty string): ``ServerConfigKey/defaultClipboardPlaceholder``.
    public func setPlaceholderSource(_ source: (@Sendable () -> String?)?) {
        placeholderSource.withLock { $0 = source }
    }

    /// Follows `broker`'s app config for the placeholder (without keeping the broker alive).
    public func followPlaceholder(of broker: ShareBroker) {
        setPlaceholderSource { [weak broker] in
            (try? broker?.policy())?.config[ServerConfigKey.clipboardPlaceholder]
        }
    }

    /// The placeholder text a sealed copy offers under its text types now.
    public var placeholder: String {
        let configured = placeholderSource.withLock { $0 }?()
        guard let configured, !configured.isEmpty else { return ServerConfigKey.defaultClipboardPlaceholder }
        return configured
    }

    /// The change count now: bumped by this pasteboard's writes and releases and each time
    /// another client sets the clipboard.
    public var changeCount: Int { connection.changeCount }

    /// Whether this pasteboard owns the clipboard now (as far as the events read so far tell).
    public var ownsClipboard: Bool { connection.ownsClipboard }

    /// The data-control protocol this pasteboard speaks: ext when the compositor offers it, else wlr.
    public var dataControlProtocol: DataControlProtocol? { connection.dataControlProtocol }

    /// Whether copies also set the primary selection (configured, and the compositor's
    /// data-control carries it: ext, or wlr version 2 or later).
    public var governsPrimary: Bool { connection.governsPrimary }

    /// Transfers being served now (for tests and diagnostics).
    var activeTransfers: Int { connection.activeTransfers }

    /// The connection (tests drive it directly to play a clipboard manager re-offering raw types).
    var connectionForTests: WaylandConnection { connection }

    /// Sets the clipboard (and the primary selection) to `items` as described above (empty
    /// `items`: releases what this pasteboard owns), returning the new change count once the
    /// compositor has processed it.
    /// - Throws: ``WaylandPasteboardError``; the selections are then unchanged by this call,
    ///   except after ``WaylandPasteboardError/timedOut(operation:)``: a compositor that answers
    ///   late may still carry the request out.
    @discardableResult
    public func setSelection(_ items: [PasteboardItem]) throws(WaylandPasteboardError) -> Int {
        let offers = items.isEmpty ? [] : try WaylandRepresentations.offers(for: items, placeholder: placeholder)
        return try connection.perform("set the selection", timeout: configuration.requestTimeout) { connection, completion in
            connection.setSelection(offers, completion: completion)
        }
    }

    /// What `selection` offers now, read as items (see the type's documentation), without the
    /// shortcut for this pasteboard's own offer. Empty when there is nothing readable.
    /// - Throws: ``WaylandPasteboardError`` when the compositor does not answer or is gone.
    public func readSelection(_ selection: Selection = .clipboard) throws(WaylandPasteboardError) -> [PasteboardItem] {
        let pipes: [(mimeType: String, fd: Int32)] = try connection.perform("list the offered types",
                                                                           timeout: configuration.requestTimeout) { connection, completion in
            connection.startReading(selection, completion: completion)
        }
        var read: [(target: String, bytes: [UInt8])] = []
        let deadline = ContinuousClock.now + configuration.maxReadDuration
        // Every pipe was asked for before the first is read (a well-behaved owner serves them
        // in parallel, as this adapter does); each read is bounded in time and size.
        for (index, pipe) in pipes.enumerated() {
            let result = readAllAndClose(pipe.fd, limit: configuration.maxReadSize, idleTimeout: configuration.readTimeout,
                                         deadline: deadline)
            switch result {
            case .complete(let bytes):
                read.append((pipe.mimeType, bytes))
            case .timedOut, .tooLarge, .failed:
                // A sealed set that did not arrive whole is an error, never the placeholder in its place.
                guard pipe.mimeType == SealedSet.targetName else { continue }
                for rest in pipes[(index + 1)...] { Glibc.close(rest.fd) }
                throw .sealedSetBroken(Self.why(result))
            }
        }
        do throws(SealedSet.DecodingError) {
            return try DesktopOffer.items(from: read)
        } catch {
            throw .sealedSetBroken(error.description)
        }
    }

    /// What went wrong with a transfer that did not complete, for ``WaylandPasteboardError/sealedSetBroken(_:)``.
    private static func why(_ result: TransferRead) -> String {
        switch result {
        case .complete: "the sealed target arrived"
        case .timedOut: "the sealed target stopped arriving (the owner did not send the rest in time)"
        case .tooLarge: "the sealed target is larger than a sealed set can be"
        case .failed(let code): "the sealed target could not be read (\(String(cString: strerror(code))))"
        }
    }

    // MARK: Pasteboard

    /// What the clipboard holds: this app's own offer while it owns it, else what the owner
    /// offers. Empty when there is no owner, it does not answer in time, or it offers nothing
    /// readable.
    public func read() -> (items: [PasteboardItem], changeCount: Int) {
        if let own = connection.ownOffer {
            let read: [(target: String, bytes: [UInt8])] = DesktopOffer.typesToRead(from: own.map(\.mimeType)).compactMap { mime in
                own.first { $0.mimeType == mime }.map { (mime, $0.bytes) }
            }
            return ((try? DesktopOffer.items(from: read)) ?? [], connection.changeCount)
        }
        let items = (try? readSelection(.clipboard)) ?? []
        return (items, connection.changeCount)
    }

    /// ``setSelection(_:)``: returns the new change count.
    ///
    /// - Throws: ``WaylandPasteboardError`` when the selection could not be set; the
    ///   selections then keep their owner.
    @discardableResult
    public func write(_ items: [PasteboardItem]) throws(WaylandPasteboardError) -> Int {
        try setSelection(items)
    }

    /// Releases the selections this pasteboard still owns if nobody (here or in another client)
    /// set the clipboard since `changeCount`.
    @discardableResult
    public func clear(ifChangeCount changeCount: Int) -> Bool {
        do {
            let cleared: Bool = try connection.perform("release the selection", timeout: configuration.requestTimeout) { connection, completion in
                connection.release(ifChangeCount: changeCount, completion: completion)
            }
            return cleared
        } catch {
            return false
        }
    }
}
