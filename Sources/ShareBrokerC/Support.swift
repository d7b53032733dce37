// The plumbing of the C interface: status codes and the per-thread error message, the
// per-thread callback depth, C strings and buffers the caller frees, and the broker handle.
import CShareBrokerABI
import Glibc
import ShareBroker
import ShareBrokerLinux
import Synchronization

// MARK: - Errors

/// A failure of one C call: its status and a message that says what went wrong and what to do.
struct CFailure: Error {
    let status: sb_status
    let message: String

    init(_ status: Int32, _ message: String) {
        self.status = status
        self.message = message
    }

    static func null(_ argument: String) -> CFailure {
        CFailure(SB_ERR_NULL_ARGUMENT, "\(argument) is NULL; pass a valid pointer")
    }

    static func invalidUTF8(_ argument: String) -> CFailure {
        CFailure(SB_ERR_INVALID_UTF8, "\(argument) is not valid UTF-8; pass NUL-terminated UTF-8 text")
    }
}

/// The per-thread key of the last error message (a malloc'd C string, freed at thread exit).
private let errorKey: pthread_key_t = {
    var key = pthread_key_t()
    _ = pthread_key_create(&key) { free($0) }
    return key
}()

/// The per-thread depth of callbacks being made (an integer kept in the pointer's bits).
private let callbackDepthKey: pthread_key_t = {
    var key = pthread_key_t()
    _ = pthread_key_create(&key, nil)
    return key
}()

/// Records `failure` as this thread's last error and returns its status.
func fail(_ failure: CFailure) -> sb_status {
    if let old = pthread_getspecific(errorKey) { free(old) }
    // strdup may fail under memory pressure: the message is then the static fallback.
    _ = pthread_setspecific(errorKey, strdup("sharebroker: " + failure.message))
    return failure.status
}

/// Runs `body`, turning a thrown ``CFailure`` into its status (and the thread's message).
@inline(__always)
func guarded(_ body: () throws(CFailure) -> Void) -> sb_status {
    do {
        try body()
        return SB_OK
    } catch {
        return fail(error)
    }
}

/// The static empty message, returned before any failure on a thread.
private nonisolated(unsafe) let emptyMessage: UnsafeMutablePointer<CChar> = {
    let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: 1)
    pointer.initialize(to: 0)
    return pointer
}()

@_cdecl("sb_last_error_message")
public func sb_last_error_message() -> UnsafePointer<CChar> {
    if let message = pthread_getspecific(errorKey) {
        return UnsafePointer(message.assumingMemoryBound(to: CChar.self))
    }
    return UnsafePointer(emptyMessage)
}

@_cdecl("sb_version")
public func sb_version() -> UInt32 {
    (UInt32(SB_VERSION_MAJOR) << 16) | (UInt32(SB_VERSION_MINOR) << 8) | UInt32(SB_VERSION_PATCH)
}

// MARK: - Callback depth

/// Whether this thread is inside a callback of the library; the calls that take the broker's
/// update lock refuse to run there instead of deadlocking.
enum CallbackScope {
    static var depth: Int { Int(bitPattern: pthread_getspecific(callbackDepthKey)) }

    /// Runs `body` (which calls into the app) with the depth raised.
    @inline(__always)
    static func run<T>(_ body: () -> T) -> T {
        let previous = depth
        _ = pthread_setspecific(callbackDepthKey, UnsafeRawPointer(bitPattern: previous + 1))
        defer { _ = pthread_setspecific(callbackDepthKey, UnsafeRawPointer(bitPattern: previous)) }
        return body()
    }

    /// Throws when called from inside a callback.
    static func requireOutside(_ function: String) throws(CFailure) {
        if depth > 0 {
            throw CFailure(SB_ERR_CALLBACK_REENTRY,
                           "\(function) was called from inside a sharebroker callback, where it would deadlock; "
                           + "call it after the callback returns")
        }
    }
}

// MARK: - Strings and buffers

/// The caller's NUL-terminated UTF-8 string, validated.
@inline(__always)
func string(_ pointer: UnsafePointer<CChar>?, _ argument: String) throws(CFailure) -> String {
    guard let pointer else { throw .null(argument) }
    guard let value = String(validatingCString: pointer) else { throw .invalidUTF8(argument) }
    return value
}

/// The most entries a list argument (whitelist, config, schemes) may have.
let maxListCount = 4096

