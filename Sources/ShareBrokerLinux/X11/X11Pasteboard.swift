import CXCB
import Dispatch
import ShareBroker
import Synchronization
import ShareBrokerCrypto

/// The X11 clipboard as the general `Pasteboard`: the `CLIPBOARD` and `PRIMARY` selections.
///
/// * **Copy** (``write(_:)``, called by the broker after its policy decision) takes ownership of
///   `CLIPBOARD` and `PRIMARY` and answers every client's conversion requests on a thread of its
///   own: `TARGETS`, `TIMESTAMP` and the representations. Clear items are offered as they are
///   (text as `UTF8_STRING`, `text/plain;charset=utf-8`, `text/plain`, `STRING`, `TEXT`; HTML as
///   `text/html`; PNG as `image/png`; a MIME type as itself). Sealed items are offered together
///   under ``SealedSet/targetName`` and every text target carries the placeholder (never the
///   plaintext); a non-text representation of a sealed copy is offered only sealed. Nothing the
///   broker blocks reaches this adapter, so the previous owner keeps the clipboard.
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

    /// Text targets, in the order a paste prefers them.
    static let textTargets = ["UTF8_STRING", "text/plain;charset=utf-8", "text/plain", "STRING", "TEXT"]

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
        let offer = try Self.offer(for: items, placeholder: placeholder, sealedInParts: true)
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
            var sealed = first[1]?.bytes
            first[1] = nil // `sealed` is now the only reference: unwrapping it does not copy
            if let envelopes = Self.envelopes(inSet: &sealed) {
                // The sealed representations, then the clear text (the placeholder) for an app
                // that may not open them.
                return envelopes.map { PasteboardItem(type: PasteboardItem.sealedType, bytes: $0) } + (text.map { [$0] } ?? [])
            }
            if let text { return [text] }
            guard let list = first[0], list.format == 32 else { return [] }
            let offeredSet = Set(list.bytes.withUnsafeBytes { Array($0.bindMemory(to: UInt32.self)) })
            for name in Self.textTargets.dropFirst() where offeredSet.contains(conn.atom(name)) {
                guard let value = try reader.convert(atom, target: conn.atom(name), timeout: timeout) else { continue }
                let bytes = name == "STRING" ? Self.utf8(fromLatin1: value.bytes) : value.bytes
                return [PasteboardItem(type: PasteboardItem.textType, bytes: bytes)]
            }
            for (name, type) in [("text/html", "public.html"), ("image/png", "public.png")] where offeredSet.contains(conn.atom(name)) {
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

    // MARK: Offer

    /// What to offer for `items`: clear representations under their targets, or (all items
    /// sealed) the sealed set plus the placeholder under every text target of a text item.
    /// With `sealedInParts` a sealed set of more than ``partsThreshold`` bytes is its framing
    /// followed by the envelopes themselves (served one after another, never copied into one
    /// array); else, and for smaller sets, one array (one X request; copying it costs nothing).
    static func offer(for items: [PasteboardItem], placeholder: String,
                      sealedInParts: Bool = false) throws(X11PasteboardError) -> SelectionOffer {
        let sealed = items.filter { $0.type == PasteboardItem.sealedType }
        var offer = SelectionOffer()
        if !sealed.isEmpty {
            guard sealed.count == items.count else {
                throw .unsupportedItems("a sealed item cannot travel with clear ones")
            }
            guard sealed.count <= SealedSet.maxEnvelopes else {
                throw .unsupportedItems("more than \(SealedSet.maxEnvelopes) sealed representations")
            }
            let envelopes = sealed.map(\.bytes)
            let inParts = sealedInParts && envelopes.reduce(0, { $0 + $1.count }) > partsThreshold
            offer.targets.append(inParts ? .init(SealedSet.targetName, parts: sealedSetParts(envelopes), zeroedWhenDropped: false)
                                               : .init(SealedSet.targetName, SealedSet.encode(envelopes)))
            let innerTypes = sealed.compactMap { EnvelopeFormat.itemType(ofEnvelope: $0.bytes) }
            var names: [String] = []
            for type in innerTypes where isText(type) {
                for name in targets(for: type) where !names.contains(name) { names.append(name) }
            }
            for name in names {
                offer.targets.append(.init(name, name == "STRING" ? latin1(placeholder) : Array(placeholder.utf8)))
            }
            return offer
        }
        for item in items {
            for name in targets(for: item.type) where !offer.targets.contains(where: { $0.name == name }) {
                if name == "STRING" {
                    guard let latin = latin1OrNil(item.bytes) else { continue }
                    offer.targets.append(.init(name, latin))
                } else {
                    offer.targets.append(.init(name, item.bytes))
                }
            }
        }
        guard !offer.targets.isEmpty else {
            throw .unsupportedItems("no X11 target for the item types \(items.map(\.type))")
        }
        return offer
    }

    /// The envelopes of the sealed set in `set` (``SealedSet/decode(_:)``), or `nil` when it is
    /// not one. A set of one envelope (every single-representation copy) is unwrapped in place:
    /// its framing is removed from `set`, which becomes the envelope, without a second
    /// payload-sized buffer.
    static func envelopes(inSet set: inout [UInt8]?) -> [[UInt8]]? {
        guard var bytes = set else { return nil }
        set = nil
        let framing = SealedSet.magic.count + 3 + 4
        if bytes.count >= framing, bytes.count <= SealedSet.maxSize, bytes.starts(with: SealedSet.magic),
           bytes[4] == SealedSet.version, bytes[5] == 0, bytes[6] == 1,
           bytes[7..<framing].reduce(0, { $0 << 8 | Int($1) }) == bytes.count - framing {
            bytes.removeSubrange(0..<framing)
            return [bytes]
        }
        return try? SealedSet.decode(bytes)
    }

    /// The size over which a sealed set is served in parts rather than copied into one array.
    static let partsThreshold = 64 << 10

    /// ``SealedSet/encode(_:)`` of `envelopes` as parts that, joined, are exactly its bytes: the
    /// framing before each envelope, and the envelope arrays themselves (shared, not copied).
    static func sealedSetParts(_ envelopes: [[UInt8]]) -> [[UInt8]] {
        var parts: [[UInt8]] = []
        var framing = SealedSet.magic + [SealedSet.version, UInt8(truncatingIfNeeded: envelopes.count >> 8),
                                         UInt8(truncatingIfNeeded: envelopes.count)]
        for envelope in envelopes {
            let n = UInt32(truncatingIfNeeded: envelope.count)
            framing += [UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
            parts.append(framing)
            parts.append(envelope)
            framing = []
        }
        return parts
    }

    /// The X11 targets of a pasteboard item type.
    static func targets(for type: String) -> [String] {
        switch type {
        case PasteboardItem.textType, "public.plain-text", "public.text": textTargets
        case "public.html": ["text/html"]
        case "public.png": ["image/png"]
        case "public.jpeg": ["image/jpeg"]
        default: type.contains("/") ? [type] : []
        }
    }

    /// Whether a type is text (gets the placeholder under SecureCopy).
    static func isText(_ type: String) -> Bool {
        type == PasteboardItem.textType || type == "public.plain-text" || type == "public.text"
            || type == "public.html" || type.hasPrefix("text/")
    }

    private static func latin1(_ string: String) -> [UInt8] {
        string.unicodeScalars.map { $0.value < 256 ? UInt8($0.value) : UInt8(ascii: "?") }
    }

    private static func latin1OrNil(_ utf8: [UInt8]) -> [UInt8]? {
        if !utf8.contains(where: { $0 >= 0x80 }) { return utf8 }
        guard utf8.count <= 1 << 20 else { return nil }
        guard let string = String(validating: utf8, as: UTF8.self) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count)
        for scalar in string.unicodeScalars {
            guard scalar.value < 256 else { return nil }
            out.append(UInt8(scalar.value))
        }
        return out
    }

    private static func utf8(fromLatin1 bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for byte in bytes {
            if byte < 0x80 { out.append(byte) } else {
                out.append(0xC0 | byte >> 6)
                out.append(0x80 | byte & 0x3F)
            }
        }
        return out
    }
}
