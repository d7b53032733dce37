#if canImport(Glibc)
import Glibc
#endif
import CWaylandDataControl
import ShareBroker
import ShareBrokerPOSIX

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
        var selection: WaylandPasteboard.Selection
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
        /// What this connection offers on the clipboard while it owns it.
        var ownOffer: [WaylandRepresentations.Offer]?
        var governsPrimary = false
        /// The data-control protocol bound.
        var dataControlProtocol: DataControlProtocol?
    }
    private let shared = Mutex(Shared())

    // Event thread only.
    private var registry: OpaquePointer?
    private var seat: OpaquePointer?
    private var seatName: UInt32 = 0
    private var manager: OpaquePointer?
    private var managerVersion: UInt32 = 0
    /// The data-control globals the compositor advertises (bound after the first round trip).
    private var advertised: [DataControlProtocol: (name: UInt32, version: UInt32)] = [:]
    private var device: OpaquePointer?
    private var offerTypes: [UInt: [String]] = [:]
    private var currentOffers: [WaylandPasteboard.Selection: OpaquePointer] = [:]
    private var sources: [UInt: Source] = [:]
    private var ownSources: [WaylandPasteboard.Selection: OpaquePointer] = [:]
    private var callbacks: [UInt: (Bool) -> Void] = [:]
    private var pendingWriteEnds: [Int32] = []
    private let transfers = Mutex(0)

    /// The listener tables libwayland calls through, alive as long as the connection and freed
    /// with it, also when `init` throws (raw stored pointers would leak then).
    private final class ListenerTables: @unchecked Sendable {
        let registry = UnsafeMutablePointer<wl_registry_listener>.allocate(capacity: 1)
        let device = UnsafeMutablePointer<zwlr_data_control_device_v1_listener>.allocate(capacity: 1)
        let source = UnsafeMutablePointer<zwlr_data_control_source_v1_listener>.allocate(capacity: 1)
        let offer = UnsafeMutablePointer<zwlr_data_control_offer_v1_listener>.allocate(capacity: 1)
        let callback = UnsafeMutablePointer<wl_callback_listener>.allocate(capacity: 1)

        deinit {
            registry.deallocate()
            device.deallocate()
            source.deallocate()
            offer.deallocate()
            callback.deallocate()
        }
    }
    private let listeners = ListenerTables()
    private var registryListener: UnsafeMutablePointer<wl_registry_listener> { listeners.registry }
    private var deviceListener: UnsafeMutablePointer<zwlr_data_control_device_v1_listener> { listeners.device }
    private var sourceListener: UnsafeMutablePointer<zwlr_data_control_source_v1_listener> { listeners.source }
    private var offerListener: UnsafeMutablePointer<zwlr_data_control_offer_v1_listener> { listeners.offer }
    private var callbackListener: UnsafeMutablePointer<wl_callback_listener> { listeners.callback }

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

    /// What this connection offers on the clipboard while it owns it, else `nil`.
    var ownOffer: [WaylandRepresentations.Offer]? { shared.withLock { $0.ownOffer } }

    /// Whether this connection owns the clipboard.
    var ownsClipboard: Bool { ownOffer != nil }

    /// Whether copies set the primary selection too.
    var governsPrimary: Bool { shared.withLock { $0.governsPrimary } }

    /// The data-control protocol this connection speaks.
    var dataControlProtocol: DataControlProtocol? { shared.withLock { $0.dataControlProtocol } }

    /// Transfers being served now.
    var activeTransfers: Int { transfers.withLock { $0 } }

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
    }

    private func wake() {
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    // MARK: Requests (event thread)

    /// Sets the clipboard (and the primary selection when governed) to a source serving
    /// `offers` each (empty: releases what this connection owns); answers the new change count
    /// once the compositor has processed the requests.
    func setSelection(_ offers: [WaylandRepresentations.Offer],
                      completion: Completion<Result<Int, WaylandPasteboardError>>) {
        guard let manager, let device else { return completion.complete(.failure(.noDataControl)) }
        if offers.isEmpty {
            return release(ifChangeCount: nil) { result in
                completion.complete(result.map { _ in self.changeCount })
            }
        }
        var table: [String: [UInt8]] = [:]
        for offer in offers where table[offer.mimeType] == nil { table[offer.mimeType] = offer.bytes }
        var selections: [WaylandPasteboard.Selection] = [.clipboard]
        if governsPrimary { selections.append(.primary) }
        // A source serves one selection only (the protocol's used_source rule): one each.
        for selection in selections {
            guard let source = cwdc_manager_create_data_source(manager) else {
                return completion.complete(.failure(.system(operation: "create a data source", code: errno)))
            }
            cwdc_source_add_listener(source, sourceListener, Unmanaged.passUnretained(self).toOpaque())
            for offer in offers { cwdc_source_offer(source, offer.mimeType) }
            sources[UInt(bitPattern: source)] = Source(proxy: source, selection: selection, offers: table)
            setDeviceSelection(device, source, selection)
            // The replaced source (if this connection's) is cancelled by the compositor.
            ownSources[selection] = source
        }
        let count = shared.withLock { shared in
            shared.changeCount += 1
            shared.ownOffer = offers
            return shared.changeCount
        }
        sync { ok in completion.complete(ok ? .success(count) : .failure(self.lostError())) }
    }

    /// Releases the selections this connection owns if the change count is `changeCount` (any
    /// count when `nil`); answers whether it released any.
    func release(ifChangeCount changeCount: Int?, completion: Completion<Result<Bool, WaylandPasteboardError>>) {
        release(ifChangeCount: changeCount) { completion.complete($0) }
    }

    private func release(ifChangeCount changeCount: Int?, _ done: @escaping (Result<Bool, WaylandPasteboardError>) -> Void) {
        // A round trip first: a copy another client made just before is then known (its
        // selection event and the cancellation of this connection's source dispatched), and an
        // unset here never clears that client's selection.
        sync { ok in
            guard ok else { return done(.failure(self.lostError())) }
            self.releaseNow(ifChangeCount: changeCount, done)
        }
    }

    private func releaseNow(ifChangeCount changeCount: Int?, _ done: @escaping (Result<Bool, WaylandPasteboardError>) -> Void) {
        guard let device else { return done(.failure(.noDataControl)) }
        if let changeCount, self.changeCount != changeCount { return done(.success(false)) }
        guard !ownSources.isEmpty else { return done(.success(false)) }
        for (selection, source) in ownSources {
            setDeviceSelection(device, nil, selection)
            destroySource(source)
        }
        ownSources = [:]
        shared.withLock { shared in
            shared.changeCount += 1
            shared.ownOffer = nil
        }
        sync { ok in done(ok ? .success(true) : .failure(self.lostError())) }
    }

    /// The types the current owner of `selection` offers, as the compositor listed them (event
    /// thread; tests and diagnostics read it through ``perform(_:timeout:_:)``).
    func offeredTypes(_ selection: WaylandPasteboard.Selection) -> [String] {
        currentOffers[selection].flatMap { offerTypes[UInt(bitPattern: $0)] } ?? []
    }

    /// Asks the owner of `selection` for the types a paste reads
    /// (``DesktopOffer/typesToRead(from:)``), each through a pipe; answers the pipes'
    /// read ends (none when nothing is offered). The owner writes them, so the caller reads them
    /// off this thread.
    func startReading(_ selection: WaylandPasteboard.Selection,
                      completion: Completion<Result<[(mimeType: String, fd: Int32)], WaylandPasteboardError>>) {
        // A round trip first: every selection event the compositor sent before it (another
        // client's copy that returned just now among them) is then dispatched.
        sync { ok in
            guard ok else { return completion.complete(.failure(self.lostError())) }
            self.receive(selection, completion: completion)
        }
    }

    private func receive(_ selection: WaylandPasteboard.Selection,
                         completion: Completion<Result<[(mimeType: String, fd: Int32)], WaylandPasteboardError>>) {
        guard let offer = currentOffers[selection], let offered = offerTypes[UInt(bitPattern: offer)] else {
            return completion.complete(.success([]))
        }
        var pipes: [(mimeType: String, fd: Int32)] = []
        for mime in DesktopOffer.typesToRead(from: offered) {
            var fds: [Int32] = [-1, -1]
            guard cwdc_pipe(&fds, 0) == 0 else {
                let code = errno
                for pipe in pipes { close(pipe.fd) }
                return completion.complete(.failure(.system(operation: "create a pipe", code: code)))
            }
            cwdc_offer_receive(offer, mime, fds[1])
            pipes.append((mime, fds[0]))
            pendingWriteEnds.append(fds[1])
        }
        // libwayland duplicates the fd when it sends the request: close ours after the flush.
        _ = wl_display_flush(display)
        closePendingWriteEnds()
        completion.complete(.success(pipes))
    }

    private func closePendingWriteEnds() {
        for fd in pendingWriteEnds { close(fd) }
        pendingWriteEnds = []
    }

    private func setDeviceSelection(_ device: OpaquePointer, _ source: OpaquePointer?, _ selection: WaylandPasteboard.Selection) {
        switch selection {
        case .clipboard: cwdc_device_set_selection(device, source)
        case .primary: cwdc_device_set_primary_selection(device, source)
        }
    }

    private func destroySource(_ source: OpaquePointer) {
        sources[UInt(bitPattern: source)] = nil
        cwdc_source_destroy(source)
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
            // ext first, wlr as the fallback (the same protocol; KDE Plasma 6.5 offers only ext).
            guard let chosen = DataControlProtocol.preferred(among: Set(self.advertised.keys)),
                  let global = self.advertised[chosen] else {
                return completion.complete(.failure(.noDataControl))
            }
            self.managerVersion = min(global.version, chosen.highestVersion)
            self.manager = cwdc_bind_manager(registry, global.name, self.managerVersion, chosen == .ext ? 1 : 0)
            guard let manager = self.manager else { return completion.complete(.failure(.noDataControl)) }
            guard let seat = self.seat else { return completion.complete(.failure(.noSeat)) }
            let primary = self.configuration.primary && self.managerVersion >= chosen.primarySelectionVersion
            self.shared.withLock {
                $0.governsPrimary = primary
                $0.dataControlProtocol = chosen
            }
            guard let device = cwdc_manager_get_data_device(manager, seat) else {
                return completion.complete(.failure(.system(operation: "get the data device", code: errno)))
            }
            self.device = device
            cwdc_device_add_listener(device, self.deviceListener, Unmanaged.passUnretained(self).toOpaque())
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
                cwdc_offer_add_listener(offer, connection.offerListener, data)
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

    private func global(_ registry: OpaquePointer, name: UInt32, interface: String, version: UInt32) {
        switch interface {
        case DataControlProtocol.ext.interfaceName where advertised[.ext] == nil:
            advertised[.ext] = (name, version)
        case DataControlProtocol.wlr.interfaceName where advertised[.wlr] == nil:
            advertised[.wlr] = (name, version)
        case "wl_seat" where seat == nil:
            seatName = name
            seat = cwdc_bind_seat(registry, name, 1)
        default:
            break
        }
    }

    private func selectionChanged(_ offer: OpaquePointer?, kind: WaylandPasteboard.Selection) {
        if let previous = currentOffers[kind], previous != offer { forget(previous) }
        currentOffers[kind] = offer
        // Another client set the clipboard (this connection's own sets are counted when made).
        if kind == .clipboard && ownSources[.clipboard] == nil { shared.withLock { $0.changeCount += 1 } }
    }

    private func forget(_ offer: OpaquePointer) {
        offerTypes[UInt(bitPattern: offer)] = nil
        cwdc_offer_destroy(offer)
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
        // SIGPIPE blocked: a reader that closes its end makes a write fail with EPIPE instead of
        // ending the process.
        let started = DetachedThread.start(name: "sb-wl-transfer") { [self] in
            blockSIGPIPE()
            serveAndClose(fd, bytes, idleTimeout: idle)
            transfers.withLock { $0 -= 1 }
        }
        if !started {
            close(fd)
            transfers.withLock { $0 -= 1 }
        }
    }

    /// The compositor replaced a source (another client, or this one, set the selection).
    private func cancelled(_ source: OpaquePointer) {
        if let selection = sources[UInt(bitPattern: source)]?.selection, ownSources[selection] == source {
            ownSources[selection] = nil
            if selection == .clipboard {
                shared.withLock { shared in
                    shared.changeCount += 1
                    shared.ownOffer = nil
                }
            }
        }
        destroySource(source)
    }

    private func markLost(_ error: WaylandPasteboardError) {
        // The compositor drops a lost client's selections: nothing is owned any more.
        shared.withLock { shared in
            if shared.lost == nil { shared.lost = error }
            if shared.ownOffer != nil {
                shared.ownOffer = nil
                shared.changeCount += 1
            }
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
        for source in sources.values { cwdc_source_destroy(source.proxy) }
        sources = [:]
        ownSources = [:]
        shared.withLock { $0.ownOffer = nil }
        closePendingWriteEnds()
        for key in offerTypes.keys {
            if let offer = OpaquePointer(bitPattern: key) { cwdc_offer_destroy(offer) }
        }
        offerTypes = [:]
        currentOffers = [:]
        for key in callbacks.keys {
            if let callback = OpaquePointer(bitPattern: key) { wl_callback_destroy(callback) }
        }
        let pending = callbacks
        callbacks = [:]
        for done in pending.values { done(false) }
        if let device { cwdc_device_destroy(device) }
        if let manager { cwdc_manager_destroy(manager) }
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

/// The data-control protocols the Wayland adapter speaks: the same requests and events under two
/// names. ext is the standard (wayland-protocols staging, from 1.39; KDE Plasma 6.5 offers only
/// it); wlr is what wlroots compositors before 0.19 offer (sway 1.7, Debian 12's) and KWin 5.27.
public enum DataControlProtocol: String, Sendable, Hashable, CaseIterable {
    /// `ext_data_control_manager_v1`, version 1 (with the primary selection).
    case ext = "ext_data_control_manager_v1"
    /// `zwlr_data_control_manager_v1`, version 2 (the primary selection from version 2).
    case wlr = "zwlr_data_control_manager_v1"

    /// The manager's interface name, as the registry advertises it.
    public var interfaceName: String { rawValue }

    /// The highest version the adapter binds.
    var highestVersion: UInt32 { self == .ext ? 1 : 2 }

    /// The version from which the protocol carries the primary selection.
    var primarySelectionVersion: UInt32 { self == .ext ? 1 : 2 }

    /// The protocol to bind among those advertised: ext when offered, else wlr, else `nil`.
    static func preferred(among advertised: Set<DataControlProtocol>) -> DataControlProtocol? {
        allCases.first(where: advertised.contains)
    }
}
