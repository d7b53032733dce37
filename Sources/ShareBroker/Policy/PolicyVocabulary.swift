/// The names policy values have outside Swift: in policy documents, simulator lines and results,
/// the command line and explanations. One table per policy, shared by every module that reads
/// or writes a name (the policy documents, the simulator, the tools), listed from most to least
/// restrictive where that order exists.
package enum PolicyVocabulary {
    package static let auth: [(String, AuthState)] = [("unauthorized", .unauthorized), ("authorized", .authorized),
                                                       ("retired", .retired)]
    /// The Open In policy without its whitelist (``OpenInPolicy``).
    package static let openIn: [(String, OpenInPolicy)] = [("unauthorized", .unauthorized), ("whitelist", .whitelist),
                                                           ("authorized", .authorized)]
    /// The name of "all AppConnect apps", a whitelist of the device's managed apps (Open In and
    /// Open From).
    package static let allAppConnectApps = "appConnectApps"
    package static let pasteboard: [(String, PasteboardPolicy)] = [("unauthorized", .unauthorized),
                                                                   ("secureCopy", .secureCopy), ("authorized", .authorized)]
    package static let print: [(String, PrintPolicy)] = [("unauthorized", .unauthorized), ("authorized", .authorized)]
    package static let secureFileIO: [(String, SecureFileIOPolicy)] = [("required", .required), ("optional", .optional)]
    package static let logLevel: [(String, LogLevel)] = [("error", .error), ("warning", .warning), ("status", .status),
                                                         ("info", .info), ("verbose", .verbose), ("debug", .debug)]
    package static let dragAndDrop: [(String, DragAndDropPolicy)] = [("none", .noApps), ("appConnectApps", .appConnectApps),
                                                                     ("all", .allApps)]
    package static let notifications: [(String, NotificationPolicy)] = [("block", .block), ("blockOrgData", .blockOrgData),
                                                                        ("allow", .allow)]
    package static let pasteIn: [(String, PasteInPolicy)] = [("managedApps", .managedApps), ("anyApp", .anyApp)]

    /// The name of `value` in `table` (`"?"` for a value the table lacks, which the tests rule out).
    package static func name<T: Equatable>(_ value: T, in table: [(String, T)]) -> String {
        table.first(where: { $0.1 == value })?.0 ?? "?"
    }
}
