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
public enum TransferRules {
    /// Whether a document may go to `target` through `channel`.
    @inlinable
    public static func openIn(target: String, via channel: TransferChannel, in policy: PolicySnapshot) -> Decision {
        guard policy.isReady else { return Decision(allowed: false, rule: .notReady) }
        guard policy.authState == .authorized else { return Decision(allowed: false, rule: .notAuthorized) }
        switch policy.openInPolicy {
        case .authorized:
            return Decision(allowed: true, rule: .openInAuthorized)
        case .unauthorized:
            return Decision(allowed: false, rule: .openInUnauthorized)
        case .whitelist:
            if channel == .activitySheet {
                return Decision(allowed: false, rule: .activitySheetUnderWhitelist)
            }
            if target == WellKnownApp.nativeMail || target == WellKnownApp.mailActivity {
                return policy.whitelistAllowsNativeMail
                    ? Decision(allowed: true, rule: .nativeMailWhitelisted)
                    : Decision(allowed: false, rule: .nativeMailNotWhitelisted)
            }
            return policy.openInWhitelist.contains(target)
                ? Decision(allowed: true, rule: .inWhitelist)
                : Decision(allowed: false, rule: .notInWhitelist)
        }
    }

    /// Whether native mail may open: the in-app composer, or `mailto:` before its exemptions.
    @inlinable
    public static func nativeMail(in policy: PolicySnapshot) -> Decision {
        guard policy.isReady else { return Decision(allowed: false, rule: .notReady) }
        guard policy.authState == .authorized else { return Decision(allowed: false, rule: .notAuthorized) }
        switch policy.openInPolicy {
        case .authorized: return Decision(allowed: true, rule: .openInAuthorized)
        case .unauthorized: return Decision(allowed: false, rule: .openInUnauthorized)
        case .whitelist:
            return policy.whitelistAllowsNativeMail
                ? Decision(allowed: true, rule: .nativeMailWhitelisted)
                : Decision(allowed: false, rule: .nativeMailNotWhitelisted)
        }
    }

    /// Whether the app may print.
    @inlinable
    public static func print(in policy: PolicySnapshot) -> Decision {
        guard policy.isReady else { return Decision(allowed: false, rule: .notReady) }
        guard policy.authState == .authorized else { return Decision(allowed: false, rule: .notAuthorized) }
        return policy.printPolicy == .authorized
            ? Decision(allowed: true, rule: .printAuthorized)
            : Decision(allowed: false, rule: .printUnauthorized)
    }

    /// Whether content may be dropped onto `target`.
    @inlinable
    public static func dragAndDrop(target: String, in policy: PolicySnapshot) -> Decision {
        guard policy.isReady else { return Decision(allowed: false, rule: .notReady) }
        guard policy.authState == .authorized else { return Decision(allowed: false, rule: .notAuthorized) }
        switch policy.dragAndDropPolicy {
        case .allApps: return Decision(allowed: true, rule: .dragAndDropAll)
        case .noApps: return Decision(allowed: false, rule: .dragAndDropNone)
        case .appConnectApps:
            return policy.device[target]?.isAuthorizedAppConnectApp == true
                ? Decision(allowed: true, rule: .dragAndDropAppConnectTarget)
                : Decision(allowed: false, rule: .dragAndDropNotAppConnectTarget)
        }
    }
}