/// The caller's array of `count` strings.
func strings(_ pointer: UnsafePointer<UnsafePointer<CChar>?>?, count: Int, _ argument: String) throws(CFailure) -> [String] {
    guard count >= 0, count <= maxListCount else {
        throw CFailure(SB_ERR_TOO_LARGE, "\(argument) has \(count) entries, more than the \(maxListCount) allowed")
    }
    if count == 0 { return [] }
    guard let pointer else { throw .null(argument) }
    var result: [String] = []
    result.reserveCapacity(count)
    for index in 0..<count {
        result.append(try string(pointer[index], "\(argument)[\(index)]"))
    }
    return result
}

/// A C copy of `value` the caller frees through one of the library's free functions; `nil` when
/// memory ran out.
func cString(_ value: String) -> UnsafeMutablePointer<CChar>? {
    var value = value
    return value.withUTF8 { utf8 -> UnsafeMutablePointer<CChar>? in
        guard let memory = malloc(utf8.count + 1) else { return nil }
        let pointer = memory.bindMemory(to: CChar.self, capacity: utf8.count + 1)
        if let base = utf8.baseAddress { memcpy(pointer, base, utf8.count) }
        pointer[utf8.count] = 0
        return pointer
    }
}

/// Zeroes and frees a C string made by ``cString(_:)``.
func freeCString(_ pointer: UnsafeMutablePointer<CChar>?) {
    guard let pointer else { return }
    explicit_bzero(pointer, strlen(pointer))
    free(pointer)
}

/// A zeroed block for one `T`, or `nil` when memory ran out.
func allocateZeroed<T>(_ type: T.Type, count: Int = 1) -> UnsafeMutablePointer<T>? {
    calloc(max(count, 1), MemoryLayout<T>.stride)?.bindMemory(to: T.self, capacity: max(count, 1))
}

/// Zeroes and frees a block made by ``allocateZeroed(_:count:)``.
func freeZeroed<T>(_ pointer: UnsafeMutablePointer<T>?, count: Int = 1) {
    guard let pointer else { return }
    explicit_bzero(pointer, MemoryLayout<T>.stride * max(count, 1))
    free(pointer)
}

let outOfMemory = CFailure(SB_ERR_NO_MEMORY, "out of memory while building the result; free memory and try again")

// MARK: - Names

/// Static C strings for names (never freed: they live as long as the process).
struct StaticNames: @unchecked Sendable {
    // Immutable after creation; the pointers are never written or freed.
    let pointers: [UnsafePointer<CChar>]
    let unknown: UnsafePointer<CChar>

    init(_ names: [String], unknown: String) {
        func make(_ name: String) -> UnsafePointer<CChar> {
            let utf8 = Array(name.utf8CString)
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
            pointer.initialize(from: utf8, count: utf8.count)
            return UnsafePointer(pointer)
        }
        pointers = names.map(make)
        self.unknown = make(unknown)
    }

    subscript(code: Int32) -> UnsafePointer<CChar> {
        code >= 0 && Int(code) < pointers.count ? pointers[Int(code)] : unknown
    }
}

private let statusNames = StaticNames([
    "SB_OK", "SB_ERR_NULL_ARGUMENT", "SB_ERR_INVALID_UTF8", "SB_ERR_TOO_LARGE", "SB_ERR_INVALID_ARGUMENT",
    "SB_ERR_NOT_STARTED", "SB_ERR_ALREADY_STARTED", "SB_ERR_NOT_READY", "SB_ERR_NO_ITEM", "SB_ERR_TRANSFER",
    "SB_ERR_PASTEBOARD", "SB_ERR_AGENT", "SB_ERR_SETUP", "SB_ERR_CALLBACK_REENTRY", "SB_ERR_UNSUPPORTED",
    "SB_ERR_NO_MEMORY",
], unknown: "SB_UNKNOWN")

@_cdecl("sb_status_name")
public func sb_status_name(_ status: sb_status) -> UnsafePointer<CChar> {
    statusNames[status]
}

// MARK: - The handle

/// What an `sb_broker *` points at (an unmanaged, retained reference).
final class BrokerBox: Sendable {
    /// The attached app, or `nil` for an embedded broker.
    let app: ManagedApp?
    /// What the app's callbacks and erasers go through (sb_broker_destroy closes it).
    let gate: CallbackGate
    /// The broker calls go to: for an embedded broker, until sb_broker_start, one never started
    /// (every call answers as before a start: not started, not ready, blocked); from
    /// sb_broker_start on, the broker built there with the erasers collected meanwhile. Both stay
    /// retained (in ``brokers``) until the box goes, so a reader that loaded either may use it.
    private let current: Atomic<Unmanaged<ShareBroker>>
    /// Every broker ``current`` pointed at, and whether sb_broker_start built the real one;
    /// erasers registered before that start, for its configuration.
    private let state: ShareBrokerMutex<State>

