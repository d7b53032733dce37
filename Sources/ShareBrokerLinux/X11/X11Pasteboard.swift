import CXCB
import Dispatch
import ShareBroker
import Synchronization
import ShareBrokerCrypto

/// The X11 clipboard as the general `Pasteboard`: the `CLIPBOARD` and `PRIMARY` selections.
///
/// * **Copy** (``write(_:)``, called by the broker after its policy decision) takes ownership of
///   `CLIPBOARD` and `PRIMARY` and answers every client's conversion requests on a thread of its
///   own: `TARGETS`, `TIMESTAMP` and the representations, as ``DesktopOffer`` says (one rule
///   for X11 and Wayland): clear items as they are (text as `UTF8_STRING`,
///   `text/plain;charset=utf-8`, `text/plain`, `STRING`, and `TEXT` sent as `UTF8_STRING`; HTML
///   as `text/html`; PNG as `image/png`; a MIME type as itself); sealed items together under
///   ``SealedSet/targetName`` with the placeholder under every text target (never the
///   plaintext; a non-text representation of a sealed copy is offered only sealed); and the
///   clipboard-manager secret hint. Nothing the broker blocks reaches this adapter, so the
///   previous owner keeps the clipboard.
/// * **Large items** (over 4 MiB or the server's request size) go through `INCR`; a requestor
///   that stops reading is dropped after ``Configuration/transferTimeout`` without progress. No
///   app thread ever waits on a requestor.
/// * **Paste** (``read()``) asks the owner for `TARGETS`, the sealed target and `UTF8_STRING` in
///   one round trip; a sealed set reads as its sealed items followed by the clear text (the
///   placeholder), so the broker opens it if this app may and otherwise pastes what any other
///   app would; without a sealed set, the clear text, else another text target, `text/html` or
///   `image/png`.
///   While this app owns the clipboard it reads its own items without a round trip.
/// * **Change count**: this adapter's own count, bumped by its writes and releases and by every
///   owner change XFixes reports for `CLIPBOARD`.
/// * **Retire** (``clear(ifChangeCount:)``) releases both selections if this app still owns them
///   and nobody copied since.
/// * **Exit**: ``close(handOffTimeout:)`` hands what this app owns to a running clipboard manager
///   (`CLIPBOARD_MANAGER` / `SAVE_TARGETS`): the manager saves what is offered, which for a
///   SecureCopy item is the sealed set and the placeholder.
public final class X11Pasteboard: Pasteboard {
    /// How the adapter behaves.
    public struct Configuration: Sendable {
        /// The X display (`nil`: the `DISPLAY` variable).
        public var display: String?
        /// The selections a copy takes. Default `CLIPBOARD` and `PRIMARY` (a managed app's
        /// selection is offered exactly like its copies: sealed, or not at all).
        public var selections: [String]
        /// How long a large transfer may wait for the requestor before it is dropped.
        public var transferTimeout: Duration
        /// How long a paste waits for the owner to answer each request.
        public var readTimeout: Duration
        /// The bytes per INCR piece.
        public var chunkSize: Int

        /// Creates a configuration.
        public init(display: String? = nil, selections: [String] = ["CLIPBOARD", "PRIMARY"],
                    transferTimeout: Duration = .seconds(5), readTimeout: Duration = .seconds(2),
                    chunkSize: Int = 256 * 1024) {
            self.display = display
            self.selections = selections.isEmpty ? ["CLIPBOARD"] : selections
            self.transferTimeout = transferTimeout
            self.readTimeout = readTimeout
            self.chunkSize = chunkSize
        }
    }

    private let configuration: Configuration
    private let server: SelectionServer
    private let reader: Mutex<SelectionReader>
    private let written = Mutex<[PasteboardItem]>([])
    private let placeholderSource = Mutex<(@Sendable () -> String?)?>(nil)

    /// Connects to the X server (two connections: one serving, one reading) and starts serving.
    /// - Throws: ``X11PasteboardError/cannotConnect(display:)`` or ``X11PasteboardError/noXFixes``.
    public init(configuration: Configuration = Configuration()) throws(X11PasteboardError) {
        self.configuration = configuration
        server = try SelectionServer(display: configuration.display, selections: configuration.selections,
                                     transferTimeout: configuration.transferTimeout, chunkSize: configuration.chunkSize)
        reader = Mutex(try SelectionReader(display: configuration.display, limit: SealedSet.maxSize))
        server.start()
    }

    deinit { server.stop() }

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

    /// The placeholder text a sealed copy offers under its text targets now.
    public var placeholder: String {
        let configured = placeholderSource.withLock { $0 }?()
        guard let configured, !configured.isEmpty else { return ServerConfigKey.defaultClipboardPlaceholder }
        return configured
    }

    /// The change count now: bumped by this adapter's writes and releases and by every owner
    /// change of `CLIPBOARD`.
    public var changeCount: Int { server.state.changeCount }

    /// Whether this app owns `CLIPBOARD` now (as far as the events read so far tell).
    public var ownsClipboard: Bool { server.state.ownsClipboard }

    /// Large transfers in progress (for tests and diagnostics).
    var activeTransfers: Int { server.state.activeTransfers }

    // MARK: Pasteboard

    /// What `CLIPBOARD` holds: this app's own items while it owns it, else what the owner offers
    /// (see the type's documentation). Empty when there is no owner, it does not answer in time,
    /// or it offers nothing readable.
    public func read() -> (items: [PasteboardItem], changeCount: Int) {
        let state = server.state
        if state.ownsClipboard { return (written.withLock { $0 }, state.changeCount) }
        let items = (try? readSelection("CLIPBOARD")) ?? []
        return (items, server.state.changeCount)
    }

