// Brokers: create (embedded, attached), start, destroy, the policy pushes of embedded brokers,
// and reading the policy.
import CShareBrokerABI
import Glibc
import ShareBroker
import ShareBrokerAgentProtocol
import ShareBrokerLinux
import ShareBrokerCrypto
import ShareBrokerTesting

@_cdecl("sb_broker_create_embedded")
public func sb_broker_create_embedded(_ appID: UnsafePointer<CChar>?,
                                      _ outBroker: UnsafeMutablePointer<OpaquePointer?>?) -> sb_status {
    guarded { () throws(CFailure) in
        let id = try string(appID, "app_id")
        guard let outBroker else { throw .null("out_broker") }
        guard !id.isEmpty, id.utf8.count <= 255 else {
            throw CFailure(SB_ERR_INVALID_ARGUMENT, "app_id must be 1 to 255 bytes (it is \(id.utf8.count)); pass the app's bundle id")
        }
        let platform: Platform
        do throws(SealingError) {
            platform = try .embedded(entitling: id)
        } catch {
            throw CFailure(SB_ERR_SETUP, "the in-memory platform could not be set up: \(error)")
        }
        outBroker.pointee = BrokerBox(appID: id, platform: platform, gate: CallbackGate()).retainedHandle()
    }
}

@_cdecl("sb_broker_attach")
public func sb_broker_attach(_ socketPath: UnsafePointer<CChar>?, _ callbacks: UnsafePointer<sb_callbacks>?,
                             _ outBroker: UnsafeMutablePointer<OpaquePointer?>?) -> sb_status {
    guarded { () throws(CFailure) in
        let path = socketPath == nil ? AgentPaths.socket : try string(socketPath, "socket_path")
        let table = try CallbackTable(callbacks)
        guard let outBroker else { throw .null("out_broker") }
        try CallbackScope.requireOutside("sb_broker_attach")
        let app: ManagedApp
        let gate = CallbackGate()
        do throws(ManagedAppError) {
            app = try ManagedApp.attach(ManagedApp.Configuration(socketPath: path),
                                        delegate: CallbackDelegate(table, gate: gate))
        } catch {
            gate.close()
            switch error {
            case .agent: throw CFailure(SB_ERR_AGENT, "\(error); check that sharebrokerd runs and registered this executable")
            case .setup: throw CFailure(SB_ERR_SETUP, "an adapter could not be set up: \(error)")
            case .start(let error): throw lifecycle(error)
            }
        }
        outBroker.pointee = BrokerBox(app: app, gate: gate).retainedHandle()
    }
}

@_cdecl("sb_broker_start")
public func sb_broker_start(_ handle: OpaquePointer?, _ callbacks: UnsafePointer<sb_callbacks>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let table = try CallbackTable(callbacks)
            try CallbackScope.requireOutside("sb_broker_start")
            do throws(ShareBrokerError) {
                try box.start(delegate: CallbackDelegate(table, gate: box.gate))
            } catch {
                throw lifecycle(error)
            }
        }
    }
}

@_cdecl("sb_broker_destroy")
public func sb_broker_destroy(_ handle: OpaquePointer?) -> sb_status {
    guard let handle else { return SB_OK }
    return guarded { () throws(CFailure) in
        try CallbackScope.requireOutside("sb_broker_destroy")
        let box = Unmanaged<BrokerBox>.fromOpaque(UnsafeRawPointer(handle)).takeRetainedValue()
        // No callback reaches the app after this returns: stop them, wait for any running on
        // the agent client's thread, then disconnect.
        box.gate.close()
        box.app?.close()
    }
}

@_cdecl("sb_broker_app_id")
public func sb_broker_app_id(_ handle: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: UInt,
                             _ outLength: UnsafeMutablePointer<Int>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            var id = box.broker.appID
            let length = id.utf8.count
            outLength?.pointee = length
            guard let buffer, capacity > UInt(length) else {
                throw CFailure(SB_ERR_TOO_LARGE, "the app id needs \(length + 1) bytes with its NUL; pass a buffer that large")
            }
            id.withUTF8 { utf8 in
                if let base = utf8.baseAddress { memcpy(buffer, base, length) }
            }
            buffer[length] = 0
        }
    }
}

// MARK: - Playing the server (embedded brokers)