    private struct State: ~Copyable {
        var brokers: [ShareBroker]
        var started: Bool
        var erasers: [any SensitiveDataEraser] = []
        /// What the real broker is built with (embedded brokers).
        let platform: Platform?
        let webViews: WebViewHierarchy
    }

    /// An attached broker: `app.broker`, started by `ManagedApp.attach`.
    init(app: ManagedApp, gate: CallbackGate) {
        self.app = app
        self.gate = gate
        current = Atomic(Unmanaged.passUnretained(app.broker))
        state = ShareBrokerMutex(State(brokers: [app.broker], started: true, platform: nil, webViews: app.broker.webViews))
    }

    /// An embedded broker for `appID` over `platform`, built at sb_broker_start.
    init(appID: String, platform: Platform, gate: CallbackGate) {
        app = nil
        self.gate = gate
        let webViews = WebViewHierarchy()
        // Never started: it answers the calls made before sb_broker_start; the web views declared
        // meanwhile are the real broker's too.
        let unstarted = ShareBroker(appID: appID, platform: platform,
                                    configuration: ShareBroker.Configuration(webViews: webViews))
        current = Atomic(Unmanaged.passUnretained(unstarted))
        state = ShareBrokerMutex(State(brokers: [unstarted], started: false, platform: platform, webViews: webViews))
    }

    /// The broker calls go to now.
    @inline(__always)
    var broker: ShareBroker { current.load(ordering: .acquiring).takeUnretainedValue() }

    /// Calls `body` with the broker calls go to now, borrowed: no retain and release per call
    /// (the hot paths: Open In decisions, copies). Safe because ``state`` keeps every broker
    /// ``current`` ever pointed at alive while the box lives.
    @inline(__always)
    func withBroker<R>(_ body: (ShareBroker) -> R) -> R {
        current.load(ordering: .acquiring)._withUnsafeGuaranteedRef(body)
    }

    /// Starts the broker: an embedded one is built now, its configuration carrying the erasers
    /// registered since sb_broker_create_embedded (so a retire a crash interrupted, finished
    /// inside this start, would find them).
    func start(delegate: any ShareBrokerDelegate) throws(ShareBrokerError) {
        try state.withLock { (state: inout State) throws(ShareBrokerError) in
            guard !state.started, let platform = state.platform, let appID = state.brokers.first?.appID else {
                throw .alreadyStarted
            }
            let broker = ShareBroker(appID: appID, platform: platform, configuration: ShareBroker.Configuration(
                erasers: state.erasers, webViews: state.webViews))
            try broker.start(delegate: delegate)
            state.brokers.append(broker)
            state.started = true
            current.store(Unmanaged.passUnretained(broker), ordering: .releasing)
        }
    }

    /// Registers an eraser: before sb_broker_start for that start's configuration; after it
    /// (and on attached brokers, which attach started) for the retires to come.
    func register(_ eraser: any SensitiveDataEraser) {
        state.withLock { (state: inout State) in
            if state.started {
                broker.addEraserAfterStart(eraser)
            } else {
                state.erasers.append(eraser)
            }
        }
    }

    /// A new handle the caller owns.
    func retainedHandle() -> OpaquePointer {
        OpaquePointer(Unmanaged.passRetained(self).toOpaque())
    }

    /// Calls `body` with the box behind `handle`, or throws for NULL.
    @inline(__always)
    static func with<T>(_ handle: OpaquePointer?, _ body: (BrokerBox) throws(CFailure) -> T) throws(CFailure) -> T {
        guard let handle else { throw .null("broker") }
        // The caller's handle keeps the box alive for the call: no retain and release per call.
        let result = Unmanaged<BrokerBox>.fromOpaque(UnsafeRawPointer(handle))._withUnsafeGuaranteedRef { box -> Result<T, CFailure> in
            do throws(CFailure) {
                return .success(try body(box))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Throws unless this is an embedded broker (the calls that play the server).
    func requireEmbedded(_ function: String) throws(CFailure) {
        if app != nil {
            throw CFailure(SB_ERR_UNSUPPORTED,
                           "\(function) is for embedded brokers; an attached broker takes its policy from the agent")
        }
    }
}
