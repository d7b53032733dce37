// Warnings (issue 33): the handler and its questions, the warn settings of embedded brokers, and
// the transfers that may ask (sb_copy_asking, sb_print_asking, sb_drag_and_drop_asking).
import CShareBrokerABI
import Glibc
import ShareBroker
import ShareBrokerCrypto

/// An open question behind an `sb_warn_question *` (retained until sb_warn_answer): the ticket,
/// and its strings as C strings the accessors hand out.
final class WarnQuestionBox: Sendable {
    let ticket: WarnTicket
    /// target, then code/label pairs: strdup'd once, freed with the box.
    private let strings: [UInt]

    init(_ ticket: WarnTicket) {
        self.ticket = ticket
        let question = ticket.question
        var strings: [UInt] = [UInt(bitPattern: question.target.flatMap { strdup($0) })]
        for reason in question.reasons {
            strings.append(UInt(bitPattern: strdup(reason.code)))
            strings.append(UInt(bitPattern: strdup(reason.label)))
        }
        self.strings = strings
    }

    deinit {
        for address in strings { free(UnsafeMutableRawPointer(bitPattern: address)) }
    }

    func cString(_ index: Int) -> UnsafePointer<CChar>? {
        guard strings.indices.contains(index) else { return nil }
        return UnsafePointer(UnsafeMutablePointer<CChar>(bitPattern: strings[index]))
    }

    /// The box behind a handle, borrowed for the call.
    static func with<T>(_ handle: OpaquePointer?, _ body: (WarnQuestionBox) -> T) -> T? {
        guard let handle else { return nil }
        return Unmanaged<WarnQuestionBox>.fromOpaque(UnsafeRawPointer(handle))._withUnsafeGuaranteedRef(body)
    }
}

/// A C function pointer and its user data, carried to another thread (the app said the callback
/// may be called from any thread).
private struct CCallback<F>: @unchecked Sendable {
    let function: F
    let userData: UInt

    var pointer: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: userData) }

    init(_ function: F, _ userData: UnsafeMutableRawPointer?) {
        self.function = function
        self.userData = UInt(bitPattern: userData)
    }
}

extension WarnOutcome {
    /// The SB_WARN_* code.
    var code: Int32 {
        switch self {
        case .proceeded: SB_WARN_PROCEEDED
        case .remembered: SB_WARN_REMEMBERED
        case .cancelled: SB_WARN_CANCELLED
        case .timedOut: SB_WARN_TIMED_OUT
        case .noHandler: SB_WARN_NO_HANDLER
        case .invalidAnswer: SB_WARN_INVALID_ANSWER
        case .rateLimited: SB_WARN_RATE_LIMITED
        case .policyChanged: SB_WARN_POLICY_CHANGED
        case .holdFailed: SB_WARN_HOLD_FAILED
        }
    }
}

private let exits: [Int32: WarnExit] = [SB_WARN_EXIT_COPY: .copy, SB_WARN_EXIT_OPEN_IN: .openIn,
                                        SB_WARN_EXIT_PRINT: .print, SB_WARN_EXIT_DRAG_AND_DROP: .dragAndDrop]

private func exitCode(_ exit: WarnExit) -> Int32 {
    exits.first { $0.value == exit }?.key ?? -1
}

@_cdecl("sb_broker_set_warn_handler")
public func sb_broker_set_warn_handler(_ handle: OpaquePointer?, _ ask: sb_warn_fn?, _ userData: UnsafeMutableRawPointer?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let ask else {
                box.withBroker { $0.setWarnAsker(nil) }
                return
            }
            let callback = CCallback(ask, userData)
            box.withBroker { broker in
                broker.setWarnAsker { ticket in
                    let question = Unmanaged.passRetained(WarnQuestionBox(ticket)).toOpaque()
                    callback.function(callback.pointer, OpaquePointer(question))
                }
            }
        }
    }
}

