import CXCB
#if canImport(Glibc)
import Glibc
#endif

/// Why the X11 clipboard could not do what was asked.
public enum X11PasteboardError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No connection to the X server named by `display` (or `DISPLAY`).
    case cannotConnect(display: String)
    /// The X server at `display` runs but refused this client: it requires authorization and
    /// the authority file (`authority`: `XAUTHORITY`, `nil` when it is not set) holds no key
    /// for it. Set `XAUTHORITY` to the display's authority file.
    case notAuthorized(display: String, authority: String?)
    /// The X server lacks the XFixes extension (owner-change notification).
    case noXFixes
    /// The connection to the X server broke; the adapter serves nothing any more.
    case connectionLost
    /// The X server did not make this app the owner of the clipboard (a later owner won).
    case ownershipRefused
    /// The X server or the owner did not answer in time.
    case timedOut(String)
    /// The owner offered more bytes than a pasteboard item may hold; nothing was read.
    case tooLarge(size: Int, limit: Int)
    /// The items cannot be offered (more than one clear text representation, or a sealed item
    /// mixed with clear ones).
    case unsupportedItems(String)
    /// The owner's sealed set (SecureCopy) arrived cut short or does not decode (`why`); nothing
    /// was pasted, not even the placeholder. Copy the item again in the app that owns it.
    case sealedSetBroken(String)

    public var description: String {
        switch self {
        case .cannotConnect(let display):
            "could not connect to the X server \(display.isEmpty ? "(DISPLAY is not set)" : "at \(display)"); check DISPLAY and that the server runs"
        case .notAuthorized(let display, let authority):
            "the X server at \(display) refused the connection: it requires authorization, and "
                + (authority.map { "the authority file XAUTHORITY names (\($0)) has no key for this display" }
                    ?? "XAUTHORITY is not set (nor does ~/.Xauthority hold a key for this display)")
                + "; set XAUTHORITY to the display's authority file (GNOME's Xwayland: $XDG_RUNTIME_DIR/.mutter-Xwaylandauth.*)"
        case .noXFixes:
            "the X server has no XFixes extension; the X11 clipboard needs it (use --pasteboard file)"
        case .connectionLost:
            "the connection to the X server was lost; the clipboard is no longer served (restart the app)"
        case .ownershipRefused:
            "the X server did not make this app the clipboard owner; copy again"
        case .timedOut(let what):
            "timed out \(what); the X server or the clipboard owner is not answering"
        case .tooLarge(let size, let limit):
            "the clipboard owner offered \(size) bytes, over the \(limit)-byte limit; nothing was read"
        case .unsupportedItems(let why):
            "these items cannot be put on the X11 clipboard: \(why); nothing was written"
        case .sealedSetBroken(let why):
            "the clipboard transfer broke: \(why); nothing was pasted, not even the placeholder (copy it again in the app that owns it)"
        }
    }
}

/// X11 protocol numbers this adapter uses (X Window System Protocol, ICCCM).
enum X11 {
    static let none: UInt32 = 0
    static let currentTime: UInt32 = 0
    static let atomATOM: UInt32 = 4
    static let atomINTEGER: UInt32 = 19
    static let atomSTRING: UInt32 = 31
    static let atomPRIMARY: UInt32 = 1
    static let propertyNotify: UInt8 = 28
    static let selectionClear: UInt8 = 29
    static let selectionRequest: UInt8 = 30
    static let selectionNotify: UInt8 = 31
    static let propertyNewValue: UInt8 = 0
    static let propertyDelete: UInt8 = 1
    static let propModeReplace: UInt8 = 0
    static let propModeAppend: UInt8 = 2
    static let eventMaskPropertyChange: UInt32 = 0x0040_0000
    static let cwEventMask: UInt32 = 0x0800
    static let windowClassInputOnly: UInt16 = 2
    static let xfixesSetOwner: UInt32 = 1
    static let xfixesWindowDestroy: UInt32 = 2
    static let xfixesClientClose: UInt32 = 4
}

/// An owned X event (freed when dropped).
final class XEvent {
    let raw: UnsafeMutablePointer<xcb_generic_event_t>
    init(_ raw: UnsafeMutablePointer<xcb_generic_event_t>) { self.raw = raw }
    deinit { free(raw) }
    /// The event code without the "sent by SendEvent" bit.
    var code: UInt8 { raw.pointee.response_type & 0x7f }
    func load<T>(as type: T.Type) -> T { UnsafeRawPointer(raw).load(as: T.self) }
}

