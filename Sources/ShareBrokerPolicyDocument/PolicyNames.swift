import ShareBroker

/// The names policy values have in documents. They are the names of the simulator contract's
/// `policy` op, so a value reads the same in a policy file, a simulator line and a result.
/// Each table lists the values from most to least restrictive where that order exists.
enum PolicyNames {
    static let auth: [(String, AuthState)] = [("unauthorized", .unauthorized), ("authorized", .authorized),
                                              ("retired", .retired)]
    static let openIn: [(String, OpenInKind)] = [("unauthorized", .unauthorized), ("whitelist", .whitelist),
                                                 ("appConnectApps", .appConnectApps), ("authorized", .authorized)]
    static let pasteboard: [(String, PasteboardPolicy)] = [("unauthorized", .unauthorized), ("secureCopy", .secureCopy),
                                                           ("authorized", .authorized)]
    static let print: [(String, PrintPolicy)] = [("unauthorized", .unauthorized), ("authorized", .authorized)]
    static let secureFileIO: [(String, SecureFileIOPolicy)] = [("required", .required), ("optional", .optional)]
    static let logLevel: [(String, LogLevel)] = [("error", .error), ("warning", .warning), ("status", .status),
                                                 ("info", .info), ("verbose", .verbose), ("debug", .debug)]
    static let dragAndDrop: [(String, DragAndDropPolicy)] = [("none", .noApps), ("appConnectApps", .appConnectApps),
                                                             ("all", .allApps)]

    /// The name of `value` in `table`.
    static func name<T: Equatable>(_ value: T, in table: [(String, T)]) -> String {
        table.first(where: { $0.1 == value })?.0 ?? "?"
    }

    static func name(of setting: OpenInSetting) -> String {
        switch setting {
        case .unauthorized: "unauthorized"
        case .authorized: "authorized"
        case .whitelist: "whitelist"
        case .allAppConnectApps: "appConnectApps"
        }
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
}

extension PolicyUpdate {
    /// The update a policy document with no fields at all stands for: every value at its most
    /// restrictive, as before the first policy (the simulator contract's defaults).
    public static let mostRestrictive = PolicyUpdate(
        auth: .unauthorized, authMessage: "", openIn: .unauthorized, pasteboard: .unauthorized, print: .unauthorized,
        secureFileIO: .required, logLevel: .status, dragAndDrop: DragAndDropPolicy.noApps, managedBrowserRequired: false,
        config: [:])

    /// This update with every field set: a field left `nil` takes its most restrictive value.
    ///
    /// A document is the whole policy of an app, so applying it must replace whatever was in
    /// force before: a field the document leaves out may not keep a value from an older policy.
    public func completed() -> PolicyUpdate {
        let d = PolicyUpdate.mostRestrictive
        return PolicyUpdate(
            auth: auth ?? d.auth, authMessage: authMessage ?? d.authMessage, openIn: openIn ?? d.openIn,
            pasteboard: pasteboard ?? d.pasteboard, print: print ?? d.print, secureFileIO: secureFileIO ?? d.secureFileIO,
            logLevel: logLevel ?? d.logLevel, dragAndDrop: dragAndDrop ?? d.dragAndDrop,
            managedBrowserRequired: managedBrowserRequired ?? d.managedBrowserRequired, config: config ?? d.config)
    }

    /// The fields this update leaves `nil`, in document order.
    var unsetFields: [PolicyField] {
        PolicyField.allCases.filter { field in
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
            }
        }
    }
}