@_cdecl("sb_broker_set_warn")
public func sb_broker_set_warn(_ handle: OpaquePointer?, _ exitCode: Int32, _ settings: UnsafePointer<sb_warn_settings>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let exit = exits[exitCode] else {
                throw CFailure(SB_ERR_INVALID_ARGUMENT, "exit \(exitCode) is not an SB_WARN_EXIT_* value")
            }
            try box.requireEmbedded("sb_broker_set_warn")
            var value: WarnSettings?
            if let settings {
                let s = settings.pointee
                guard s.struct_size >= UInt32(MemoryLayout<sb_warn_settings>.size) else {
                    throw CFailure(SB_ERR_INVALID_ARGUMENT, "settings.struct_size must be sizeof(sb_warn_settings)")
                }
                var reasons: [WarnReason] = []
                if s.reason_count > 0 {
                    guard s.reason_count <= WarnSettings.maxReasons else {
                        throw CFailure(SB_ERR_INVALID_ARGUMENT, "at most \(WarnSettings.maxReasons) reasons may be offered")
                    }
                    guard let codes = s.reason_codes, let labels = s.reason_labels else {
                        throw .null("settings.reason_codes or settings.reason_labels (with a non-zero reason_count)")
                    }
                    for i in 0..<s.reason_count {
                        reasons.append(WarnReason(code: try string(codes[i], "settings.reason_codes[\(i)]"),
                                                  label: try string(labels[i], "settings.reason_labels[\(i)]")))
                    }
                }
                let limit = s.rate_proceeds == 0 && s.rate_minutes == 0
                    ? nil : WarnRateLimit(proceeds: Int(s.rate_proceeds), minutes: Int(s.rate_minutes))
                let built = WarnSettings(reasonRequired: s.reason_required != 0, reasons: reasons, freeTextAllowed: s.free_text != 0,
                                         proceedLifetimeMinutes: Int(s.proceed_minutes),
                                         answerTimeoutMilliseconds: (s.answer_seconds == 0 ? 60 : Int(s.answer_seconds)) * 1_000,
                                         rateLimit: limit)
                if let problem = built.problem { throw CFailure(SB_ERR_INVALID_ARGUMENT, "settings: \(problem); nothing changed") }
                guard (1...600).contains(built.answerTimeoutMilliseconds / 1_000) else {
                    throw CFailure(SB_ERR_INVALID_ARGUMENT, "settings.answer_seconds must be 1 to 600; nothing changed")
                }
                value = built
            }
            try CallbackScope.requireOutside("sb_broker_set_warn")
            var warn = box.broker.currentSnapshot.warnPolicy
            warn[exit] = value
            var update = PolicyUpdate()
            update.warn = warn
            do throws(ShareBrokerError) {
                _ = try box.broker.applyReporting(update)
            } catch {
                throw CFailure(SB_ERR_NOT_STARTED, "\(error)")
            }
        }
    }
}

@_cdecl("sb_warn_question_exit")
public func sb_warn_question_exit(_ q: OpaquePointer?) -> Int32 {
    WarnQuestionBox.with(q) { exitCode($0.ticket.question.exit) } ?? -1
}

@_cdecl("sb_warn_question_target")
public func sb_warn_question_target(_ q: OpaquePointer?) -> UnsafePointer<CChar>? {
    WarnQuestionBox.with(q) { $0.cString(0) } ?? nil
}

@_cdecl("sb_warn_question_reason_required")
public func sb_warn_question_reason_required(_ q: OpaquePointer?) -> Int32 {
    WarnQuestionBox.with(q) { $0.ticket.question.reasonRequired ? 1 : 0 } ?? 0
}

@_cdecl("sb_warn_question_free_text")
public func sb_warn_question_free_text(_ q: OpaquePointer?) -> Int32 {
    WarnQuestionBox.with(q) { $0.ticket.question.freeTextAllowed ? 1 : 0 } ?? 0
}

@_cdecl("sb_warn_question_timeout_ms")
public func sb_warn_question_timeout_ms(_ q: OpaquePointer?) -> Int32 {
    WarnQuestionBox.with(q) { Int32(clamping: $0.ticket.question.timeoutMilliseconds) } ?? 0
}

@_cdecl("sb_warn_question_reason_count")
public func sb_warn_question_reason_count(_ q: OpaquePointer?) -> Int {
    WarnQuestionBox.with(q) { $0.ticket.question.reasons.count } ?? 0
}

@_cdecl("sb_warn_question_reason_code")
public func sb_warn_question_reason_code(_ q: OpaquePointer?, _ index: Int) -> UnsafePointer<CChar>? {
    WarnQuestionBox.with(q) { index >= 0 && index < $0.ticket.question.reasons.count ? $0.cString(1 + 2 * index) : nil } ?? nil
}

@_cdecl("sb_warn_question_reason_label")
public func sb_warn_question_reason_label(_ q: OpaquePointer?, _ index: Int) -> UnsafePointer<CChar>? {
    WarnQuestionBox.with(q) { index >= 0 && index < $0.ticket.question.reasons.count ? $0.cString(2 + 2 * index) : nil } ?? nil
}