/// The enumeration value `raw` of `T`, `nil` for SB_KEEP, or an error naming `member`.
private func value<T: RawRepresentable>(_ raw: Int32, _ type: T.Type, _ member: String) throws(CFailure) -> T?
where T.RawValue == Int32 {
    if raw == SB_KEEP { return nil }
    guard let value = T(rawValue: raw) else {
        throw CFailure(SB_ERR_INVALID_ARGUMENT, "update->\(member) is \(raw), not a known value nor SB_KEEP")
    }
    return value
}

/// The caller's config entries.
private func config(_ entries: UnsafePointer<sb_config_entry>?, count: Int, _ argument: String) throws(CFailure) -> [String: String] {
    guard count >= 0, count <= maxListCount else {
        throw CFailure(SB_ERR_TOO_LARGE, "\(argument) has \(count) entries, more than the \(maxListCount) allowed")
    }
    if count == 0 { return [:] }
    guard let entries else { throw .null(argument) }
    var result: [String: String] = [:]
    for index in 0..<count {
        result[try string(entries[index].key, "\(argument)[\(index)].key")] =
            try string(entries[index].value, "\(argument)[\(index)].value")
    }
    return result
}

/// The Swift form of the caller's update.
private func policyUpdate(_ pointer: UnsafePointer<sb_policy_update>?) throws(CFailure) -> PolicyUpdate {
    guard let pointer else { throw .null("update") }
    // Only the first member is read before the size is known to cover the whole structure.
    let size = Int(UnsafeRawPointer(pointer).load(as: UInt32.self))
    guard size >= MemoryLayout<sb_policy_update>.size else {
        throw CFailure(SB_ERR_INVALID_ARGUMENT,
                       "update->struct_size is \(size), smaller than sizeof(sb_policy_update) (\(MemoryLayout<sb_policy_update>.size)); "
                       + "set it to sizeof(sb_policy_update)")
    }
    let raw = pointer.pointee
    var update = PolicyUpdate()
    update.auth = try value(raw.auth, AuthState.self, "auth")
    if raw.auth_message != nil { update.authMessage = try string(raw.auth_message, "update->auth_message") }
    switch raw.open_in {
    case SB_KEEP: break
    case SB_OPEN_IN_UNAUTHORIZED: update.openIn = .unauthorized
    case SB_OPEN_IN_AUTHORIZED: update.openIn = .authorized
    case SB_OPEN_IN_ALL_APPCONNECT_APPS: update.openIn = .allAppConnectApps
    case SB_OPEN_IN_WHITELIST:
        update.openIn = .whitelist(Set(try strings(raw.open_in_whitelist, count: raw.open_in_whitelist_count,
                                                   "update->open_in_whitelist")))
    default:
        throw CFailure(SB_ERR_INVALID_ARGUMENT, "update->open_in is \(raw.open_in), not an SB_OPEN_IN_* value nor SB_KEEP")
    }
    update.pasteboard = try value(raw.pasteboard, PasteboardPolicy.self, "pasteboard")
    update.print = try value(raw.print, PrintPolicy.self, "print")
    update.secureFileIO = try value(raw.secure_file_io, SecureFileIOPolicy.self, "secure_file_io")
    update.logLevel = try value(raw.log_level, LogLevel.self, "log_level")
    update.dragAndDrop = try value(raw.drag_and_drop, DragAndDropPolicy.self, "drag_and_drop")
    switch raw.managed_browser_required {
    case SB_KEEP: break
    case 0, 1: update.managedBrowserRequired = raw.managed_browser_required == 1
    default:
        throw CFailure(SB_ERR_INVALID_ARGUMENT, "update->managed_browser_required is \(raw.managed_browser_required), not 0, 1 nor SB_KEEP")
    }
    if raw.replace_config != 0 {
        update.config = try config(raw.config, count: raw.config_count, "update->config")
    }
    return update
}

/// Maps a lifecycle error, in the C interface's words.
func lifecycle(_ error: ShareBrokerError) -> CFailure {
    switch error {
    case .notStarted:
        CFailure(SB_ERR_NOT_STARTED, "the broker has not been started; call sb_broker_start first")
    case .alreadyStarted:
        CFailure(SB_ERR_ALREADY_STARTED,
                 "the broker was already started (sb_broker_attach starts the brokers it returns); call sb_broker_start once")
    case .notReady:
        CFailure(SB_ERR_NOT_READY, "no policy has arrived yet; wait for the ready callback before reading the policy")
    case .offlineTimers:
        CFailure(SB_ERR_SETUP, "\(error)")
    default:
        // Not a lifecycle error (the calls mapped here throw only those); said as it is.
        CFailure(SB_ERR_INVALID_ARGUMENT, "\(error)")
    }
}

