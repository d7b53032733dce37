// The clipboard: copy (one item or several representations) and paste.
import CShareBrokerABI
import Glibc
import ShareBroker
import ShareBrokerCrypto

extension CopyRule {
    /// The SB_COPY_RULE_* code.
    var code: Int32 {
        switch self {
        case .unmanagedContent: SB_COPY_RULE_UNMANAGED_CONTENT
        case .notReady: SB_COPY_RULE_NOT_READY
        case .notAuthorized: SB_COPY_RULE_NOT_AUTHORIZED
        case .pasteboardAuthorized: SB_COPY_RULE_PASTEBOARD_AUTHORIZED
        case .pasteboardUnauthorized: SB_COPY_RULE_PASTEBOARD_UNAUTHORIZED
        case .secureCopy: SB_COPY_RULE_SECURE_COPY
        case .secureServicesUnavailable: SB_COPY_RULE_SECURE_SERVICES_UNAVAILABLE
        case .noKeys: SB_COPY_RULE_NO_KEYS
        case .shortTextException: SB_COPY_RULE_SHORT_TEXT_EXCEPTION
        }
    }
}

private let copyRuleNames = StaticNames(CopyRule.allCases.sorted { $0.code < $1.code }.map(\.rawValue), unknown: "unknown")

@_cdecl("sb_copy_rule_name")
public func sb_copy_rule_name(_ rule: Int32) -> UnsafePointer<CChar> {
    copyRuleNames[rule]
}

/// The caller's item, validated before its bytes are read, borrowed: the copy seals straight
/// from the caller's buffer, and only a copy in the clear copies the bytes (the pasteboard keeps
/// them). Valid until the sb_copy call that made it returns.
@inline(__always)
private func item(type: UnsafePointer<CChar>?, bytes: UnsafePointer<UInt8>?, length: Int,
                  _ argument: String) throws(CFailure) -> BorrowedRepresentation {
    // size_t arrives as Int: a length over Int.max is negative here.
    guard length >= 0, length <= EnvelopeFormat.maxPlaintextSize else {
        throw CFailure(SB_ERR_TOO_LARGE, "\(argument) is larger than the \(EnvelopeFormat.maxPlaintextSize)-byte limit; nothing was written")
    }
    // The common type without a new String: the library's own constant.
    let type = type.map { strcmp($0, textTypeCString[0]) == 0 } == true ? PasteboardItem.textType : try string(type, "\(argument).type")
    guard !type.isEmpty, type.utf8.count <= EnvelopeFormat.maxItemTypeLength else {
        throw CFailure(SB_ERR_INVALID_ARGUMENT,
                       "\(argument).type must be 1 to \(EnvelopeFormat.maxItemTypeLength) bytes of UTF-8; nothing was written")
    }
    guard let bytes else {
        guard length == 0 else { throw .null("\(argument).bytes (with a non-zero length)") }
        return BorrowedRepresentation(type: type, bytes: UnsafeRawBufferPointer(start: nil, count: 0))
    }
    return BorrowedRepresentation(type: type, bytes: UnsafeRawBufferPointer(start: bytes, count: length))
}

/// SB_TYPE_TEXT as a C string.
private let textTypeCString = StaticNames([PasteboardItem.textType], unknown: "")

/// Copies, mapping errors and the result.
private func copy(_ box: BrokerBox, _ items: [BorrowedRepresentation], _ outResult: UnsafeMutablePointer<sb_copy_result>?) throws(CFailure) {
    try copy(outResult) { () throws(ShareBrokerError) in
        try box.withBroker { broker in Result { () throws(ShareBrokerError) in try broker.copyResult(items) } }.get()
    }
}

/// Copies one item (no array of one), mapping errors and the result.
private func copy(_ box: BrokerBox, _ item: BorrowedRepresentation, fromWebView webView: String? = nil,
                  _ outResult: UnsafeMutablePointer<sb_copy_result>?) throws(CFailure) {
    try copy(outResult) { () throws(ShareBrokerError) in
        // The C interface names web views by id; the broker takes handles.
        try box.withBroker { broker in
            Result { () throws(ShareBrokerError) in
                let view = try webView.map { id throws(ShareBrokerError) in try broker.webViews.existingHandle(for: id) }
                return try broker.copyResult(item, fromWebView: view)
            }
        }.get()
    }
}

