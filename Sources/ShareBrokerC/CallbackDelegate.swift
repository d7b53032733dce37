// The C callbacks table as a ShareBrokerDelegate: a NULL optional member behaves exactly as the
// Swift protocol's default implementation (acknowledged as unsupported, or nothing happens).
import CShareBrokerABI
import Glibc
import ShareBroker
import Synchronization

/// The caller's callbacks table, copied at start.
struct CallbackTable: @unchecked Sendable {
    // Immutable after the copy. The function pointers and user data are the caller's; the header
    // documents that callbacks run on the library's threads, which makes thread safety of what
    // user_data points at the caller's promise.
    let raw: sb_callbacks

    /// Validates and copies `pointer`.
    init(_ pointer: UnsafePointer<sb_callbacks>?) throws(CFailure) {
        guard let pointer else { throw .null("callbacks") }
        // Only the first member is read before the size is known to cover the whole structure.
        let size = Int(UnsafeRawPointer(pointer).load(as: UInt32.self))
        guard size >= MemoryLayout<sb_callbacks>.size else {
            throw CFailure(SB_ERR_INVALID_ARGUMENT,
                           "callbacks->struct_size is \(size), smaller than sizeof(sb_callbacks) (\(MemoryLayout<sb_callbacks>.size)) "
                           + "of this library; set it to sizeof(sb_callbacks)")
        }
        raw = pointer.pointee
        guard raw.ready != nil else { throw .null("callbacks->ready (a required callback)") }
        guard raw.auth_state_changed != nil else { throw .null("callbacks->auth_state_changed (a required callback)") }
    }
}

/// Whether the app's callbacks and erasers may still be called: sb_broker_destroy closes the
/// gate, then waits for those running on other threads (an attached broker's agent client
/// thread) to return, so none reaches the app once destroy has returned.
final class CallbackGate: Sendable {
    private let closed = Atomic<Bool>(false)
    private let inFlight = Atomic<Int>(0)

    /// Runs `call` unless the gate is closed (then returns `otherwise`), counted in flight.
    @inline(__always)
    func enter<T>(otherwise: T, _ call: () -> T) -> T {
        inFlight.add(1, ordering: .sequentiallyConsistent)
        defer { inFlight.subtract(1, ordering: .sequentiallyConsistent) }
        guard !closed.load(ordering: .sequentiallyConsistent) else { return otherwise }
        return call()
    }

    /// Stops every later call and waits for those running to return (the caller is not inside
    /// one: sb_broker_destroy refuses that).
    func close() {
        closed.store(true, ordering: .sequentiallyConsistent)
        while inFlight.load(ordering: .sequentiallyConsistent) > 0 {
            usleep(1_000)
        }
    }
}

/// Calls the app's C functions for each change.
final class CallbackDelegate: ShareBrokerDelegate {
    let table: CallbackTable
    let gate: CallbackGate

    init(_ table: CallbackTable, gate: CallbackGate) {
        self.table = table
        self.gate = gate
    }

    @inline(__always)
    private func enter<T>(otherwise: T, _ call: () -> T) -> T {
        gate.enter(otherwise: otherwise, call)
    }

    private var userData: UnsafeMutableRawPointer? { table.raw.user_data }

    /// Runs an acknowledged callback with a preset acknowledgment and reads its answer.
    private func acknowledged(_ call: (UnsafeMutablePointer<sb_acknowledgment>) -> Void) -> Acknowledgment {
        var ack = sb_acknowledgment()
        ack.state = SB_POLICY_STATE_APPLIED
        let called = withUnsafeMutablePointer(to: &ack) { pointer in
            enter(otherwise: false) { CallbackScope.run { call(pointer) }; return true }
        }
        guard called else { return .error("the app destroyed its broker while a change was being announced") }
        let message = withUnsafeBytes(of: &ack.message) { raw -> String in
            let length = raw.firstIndex(of: 0) ?? raw.count
            return String(decoding: raw.prefix(length), as: UTF8.self)
        }
        guard let state = PolicyState(rawValue: ack.state) else {
            return .error("the app's callback answered with the unknown state \(ack.state)"
                          + (message.isEmpty ? "" : ": \(message)"))
        }
        return Acknowledgment(state, message: message)
    }

