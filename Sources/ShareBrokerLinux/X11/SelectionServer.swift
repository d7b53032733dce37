import CXCB
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Owns X selections and answers conversion requests on a thread of its own, with its own
/// connection: `TARGETS`, `TIMESTAMP` and the offer's targets, large ones through `INCR`
/// (ICCCM 2.7.2). Nothing it does waits on a requestor: every transfer is a state advanced by
/// the requestor's PropertyNotify events and dropped after `transferTimeout` without progress.
///
/// App threads talk to it through ``perform(timeout:_:)``: a closure run on the serving thread.
final class SelectionServer: @unchecked Sendable {
    // Everything below `conn` is touched by the serving thread only (and by `init` before it starts).
    private let conn: XConnection
    private let selections: [UInt32]
    private let clipboard: UInt32
    private var offer: [UInt32: SelectionOffer.Target] = [:]
    private var offerOrder: [UInt32] = []
    private var owned: Set<UInt32> = []
    private var ownedSince: UInt32 = 0
    private var transfers: [Key: Transfer] = [:]
    private var handOff: HandOff?
    private var stopping = false
    private let atomTargets, atomTimestamp, atomIncr, atomTime, atomManager, atomSaveTargets, atomHandOff: UInt32
    private let chunkSize: Int
    private let directLimit: Int
    let transferTimeout: Duration

    /// Called on the serving thread for a request the offer does not answer (a clipboard
    /// manager's `SAVE_TARGETS`); returns whether it took the request (and will answer it).
    var unhandledRequest: (@Sendable (SelectionServer, xcb_selection_request_event_t) -> Bool)?

