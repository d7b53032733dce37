// Identity, web views (declaration, resolution, copies from a web view) and the app's erasers.
import CShareBrokerABI
import Glibc
import ShareBroker

@_cdecl("sb_broker_set_identity")
public func sb_broker_set_identity(_ handle: OpaquePointer?, _ identity: Int32) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let value: ManagedIdentity
            switch identity {
            case SB_IDENTITY_MANAGED: value = .managed
            case SB_IDENTITY_UNMANAGED: value = .unmanaged
            default: throw CFailure(SB_ERR_INVALID_ARGUMENT, "identity is \(identity), not an SB_IDENTITY_* value")
            }
            try CallbackScope.requireOutside("sb_broker_set_identity")
            do throws(ShareBrokerError) {
                try box.broker.setIdentity(value)
            } catch {
                throw lifecycle(error)
            }
        }
    }
}

/// Maps a web-view error.
func webViewFailure(_ error: ShareBrokerError) -> CFailure {
    switch error {
    case .capacityExceeded: CFailure(SB_ERR_TOO_LARGE, "\(error)")
    default: CFailure(SB_ERR_INVALID_ARGUMENT, "\(error)")
    }
}

@_cdecl("sb_webview_declare")
public func sb_webview_declare(_ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ parent: UnsafePointer<CChar>?,
                               _ policy: Int32) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let id = try string(id, "id")
            let parent = parent == nil ? nil : try string(parent, "parent")
            var value: WebViewPolicy?
            if policy != SB_KEEP {
                guard let known = WebViewPolicy(rawValue: policy) else {
                    throw CFailure(SB_ERR_INVALID_ARGUMENT, "policy is \(policy), not an SB_WEBVIEW_* value nor SB_KEEP")
                }
                value = known
            }
            do throws(ShareBrokerError) {
                try box.broker.webViews.declare(id, parent: parent, policy: value)
            } catch {
                throw webViewFailure(error)
            }
        }
    }
}

@_cdecl("sb_webview_resolve")
public func sb_webview_resolve(_ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?,
                               _ outResolution: UnsafeMutablePointer<sb_webview_resolution>?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let id = try string(id, "id")
            guard let outResolution else { throw .null("out_resolution") }
            let resolution: WebViewResolution
            do throws(ShareBrokerError) {
                resolution = try box.broker.resolveWebView(box.broker.webViews.existingHandle(for: id))
            } catch {
                throw webViewFailure(error)
            }
            outResolution.pointee = sb_webview_resolution(
                identity: resolution.identity == .managed ? SB_IDENTITY_MANAGED : SB_IDENTITY_UNMANAGED,
                blocks_upload_and_paste: resolution.blocksUploadAndPaste ? 1 : 0,
                policy: resolution.policy.rawValue)
        }
    }
}

/// An eraser of the app's, called by a retire.
struct CEraser: SensitiveDataEraser, @unchecked Sendable {
    // Immutable; the function and user data are the caller's, called on the retiring thread as
    // the header documents.
    let wipeName: String
    let erase: sb_eraser_fn
    let userData: UnsafeMutableRawPointer?
    let gate: CallbackGate

    struct Failed: Error, CustomStringConvertible {
        let name: String
        let code: Int32
        var description: String { "the app's eraser '\(name)' reported failure \(code)" }
    }

    func eraseSensitiveData() throws {
        // After sb_broker_destroy the app's eraser is gone: the step is reported as failed.
        let code = gate.enter(otherwise: Int32(-1)) { CallbackScope.run { erase(userData) } }
        if code != 0 { throw Failed(name: wipeName, code: code) }
    }
}

@_cdecl("sb_broker_register_eraser")
public func sb_broker_register_eraser(_ handle: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ erase: sb_eraser_fn?,
                                      _ userData: UnsafeMutableRawPointer?) -> sb_status {
    guarded { () throws(CFailure) in
        try BrokerBox.with(handle) { box throws(CFailure) in
            let name = try string(name, "name")
            guard let erase else { throw .null("erase") }
            guard !name.isEmpty else { throw CFailure(SB_ERR_INVALID_ARGUMENT, "name is empty; give the eraser a short, stable step name") }
            try CallbackScope.requireOutside("sb_broker_register_eraser")
            box.register(CEraser(wipeName: name, erase: erase, userData: userData, gate: box.gate))
        }
    }
}