@_cdecl("sb_copy_from_webview")
public func sb_copy_from_webview(_ handle: OpaquePointer?, _ webView: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?,
                                 _ bytes: UnsafePointer<UInt8>?, _ length: Int,
                                 _ outResult: UnsafeMutablePointer<sb_copy_result>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let webView = try string(webView, "webview")
            try copy(box, try item(type: type, bytes: bytes, length: length, "item"), fromWebView: webView, outResult)
        }
    }
}

private func copy(_ outResult: UnsafeMutablePointer<sb_copy_result>?,
                  _ body: () throws(ShareBrokerError) -> CopyResult) throws(CFailure) {
    let result: CopyResult
    do throws(ShareBrokerError) {
        result = try body()
    } catch {
        switch error {
        case .itemTooLarge: throw CFailure(SB_ERR_TOO_LARGE, "\(error)")
        case .pasteboardWriteFailed: throw CFailure(SB_ERR_PASTEBOARD, "\(error)")
        default: throw CFailure(SB_ERR_INVALID_ARGUMENT, "\(error)")
        }
    }
    guard let outResult else { return }
    let action: Int32 = switch result.action {
    case .writeClear: SB_COPY_WRITE_CLEAR
    case .writeSealed: SB_COPY_WRITE_SEALED
    case .blocked: SB_COPY_BLOCKED
    }
    outResult.pointee = sb_copy_result(action: action, rule: result.decision.rule.code,
                                       notifies_app: result.decision.notifiesApp ? 1 : 0,
                                       generation: result.decision.generation)
}

@_cdecl("sb_copy")
public func sb_copy(_ handle: OpaquePointer?, _ type: UnsafePointer<CChar>?, _ bytes: UnsafePointer<UInt8>?, _ length: Int,
                    _ outResult: UnsafeMutablePointer<sb_copy_result>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            try copy(box, try item(type: type, bytes: bytes, length: length, "item"), outResult)
        }
    }
}

@_cdecl("sb_copy_representations")
public func sb_copy_representations(_ handle: OpaquePointer?, _ items: UnsafePointer<sb_item_view>?, _ count: Int,
                                    _ outResult: UnsafeMutablePointer<sb_copy_result>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard count >= 1, count <= SealedSet.maxEnvelopes else {
                throw CFailure(SB_ERR_INVALID_ARGUMENT,
                               "a copy carries 1 to \(SealedSet.maxEnvelopes) representations (count is \(count)); nothing was written")
            }
            guard let items else { throw .null("items") }
            var total = 0
            for index in 0..<count {
                let (sum, overflow) = total.addingReportingOverflow(items[index].length)
                guard !overflow, items[index].length >= 0, sum <= EnvelopeFormat.maxPlaintextSize else {
                    throw CFailure(SB_ERR_TOO_LARGE,
                                   "the representations are larger than the \(EnvelopeFormat.maxPlaintextSize)-byte limit together; nothing was written")
                }
                total = sum
            }
            var swiftItems: [BorrowedRepresentation] = []
            swiftItems.reserveCapacity(count)
            for index in 0..<count {
                swiftItems.append(try item(type: items[index].type, bytes: items[index].bytes,
                                           length: items[index].length, "items[\(index)]"))
            }
            try copy(box, swiftItems, outResult)
        }
    }
}

@_cdecl("sb_paste")
public func sb_paste(_ handle: OpaquePointer?, _ outItem: UnsafeMutablePointer<UnsafeMutablePointer<sb_item>?>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            guard let outItem else { throw .null("out_item") }
            guard var pasted = box.withBroker({ $0.paste() }) else {
                throw CFailure(SB_ERR_NO_ITEM, "the pasteboard holds nothing this app may read (empty, or sealed for other apps)")
            }
            defer { Zeroize.zero(&pasted.bytes) }
            guard let item = allocateZeroed(sb_item.self) else { throw outOfMemory }
            item.pointee.type = cString(pasted.type)
            let bytes = allocateZeroed(UInt8.self, count: pasted.bytes.count + 1)
            item.pointee.bytes = bytes
            item.pointee.length = pasted.bytes.count
            guard item.pointee.type != nil, let bytes else {
                sb_item_free(item)
                throw outOfMemory
            }
            pasted.bytes.withUnsafeBufferPointer { source in
                if let base = source.baseAddress { bytes.update(from: base, count: source.count) }
            }
            outItem.pointee = item
        }
    }
}

@_cdecl("sb_item_free")
public func sb_item_free(_ item: UnsafeMutablePointer<sb_item>?) {
    guard let item else { return }
    freeCString(item.pointee.type)
    freeZeroed(item.pointee.bytes, count: item.pointee.length + 1)
    freeZeroed(item)
}