    // Shared with app threads.
    private let queue = Mutex<[@Sendable () -> Void]>([])
    private let shared = Mutex<Shared>(Shared())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)

    struct Shared {
        var changeCount = 0
        var ownsClipboard = false
        var activeTransfers = 0
        var lost = false
        var stopRequested = false
    }

    private struct Key: Hashable {
        var window: UInt32
        var property: UInt32
    }

    private struct Transfer {
        var type: UInt32
        /// The bytes to send, in parts (see ``SelectionOffer/Target``).
        var parts: [[UInt8]]
        var count: Int
        var offset = 0
        var deadline: ContinuousClock.Instant
    }

    private struct HandOff {
        var deadline: ContinuousClock.Instant
        var done: @Sendable (Bool) -> Void
    }

    /// Connects to `display` and serves `selections` (names) once started.
    init(display: String?, selections: [String], transferTimeout: Duration, chunkSize: Int = 256 * 1024) throws(X11PasteboardError) {
        let conn = try XConnection(display: display)
        conn.intern(["CLIPBOARD", "TARGETS", "TIMESTAMP", "INCR", "CLIPBOARD_MANAGER", "SAVE_TARGETS",
                     "_SHAREBROKER_TIME", "_SHAREBROKER_HANDOFF"] + selections)
        self.conn = conn
        self.selections = selections.map { conn.atom($0) }
        clipboard = conn.atom("CLIPBOARD")
        atomTargets = conn.atom("TARGETS")
        atomTimestamp = conn.atom("TIMESTAMP")
        atomIncr = conn.atom("INCR")
        atomTime = conn.atom("_SHAREBROKER_TIME")
        atomManager = conn.atom("CLIPBOARD_MANAGER")
        atomSaveTargets = conn.atom("SAVE_TARGETS")
        atomHandOff = conn.atom("_SHAREBROKER_HANDOFF")
        try conn.watchOwners(of: [clipboard])
        self.transferTimeout = transferTimeout
        // Items up to the server's request size (at most 4 MiB) go in one property; larger ones by INCR.
        directLimit = max(4096, min(conn.maxRequestBytes - 1024, 4 << 20))
        self.chunkSize = max(1024, min(chunkSize, directLimit))
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw .cannotConnect(display: display ?? "") }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// This connection's window (the selection owner while it owns one).
    var window: UInt32 { conn.window }

    /// Starts the serving thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "sharebroker-x11-selections"
        thread.start()
    }

    /// Stops serving (ownership ends with the connection) and waits up to `timeout` for the thread.
    func stop(timeout: Duration = .seconds(2)) {
        let first = shared.withLock { state in
            defer { state.stopRequested = true }
            return !state.stopRequested
        }
        guard first else { return }
        enqueue { [self] in stopping = true }
        _ = finished.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds)))
    }

    var state: Shared { shared.withLock { $0 } }

    // MARK: Commands from other threads

    /// Runs `body` on the serving thread and returns its result, or `nil` if the thread did not
    /// start it within `timeout` (it is then never run: a copy that reported failure must not
    /// take the clipboard afterwards) or, once started, did not finish within another `timeout`
    /// (an X server that stopped answering a round trip).
    func perform<T: Sendable>(timeout: Duration = .seconds(5), _ body: @escaping @Sendable (SelectionServer) -> T) -> T? {
        guard !shared.withLock({ $0.stopRequested }) else { return nil }
        let command = Mutex<CommandState<T>>(.pending)
        let started = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        enqueue { [self] in
            let run = command.withLock { state -> Bool in
                guard case .pending = state else { return false }
                state = .running
                return true
            }
            started.signal()
            guard run else { return }
            let value = body(self)
            command.withLock { $0 = .finished(value) }
            finished.signal()
        }
        if started.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds))) != .success {
            let abandoned = command.withLock { state -> Bool in
                guard case .pending = state else { return false }
                state = .abandoned
                return true
            }
            if abandoned { return nil }
        }
        guard finished.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds))) == .success else { return nil }
        return command.withLock { state -> T? in
            if case .finished(let value) = state { return value }
            return nil
        }
    }

    /// Where a command of ``perform(timeout:_:)`` is.
    private enum CommandState<T: Sendable>: Sendable {
        case pending, running, abandoned
        case finished(T)
    }

    private func enqueue(_ command: @escaping @Sendable () -> Void) {
        queue.withLock { $0.append(command) }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: Operations (serving thread only)

    /// Takes ownership of every served selection with `newOffer`. Returns the new change count.
    func own(_ newOffer: SelectionOffer) throws(X11PasteboardError) -> Int {
        guard !stopping, !conn.hasError else { throw .connectionLost }
        let atoms = newOffer.targets.map { conn.atom($0.name) }
        for target in newOffer.targets { if let encoding = target.encoding { _ = conn.atom(encoding) } }
        guard let time = serverTime() else { throw .timedOut("asking the X server for the time") }
        for selection in selections {
            xcb_set_selection_owner(conn.connection, conn.window, selection, time)
        }
        guard conn.owner(of: selections[0]) == conn.window else { throw .ownershipRefused }
        offer = [:]
        offerOrder = []
        for (atom, target) in zip(atoms, newOffer.targets) where atom != X11.none && offer[atom] == nil {
            offer[atom] = target
            offerOrder.append(atom)
        }
        owned = Set(selections)
        ownedSince = time
        return shared.withLock { state in
            state.changeCount += 1
            state.ownsClipboard = selections.contains(clipboard)
            return state.changeCount
        }
    }

    /// Gives up every selection this connection still owns, if nobody changed the clipboard
    /// since `changeCount` (or unconditionally with `nil`). Returns whether it released.
    func release(ifChangeCount expected: Int?) -> Bool {
        if let expected, shared.withLock({ $0.changeCount }) != expected { return false }
        guard let time = serverTime() else { return false }
        var released = false
        for selection in selections where conn.owner(of: selection) == conn.window {
            xcb_set_selection_owner(conn.connection, X11.none, selection, time)
            released = true
        }
        conn.flush()
        dropOffer()
        if released { shared.withLock { $0.changeCount += 1; $0.ownsClipboard = false } }
        return released
    }

    /// Asks a running clipboard manager to save what this connection offers on CLIPBOARD
    /// (ICCCM `SAVE_TARGETS`); `done` is called on the serving thread with whether it confirmed.
    func startHandOff(timeout: Duration, done: @escaping @Sendable (Bool) -> Void) {
        guard owned.contains(clipboard), conn.owner(of: clipboard) == conn.window,
              conn.owner(of: atomManager) != nil, let time = serverTime() else {
            done(false)
            return
        }
        handOff?.done(false)
        handOff = HandOff(deadline: .now + timeout, done: done)
        xcb_convert_selection(conn.connection, conn.window, atomManager, atomSaveTargets, atomHandOff, time)
        conn.flush()
    }

    /// Answers a request that ``unhandledRequest`` took (used by a clipboard manager).
    func answer(_ request: xcb_selection_request_event_t, success: Bool) {
        conn.notify(requestor: request.requestor, selection: request.selection, target: request.target,
                    property: success ? (request.property == X11.none ? request.target : request.property) : X11.none,
                    time: request.time)
        conn.flush()
    }

    private func dropOffer() {
        owned = []
        // The offer is sealed bytes, placeholders, or clear items the policy let go anyway; zero
        // what the arrays still hold before letting them go (but the sealed set's ciphertext).
        for key in offer.keys {
            guard offer[key]?.zeroedWhenDropped == true, let parts = offer[key]?.parts.indices else { continue }
            for part in parts {
                offer[key]?.parts[part].withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
            }
        }
        offer = [:]
        offerOrder = []
    }

    /// The server's time now: a zero-length append to a property of our window, and the time of
    /// the PropertyNotify it causes (ICCCM 2.1: never CurrentTime for ownership).
    private func serverTime() -> UInt32? {
        let empty: [UInt8] = []
        empty.withUnsafeBytes { raw in
            _ = xcb_change_property(conn.connection, X11.propModeAppend, conn.window, atomTime, X11.atomINTEGER, 8, 0, raw.baseAddress)
        }
        conn.flush()
        let deadline = ContinuousClock.now + .seconds(5)
        while let event = conn.waitEvent(until: deadline) {
            if event.code == X11.propertyNotify {
                let notify = event.load(as: xcb_property_notify_event_t.self)
                if notify.window == conn.window && notify.atom == atomTime { return notify.time }
            }
            handle(event)
        }
        return nil
    }

    // MARK: The serving loop

    private func run() {
        defer { finished.signal() }
        while !stopping {
            let commands = queue.withLock { queue -> [@Sendable () -> Void] in
                let taken = queue
                queue = []
                return taken
            }
            for command in commands { command() }
            if stopping { break }
            conn.flush()
            while let event = conn.pollEvent() { handle(event) }
            expire()
            conn.flush()
            if conn.hasError {
                shared.withLock { $0.lost = true; $0.ownsClipboard = false }
                handOff?.done(false)
                handOff = nil
                // Keep answering commands (with errors) until stopped.
            }
            if !queue.withLock({ $0.isEmpty }) { continue }
            // A flush that had to wait may have read events into libxcb's queue: handle them
            // before sleeping on the socket, which would not wake for them.
            if let queued = xcb_poll_for_queued_event(conn.connection) {
                handle(XEvent(queued))
                continue
            }
            var fds = [pollfd(fd: conn.hasError ? -1 : conn.fileDescriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, nextTimeoutMilliseconds())
            var sink = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &sink, sink.count) > 0 {}
        }
        dropOffer()
        transfers = [:]
        handOff?.done(false)
        handOff = nil
        shared.withLock { $0.lost = true; $0.ownsClipboard = false }
        // Ending the connection ends every selection it owned (nobody waits on a silent owner).
        conn.disconnect()
    }

    private func nextTimeoutMilliseconds() -> Int32 {
        var next: ContinuousClock.Instant?
        for transfer in transfers.values { next = min(next ?? transfer.deadline, transfer.deadline) }
        if let handOff { next = min(next ?? handOff.deadline, handOff.deadline) }
        guard let next else { return 1000 }
        return Int32(clamping: max(0, ContinuousClock.now.duration(to: next).milliseconds + 1))
    }

    private func expire() {
        let now = ContinuousClock.now
        for (key, transfer) in transfers where transfer.deadline <= now {
            finish(key)
        }
        if let waiting = handOff, waiting.deadline <= now {
            handOff = nil
            waiting.done(false)
        }
    }

    private func finish(_ key: Key) {
        transfers[key] = nil
        if !transfers.keys.contains(where: { $0.window == key.window }) {
            conn.selectEvents(on: key.window, mask: 0)
        }
        shared.withLock { $0.activeTransfers = transfers.count }
    }

    private func handle(_ event: XEvent) {
        switch event.code {
        case X11.selectionRequest:
            serve(event.load(as: xcb_selection_request_event_t.self))
        case X11.selectionClear:
            let clear = event.load(as: xcb_selection_clear_event_t.self)
            owned.remove(clear.selection)
            if clear.selection == clipboard { shared.withLock { $0.ownsClipboard = false } }
            if owned.isEmpty { dropOffer() }
        case X11.propertyNotify:
            let notify = event.load(as: xcb_property_notify_event_t.self)
            if notify.state == X11.propertyDelete { advance(Key(window: notify.window, property: notify.atom)) }
        case X11.selectionNotify:
            let notify = event.load(as: xcb_selection_notify_event_t.self)
            if notify.requestor == conn.window && notify.selection == atomManager, let waiting = handOff {
                handOff = nil
                waiting.done(notify.property != X11.none)
            }
        default:
            if let first = conn.xfixesFirstEvent, event.code == first {
                let notify = event.load(as: xcb_xfixes_selection_notify_event_t.self)
                if notify.selection == clipboard && notify.owner != conn.window {
                    shared.withLock { $0.changeCount += 1; $0.ownsClipboard = false }
                }
            }
        }
    }

    private func serve(_ request: xcb_selection_request_event_t) {
        let property = request.property == X11.none ? request.target : request.property
        var answered = false
        let current = owned.contains(request.selection)
            && (request.time == X11.currentTime || request.time >= ownedSince)
        if current {
            if request.target == atomTargets {
                conn.setProperty(request.requestor, property, type: X11.atomATOM,
                                 atoms: [atomTargets, atomTimestamp] + offerOrder)
                answered = true
            } else if request.target == atomTimestamp {
                conn.setProperty(request.requestor, property, type: X11.atomINTEGER, atoms: [ownedSince])
                answered = true
            } else if let target = offer[request.target] {
                // The property's type is the target, or the encoding actually sent (TEXT).
                let type = target.encoding.map { conn.atom($0) } ?? request.target
                answered = send(target.parts, type: type, to: request.requestor, property: property)
            }
        }
        if !answered, let hook = unhandledRequest, hook(self, request) { return }
        conn.notify(requestor: request.requestor, selection: request.selection, target: request.target,
                    property: answered ? property : X11.none, time: request.time)
    }

    private func send(_ parts: [[UInt8]], type: UInt32, to requestor: UInt32, property: UInt32) -> Bool {
        let parts = parts.isEmpty ? [[]] : parts
        let count = parts.reduce(0) { $0 + $1.count }
        if count <= directLimit {
            // One property: the first part replaces it, the others are appended (the requestor
            // reads it only after the SelectionNotify, which follows these requests).
            for (index, part) in parts.enumerated() {
                part.withUnsafeBytes {
                    conn.setProperty(requestor, property, type: type, format: 8, bytes: $0,
                                     mode: index == 0 ? X11.propModeReplace : X11.propModeAppend)
                }
            }
            return true
        }
        let key = Key(window: requestor, property: property)
        if transfers[key] != nil { finish(key) }
        conn.selectEvents(on: requestor, mask: X11.eventMaskPropertyChange)
        conn.setProperty(requestor, property, type: atomIncr, atoms: [UInt32(clamping: count)])
        transfers[key] = Transfer(type: type, parts: parts, count: count, deadline: .now + transferTimeout)
        shared.withLock { $0.activeTransfers = transfers.count }
        return true
    }

    /// The requestor deleted the property: the next INCR chunk (the last one is empty).
    private func advance(_ key: Key) {
        guard var transfer = transfers[key] else { return }
        let end = min(transfer.count, transfer.offset + chunkSize)
        Self.withBytes(of: transfer.parts, in: transfer.offset..<end) { raw in
            conn.setProperty(key.window, key.property, type: transfer.type, format: 8, bytes: raw)
        }
        if transfer.offset == end {
            finish(key)
            return
        }
        transfer.offset = end
        transfer.deadline = .now + transferTimeout
        transfers[key] = transfer
    }

    /// Calls `body` with bytes `range` of `parts` taken together: in place when the range lies in
    /// one part, else gathered into a scratch buffer that is zeroed afterwards.
    static func withBytes(of parts: [[UInt8]], in range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Void) {
        var start = 0
        for part in parts {
            if range.lowerBound >= start && range.upperBound <= start + part.count {
                part.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[(range.lowerBound - start)..<(range.upperBound - start)])) }
                return
            }
            start += part.count
        }
        var gathered: [UInt8] = []
        gathered.reserveCapacity(range.count)
        start = 0
        for part in parts {
            let lower = max(range.lowerBound, start), upper = min(range.upperBound, start + part.count)
            if lower < upper { gathered.append(contentsOf: part[(lower - start)..<(upper - start)]) }
            start += part.count
        }
        gathered.withUnsafeBytes(body)
        gathered.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
    }
}