/// One connection to the X server with an unmapped input-only window of its own (the owner and
/// requestor window of the selections), atoms interned on demand and cached. Not thread-safe:
/// each connection is used by one thread at a time (the serving thread, or a caller under a lock).
final class XConnection {
    let connection: OpaquePointer
    let window: UInt32
    let root: UInt32
    let fileDescriptor: Int32
    /// The largest request the server takes, in bytes.
    let maxRequestBytes: Int
    /// XFixes' first event code, or `nil` if the connection did not ask for XFixes.
    private(set) var xfixesFirstEvent: UInt8?
    private var atoms: [String: UInt32] = [:]

    /// Connects to `display` (`nil`: the `DISPLAY` variable) and creates the window.
    init(display: String?) throws(X11PasteboardError) {
        var screenNumber: Int32 = 0
        let name = display ?? (getenv("DISPLAY").map { String(cString: $0) } ?? "")
        guard let c = xcb_connect(display, &screenNumber) else { throw .cannotConnect(display: name) }
        guard xcb_connection_has_error(c) == 0 else {
            xcb_disconnect(c)
            // A server whose socket is there refused the connection setup: authorization.
            if Self.localSocketExists(display: name) {
                throw .notAuthorized(display: name, authority: getenv("XAUTHORITY").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 })
            }
            throw .cannotConnect(display: name)
        }
        var iterator = xcb_setup_roots_iterator(xcb_get_setup(c))
        var index: Int32 = 0
        while index < screenNumber && iterator.rem > 1 {
            xcb_screen_next(&iterator)
            index += 1
        }
        guard let screen = iterator.data else {
            xcb_disconnect(c)
            throw .cannotConnect(display: name)
        }
        connection = c
        root = screen.pointee.root
        window = xcb_generate_id(c)
        var values: [UInt32] = [X11.eventMaskPropertyChange]
        xcb_create_window(c, 0, window, root, 0, 0, 1, 1, 0, X11.windowClassInputOnly, 0, X11.cwEventMask, &values)
        fileDescriptor = xcb_get_file_descriptor(c)
        maxRequestBytes = Int(xcb_get_maximum_request_length(c)) * 4
        xcb_flush(c)
    }

    /// Whether the local socket of `display` (`:N`, `:N.S` or `unix:N`) exists: then a server
    /// listens there, and a failed connection was refused rather than unanswered.
    static func localSocketExists(display: String) -> Bool {
        guard let colon = display.lastIndex(of: ":") else { return false }
        let host = display[..<colon]
        guard host.isEmpty || host == "unix" else { return false }
        let number = display[display.index(after: colon)...].prefix { $0 != "." }
        guard !number.isEmpty, number.allSatisfy(\.isNumber) else { return false }
        return access("/tmp/.X11-unix/X\(number)", F_OK) == 0
    }

    private var disconnected = false

    deinit { disconnect() }

    /// Closes the connection: the server destroys the window, and the selections it owned have
    /// no owner any more. Nothing may use the connection afterwards.
    func disconnect() {
        guard !disconnected else { return }
        disconnected = true
        xcb_disconnect(connection)
    }

    var hasError: Bool { xcb_connection_has_error(connection) != 0 }

    /// Asks for XFixes selection notifications on `selections`.
    func watchOwners(of selections: [UInt32]) throws(X11PasteboardError) {
        guard let data = xcb_get_extension_data(connection, cxcb_xfixes_extension()), data.pointee.present != 0 else {
            throw .noXFixes
        }
        let cookie = xcb_xfixes_query_version(connection, 5, 0)
        guard let reply = xcb_xfixes_query_version_reply(connection, cookie, nil) else { throw .noXFixes }
        free(reply)
        xfixesFirstEvent = data.pointee.first_event
        for selection in selections {
            xcb_xfixes_select_selection_input(connection, window, selection,
                                              X11.xfixesSetOwner | X11.xfixesWindowDestroy | X11.xfixesClientClose)
        }
        xcb_flush(connection)
    }

    /// The atom named `name` (interned on first use).
    func atom(_ name: String) -> UInt32 {
        if let known = atoms[name] { return known }
        let bytes = Array(name.utf8)
        let cookie = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { xcb_intern_atom(connection, 0, UInt16(buffer.count), $0.baseAddress) }
        }
        guard let reply = xcb_intern_atom_reply(connection, cookie, nil) else { return X11.none }
        defer { free(reply) }
        let atom = reply.pointee.atom
        if atom != X11.none { atoms[name] = atom }
        return atom
    }

    /// The name of `atom`, or `nil` if the server does not know it.
    func atomName(_ atom: UInt32) -> String? {
        guard let reply = xcb_get_atom_name_reply(connection, xcb_get_atom_name(connection, atom), nil) else { return nil }
        defer { free(reply) }
        guard let name = xcb_get_atom_name_name(reply) else { return nil }
        let length = Int(xcb_get_atom_name_name_length(reply))
        return String(decoding: UnsafeRawBufferPointer(start: name, count: length), as: UTF8.self)
    }

    /// Interns all `names` in one round trip.
    func intern(_ names: [String]) {
        let cookies = names.map { name -> xcb_intern_atom_cookie_t in
            let bytes = Array(name.utf8)
            return bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { xcb_intern_atom(connection, 0, UInt16(buffer.count), $0.baseAddress) }
            }
        }
        for (name, cookie) in zip(names, cookies) {
            guard let reply = xcb_intern_atom_reply(connection, cookie, nil) else { continue }
            if reply.pointee.atom != X11.none { atoms[name] = reply.pointee.atom }
            free(reply)
        }
    }

    /// The selection's owner window, or `nil` when there is none (or the server did not answer).
    func owner(of selection: UInt32) -> UInt32? {
        guard let reply = xcb_get_selection_owner_reply(connection, xcb_get_selection_owner(connection, selection), nil) else {
            return nil
        }
        defer { free(reply) }
        return reply.pointee.owner == X11.none ? nil : reply.pointee.owner
    }

    /// Replaces `property` on `window` with `bytes` of `format` bits per unit (or, with `mode`
    /// ``X11/propModeAppend``, appends them; the type and format must then be the property's).
    func setProperty(_ window: UInt32, _ property: UInt32, type: UInt32, format: UInt8, bytes: UnsafeRawBufferPointer,
                     mode: UInt8 = X11.propModeReplace) {
        let units = UInt32(bytes.count / Int(format / 8))
        xcb_change_property(connection, mode, window, property, type, format, units, bytes.baseAddress)
    }

    func setProperty(_ window: UInt32, _ property: UInt32, type: UInt32, atoms values: [UInt32]) {
        values.withUnsafeBytes { setProperty(window, property, type: type, format: 32, bytes: $0) }
    }

    /// Sends a SelectionNotify to `requestor` (the answer to a conversion request).
    func notify(requestor: UInt32, selection: UInt32, target: UInt32, property: UInt32, time: UInt32) {
        var event = xcb_selection_notify_event_t()
        event.response_type = X11.selectionNotify
        event.time = time
        event.requestor = requestor
        event.selection = selection
        event.target = target
        event.property = property
        withUnsafeBytes(of: &event) { raw in
            var block = [CChar](repeating: 0, count: 32)
            for i in 0..<min(32, raw.count) { block[i] = CChar(bitPattern: raw[i]) }
            _ = xcb_send_event(connection, 0, requestor, 0, block)
        }
    }

    /// Selects (or, with 0, stops selecting) events on another client's window.
    func selectEvents(on window: UInt32, mask: UInt32) {
        var values = [mask]
        xcb_change_window_attributes(connection, window, X11.cwEventMask, &values)
    }

    func flush() { xcb_flush(connection) }

    /// The next event already read or readable without blocking.
    func pollEvent() -> XEvent? { xcb_poll_for_event(connection).map(XEvent.init) }

    /// Waits up to `deadline` for the next event.
    func waitEvent(until deadline: ContinuousClock.Instant) -> XEvent? {
        while true {
            if let event = pollEvent() { return event }
            if hasError { return nil }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return nil }
            var pfd = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&pfd, 1, Int32(clamping: Int(remaining.milliseconds) + 1))
        }
    }

    /// Reads (and with `delete`, deletes) a property whole: its type, format and bytes; `nil`
    /// when it does not exist or the server did not answer. Refuses more than `limit` bytes.
    func getProperty(_ window: UInt32, _ property: UInt32, delete: Bool, limit: Int) throws(X11PasteboardError) -> (type: UInt32, format: UInt8, bytes: [UInt8])? {
        var out: [UInt8] = []
        var offset: UInt32 = 0
        var type = X11.none
        var format: UInt8 = 0
        while true {
            let cookie = xcb_get_property(connection, 0, window, property, 0, offset, UInt32(min(limit / 4 + 1, 0x1fff_ffff)))
            guard let reply = xcb_get_property_reply(connection, cookie, nil) else {
                return hasError ? nil : (type == X11.none ? nil : (type, format, out))
            }
            defer { free(reply) }
            type = reply.pointee.type
            format = reply.pointee.format
            if type == X11.none { return nil }
            let length = Int(xcb_get_property_value_length(reply))
            let after = Int(reply.pointee.bytes_after)
            guard out.count + length + after <= limit else { throw .tooLarge(size: out.count + length + after, limit: limit) }
            if length > 0, let value = xcb_get_property_value(reply) {
                out.append(contentsOf: UnsafeRawBufferPointer(start: value, count: length))
            }
            if after == 0 { break }
            offset += UInt32(length / 4)
        }
        if delete { xcb_delete_property(connection, window, property) }
        return (type, format, out)
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