    func appConnectIsReady() {
        guard let ready = table.raw.ready else { return }
        enter(otherwise: ()) { CallbackScope.run { ready(userData) } }
    }

    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment {
        guard let callback = table.raw.auth_state_changed else { return .unsupported }
        return acknowledged { ack in message.withCString { callback(userData, state.rawValue, $0, ack) } }
    }

    func configChanged(to config: [String: String]) -> Acknowledgment {
        guard let callback = table.raw.config_changed else { return .unsupported }
        let sorted = config.sorted { $0.key < $1.key }
        let keys = sorted.map { cString($0.key) }
        let values = sorted.map { cString($0.value) }
        defer {
            keys.forEach(freeCString)
            values.forEach(freeCString)
        }
        guard !keys.contains(where: { $0 == nil }), !values.contains(where: { $0 == nil }) else {
            return .error("the library ran out of memory passing the configuration to the app")
        }
        let entries = zip(keys, values).map { sb_config_entry(key: $0.0, value: $0.1) }
        return acknowledged { ack in
            entries.withUnsafeBufferPointer { callback(userData, $0.baseAddress, $0.count, ack) }
        }
    }

    func openInPolicyChanged(to policy: OpenInPolicy, whitelist: Set<String>) -> Acknowledgment {
        guard let callback = table.raw.open_in_policy_changed else { return .unsupported }
        let ids = whitelist.sorted().map(cString)
        defer { ids.forEach(freeCString) }
        guard !ids.contains(where: { $0 == nil }) else {
            return .error("the library ran out of memory passing the whitelist to the app")
        }
        let constIDs = ids.map { $0.map { UnsafePointer($0) } }
        return acknowledged { ack in
            constIDs.withUnsafeBufferPointer { callback(userData, policy.rawValue, $0.baseAddress, $0.count, ack) }
        }
    }

    func openInAttemptedWhenBlocked(policy: OpenInPolicy) {
        guard let callback = table.raw.open_in_attempted_when_blocked else { return }
        enter(otherwise: ()) { CallbackScope.run { callback(userData, policy.rawValue) } }
    }

    func openURLAttemptedWhenUnauthorized(url: String) {
        guard let callback = table.raw.open_url_attempted_when_unauthorized else { return }
        enter(otherwise: ()) { CallbackScope.run { url.withCString { callback(userData, $0) } } }
    }

    func dragAndDropAttemptedToNonAppConnectApp() {
        guard let callback = table.raw.drag_and_drop_attempted_to_non_appconnect_app else { return }
        enter(otherwise: ()) { CallbackScope.run { callback(userData) } }
    }

    func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment {
        guard let callback = table.raw.pasteboard_policy_changed else { return .unsupported }
        return acknowledged { callback(userData, policy.rawValue, $0) }
    }

    func copyAttemptedWhenUnauthorized(policy: PasteboardPolicy) {
        guard let callback = table.raw.copy_attempted_when_unauthorized else { return }
        enter(otherwise: ()) { CallbackScope.run { callback(userData, policy.rawValue) } }
    }

    func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment {
        guard let callback = table.raw.print_policy_changed else { return .unsupported }
        return acknowledged { callback(userData, policy.rawValue, $0) }
    }

    func secureServicesAvailabilityChanged(to availability: SecureServicesAvailability) {
        guard let callback = table.raw.secure_services_availability_changed else { return }
        enter(otherwise: ()) { CallbackScope.run { callback(userData, availability.rawValue) } }
    }

    func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment {
        guard let callback = table.raw.secure_file_io_policy_changed else { return .unsupported }
        return acknowledged { callback(userData, policy.rawValue, $0) }
    }

    func logLevelChanged(to level: LogLevel) {
        guard let callback = table.raw.log_level_changed else { return }
        enter(otherwise: ()) { CallbackScope.run { callback(userData, level.rawValue) } }
    }
}