    /// Puts `items` on the clipboard (all clear, or all sealed) and returns the new change count.
    ///
    /// - Throws: ``X11PasteboardError`` when the clipboard could not be taken; it then keeps
    ///   its owner.
    @discardableResult
    public func write(_ items: [PasteboardItem]) throws(X11PasteboardError) -> Int {
        if items.isEmpty {
            _ = server.perform { $0.release(ifChangeCount: nil) }
            written.withLock { $0 = [] }
            return server.state.changeCount
        }
        let offer: SelectionOffer
        do {
            offer = try DesktopOffer.offer(for: items, placeholder: placeholder, sealedInParts: true)
        } catch {
            throw .unsupportedItems(error.reason)
        }
        let result = server.perform { server -> Result<Int, X11PasteboardError> in
            do throws(X11PasteboardError) { return .success(try server.own(offer)) } catch { return .failure(error) }
        }
        switch result {
        case .success(let count)?:
            written.withLock { $0 = items }
            return count
        case .failure(let error)?:
            throw error
        case nil:
            throw .timedOut("taking the clipboard")
        }
    }

    /// Releases the selections if this app owns them and nobody copied since `changeCount`.
    @discardableResult
    public func clear(ifChangeCount changeCount: Int) -> Bool {
        let released = server.perform { $0.release(ifChangeCount: changeCount) } ?? false
        if released { written.withLock { $0 = [] } }
        return released
    }

    // MARK: Beyond the protocol

    /// Reads `selection` (`CLIPBOARD` or `PRIMARY`) as ``read()`` does, without the shortcut for
    /// this app's own items.
    public func readSelection(_ selection: String) throws(X11PasteboardError) -> [PasteboardItem] {
        let timeout = configuration.readTimeout
        return try reader.withLock { reader throws(X11PasteboardError) -> [PasteboardItem] in
            let conn = reader.conn
            let atom = conn.atom(selection)
            let sealedAtom = conn.atom(SealedSet.targetName)
            // One round trip: the target list, the sealed set and UTF-8 text together.
            var first = try reader.convert(atom, targets: [conn.atom("TARGETS"), sealedAtom, conn.atom("UTF8_STRING")], timeout: timeout)
            let text = first[2].map { PasteboardItem(type: PasteboardItem.textType, bytes: $0.bytes) }
            let offered = first[0].flatMap { list in
                list.format == 32 ? Set(list.bytes.withUnsafeBytes { Array($0.bindMemory(to: UInt32.self)) }) : nil
            } ?? []
            // Only a set the owner lists is one (an owner such as xclip answers every target
            // with its text): then it must decode.
            var sealed = offered.contains(sealedAtom) ? first[1]?.bytes : nil
            first[1] = nil // `sealed` is now the only reference: unwrapping it does not copy
            let envelopes: [[UInt8]]?
            do throws(SealedSet.DecodingError) {
                envelopes = try DesktopOffer.envelopes(inSet: &sealed)
            } catch {
                throw .sealedSetBroken(error.description)
            }
            if let envelopes {
                // The sealed representations, then the clear text (the placeholder) for an app
                // that may not open them.
                return envelopes.map { PasteboardItem(type: PasteboardItem.sealedType, bytes: $0) } + (text.map { [$0] } ?? [])
            }
            if let text { return [text] }
            for name in DesktopOffer.textTargets where name != "UTF8_STRING" && offered.contains(conn.atom(name)) {
                guard let value = try reader.convert(atom, target: conn.atom(name), timeout: timeout) else { continue }
                // STRING is Latin-1; TEXT is whatever encoding its type names (ICCCM 2.7.1).
                let latin1 = value.type == X11.atomSTRING
                return [PasteboardItem(type: PasteboardItem.textType,
                                       bytes: latin1 ? DesktopOffer.utf8(fromLatin1: value.bytes) : value.bytes)]
            }
            for (name, type) in DesktopOffer.otherReadable where offered.contains(conn.atom(name)) {
                guard let value = try reader.convert(atom, target: conn.atom(name), timeout: timeout) else { continue }
                return [PasteboardItem(type: type, bytes: value.bytes)]
            }
            return []
        }
    }

    /// Hands what this app owns to a running clipboard manager, then stops serving (the
    /// selections end with the connection). Returns whether a manager confirmed it saved them.
    /// Call it once, when the app exits; the adapter serves nothing afterwards.
    @discardableResult
    public func close(handOffTimeout: Duration = .seconds(2)) -> Bool {
        let saved = handOff(timeout: handOffTimeout)
        server.stop()
        written.withLock { $0 = [] }
        return saved
    }

    /// Asks a running clipboard manager to save what this app offers on `CLIPBOARD`
    /// (`SAVE_TARGETS`), serving its requests meanwhile. `false` when this app does not own the
    /// clipboard, no manager runs, or it did not confirm within `timeout`.
    public func handOff(timeout: Duration = .seconds(2)) -> Bool {
        let result = Mutex<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        _ = server.perform(timeout: timeout) { server in
            server.startHandOff(timeout: timeout) { saved in
                result.withLock { $0 = saved }
                done.signal()
            }
        }
        _ = done.wait(timeout: .now() + .milliseconds(Int((timeout + .milliseconds(200)).milliseconds)))
        return result.withLock { $0 }
    }
}
