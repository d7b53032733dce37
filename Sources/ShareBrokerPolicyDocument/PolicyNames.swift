import ShareBroker

/// The names policy values have in documents. They are the names of the simulator contract's
/// `policy` op, so a value reads the same in a policy file, a simulator line and a result.
/// Each table lists the values from most to least restrictive where that order exists.
enum PolicyNames {
    static let auth = PolicyVocabulary.auth
    static let openIn: [(String, OpenInKind)] = [("unauthorized", .unauthorized), ("whitelist", .whitelist),
                                                 (PolicyVocabulary.allAppConnectApps, .appConnectApps), ("authorized", .authorized)]
    static let pasteboard = PolicyVocabulary.pasteboard
    static let print = PolicyVocabulary.print
    static let secureFileIO = PolicyVocabulary.secureFileIO
    static let logLevel = PolicyVocabulary.logLevel
    static let dragAndDrop = PolicyVocabulary.dragAndDrop
    static let notifications = PolicyVocabulary.notifications
    static let openFrom: [(String, OpenInKind)] = openIn
    static let pasteIn = PolicyVocabulary.pasteIn

    /// The name of an Open In or Open From setting in the documents.
    static func name(of setting: TransferSetting) -> String {
        switch setting {
        case .unauthorized: "unauthorized"
        case .authorized: "authorized"
        case .whitelist: "whitelist"
        case .allAppConnectApps: "appConnectApps"
        }
    }

    /// The name of `value` in `table`.
    static func name<T: Equatable>(_ value: T, in table: [(String, T)]) -> String {
        PolicyVocabulary.name(value, in: table)
    }

}

/// The Open In setting without its whitelist: what the `openIn` field names.
enum OpenInKind: Sendable, Hashable {
    case unauthorized, authorized, whitelist, appConnectApps
}

/// The fields of a policy object, in the order documents are written.
enum PolicyField: String, CaseIterable, Sendable {
    case auth, authMessage, openIn, openInWhitelist, pasteboard, print, secureFileIO, logLevel, dragAndDrop
    case managedBrowserRequired, config
    // Version 2.
    case clipboardExceptionLength, notifications, openFrom, openFromWhitelist, pasteIn
    case offlineAccessCheckSeconds, offlineWipeSeconds, warn

    /// The document version that introduced the field.
    var version: Int {
        switch self {
        case .clipboardExceptionLength, .notifications, .openFrom, .openFromWhitelist, .pasteIn,
             .offlineAccessCheckSeconds, .offlineWipeSeconds, .warn: 2
        default: 1
        }
    }
}

extension PolicyUpdate {
    /// The update a policy document with no fields at all stands for: every value at its most
    /// restrictive, as before the first policy (the simulator contract's defaults).
    public static let mostRestrictive = PolicyUpdate(
        auth: .unauthorized, authMessage: "", openIn: .unauthorized, pasteboard: .unauthorized, print: .unauthorized,
        secureFileIO: .required, logLevel: .status, dragAndDrop: DragAndDropPolicy.noApps, managedBrowserRequired: false,
        config: [:])

    /// The values of the version 2 fields when a document leaves them out: the behaviour from
    /// before they existed (no character exception, notifications allowed, Open From any app,
    /// paste-in from any app), so a version 1 document means what it always meant.
    public static let versionTwoDefaults: PolicyUpdate = {
        var update = PolicyUpdate(
            clipboardExceptionLength: 0, notifications: .allow, openFrom: .authorized, pasteIn: .anyApp, offline: .unlimited)
        update.warn = WarnPolicy.none
        return update
    }()

    /// This update with every field set: a field of version 1 left `nil` takes its most
    /// restrictive value, a field of version 2 its ``versionTwoDefaults`` value.
    ///
    /// A document is the whole policy of an app, so applying it must replace whatever was in
    /// force before: a field the document leaves out may not keep a value from an older policy.
    public func completed() -> PolicyUpdate {
        let d = PolicyUpdate.mostRestrictive
        let v2 = PolicyUpdate.versionTwoDefaults
        var update = PolicyUpdate(
            auth: auth ?? d.auth, authMessage: authMessage ?? d.authMessage, openIn: openIn ?? d.openIn,
            pasteboard: pasteboard ?? d.pasteboard, print: print ?? d.print, secureFileIO: secureFileIO ?? d.secureFileIO,
            logLevel: logLevel ?? d.logLevel, dragAndDrop: dragAndDrop ?? d.dragAndDrop,
            managedBrowserRequired: managedBrowserRequired ?? d.managedBrowserRequired, config: config ?? d.config,
            clipboardExceptionLength: clipboardExceptionLength ?? v2.clipboardExceptionLength,
            notifications: notifications ?? v2.notifications, openFrom: openFrom ?? v2.openFrom, pasteIn: pasteIn ?? v2.pasteIn,
            offline: offline ?? v2.offline)
        update.warn = warn ?? v2.warn
        return update
    }

    /// The document version this update needs: 2 when it sets a field of version 2.
    var documentVersion: Int {
        clipboardExceptionLength != nil || notifications != nil || openFrom != nil || pasteIn != nil || offline != nil
            || warn != nil ? 2 : 1
    }

    /// The fields of version 1 this update leaves `nil`, in document order (a version 2 field
    /// left out keeps the behaviour from before it existed, so it is no news).
    var unsetFields: [PolicyField] {
        PolicyField.allCases.filter { $0.version == 1 }.filter { field in
            switch field {
            case .auth: auth == nil
            case .authMessage: authMessage == nil
            case .openIn: openIn == nil
            case .openInWhitelist: false
            case .pasteboard: pasteboard == nil
            case .print: print == nil
            case .secureFileIO: secureFileIO == nil
            case .logLevel: logLevel == nil
            case .dragAndDrop: dragAndDrop == nil
            case .managedBrowserRequired: managedBrowserRequired == nil
            case .config: config == nil
            case .clipboardExceptionLength: clipboardExceptionLength == nil
            case .notifications: notifications == nil
            case .openFrom: openFrom == nil
            case .openFromWhitelist: false
            case .pasteIn: pasteIn == nil
            case .offlineAccessCheckSeconds, .offlineWipeSeconds: offline == nil
            case .warn: warn == nil
            }
        }
    }
}