@_cdecl("sb_warn_answer")
public func sb_warn_answer(_ q: OpaquePointer?, _ proceed: Int32, _ reasonCode: UnsafePointer<CChar>?,
                           _ text: UnsafePointer<CChar>?, _ outAccepted: UnsafeMutablePointer<Int32>?) -> sb_status {
    guarded { () throws(CFailure) in
        guard let q else { throw .null("question") }
        // The caller's one answer: the question is freed whatever happens below.
        let box = Unmanaged<WarnQuestionBox>.fromOpaque(UnsafeRawPointer(q)).takeRetainedValue()
        var answer = WarnAnswer.cancel
        var failure: CFailure?
        if proceed != 0 {
            do throws(CFailure) {
                let code = try reasonCode.map { pointer throws(CFailure) in try string(pointer, "reason_code") }
                let words = try text.map { pointer throws(CFailure) in try string(pointer, "text") }
                answer = .proceed(reasonCode: code, text: words)
            } catch {
                failure = error
            }
        }
        let status = box.ticket.answer(answer)
        outAccepted?.pointee = status == .accepted ? 1 : 0
        if let failure { throw failure }
    }
}

@_cdecl("sb_copy_asking")
public func sb_copy_asking(_ handle: OpaquePointer?, _ type: UnsafePointer<CChar>?, _ bytes: UnsafePointer<UInt8>?, _ length: Int,
                           _ done: sb_copy_done_fn?, _ userData: UnsafeMutableRawPointer?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let done else { throw .null("done") }
            guard length >= 0, length <= EnvelopeFormat.maxPlaintextSize else {
                throw CFailure(SB_ERR_TOO_LARGE, "item is larger than the \(EnvelopeFormat.maxPlaintextSize)-byte limit; nothing was written")
            }
            let type = try string(type, "type")
            guard bytes != nil || length == 0 else { throw .null("bytes (with a non-zero length)") }
            let item = BorrowedRepresentation(type: type, bytes: UnsafeRawBufferPointer(start: bytes, count: length))
            let callback = CCallback(done, userData)
            // A failure found during the call (a bad type) is this call's error; later ones go to done.
            let synchronous = ShareBrokerMutex<ShareBrokerError?>(nil)
            let returned = ShareBrokerMutex(false)
            box.withBroker { broker in
                broker.copyAsking(CollectionOfOne(item)) { result in
                    switch result {
                    case .success(let copied):
                        let action: Int32 = switch copied.action {
                        case .writeClear: SB_COPY_WRITE_CLEAR
                        case .writeSealed: SB_COPY_WRITE_SEALED
                        case .blocked: SB_COPY_BLOCKED
                        }
                        callback.function(callback.pointer, SB_OK, action, copied.outcome?.code ?? SB_WARN_NOT_WARNED)
                    case .failure(let error):
                        if returned.withLock({ $0 }) {
                            callback.function(callback.pointer, error.isPasteboardFailure ? SB_ERR_PASTEBOARD : SB_ERR_TRANSFER,
                                              SB_COPY_BLOCKED, SB_WARN_NOT_WARNED)
                        } else {
                            synchronous.withLock { $0 = error }
                        }
                    }
                }
            }
            returned.withLock { $0 = true }
            if let error = synchronous.withLock({ $0 }) {
                switch error {
                case .itemTooLarge: throw CFailure(SB_ERR_TOO_LARGE, "\(error)")
                case .pasteboardWriteFailed: throw CFailure(SB_ERR_PASTEBOARD, "\(error)")
                default: throw CFailure(SB_ERR_INVALID_ARGUMENT, "\(error)")
                }
            }
        }
    }
}

extension ShareBrokerError {
    fileprivate var isPasteboardFailure: Bool {
        if case .pasteboardWriteFailed = self { return true }
        return false
    }
}

@_cdecl("sb_print_asking")
public func sb_print_asking(_ handle: OpaquePointer?, _ done: sb_warn_done_fn?, _ userData: UnsafeMutableRawPointer?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let done else { throw .null("done") }
            let callback = CCallback(done, userData)
            box.withBroker { broker in
                broker.printAsking { decided in
                    callback.function(callback.pointer, decided.allowed ? 1 : 0, decided.outcome?.code ?? SB_WARN_NOT_WARNED)
                }
            }
        }
    }
}

@_cdecl("sb_drag_and_drop_asking")
public func sb_drag_and_drop_asking(_ handle: OpaquePointer?, _ target: UnsafePointer<CChar>?, _ done: sb_warn_done_fn?,
                                    _ userData: UnsafeMutableRawPointer?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let done else { throw .null("done") }
            let target = try string(target, "target")
            let callback = CCallback(done, userData)
            box.withBroker { broker in
                broker.dragAndDropAsking(to: target) { decided in
                    callback.function(callback.pointer, decided.allowed ? 1 : 0, decided.outcome?.code ?? SB_WARN_NOT_WARNED)
                }
            }
        }
    }
}
