#if canImport(Glibc)
import Glibc
#endif
import CWaylandDataControl
import ShareBroker

/// One connection to the compositor and the thread that serves it.
///
/// Every Wayland object is created, used and destroyed on the connection's own event thread: a
/// caller hands it a command (``perform(timeout:_:)``) and waits for the answer with a time
/// limit, so a slow or hung compositor never blocks the caller for longer than that. Transfers
/// to readers run on threads of their own (``serveAndClose(_:_:idleTimeout:)``).
final class WaylandConnection: @unchecked Sendable {
    /// What the event thread's state looks like to a command (event thread only).
    struct Source {
        var proxy: OpaquePointer
        var items: [PasteboardItem]
        var offers: [String: [UInt8]]
    }

    let configuration: WaylandPasteboard.Configuration
    private let display: OpaquePointer
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private var thread = pthread_t()

    // Shared with callers, under the lock.
    private struct Shared {
        var commands: [@Sendable (WaylandConnection) -> Void] = []
        var stopping = false
        var lost: WaylandPasteboardError?
        var changeCount = 0
    }
    private let shared = Locked(Shared())

    // Event thread only.
    private var registry: OpaquePointer?
    private var seat: OpaquePointer?
    private var seatName: UInt32 = 0
    private var manager: OpaquePointer?
    private var managerVersion: UInt32 = 0
    private var device: OpaquePointer?
    private var offerTypes: [UInt: [String]] = [:]
    private var currentOffer: OpaquePointer?
    private var sources: [UInt: Source] = [:]
    private var ownSource: OpaquePointer?
    private var callbacks: [UInt: (Bool) -> Void] = [:]
    private let transfers = Locked(0)

    // Listener tables, alive as long as the connection.
    private let registryListener = UnsafeMutablePointer<wl_registry_listener>.allocate(capacity: 1)
    private let deviceListener = UnsafeMutablePointer<zwlr_data_control_device_v1_listener>.allocate(capacity: 1)
    private let sourceListener = UnsafeMutablePointer<zwlr_data_control_source_v1_listener>.allocate(capacity: 1)
    private let offerListener = UnsafeMutablePointer<zwlr_data_control_offer_v1_listener>.allocate(capacity: 1)
    private let callbackListener = UnsafeMutablePointer<wl_callback_listener>.allocate(capacity: 1)

