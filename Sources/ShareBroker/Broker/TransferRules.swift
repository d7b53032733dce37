/// How a document leaves the app. The channel matters because one of them cannot tell the
/// library which app the user picked.
public enum TransferChannel: String, Sendable, Hashable, CaseIterable {
    /// A document-interaction controller: the library knows the target.
    case documentInteraction
    /// A preview controller (which hands over through document interaction): the target is known.
    case previewController
    /// An activity sheet: the user picks the app after the library has decided, so the target is unknown.
    case activitySheet
}

/// The decisions themselves: pure functions of one snapshot and one request. No I/O, no
/// allocation; ``ShareBroker`` acts on what they return.
@usableFromInline
package enum TransferRules {
    /// The gate every rule passes first: before ready, or while the user is not authorized
    /// (retired included), everything is blocked.
    @inlinable
    package static func failClosed(_ policy: PolicySnapshot) -> Decision? {
        guard policy.isReady else { return Decision(allowed: false, rule: .notReady, generation: policy.generation) }
        guard policy.authState == .authorized else {
            return Decision(allowed: false, rule: .notAuthorized, generation: policy.generation)
        }
        return nil
    }

    /// Whether a document may go to `target` through `channel`.
    @inlinable @inline(__always)
    package static func openIn(target: String, via channel: TransferChannel, in policy: PolicySnapshot) -> Decision {
        openIn(via: channel, in: policy) {
            // The bytes first (an ASCII target: a short hash and a byte comparison), the Strings
            // when they cannot decide (OpenInTargets says when).
            let flags = target.utf8.withContiguousStorageIfAvailable {
                policy.openInTargets.flags(ofUTF8: UnsafeRawBufferPointer($0))
            } ?? OpenInTargets.unknown
            if flags != OpenInTargets.unknown { return flags }
            return policy.device.nativeMail.contains(target) ? OpenInTargets.nativeMail
                : policy.openInWhitelist.contains(target) ? OpenInTargets.whitelisted : 0
        }
    }

    /// The same decision for the target spelled by `utf8`, or `nil` when its bytes cannot decide:
    /// a target that is not all ASCII (not necessarily valid UTF-8), or a whitelist with an id
    /// that is not ASCII (``OpenInTargets``). The caller then decides on the String (the C
    /// interface: after validating the UTF-8). Every policy answers `nil` for a target that is
    /// not ASCII, so an ASCII check is all the bytes ever need.
    @inlinable @inline(__always)
    package static func openIn(targetUTF8 utf8: UnsafeRawBufferPointer, via channel: TransferChannel,
                               in policy: PolicySnapshot) -> Decision? {
        let flags = policy.openInTargets.flags(ofUTF8: utf8)
        if flags == OpenInTargets.unknown { return nil }
        return openIn(via: channel, in: policy) { flags }
    }

    /// The Open In rule, with the target's ``OpenInTargets`` flags (native mail, whitelisted;
    /// never ``OpenInTargets/unknown``) asked for only under a whitelist.
    @inlinable @inline(__always)
    static func openIn(via channel: TransferChannel, in policy: PolicySnapshot, targetFlags: () -> UInt8) -> Decision {
        if let closed = failClosed(policy) { return closed }
        switch policy.openInPolicy {
        case .authorized:
            return Decision(allowed: true, rule: .openInAuthorized, generation: policy.generation)
        case .unauthorized:
            return Decision(allowed: false, rule: .openInUnauthorized, generation: policy.generation)
        case .whitelist:
            if channel == .activitySheet {
                return Decision(allowed: false, rule: .activitySheetUnderWhitelist, generation: policy.generation)
            }
            let flags = targetFlags()
            if flags & OpenInTargets.nativeMail != 0 {
                return policy.whitelistAllowsNativeMail
                    ? Decision(allowed: true, rule: .nativeMailWhitelisted, generation: policy.generation)
                    : Decision(allowed: false, rule: .nativeMailNotWhitelisted, generation: policy.generation)
            }
            return flags & OpenInTargets.whitelisted != 0
                ? Decision(allowed: true, rule: .inWhitelist, generation: policy.generation)
                : Decision(allowed: false, rule: .notInWhitelist, generation: policy.generation)
        }
    }

    /// Whether native mail may open: the in-app composer, or `mailto:` before its exemptions.
    @inlinable
    package static func nativeMail(in policy: PolicySnapshot) -> Decision {
        if let closed = failClosed(policy) { return closed }
        switch policy.openInPolicy {
        case .authorized: return Decision(allowed: true, rule: .openInAuthorized, generation: policy.generation)
        case .unauthorized: return Decision(allowed: false, rule: .openInUnauthorized, generation: policy.generation)
        case .whitelist:
            return policy.whitelistAllowsNativeMail
                ? Decision(allowed: true, rule: .nativeMailWhitelisted, generation: policy.generation)
                : Decision(allowed: false, rule: .nativeMailNotWhitelisted, generation: policy.generation)
        }
    }

    /// Whether the app may print.
    @inlinable
    package static func print(in policy: PolicySnapshot) -> Decision {
        if let closed = failClosed(policy) { return closed }
        return policy.printPolicy == .authorized
            ? Decision(allowed: true, rule: .printAuthorized, generation: policy.generation)
            : Decision(allowed: false, rule: .printUnauthorized, generation: policy.generation)
    }

    /// Whether content may be dropped onto `target`.
    @inlinable
    package static func dragAndDrop(target: String, in policy: PolicySnapshot) -> Decision {
        if let closed = failClosed(policy) { return closed }
        switch policy.dragAndDropPolicy {
        case .allApps: return Decision(allowed: true, rule: .dragAndDropAll, generation: policy.generation)
        case .noApps: return Decision(allowed: false, rule: .dragAndDropNone, generation: policy.generation)
        case .appConnectApps:
            return policy.device[target]?.isAuthorizedAppConnectApp == true
                ? Decision(allowed: true, rule: .dragAndDropAppConnectTarget, generation: policy.generation)
                : Decision(allowed: false, rule: .dragAndDropNotAppConnectTarget, generation: policy.generation)
        }
    }
}
