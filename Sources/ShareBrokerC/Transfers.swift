// Outbound transfers: Open In (decision and hand-over), URLs, mail, print, drag and drop.
import CShareBrokerABI
import Glibc
import ShareBroker

extension DecisionRule {
    /// The SB_RULE_* code.
    var code: Int32 {
        switch self {
        case .notReady: SB_RULE_NOT_READY
        case .notAuthorized: SB_RULE_NOT_AUTHORIZED
        case .openInAuthorized: SB_RULE_OPEN_IN_AUTHORIZED
        case .openInUnauthorized: SB_RULE_OPEN_IN_UNAUTHORIZED
        case .inWhitelist: SB_RULE_IN_WHITELIST
        case .notInWhitelist: SB_RULE_NOT_IN_WHITELIST
        case .activitySheetUnderWhitelist: SB_RULE_ACTIVITY_SHEET_UNDER_WHITELIST
        case .nativeMailWhitelisted: SB_RULE_NATIVE_MAIL_WHITELISTED
        case .nativeMailNotWhitelisted: SB_RULE_NATIVE_MAIL_NOT_WHITELISTED
        case .schemeBlockingDisabled: SB_RULE_SCHEME_BLOCKING_DISABLED
        case .appConnectMailApp: SB_RULE_APPCONNECT_MAIL_APP
        case .noHandler: SB_RULE_NO_HANDLER
        case .printAuthorized: SB_RULE_PRINT_AUTHORIZED
        case .printUnauthorized: SB_RULE_PRINT_UNAUTHORIZED
        case .dragAndDropAll: SB_RULE_DRAG_AND_DROP_ALL
        case .dragAndDropAppConnectTarget: SB_RULE_DRAG_AND_DROP_APPCONNECT_TARGET
        case .dragAndDropNotAppConnectTarget: SB_RULE_DRAG_AND_DROP_NOT_APPCONNECT_TARGET
        case .dragAndDropNone: SB_RULE_DRAG_AND_DROP_NONE
        case .openFromAuthorized: SB_RULE_OPEN_FROM_AUTHORIZED
        case .openFromUnauthorized: SB_RULE_OPEN_FROM_UNAUTHORIZED
        case .sourceInOpenFromWhitelist: SB_RULE_SOURCE_IN_OPEN_FROM_WHITELIST
        case .sourceNotInOpenFromWhitelist: SB_RULE_SOURCE_NOT_IN_OPEN_FROM_WHITELIST
        case .unknownSourceUnderWhitelist: SB_RULE_UNKNOWN_SOURCE_UNDER_WHITELIST
        case .pasteIntoUnmanagedContent: SB_RULE_PASTE_INTO_UNMANAGED_CONTENT
        case .pasteInAnyApp: SB_RULE_PASTE_IN_ANY_APP
        case .pasteInOwnItem: SB_RULE_PASTE_IN_OWN_ITEM
        case .pasteInFromOtherApp: SB_RULE_PASTE_IN_FROM_OTHER_APP
        }
    }
}

/// The rule names by code (the codes are the declaration order, checked by the C tests).
private let ruleNames = StaticNames(
    DecisionRule.allCases.sorted { $0.code < $1.code }.map(\.rawValue), unknown: "unknown")

@_cdecl("sb_rule_name")
public func sb_rule_name(_ rule: Int32) -> UnsafePointer<CChar> {
    ruleNames[rule]
}

extension Decision {
    var c: sb_decision { sb_decision(allowed: allowed ? 1 : 0, rule: rule.code, generation: generation) }
}

/// The channel of a valid SB_CHANNEL_* code, or `nil`.
@inline(__always)
private func knownChannel(_ code: Int32) -> TransferChannel? {
    switch code {
    case SB_CHANNEL_DOCUMENT_INTERACTION: .documentInteraction
    case SB_CHANNEL_PREVIEW_CONTROLLER: .previewController
    case SB_CHANNEL_ACTIVITY_SHEET: .activitySheet
    default: nil
    }
}

/// The channel of an SB_CHANNEL_* code, or an error.
@inline(__always)
private func channel(_ code: Int32) throws(CFailure) -> TransferChannel {
    guard let channel = knownChannel(code) else {
        throw CFailure(SB_ERR_INVALID_ARGUMENT, "channel is \(code), not an SB_CHANNEL_* value")
    }
    return channel
}

@_cdecl("sb_decide_open_in")
public func sb_decide_open_in(_ handle: OpaquePointer?, _ target: UnsafePointer<CChar>?, _ channelCode: Int32,
                              _ outDecision: UnsafeMutablePointer<sb_decision>?) -> sb_status {
    // Valid arguments: one call into the core, which decides an ASCII target on its bytes (no
    // String) and validates anything else. NULL pointers and unknown channels take the checked
    // path below, which names the bad argument.
    if let handle, let target, let outDecision, let via = knownChannel(channelCode) {
        let decision = Unmanaged<BrokerBox>.fromOpaque(UnsafeRawPointer(handle))._withUnsafeGuaranteedRef { box in
            box.withBroker { $0.decideOpenIn(targetCString: target, via: via) }
        }
        guard let decision else { return fail(.invalidUTF8("target")) }
        outDecision.pointee = decision.c
        return SB_OK
    }
    return decideOpenInChecked(handle, target, channelCode, outDecision)
}