    /// Connects, starts the event thread and binds the data-control manager and the seat.
    init(configuration: WaylandPasteboard.Configuration) throws(WaylandPasteboardError) {
        self.configuration = configuration
        let name = configuration.display
        guard let display = wl_display_connect(name) else {
            throw .cannotConnect(display: name ?? "$WAYLAND_DISPLAY", code: errno)
        }
        self.display = display
        var fds: [Int32] = [-1, -1]
        guard cwdc_pipe(&fds, 1) == 0 else {
            let code = errno
            wl_display_disconnect(display)
            throw .system(operation: "create a wake-up pipe", code: code)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        installListeners()
        guard startThread() else {
            close(wakeRead)
            close(wakeWrite)
            wl_display_disconnect(display)
            freeListeners()
            throw .system(operation: "start the Wayland event thread", code: errno)
        }
        do throws(WaylandPasteboardError) {
            try bind()
        } catch {
            shutdown()
            throw error
        }
    }

    // MARK: Commands (any thread)

    /// Runs `body` on the event thread; it calls its completion (at most once) with the answer.
    /// Throws when the connection is gone or no answer came within `timeout`.
    func perform<T: Sendable>(
        _ operation: String,
        timeout: Duration,
        _ body: @escaping @Sendable (WaylandConnection, Completion<Result<T, WaylandPasteboardError>>) -> Void
    ) throws(WaylandPasteboardError) -> T {
        let completion = Completion<Result<T, WaylandPasteboardError>>()
        let refused = shared.withLock { shared -> WaylandPasteboardError? in
            if let lost = shared.lost { return lost }
            if shared.stopping { return .closed }
            shared.commands.append { connection in body(connection, completion) }
            return nil
        }
        if let refused { throw refused }
        wake()
        guard let result = completion.wait(timeout: timeout) else {
            throw .timedOut(operation: operation)
        }
        return try result.get()
    }

    /// The change count: incremented by each selection this connection sets or releases, and
    /// each time another client replaces the selection.
    var changeCount: Int { shared.withLock { $0.changeCount } }

    /// Stops the event thread, destroying every object (the compositor drops a selection this
    /// connection still owned), and waits for it.
    func shutdown() {
        let first = shared.withLock { shared -> Bool in
            defer { shared.stopping = true }
            return !shared.stopping
        }
        guard first else { return }
        wake()
        pthread_join(thread, nil)
        close(wakeRead)
        close(wakeWrite)
        freeListeners()
    }

    private func wake() {
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    // MARK: Requests (event thread)

    /// Sets this connection's selection to `items` (empty: releases it); answers the new change
    /// count once the compositor has processed the request.
    func setSelection(_ items: [PasteboardItem], offers: [WaylandRepresentations.Offer],
                      completion: Completion<Result<Int, WaylandPasteboardError>>) {
        guard let manager, let device else { return completion.complete(.failure(.noDataControl)) }
        var source: OpaquePointer?
        if !offers.isEmpty {
            guard let created = zwlr_data_control_manager_v1_create_data_source(manager) else {
                return completion.complete(.failure(.system(operation: "create a data source", code: errno)))
            }
            zwlr_data_control_source_v1_add_listener(created, sourceListener, Unmanaged.passUnretained(self).toOpaque())
            var table: [String: [UInt8]] = [:]
            for offer in offers {
                zwlr_data_control_source_v1_offer(created, offer.mimeType)
                table[offer.mimeType] = offer.bytes
            }
            sources[UInt(bitPattern: created)] = Source(proxy: created, items: items, offers: table)
            source = created
        }
        setDeviceSelection(device, source)
        if source == nil, let old = ownSource {
            destroySource(old)
        }
        ownSource = source
        let count = shared.withLock { shared in
            shared.changeCount += 1
            return shared.changeCount
        }
        sync { ok in completion.complete(ok ? .success(count) : .failure(self.lostError())) }
    }

    /// Releases the selection if this connection still owns it and the change count is
    /// `changeCount`; answers whether it did.
    func release(ifChangeCount changeCount: Int, completion: Completion<Result<Bool, WaylandPasteboardError>>) {
        guard let device, let source = ownSource, self.changeCount == changeCount else {
            return completion.complete(.success(false))
        }
        setDeviceSelection(device, nil)
        destroySource(source)
        ownSource = nil
        shared.withLock { $0.changeCount += 1 }
        sync { ok in completion.complete(ok ? .success(true) : .failure(self.lostError())) }
    }

    /// What a paste reads: this connection's own items when it owns the selection, else the
    /// read ends of pipes the current owner writes the chosen types into.
    enum Reading: Sendable {
        case own([PasteboardItem])
        case transfers([(mimeType: String, fd: Int32)])
    }

    func startReading(completion: Completion<Result<Reading, WaylandPasteboardError>>) {
        if let own = ownSource, let source = sources[UInt(bitPattern: own)] {
            let types = WaylandRepresentations.typesToRead(from: Array(source.offers.keys))
            let items = types.compactMap { mime in
                source.offers[mime].map { PasteboardItem(type: WaylandRepresentations.itemType(forMimeType: mime), bytes: $0) }
            }
            return completion.complete(.success(.own(items)))
        }
        guard let offer = currentOffer, let offered = offerTypes[UInt(bitPattern: offer)] else {
            return completion.complete(.success(.transfers([])))
        }
        var pipes: [(mimeType: String, fd: Int32)] = []
        for mime in WaylandRepresentations.typesToRead(from: offered) {
            var fds: [Int32] = [-1, -1]
            guard cwdc_pipe(&fds, 0) == 0 else {
                let code = errno
                for pipe in pipes { close(pipe.fd) }
                return completion.complete(.failure(.system(operation: "create a pipe", code: code)))
            }
            zwlr_data_control_offer_v1_receive(offer, mime, fds[1])
            close(fds[1]) // libwayland sends a duplicate
            pipes.append((mime, fds[0]))
        }
        _ = wl_display_flush(display)
        completion.complete(.success(.transfers(pipes)))
    }

    private func setDeviceSelection(_ device: OpaquePointer, _ source: OpaquePointer?) {
        switch configuration.selection {
        case .clipboard: zwlr_data_control_device_v1_set_selection(device, source)
        case .primary: zwlr_data_control_device_v1_set_primary_selection(device, source)
        }
    }

    private func destroySource(_ source: OpaquePointer) {
        sources[UInt(bitPattern: source)] = nil
        zwlr_data_control_source_v1_destroy(source)
    }

    /// Asks the compositor for a round trip; `done(true)` once it answered, `done(false)` if the
    /// connection is lost first.
    private func sync(_ done: @escaping (Bool) -> Void) {
        guard let callback = wl_display_sync(display) else { return done(false) }
        wl_callback_add_listener(callback, callbackListener, Unmanaged.passUnretained(self).toOpaque())
        callbacks[UInt(bitPattern: callback)] = done
    }

    private func lostError() -> WaylandPasteboardError {
        shared.withLock { $0.lost } ?? .closed
    }

    // MARK: Binding

    private func bind() throws(WaylandPasteboardError) {
        let timeout = configuration.requestTimeout
        let _: Bool = try perform("connect to the compositor", timeout: timeout) { connection, completion in
            connection.bindGlobals(completion)
        }
    }

    private func bindGlobals(_ completion: Completion<Result<Bool, WaylandPasteboardError>>) {
        guard let registry = wl_display_get_registry(display) else {
            return completion.complete(.failure(.system(operation: "get the registry", code: errno)))
        }
        self.registry = registry
        wl_registry_add_listener(registry, registryListener, Unmanaged.passUnretained(self).toOpaque())
        sync { ok in
            guard ok else { return completion.complete(.failure(self.lostError())) }
            guard let manager = self.manager else { return completion.complete(.failure(.noDataControl)) }
            guard let seat = self.seat else { return completion.complete(.failure(.noSeat)) }
            if self.configuration.selection == .primary && self.managerVersion < 2 {
                return completion.complete(.failure(.noPrimarySelection))
            }
            guard let device = zwlr_data_control_manager_v1_get_data_device(manager, seat) else {
                return completion.complete(.failure(.system(operation: "get the data device", code: errno)))
            }
            self.device = device
            zwlr_data_control_device_v1_add_listener(device, self.deviceListener, Unmanaged.passUnretained(self).toOpaque())
            // A second round trip delivers the current selection.
            self.sync { ok in completion.complete(ok ? .success(true) : .failure(self.lostError())) }
        }
    }

    // MARK: Events (event thread)

    private static func connection(_ data: UnsafeMutableRawPointer?) -> WaylandConnection? {
        data.map { Unmanaged<WaylandConnection>.fromOpaque($0).takeUnretainedValue() }
    }

    private func installListeners() {
        registryListener.initialize(to: wl_registry_listener(
            global: { data, registry, name, interface, version in
                guard let connection = WaylandConnection.connection(data), let registry, let interface else { return }
                connection.global(registry, name: name, interface: String(cString: interface), version: version)
            },
            global_remove: { data, _, name in
                guard let connection = WaylandConnection.connection(data) else { return }
                if name == connection.seatName, connection.seat != nil {
                    connection.markLost(.noSeat)
                }
            }))
        deviceListener.initialize(to: zwlr_data_control_device_v1_listener(
            data_offer: { data, _, offer in
                guard let connection = WaylandConnection.connection(data), let offer else { return }
                connection.offerTypes[UInt(bitPattern: offer)] = []
                zwlr_data_control_offer_v1_add_listener(offer, connection.offerListener, data)
            },
            selection: { data, _, offer in
                WaylandConnection.connection(data)?.selectionChanged(offer, kind: .clipboard)
            },
            finished: { data, _ in
                WaylandConnection.connection(data)?.markLost(.noDataControl)
            },
            primary_selection: { data, _, offer in
                WaylandConnection.connection(data)?.selectionChanged(offer, kind: .primary)
            }))
        sourceListener.initialize(to: zwlr_data_control_source_v1_listener(
            send: { data, source, mimeType, fd in
                guard let connection = WaylandConnection.connection(data), let source, let mimeType else {
                    if fd >= 0 { close(fd) }
                    return
                }
                connection.send(source, mimeType: String(cString: mimeType), fd: fd)
            },
            cancelled: { data, source in
                guard let connection = WaylandConnection.connection(data), let source else { return }
                connection.cancelled(source)
            }))
        offerListener.initialize(to: zwlr_data_control_offer_v1_listener(
            offer: { data, offer, mimeType in
                guard let connection = WaylandConnection.connection(data), let offer, let mimeType else { return }
                let key = UInt(bitPattern: offer)
                if connection.offerTypes[key]?.count ?? 0 < 256 {
                    connection.offerTypes[key, default: []].append(String(cString: mimeType))
                }
            }))
        callbackListener.initialize(to: wl_callback_listener(
            done: { data, callback, _ in
                guard let connection = WaylandConnection.connection(data), let callback else { return }
                let done = connection.callbacks.removeValue(forKey: UInt(bitPattern: callback))
                wl_callback_destroy(callback)
                done?(true)
            }))
    }

    private func freeListeners() {
        registryListener.deallocate()
        deviceListener.deallocate()
        sourceListener.deallocate()
        offerListener.deallocate()
        callbackListener.deallocate()
    }

    private func global(_ registry: OpaquePointer, name: UInt32, interface: String, version: UInt32) {
        switch interface {
        case "zwlr_data_control_manager_v1" where manager == nil:
            managerVersion = min(version, 2)
            manager = cwdc_bind_manager(registry, name, managerVersion)
        case "wl_seat" where seat == nil:
            seatName = name
            seat = cwdc_bind_seat(registry, name, 1)
        default:
            break
        }
    }

    private func selectionChanged(_ offer: OpaquePointer?, kind: WaylandPasteboard.Selection) {
        guard kind == configuration.selection else {
            if let offer { forget(offer) }
            return
        }
        if let previous = currentOffer, previous != offer { forget(previous) }
        currentOffer = offer
        if ownSource == nil { shared.withLock { $0.changeCount += 1 } }
    }

    private func forget(_ offer: OpaquePointer) {
        offerTypes[UInt(bitPattern: offer)] = nil
        zwlr_data_control_offer_v1_destroy(offer)
    }

    private func send(_ source: OpaquePointer, mimeType: String, fd: Int32) {
        guard let bytes = sources[UInt(bitPattern: source)]?.offers[mimeType] else {
            close(fd)
            return
        }
        let limit = configuration.maxConcurrentTransfers
        let admitted = transfers.withLock { count -> Bool in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard admitted else {
            close(fd) // too many readers at once: this one gets nothing rather than stalling others
            return
        }
        let idle = configuration.transferTimeout
        let transfers = self.transfers
        let started = startDetachedThread {
            serveAndClose(fd, bytes, idleTimeout: idle)
            transfers.withLock { $0 -= 1 }
        }
        if !started {
            close(fd)
            transfers.withLock { $0 -= 1 }
        }
    }

    private func cancelled(_ source: OpaquePointer) {
        if source == ownSource {
            ownSource = nil
            shared.withLock { $0.changeCount += 1 }
        }
        destroySource(source)
    }

    private func markLost(_ error: WaylandPasteboardError) {
        shared.withLock { shared in
            if shared.lost == nil { shared.lost = error }
        }
        let pending = callbacks
        callbacks = [:]
        for done in pending.values { done(false) }
    }

    // MARK: The event thread

    private func startThread() -> Bool {
        let box = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let connection = Unmanaged<WaylandConnection>.fromOpaque(argument).takeRetainedValue()
            blockSIGPIPE()
            connection.run()
            return nil
        }, box)
        if rc != 0 {
            Unmanaged<WaylandConnection>.fromOpaque(box).release()
            return false
        }
        return true
    }

    private func run() {
        let fd = wl_display_get_fd(display)
        loop: while true {
            let (commands, stopping) = shared.withLock { shared in
                defer { shared.commands = [] }
                return (shared.commands, shared.stopping)
            }
            for command in commands { command(self) }
            if stopping { break loop }
            if shared.withLock({ $0.lost }) != nil {
                // Keep answering commands (with the error) until stopped.
                var pfd = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
                _ = poll(&pfd, 1, -1)
                drainWake()
                continue
            }
            while wl_display_prepare_read(display) != 0 {
                if wl_display_dispatch_pending(display) < 0 {
                    connectionFailed()
                    continue loop
                }
            }
            var events = Int16(POLLIN)
            if wl_display_flush(display) < 0 {
                if errno == EAGAIN {
                    events |= Int16(POLLOUT)
                } else {
                    wl_display_cancel_read(display)
                    connectionFailed()
                    continue loop
                }
            }
            var pfds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&pfds, 2, -1)
            if ready > 0 && pfds[0].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
                if wl_display_read_events(display) < 0 {
                    connectionFailed()
                    continue loop
                }
            } else {
                wl_display_cancel_read(display)
            }
            if wl_display_dispatch_pending(display) < 0 {
                connectionFailed()
                continue loop
            }
            if pfds[1].revents != 0 { drainWake() }
        }
        teardown()
    }

    private func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
    }

    private func connectionFailed() {
        let code = wl_display_get_error(display)
        markLost(.connectionLost(code: code))
    }

    private func teardown() {
        for source in sources.values { zwlr_data_control_source_v1_destroy(source.proxy) }
        sources = [:]
        ownSource = nil
        for key in offerTypes.keys {
            if let offer = OpaquePointer(bitPattern: key) { zwlr_data_control_offer_v1_destroy(offer) }
        }
        offerTypes = [:]
        currentOffer = nil
        for key in callbacks.keys {
            if let callback = OpaquePointer(bitPattern: key) { wl_callback_destroy(callback) }
        }
        let pending = callbacks
        callbacks = [:]
        for done in pending.values { done(false) }
        if let device { zwlr_data_control_device_v1_destroy(device) }
        if let manager { zwlr_data_control_manager_v1_destroy(manager) }
        if let seat { wl_seat_destroy(seat) }
        if let registry { wl_registry_destroy(registry) }
        device = nil
        manager = nil
        seat = nil
        registry = nil
        _ = wl_display_flush(display)
        wl_display_disconnect(display)
    }
}
