/// The user's authorization to use the app, as the management server decides it.
///
/// Raw values are those of AppConnect's `ACAuthState`.
public enum AuthState: Int32, Sendable, CaseIterable, Hashable {
    /// The user may not see or reach sensitive data or views.
    case unauthorized = 0
    /// The only state in which sensitive data may be shown.
    case authorized = 1
    /// The app must erase all sensitive data; the library wipes what it knows of.
    case retired = 2
}

/// Whether documents may leave the app through Open In (effective value).
///
/// Raw values are those of AppConnect's `ACOpenInPolicy`. The server's "All AppConnect apps"
/// setting is not a case here: it is ``TransferSetting/allAppConnectApps``, which the library
/// expands into ``whitelist`` with the currently authorized AppConnect apps.
public enum OpenInPolicy: Int32, Sendable, CaseIterable, Hashable {
    /// No document may leave the app; every target gets a dummy file.
    case unauthorized = 0
    /// Documents may go to any app.
    case authorized = 1
    /// Documents may go only to apps in the whitelist, matched exactly.
    case whitelist = 2
}

/// Whether documents and URLs may come into the app from other apps (effective value).
///
/// Raw values are those of AppConnect's `ACOpenFromPolicy`. The server's "All AppConnect apps"
/// (Intune's `allowedInboundDataTransferSources` `managedApps`) is not a case here: it is
/// ``TransferSetting/allAppConnectApps``, which the library expands into ``whitelist`` with the
/// currently authorized AppConnect apps.
public enum OpenFromPolicy: Int32, Sendable, CaseIterable, Hashable {
    /// No app may send documents to this app.
    case unauthorized = 0
    /// Any app may send documents to this app.
    case authorized = 1
    /// Only whitelisted apps may send documents to this app.
    case whitelist = 2
}

/// Whether the app may write to the general pasteboard (AppConnect's `ACPasteboardPolicy`).
public enum PasteboardPolicy: Int32, Sendable, CaseIterable, Hashable {
    /// Nothing is written; the pasteboard keeps what it had.
    case unauthorized = 0
    /// Items are written in the clear, readable by every app on the device.
    case authorized = 1
    /// Items are sealed so that only authorized managed apps can read them.
    case secureCopy = 2
}

/// Whether the app may print (AppConnect's `ACPrintPolicy`).
public enum PrintPolicy: Int32, Sendable, CaseIterable, Hashable {
    /// Printing is blocked.
    case unauthorized = 0
    /// Printing is allowed.
    case authorized = 1
}

/// Whether the app's own sensitive files must be encrypted (AppConnect's `ACSecureFileIOPolicy`).
public enum SecureFileIOPolicy: Int32, Sendable, CaseIterable, Hashable {
    /// The app may keep plaintext files.
    case optional = 0
    /// Plaintext writes through the secure file API are refused.
    case required = 1
}

/// Whether secure services (the key custodian) can be reached
/// (AppConnect's `ACSecureServicesAvailability`).
public enum SecureServicesAvailability: Int32, Sendable, CaseIterable, Hashable {
    /// No keys: SecureCopy writes fail and nothing is written.
    case unavailable = 0
    /// Keys are at hand.
    case available = 1
}

/// How the app answered a policy change (AppConnect's `ACPolicyState`): the code of an
/// ``Acknowledgment`` on the wire and in the C interface.
package enum PolicyState: Int32, Sendable, CaseIterable, Hashable {
    /// The app does not support this policy.
    case unsupported = 0
    /// The app applied the policy.
    case applied = 1
    /// The app tried and failed; the acknowledgment carries a message.
    case error = 2
}

/// The library's and the app's log verbosity (AppConnect's `ACLogLevel`).
///
/// Whatever the level, the library never logs payloads, document contents or keys.
public enum LogLevel: Int32, Sendable, CaseIterable, Hashable, Comparable {
    /// Errors only.
    case error = 0
    /// Warnings and errors.
    case warning = 1
    /// Status messages (the default).
    case status = 2
    /// Informational messages.
    case info = 3
    /// Verbose; in AppConnect this level may include sensitive information. Ours never does.
    case verbose = 4
    /// Debug; in AppConnect this level may include sensitive information. Ours never does.
    case debug = 5

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Where the app may drag and drop content.
public enum DragAndDropPolicy: Int32, Sendable, CaseIterable, Hashable {
    /// No target may receive a drop (the server's "none").
    case noApps = 0
    /// Any app may receive a drop (the server's "all").
    case allApps = 1
    /// Only authorized AppConnect apps may receive a drop.
    case appConnectApps = 2
}

/// The server's setting of which apps a transfer may go to (Open In) or come from (Open From),
/// before the library expands it into an effective policy and whitelist
/// (``PolicySnapshot/openInPolicy`` and ``PolicySnapshot/openInWhitelist``,
/// ``PolicySnapshot/openFromPolicy`` and ``PolicySnapshot/openFromWhitelist``).
public enum TransferSetting: Sendable, Hashable {
    /// No app: no document may leave the app (Open In), or come in (Open From; Intune's `none`).
    case unauthorized
    /// Any app (Open From: Intune's `allApps`, the default).
    case authorized
    /// Exactly these bundle ids, matched exactly.
    case whitelist(Set<String>)
    /// The server's "All AppConnect apps" (Open From: Intune's `managedApps`): a whitelist of the
    /// AppConnect apps on the device that are currently authorized, kept current as they change.
    case allAppConnectApps
}


/// Whether the app may post desktop notifications, and with what text (Intune's
/// `notificationRestriction`).
public enum NotificationPolicy: Int32, Sendable, CaseIterable, Hashable {
    /// Notifications are posted as the app wrote them (Intune's `allow`; the default).
    case allow = 0
    /// Notifications of managed content are posted with generic text that carries no
    /// organization data (Intune's `blockOrganizationalData`).
    case blockOrgData = 1
    /// Notifications of managed content are not posted (Intune's `block`).
    case block = 2
}

/// Where clear items pasted into managed content may come from (Intune's clipboard levels
/// `managedAppsWithPasteIn` and `managedApps`).
public enum PasteInPolicy: Int32, Sendable, CaseIterable, Hashable {
    /// Any clear item on the pasteboard may be pasted (Intune's `managedAppsWithPasteIn` and
    /// `allApps`; the default).
    case anyApp = 0
    /// Only items a managed app wrote may be pasted into managed content: sealed (SecureCopy)
    /// items, and clear items this app wrote itself. A clear item of any other writer reads as
    /// nothing (Intune's `managedApps`).
    case managedApps = 1
}