private func decideOpenInChecked(_ handle: OpaquePointer?, _ target: UnsafePointer<CChar>?, _ channelCode: Int32,
                                 _ outDecision: UnsafeMutablePointer<sb_decision>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let via = try channel(channelCode)
            let target = try string(target, "target")
            guard let outDecision else { throw .null("out_decision") }
            outDecision.pointee = box.withBroker { $0.decideOpenIn(target: target, via: via) }.c
        }
    }
}

/// The largest document sb_open_in takes.
private let maxDocumentSize = Int(Int32.max)

@_cdecl("sb_open_in")
public func sb_open_in(_ handle: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ bytes: UnsafePointer<UInt8>?, _ length: Int,
                       _ target: UnsafePointer<CChar>?, _ channelCode: Int32,
                       _ outResult: UnsafeMutablePointer<UnsafeMutablePointer<sb_transfer_result>?>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let name = try string(name, "name")
            let target = try string(target, "target")
            let via = try channel(channelCode)
            guard let outResult else { throw .null("out_result") }
            // size_t arrives as Int: a length over Int.max is negative here.
            guard length >= 0, length <= maxDocumentSize else {
                throw CFailure(SB_ERR_TOO_LARGE, "the document is larger than the \(maxDocumentSize)-byte limit; nothing was handed over")
            }
            guard bytes != nil || length == 0 else { throw .null("bytes (with a non-zero length)") }
            guard let result = allocateZeroed(sb_transfer_result.self) else { throw outOfMemory }
            let document = (name: name, bytes: bytes.map { Array(UnsafeBufferPointer(start: $0, count: length)) } ?? [])
            let transfer: TransferResult
            do throws(ShareBrokerError) {
                transfer = try box.broker.openIn(document.bytes, named: document.name, target: target, via: via)
            } catch {
                freeZeroed(result)
                switch error {
                case .invalidDocumentName: throw CFailure(SB_ERR_INVALID_ARGUMENT, "\(error)")
                default: throw CFailure(SB_ERR_TRANSFER, "\(error)")
                }
            }
            result.pointee.outcome = transfer.delivered ? SB_TRANSFER_DELIVERED : SB_TRANSFER_DUMMY
            result.pointee.decision = transfer.decision.c
            result.pointee.path = cString(transfer.path)
            result.pointee.name = cString(transfer.name)
            guard result.pointee.path != nil, result.pointee.name != nil else {
                sb_transfer_result_free(result)
                throw outOfMemory
            }
            outResult.pointee = result
        }
    }
}

@_cdecl("sb_transfer_result_free")
public func sb_transfer_result_free(_ result: UnsafeMutablePointer<sb_transfer_result>?) {
    guard let result else { return }
    freeCString(result.pointee.path)
    freeCString(result.pointee.name)
    freeZeroed(result)
}

@_cdecl("sb_open_url")
public func sb_open_url(_ handle: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                        _ outResult: UnsafeMutablePointer<UnsafeMutablePointer<sb_url_result>?>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let url = try string(url, "url")
            guard let outResult else { throw .null("out_result") }
            guard let result = allocateZeroed(sb_url_result.self) else { throw outOfMemory }
            let decision: URLDecision
            do throws(ShareBrokerError) {
                decision = try box.broker.openURL(url)
            } catch {
                freeZeroed(result)
                switch error {
                case .invalidDocumentName, .handOverWriteFailed, .handOffFailed: throw CFailure(SB_ERR_TRANSFER, "\(error)")
                default: throw CFailure(SB_ERR_INVALID_ARGUMENT, "\(error)")
                }
            }
            switch decision.outcome {
            case .opened: result.pointee.outcome = SB_URL_OPENED
            case .blocked: result.pointee.outcome = SB_URL_BLOCKED
            case .unhandled: result.pointee.outcome = SB_URL_UNHANDLED
            }
            result.pointee.decision = decision.decision.c
            result.pointee.handler = decision.handler.flatMap(cString)
            result.pointee.intended_handler = decision.intendedHandler.flatMap(cString)
            guard (decision.handler == nil) == (result.pointee.handler == nil),
                  (decision.intendedHandler == nil) == (result.pointee.intended_handler == nil) else {
                sb_url_result_free(result)
                throw outOfMemory
            }
            outResult.pointee = result
        }
    }
}

@_cdecl("sb_url_result_free")
public func sb_url_result_free(_ result: UnsafeMutablePointer<sb_url_result>?) {
    guard let result else { return }
    freeCString(result.pointee.handler)
    freeCString(result.pointee.intended_handler)
    freeZeroed(result)
}

@_cdecl("sb_compose_mail")
public func sb_compose_mail(_ handle: OpaquePointer?, _ outDecision: UnsafeMutablePointer<sb_decision>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let outDecision else { throw .null("out_decision") }
            outDecision.pointee = box.broker.composeMail().c
        }
    }
}

@_cdecl("sb_print")
public func sb_print(_ handle: OpaquePointer?, _ outDecision: UnsafeMutablePointer<sb_decision>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let outDecision else { throw .null("out_decision") }
            outDecision.pointee = box.broker.print().c
        }
    }
}

@_cdecl("sb_drag_and_drop")
public func sb_drag_and_drop(_ handle: OpaquePointer?, _ target: UnsafePointer<CChar>?,
                             _ outDecision: UnsafeMutablePointer<sb_decision>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let target = try string(target, "target")
            guard let outDecision else { throw .null("out_decision") }
            outDecision.pointee = box.broker.dragAndDrop(to: target).c
        }
    }
}