extension AcknowledgedKind {
    /// The SB_ACK_* code.
    var code: Int32 {
        switch self {
        case .auth: SB_ACK_AUTH
        case .config: SB_ACK_CONFIG
        case .openIn: SB_ACK_OPEN_IN
        case .pasteboard: SB_ACK_PASTEBOARD
        case .print: SB_ACK_PRINT
        case .secureFileIO: SB_ACK_SECURE_FILE_IO
        }
    }
}

/// Writes `outcome` to the caller's structure, if any.
private func write(_ outcome: UpdateOutcome, to pointer: UnsafeMutablePointer<sb_update_outcome>?) {
    guard let pointer else { return }
    var result = sb_update_outcome()
    result.generation = outcome.generation
    result.wiped = outcome.wiped ? 1 : 0
    let count = min(outcome.acknowledgments.count, Int(SB_MAX_ACKNOWLEDGMENTS))
    result.acknowledgment_count = UInt32(count)
    withUnsafeMutableBytes(of: &result.acknowledgments) { raw in
        let records = raw.bindMemory(to: sb_acknowledgment_record.self)
        for index in 0..<count {
            let record = outcome.acknowledgments[index]
            records[index] = sb_acknowledgment_record(kind: record.kind.code, state: record.state.rawValue)
        }
    }
    pointer.pointee = result
}

@_cdecl("sb_broker_apply")
public func sb_broker_apply(_ handle: OpaquePointer?, _ update: UnsafePointer<sb_policy_update>?,
                            _ outOutcome: UnsafeMutablePointer<sb_update_outcome>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let update = try policyUpdate(update)
            try box.requireEmbedded("sb_broker_apply")
            try CallbackScope.requireOutside("sb_broker_apply")
            do throws(ShareBrokerError) {
                write(try box.broker.applyReporting(update), to: outOutcome)
            } catch {
                throw lifecycle(error)
            }
        }
    }
}

@_cdecl("sb_broker_update_device")
public func sb_broker_update_device(_ handle: OpaquePointer?, _ appID: UnsafePointer<CChar>?, _ isAppConnect: Int32,
                                    _ isAuthorized: Int32, _ schemes: UnsafePointer<UnsafePointer<CChar>?>?,
                                    _ schemeCount: Int) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let id = try string(appID, "app_id")
            let schemes = try strings(schemes, count: schemeCount, "schemes")
            try box.requireEmbedded("sb_broker_update_device")
            try CallbackScope.requireOutside("sb_broker_update_device")
            do throws(ShareBrokerError) {
                try box.broker.updateDevice(DeviceApp(id: id, isAppConnect: isAppConnect != 0,
                                                      isAuthorized: isAuthorized != 0, schemes: schemes))
            } catch {
                throw lifecycle(error)
            }
        }
    }
}

@_cdecl("sb_broker_set_secure_services")
public func sb_broker_set_secure_services(_ handle: OpaquePointer?, _ availability: Int32) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let availability = SecureServicesAvailability(rawValue: availability) else {
                throw CFailure(SB_ERR_INVALID_ARGUMENT, "availability is \(availability), not an SB_SECURE_SERVICES_* value")
            }
            try box.requireEmbedded("sb_broker_set_secure_services")
            try CallbackScope.requireOutside("sb_broker_set_secure_services")
            do throws(ShareBrokerError) {
                try box.broker.setSecureServices(availability)
            } catch {
                throw lifecycle(error)
            }
        }
    }
}

@_cdecl("sb_broker_retire")
public func sb_broker_retire(_ handle: OpaquePointer?, _ message: UnsafePointer<CChar>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let message = message == nil ? nil : try string(message, "message")
            try box.requireEmbedded("sb_broker_retire")
            try CallbackScope.requireOutside("sb_broker_retire")
            do throws(ShareBrokerError) {
                try box.broker.apply(PolicyUpdate(auth: .retired, authMessage: message))
            } catch {
                throw lifecycle(error)
            }
        }
    }
}

// MARK: - The policy

