import CXCB
import ShareBroker
#if canImport(Glibc)
import Glibc
#endif

/// Reads X selections as a requestor (ICCCM 2.4), on a connection of its own: asks the owner to
/// convert, waits (bounded) for its SelectionNotify, and reads the property, through `INCR`
/// when the owner sends it in pieces. Not thread-safe: callers hold a lock around it.
final class SelectionReader {
    let conn: XConnection
    private var slots: [UInt32] = []
    private let atomIncr: UInt32
    /// The most bytes one conversion may bring.
    let limit: Int

    init(display: String?, limit: Int) throws(X11PasteboardError) {
        let conn = try XConnection(display: display)
        self.conn = conn
        conn.intern(["CLIPBOARD", "TARGETS", "INCR", "_SHAREBROKER_PASTE", "UTF8_STRING", "STRING", "TEXT",
                     "text/plain;charset=utf-8", "text/plain", "text/html", "image/png", SealedSet.targetName])
        let names = (0..<4).map { "_SHAREBROKER_PASTE_\($0)" }
        conn.intern(names)
        slots = names.map { conn.atom($0) }
        atomIncr = conn.atom("INCR")
        self.limit = limit
    }

    /// The targets the owner of `selection` offers (atoms), or `nil` if it has none or did not answer.
    func targets(of selection: UInt32, timeout: Duration) throws(X11PasteboardError) -> [UInt32]? {
        guard let reply = try convert(selection, target: conn.atom("TARGETS"), timeout: timeout), reply.format == 32 else {
            return nil
        }
        return reply.bytes.withUnsafeBytes { Array($0.bindMemory(to: UInt32.self)) }
    }

    /// Converts `selection` to `target`; `nil` when there is no owner or it refused.
    func convert(_ selection: UInt32, target: UInt32, timeout: Duration) throws(X11PasteboardError) -> (type: UInt32, format: UInt8, bytes: [UInt8])? {
        try convert(selection, targets: [target], timeout: timeout).first ?? nil
    }

    /// Converts `selection` to up to four `targets` at once: the requests go out together and
    /// the owner answers them in one round trip (large answers then follow by INCR, one after
    /// the other). Each answer is `nil` where the owner refused; all are `nil` without an owner.
    func convert(_ selection: UInt32, targets: [UInt32], timeout: Duration) throws(X11PasteboardError) -> [(type: UInt32, format: UInt8, bytes: [UInt8])?] {
        let targets = Array(targets.prefix(slots.count))
        guard conn.owner(of: selection) != nil else { return targets.map { _ in nil } }
        let deadline = ContinuousClock.now + timeout
        for (index, target) in targets.enumerated() {
            xcb_delete_property(conn.connection, conn.window, slots[index])
            xcb_convert_selection(conn.connection, conn.window, selection, target, slots[index], X11.currentTime)
        }
        conn.flush()
        // Wait for the owner's answer to each request.
        var answers = [UInt32?](repeating: nil, count: targets.count)
        var pending = targets.count
        while pending > 0, let event = conn.waitEvent(until: deadline) {
            guard event.code == X11.selectionNotify else { continue }
            let notify = event.load(as: xcb_selection_notify_event_t.self)
            guard notify.requestor == conn.window, notify.selection == selection,
                  let index = targets.indices.first(where: { targets[$0] == notify.target && answers[$0] == nil }) else { continue }
            answers[index] = notify.property == X11.none ? X11.none : slots[index]
            pending -= 1
        }
        guard pending == 0 else {
            throw conn.hasError ? .connectionLost : .timedOut("waiting for the clipboard owner to answer")
        }
        // Read every answered property in one round trip (requests first, then the replies).
        let cookies = answers.map { answer -> xcb_get_property_cookie_t? in
            guard let property = answer, property != X11.none else { return nil }
            return xcb_get_property(conn.connection, 1, conn.window, property, 0, 0, UInt32(min(limit / 4 + 1, 0x1fff_ffff)))
        }
        var out: [(type: UInt32, format: UInt8, bytes: [UInt8])?] = []
        var incomplete: [Int] = []
        for (index, cookie) in cookies.enumerated() {
            guard let cookie, let reply = xcb_get_property_reply(conn.connection, cookie, nil) else {
                out.append(nil)
                continue
            }
            defer { free(reply) }
            let length = Int(xcb_get_property_value_length(reply))
            guard reply.pointee.type != X11.none else {
                out.append(nil)
                continue
            }
            guard reply.pointee.bytes_after == 0, length <= limit else {
                // Too large to read at once: refused below (the property stays; it is deleted
                // before the next request).
                incomplete.append(index)
                out.append(nil)
                continue
            }
            let bytes = length > 0 ? xcb_get_property_value(reply).map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? [] : []
            out.append((reply.pointee.type, reply.pointee.format, bytes))
        }
        if !incomplete.isEmpty { throw .tooLarge(size: limit + 1, limit: limit) }
        for index in out.indices {
            guard let answer = out[index], answer.type == atomIncr, let property = answers[index] else { continue }
            out[index] = try incremental(property, timeout: timeout)
        }
        return out
    }

    /// The rest of an INCR transfer whose announcement was read (and deleted) from `property`.
    private func incremental(_ property: UInt32, timeout: Duration) throws(X11PasteboardError) -> (type: UInt32, format: UInt8, bytes: [UInt8])? {
        conn.flush()
        // Deleting the property asked for the first piece; each new value is the next one, an
        // empty one ends the transfer.
        var out: [UInt8] = []
        var type = X11.none
        var format: UInt8 = 8
        while true {
            var got = false
            while let event = conn.waitEvent(until: ContinuousClock.now + timeout) {
                guard event.code == X11.propertyNotify else { continue }
                let notify = event.load(as: xcb_property_notify_event_t.self)
                if notify.window == conn.window && notify.atom == property && notify.state == X11.propertyNewValue {
                    got = true
                    break
                }
            }
            guard got else {
                out.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
                throw conn.hasError ? .connectionLost : .timedOut("waiting for the next piece of a large clipboard item")
            }
            guard let piece = try conn.getProperty(conn.window, property, delete: true, limit: limit - out.count) else { continue }
            conn.flush()
            if piece.bytes.isEmpty { break }
            type = piece.type
            format = piece.format
            out.append(contentsOf: piece.bytes)
        }
        return (type, format, out)
    }
}