@_cdecl("sb_policy_get")
public func sb_policy_get(_ handle: OpaquePointer?, _ outPolicy: UnsafeMutablePointer<UnsafeMutablePointer<sb_policy>?>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let outPolicy else { throw .null("out_policy") }
            let snapshot: PolicySnapshot
            do throws(ShareBrokerError) {
                snapshot = try box.broker.policy()
            } catch {
                throw lifecycle(error)
            }
            guard let policy = allocateZeroed(sb_policy.self) else { throw outOfMemory }
            policy.pointee.generation = snapshot.generation
            policy.pointee.auth_state = snapshot.authState.rawValue
            policy.pointee.open_in_policy = snapshot.openInPolicy.rawValue
            policy.pointee.pasteboard_policy = snapshot.pasteboardPolicy.rawValue
            policy.pointee.print_policy = snapshot.printPolicy.rawValue
            policy.pointee.secure_file_io_policy = snapshot.secureFileIOPolicy.rawValue
            policy.pointee.secure_services = snapshot.secureServices.rawValue
            policy.pointee.log_level = snapshot.logLevel.rawValue
            policy.pointee.drag_and_drop_policy = snapshot.dragAndDropPolicy.rawValue
            policy.pointee.managed_browser_required = snapshot.managedBrowserRequired ? 1 : 0
            var complete = true
            policy.pointee.auth_message = cString(snapshot.authMessage)
            complete = complete && policy.pointee.auth_message != nil
            let whitelist = snapshot.openInWhitelist.sorted()
            if !whitelist.isEmpty {
                if let ids = allocateZeroed(UnsafeMutablePointer<CChar>?.self, count: whitelist.count) {
                    policy.pointee.open_in_whitelist = ids
                    policy.pointee.open_in_whitelist_count = whitelist.count
                    for (index, id) in whitelist.enumerated() {
                        ids[index] = cString(id)
                        complete = complete && ids[index] != nil
                    }
                } else {
                    complete = false
                }
            }
            // Native mail, the id mailto: opens first (as a device document writes them).
            let mail = snapshot.device.nativeMail
            let mailIDs = [mail.launchID] + mail.ids.filter { $0 != mail.launchID }
            if let ids = allocateZeroed(UnsafeMutablePointer<CChar>?.self, count: mailIDs.count) {
                policy.pointee.native_mail_ids = ids
                policy.pointee.native_mail_id_count = mailIDs.count
                for (index, id) in mailIDs.enumerated() {
                    ids[index] = cString(id)
                    complete = complete && ids[index] != nil
                }
            } else {
                complete = false
            }
            let config = snapshot.config.sorted { $0.key < $1.key }
            if !config.isEmpty {
                if let entries = allocateZeroed(sb_config_entry.self, count: config.count) {
                    policy.pointee.config = entries
                    policy.pointee.config_count = config.count
                    for (index, entry) in config.enumerated() {
                        let key = cString(entry.key)
                        let value = cString(entry.value)
                        entries[index] = sb_config_entry(key: key.map { UnsafePointer($0) }, value: value.map { UnsafePointer($0) })
                        complete = complete && key != nil && value != nil
                    }
                } else {
                    complete = false
                }
            }
            guard complete else {
                sb_policy_free(policy)
                throw outOfMemory
            }
            outPolicy.pointee = policy
        }
    }
}

@_cdecl("sb_policy_free")
public func sb_policy_free(_ policy: UnsafeMutablePointer<sb_policy>?) {
    guard let policy else { return }
    freeCString(policy.pointee.auth_message)
    if let ids = policy.pointee.open_in_whitelist {
        for index in 0..<policy.pointee.open_in_whitelist_count { freeCString(ids[index]) }
        freeZeroed(ids, count: policy.pointee.open_in_whitelist_count)
    }
    if let ids = policy.pointee.native_mail_ids {
        for index in 0..<policy.pointee.native_mail_id_count { freeCString(ids[index]) }
        freeZeroed(ids, count: policy.pointee.native_mail_id_count)
    }
    if let entries = policy.pointee.config {
        for index in 0..<policy.pointee.config_count {
            freeCString(UnsafeMutablePointer(mutating: entries[index].key))
            freeCString(UnsafeMutablePointer(mutating: entries[index].value))
        }
        freeZeroed(entries, count: policy.pointee.config_count)
    }
    freeZeroed(policy)
}
