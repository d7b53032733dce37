import ShareBroker

/// The platform of a Graph managed app protection body.
public enum IntunePlatform: String, Sendable, Hashable {
    /// `#microsoft.graph.iosManagedAppProtection`.
    case iOS = "iosManagedAppProtection"
    /// `#microsoft.graph.androidManagedAppProtection`.
    case android = "androidManagedAppProtection"
}

/// What became of one field of the Intune input.
public struct IntuneFieldReport: Sendable, Hashable {
    /// How faithfully a field was carried over.
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// The native policy means the same thing.
        case mapped
        /// The native policy means something close; ``IntuneFieldReport/detail`` says how it differs.
        case approximated
        /// The library has no such setting (or the value could not be read); the field is left out.
        case notSupported = "not supported"
        /// The library has the setting, but the value is not a valid one for it (a negative or
        /// zero period, a number out of range, a wrong type); the native field takes a fallback
        /// the detail names.
        case invalidValue = "invalid value"
    }

    /// The field's name in the input.
    public let field: String
    /// The value, shortened for the report.
    public let value: String
    /// How it was carried over.
    public let status: Status
    /// Where it went and how, or why not.
    public let detail: String
}

/// A Graph body that cannot be imported at all (fields that cannot be carried over are not
/// errors: they are reported).
public struct IntuneImportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong and what to do, possibly over several lines (one per JSON error).
    public let message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// The result of importing an Intune policy: the native document and a report on every field.
public struct IntuneImport: Sendable, Hashable {
    /// The native policy, every field set explicitly.
    public let document: AppPolicyDocument
    /// The platform, from `@odata.type` or, without it, from platform-only fields.
    public let platform: IntunePlatform?
    /// The Intune policy's display name.
    public let policyName: String?
    /// Every field of the input, in input order.
    public let fields: [IntuneFieldReport]
    /// The native fields no Intune field set, with the value they were given and why.
    public let unsourced: [String]
    /// Unknown fields, odd durations, wrong types, contradictions.
    public let warnings: [String]

    /// The report for people: a header, one line per input field, the unsourced native fields,
    /// then the warnings.
    public var report: String {
        var lines: [String] = []
        let kind = platform?.rawValue ?? "managed app protection (platform unknown)"
        lines.append("Imported Intune \(kind)\(policyName.map { " \(JSONWriter.quoted($0))" } ?? "") as the policy of \(document.app)")
        let counts = IntuneFieldReport.Status.allCases.map { status in
            "\(fields.filter { $0.status == status }.count) \(status.rawValue)"
        }
        lines.append("")
        lines.append("Fields of the input (\(fields.count)): " + counts.joined(separator: ", "))
        let width = min(44, fields.map { $0.field.count + $0.value.count + 3 }.max() ?? 0)
        for f in fields {
            let head = "\(f.field) = \(f.value)"
            lines.append("  " + f.status.rawValue.padded(to: 13) + " "
                         + head.padded(to: width) + "  " + f.detail)
        }
        if !unsourced.isEmpty {
            lines.append("")
            lines.append("Native fields with no Intune source:")
            lines += unsourced.map { "  " + $0 }
        }
        lines.append("")
        if warnings.isEmpty {
            lines.append("No warnings.")
        } else {
            lines.append("Warnings (\(warnings.count)):")
            lines += warnings.map { "  ! " + $0 }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Reads a Microsoft Graph `iosManagedAppProtection` or `androidManagedAppProtection` body and
/// writes the equivalent native policy.
///
/// Real exports carry fields this importer does not know, `null`s, negative and odd ISO 8601
/// durations (`-PT17.1357909S`, `PT720M`, `P0D`), wrong types and contradictory flags: they are
/// imported with warnings, and every field of the input is reported as mapped, approximated or
/// not supported. Where a value cannot be read, the native field falls back to its most
/// restrictive value: an import never loosens a policy by accident.
public enum IntuneImporter {
    /// Imports one Graph body.
    ///
    /// - Parameters:
    ///   - bytes: the JSON body (at most ``PolicyDocumentLimits/maxDocumentBytes``).
    ///   - appID: the bundle id the native policy is for; needed when the body targets no app or
    ///     several (its `apps`).
    /// - Throws: ``IntuneImportError`` when the input is not JSON, not a managed app protection
    ///   body, or names no single app.
    public static func importPolicy(_ bytes: [UInt8], appID: String? = nil, limits: PolicyDocumentLimits = .standard)
        throws(IntuneImportError) -> IntuneImport {
        let json: JSONValue
        do {
            json = try StrictJSONParser.parse(bytes, limits: limits)
        } catch {
            throw IntuneImportError("the input is not valid JSON:\n" + error.description)
        }
        guard case .object(let members) = json else {
            throw IntuneImportError("expected a Graph managed app protection object; got \(json.kindName)")
        }
        var run = ImportRun(members: members)
        try run.checkKind()
        try run.chooseApp(appID)
        run.mapFields()
        run.checkContradictions()
        return try run.result()
    }
}

/// One import: the input, the policy being built, and the report.
struct ImportRun {
    let members: [JSONMember]
    let top: [String: JSONValue]
    var platform: IntunePlatform?
    var app = ""
    var policy = PolicyUpdate()
    var reports: [IntuneFieldReport] = []
    var warnings: [String] = []
    var config: [String: String] = [:]
    var unknownFields: [String] = []
    var durations: [String: ISODuration] = [:]

    init(members: [JSONMember]) {
        self.members = members
        self.top = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
    }

    // MARK: Kind and app

    static let iosOnly: Set<String> = ["appDataEncryptionType", "faceIdBlocked", "exemptedAppProtocols", "customBrowserProtocol",
                                       "thirdPartyKeyboardsBlocked", "filterOpenInToOnlyManagedApps",
                                       "disableProtectionOfManagedOutboundOpenInData", "protectInboundDataFromUnknownSources",
                                       "allowedIosDeviceModels", "appActionIfIosDeviceModelNotAllowed", "minimumWipeSdkVersion"]
    static let androidOnly: Set<String> = ["encryptAppData", "screenCaptureBlocked", "exemptedAppPackages",
                                           "customBrowserPackageId", "customBrowserDisplayName", "keyboardsRestricted",
                                           "approvedKeyboards", "disableAppEncryptionIfDeviceEncryptionIsEnabled",
                                           "minimumRequiredPatchVersion", "minimumWarningPatchVersion", "minimumWipePatchVersion",
                                           "allowedAndroidDeviceManufacturers", "allowedAndroidDeviceModels"]

    mutating func checkKind() throws(IntuneImportError) {
        if top["@odata.type"] == nil, case .array(let items)? = top["value"] {
            throw IntuneImportError("this is a Graph collection of \(items.count) policies (a \"value\" array); import one "
                                    + "policy at a time, e.g. `jq '.value[0]' FILE`")
        }
        let iosFields = members.filter { Self.iosOnly.contains($0.key) }.map(\.key)
        let androidFields = members.filter { Self.androidOnly.contains($0.key) }.map(\.key)
        if let typeValue = top["@odata.type"] {
            guard case .string(let type) = typeValue else {
                throw IntuneImportError("\"@odata.type\" must be a string such as \"#microsoft.graph.iosManagedAppProtection\"")
            }
            let name = type.hasPrefix("#") ? String(type.dropFirst()) : type
            switch name.lowercased() {
            case "microsoft.graph.iosmanagedappprotection": platform = .iOS
            case "microsoft.graph.androidmanagedappprotection": platform = .android
            case "microsoft.graph.targetedmanagedappprotection", "microsoft.graph.managedappprotection":
                platform = nil
            default:
                throw IntuneImportError("\"@odata.type\" is \(JSONWriter.quoted(type)); this importer reads "
                                        + "#microsoft.graph.iosManagedAppProtection and #microsoft.graph.androidManagedAppProtection")
            }
            if platform == .iOS, !androidFields.isEmpty {
                warnings.append("the body says iOS but has Android-only fields (\(androidFields.joined(separator: ", "))); "
                                + "they are reported as not supported")
            }
            if platform == .android, !iosFields.isEmpty {
                warnings.append("the body says Android but has iOS-only fields (\(iosFields.joined(separator: ", "))); "
                                + "they are reported as not supported")
            }
        } else {
            let known = members.filter { Self.isPolicyField($0.key) }.count
            guard known > 0 else {
                throw IntuneImportError("this is not a Graph managed app protection body: it has no \"@odata.type\" and none "
                                        + "of the fields of iosManagedAppProtection or androidManagedAppProtection")
            }
            if iosFields.isEmpty != androidFields.isEmpty {
                platform = iosFields.isEmpty ? .android : .iOS
                warnings.append("no \"@odata.type\": read as \(platform?.rawValue ?? "") from its platform-only fields")
            } else {
                warnings.append("no \"@odata.type\" and no way to tell iOS from Android: fields common to both are imported")
            }
        }
    }

    /// The bundle ids the body targets (`apps`, or `mobileAppIdentifierDeployments`).
    func targets() -> (ids: [String], problems: [String]) {
        var ids: [String] = []
        var problems: [String] = []
        for key in ["apps", "mobileAppIdentifierDeployments"] {
            guard case .array(let items)? = top[key] else { continue }
            for (i, item) in items.enumerated() {
                let identifier = item["mobileAppIdentifier"] ?? item
                var found: String?
                for idKey in ["bundleId", "packageId", "windowsAppId"] {
                    if case .string(let s)? = identifier[idKey] { found = s }
                }
                guard let id = found else {
                    problems.append("\(key)[\(i)] names no bundleId or packageId")
                    continue
                }
                guard DocumentValidator.isBundleID(id) else {
                    problems.append("\(key)[\(i)]: \(JSONValue.string(id).preview()) is not a bundle id")
                    continue
                }
                if !ids.contains(id) { ids.append(id) }
            }
        }
        return (ids, problems)
    }

    mutating func chooseApp(_ requested: String?) throws(IntuneImportError) {
        let (ids, problems) = targets()
        warnings += problems
        if let requested {
            guard DocumentValidator.isBundleID(requested) else {
                throw IntuneImportError("--app \(JSONValue.string(requested).preview()) is not a bundle id: use ASCII letters, "
                                        + "digits, '.', '-' and '_'")
            }
            if !ids.isEmpty, !ids.contains(requested) {
                warnings.append("the Intune policy does not target \(requested); it targets \(ids.joined(separator: ", "))")
            }
            app = requested
            return
        }
        switch ids.count {
        case 1: app = ids[0]
        case 0:
            throw IntuneImportError("the body names no app (no \"apps\" with a bundleId or packageId): give the bundle id "
                                    + "of the app the policy is for with --app")
        default:
            throw IntuneImportError("the policy targets \(ids.count) apps (\(ids.prefix(10).joined(separator: ", "))"
                                    + "\(ids.count > 10 ? ", …" : "")); a native policy is for one app: choose it with --app")
        }
    }

    // MARK: Fields

    mutating func report(_ key: String, _ value: JSONValue, _ status: IntuneFieldReport.Status, _ detail: String) {
        reports.append(IntuneFieldReport(field: key, value: value.preview(limit: 40), status: status, detail: detail))
    }

    /// A string field's value among `allowed`, reporting null, wrong types and unknown values.
    mutating func enumValue(_ key: String, _ value: JSONValue, _ allowed: [String], fallback: String) -> String? {
        switch value {
        case .string(let s) where allowed.contains(s): return s
        case .null:
            report(key, value, .mapped, "null: not set, so \(fallback)")
        case .string(let s):
            report(key, value, .notSupported, "unknown value; \(fallback)")
            warnings.append("\(key): unknown value \(JSONValue.string(s).preview()) (Graph allows "
                            + allowed.joined(separator: ", ") + "); \(fallback)")
        default:
            report(key, value, .notSupported, "expected a string; \(fallback)")
            warnings.append("\(key): expected one of \(allowed.joined(separator: ", ")), got \(value.kindName); \(fallback)")
        }
        return nil
    }

    mutating func boolValue(_ key: String, _ value: JSONValue, fallback: String) -> Bool? {
        switch value {
        case .bool(let b): return b
        case .null: report(key, value, .mapped, "null: not set, so \(fallback)")
        default:
            report(key, value, .notSupported, "expected true or false; \(fallback)")
            warnings.append("\(key): expected true or false, got \(value.preview()); \(fallback)")
        }
        return nil
    }

    mutating func mapFields() {
        let destinations: String? = {
            if case .string(let s)? = top["allowedOutboundDataTransferDestinations"] { return s }
            return nil
        }()
        for member in members {
            let key = member.key
            let value = member.value
            if platform == .iOS, Self.androidOnly.contains(key) {
                report(key, value, .notSupported, "an Android-only field in an iOS body; ignored")
                continue
            }
            if platform == .android, Self.iosOnly.contains(key) {
                report(key, value, .notSupported, "an iOS-only field in an Android body; ignored")
                continue
            }
            switch key {
            case "allowedOutboundDataTransferDestinations":
                mapDestinations(key, value)
            case "allowedOutboundClipboardSharingLevel":
                let fallback = "copy stays blocked (pasteboard unauthorized, the most restrictive)"
                guard let level = enumValue(key, value, ["allApps", "managedAppsWithPasteIn", "managedApps", "blocked"],
                                            fallback: fallback) else { continue }
                switch level {
                case "allApps":
                    policy.pasteboard = .authorized
                    policy.pasteIn = .anyApp
                    report(key, value, .mapped, "-> pasteboard authorized (copied text is readable by every app), pasteIn anyApp")
                case "blocked":
                    policy.pasteboard = .unauthorized
                    policy.pasteIn = .managedApps
                    report(key, value, .approximated, "-> pasteboard unauthorized, pasteIn managedApps: clear items of other "
                           + "apps are not pasted in; encrypted items of authorized AppConnect apps still are")
                case "managedAppsWithPasteIn":
                    policy.pasteboard = .secureCopy
                    policy.pasteIn = .anyApp
                    report(key, value, .mapped, "-> pasteboard secureCopy (copies are encrypted so only authorized AppConnect "
                           + "apps can paste them), pasteIn anyApp (any app's text may be pasted in)")
                default:
                    policy.pasteboard = .secureCopy
                    policy.pasteIn = .managedApps
                    report(key, value, .mapped, "-> pasteboard secureCopy (copies are encrypted so only authorized AppConnect "
                           + "apps can paste them), pasteIn managedApps (clear items of other apps are not pasted in)")
                }
            case "allowedOutboundClipboardSharingExceptionLength":
                mapClipboardException(key, value)
            case "notificationRestriction":
                let table = ["allow": NotificationPolicy.allow, "blockOrganizationalData": .blockOrgData, "block": .block]
                guard let level = enumValue(key, value, ["allow", "blockOrganizationalData", "block"],
                                            fallback: "notifications stay blocked (the most restrictive)"),
                      let mapped = table[level] else { continue }
                policy.notifications = mapped
                report(key, value, .mapped, "-> notifications \(PolicyNames.name(mapped, in: PolicyNames.notifications))")
            case "allowedInboundDataTransferSources":
                guard let sources = enumValue(key, value, ["allApps", "managedApps", "none"],
                                              fallback: "Open From stays blocked (openFrom unauthorized, the most restrictive)")
                else { continue }
                switch sources {
                case "allApps":
                    policy.openFrom = .authorized
                    report(key, value, .mapped, "-> openFrom authorized")
                case "managedApps":
                    policy.openFrom = .allAppConnectApps
                    report(key, value, .mapped, "-> openFrom appConnectApps (the authorized AppConnect apps on the device)")
                default:
                    policy.openFrom = .unauthorized
                    report(key, value, .mapped, "-> openFrom unauthorized")
                }
            case "printBlocked":
                guard let blocked = boolValue(key, value, fallback: "print stays blocked (the most restrictive)") else { continue }
                policy.print = blocked ? .unauthorized : .authorized
                report(key, value, .mapped, "-> print \(blocked ? "unauthorized" : "authorized")")
            case "managedBrowserToOpenLinksRequired":
                guard let required = boolValue(key, value, fallback: "managedBrowserRequired stays false") else { continue }
                policy.managedBrowserRequired = required
                report(key, value, .mapped, "-> managedBrowserRequired \(required)")
            case "appDataEncryptionType":
                let levels = ["useDeviceSettings", "afterDeviceRestart", "whenDeviceLockedExceptOpenFiles", "whenDeviceLocked"]
                guard enumValue(key, value, levels, fallback: "secureFileIO stays required (the most restrictive)") != nil
                else { continue }
                policy.secureFileIO = .required
                report(key, value, .approximated, "-> secureFileIO required: the library encrypts the app's files with its "
                       + "own key whatever the iOS data protection class; the class itself is not modelled")
            case "encryptAppData":
                guard let encrypt = boolValue(key, value, fallback: "secureFileIO stays required (the most restrictive)")
                else { continue }
                policy.secureFileIO = encrypt ? .required : .optional
                report(key, value, .mapped, "-> secureFileIO \(encrypt ? "required" : "optional")")
            case "exemptedAppProtocols":
                mapExemptedProtocols(key, value, destinations: destinations)
            case "exemptedAppPackages":
                mapExemptedPackages(key, value, destinations: destinations)
            case "filterOpenInToOnlyManagedApps":
                if case .bool(true) = value, destinations == "managedApps" {
                    report(key, value, .approximated, "the library does not filter the share sheet's app list; under "
                           + "\"All AppConnect apps\" it blocks the share sheet outright, because it cannot tell which app the user picks (stricter)")
                } else {
                    report(key, value, .notSupported, "no effect here: the share sheet is never filtered, and blocked under a whitelist")
                }
            case "displayName", "description":
                if case .string = value {
                    report(key, value, .mapped, "-> the native document's description")
                } else {
                    report(key, value, .notSupported, "not text; left out of the description")
                }
            case "apps", "mobileAppIdentifierDeployments":
                report(key, value, .mapped, "-> the native document's app: \(app)")
            case "@odata.type":
                report(key, value, .mapped, platform.map { "-> read as \($0.rawValue)" } ?? "-> read as a managed app protection body")
            default:
                mapOther(key, value)
            }
        }
        if !unknownFields.isEmpty {
            warnings.append("\(unknownFields.count) field\(unknownFields.count == 1 ? "" : "s") unknown to this importer, "
                            + "left out: " + unknownFields.prefix(12).joined(separator: ", ") + (unknownFields.count > 12 ? ", …" : ""))
        }
        if !config.isEmpty { policy.config = config }
    }

    mutating func mapDestinations(_ key: String, _ value: JSONValue) {
        let fallback = "Open In and drag and drop stay blocked (the most restrictive)"
        guard let level = enumValue(key, value, ["allApps", "managedApps", "none"], fallback: fallback) else { return }
        switch level {
        case "allApps":
            policy.openIn = .authorized
            policy.dragAndDrop = .allApps
            report(key, value, .mapped, "-> openIn authorized; also dragAndDrop all (approximated: Intune has no separate "
                   + "drag-and-drop setting)")
        case "managedApps":
            policy.openIn = .allAppConnectApps
            policy.dragAndDrop = .appConnectApps
            report(key, value, .mapped, "-> openIn appConnectApps (Intune's policy-managed apps are read as the authorized "
                   + "AppConnect apps); also dragAndDrop appConnectApps (approximated)")
        default:
            if case .whitelist? = policy.openIn {} else { policy.openIn = .unauthorized }  // exempted packages may come first
            policy.dragAndDrop = DragAndDropPolicy.noApps
            report(key, value, .mapped, "-> openIn unauthorized; also dragAndDrop none (approximated)")
        }
    }

    /// Splits `tel;telprompt;skype;` (Graph's format for exempted schemes) into lower-case schemes.
    static func schemes(in text: String) -> [String] {
        var out: [String] = []
        var current = ""
        for c in text.lowercased() + ";" {
            if c == ";" || c == "," || c == " " || c == "\n" || c == "\t" {
                var scheme = current
                while scheme.hasSuffix(":") || scheme.hasSuffix("/") { scheme.removeLast() }
                if !scheme.isEmpty, !out.contains(scheme) { out.append(scheme) }
                current = ""
            } else {
                current.append(c)
            }
        }
        return out
    }

    /// The `value` strings of a Graph list of `keyValuePair`s, reporting malformed entries.
    mutating func keyValueValues(_ key: String, _ value: JSONValue) -> [String]? {
        guard case .array(let items) = value else {
            if case .null = value {
                report(key, value, .mapped, "null: nothing exempted")
            } else {
                report(key, value, .notSupported, "expected a list of {name, value} pairs; nothing exempted")
                warnings.append("\(key): expected a list of {name, value} pairs, got \(value.kindName); nothing exempted")
            }
            return nil
        }
        var values: [String] = []
        for (i, item) in items.enumerated() {
            if case .string(let s)? = item["value"] {
                values.append(s)
            } else {
                warnings.append("\(key)[\(i)]: expected an object with a string \"value\"; skipped")
            }
        }
        return values
    }

    mutating func mapExemptedProtocols(_ key: String, _ value: JSONValue, destinations: String?) {
        guard let values = keyValueValues(key, value) else { return }
        let schemes = values.flatMap(Self.schemes(in:))
        let invalid = schemes.filter { !DocumentValidator.isScheme($0) }
        if !invalid.isEmpty {
            warnings.append("\(key): \(invalid.prefix(5).joined(separator: ", ")) \(invalid.count == 1 ? "is" : "are") not "
                            + "URL schemes; skipped")
        }
        let valid = schemes.filter(DocumentValidator.isScheme)
        let others = valid.filter { $0 != "mailto" }
        var parts: [String] = []
        var status = IntuneFieldReport.Status.notSupported
        if valid.contains("mailto") {
            config[ServerConfigKey.disableSchemeBlocking] = "true"
            status = .approximated
            parts.append("mailto -> config \(ServerConfigKey.disableSchemeBlocking)=\"true\" (approximated: lets mailto: "
                         + "links open native mail when Open In blocks them; the in-app composer still follows Open In)")
            if destinations == "allApps" { parts.append("(no effect while Open In is authorized)") }
        }
        if !others.isEmpty {
            parts.append("not supported: \(others.prefix(8).joined(separator: ", "))\(others.count > 8 ? ", …" : "") "
                         + "(no per-scheme exemption: URLs with these schemes follow the Open In policy, which is stricter)")
        }
        if valid.isEmpty {
            status = .mapped
            parts.append("no schemes: nothing exempted")
        }
        report(key, value, status, parts.joined(separator: "; "))
    }

    mutating func mapExemptedPackages(_ key: String, _ value: JSONValue, destinations: String?) {
        guard let values = keyValueValues(key, value) else { return }
        let packages = values.filter(DocumentValidator.isBundleID)
        if packages.count < values.count {
            warnings.append("\(key): \(values.count - packages.count) value(s) are not package ids; skipped")
        }
        if packages.isEmpty {
            report(key, value, .mapped, "empty: nothing exempted")
            return
        }
        switch destinations {
        case "none"?:
            policy.openIn = .whitelist(Set(packages))
            report(key, value, .approximated, "-> openIn whitelist of \(packages.count) package(s) (\(packages.prefix(5).joined(separator: ", "))): "
                   + "Intune's \"none\" with exempted apps; the whitelist is matched exactly")
        case "managedApps"?:
            report(key, value, .notSupported, "the library cannot add fixed apps to \"All AppConnect apps\"; these apps are "
                   + "blocked (stricter)")
            warnings.append("\(key): \(packages.prefix(5).joined(separator: ", ")) cannot be exempted on top of managedApps; "
                            + "documents to them get a dummy file")
        default:
            report(key, value, .notSupported, "no effect: Open In already allows every app or is unknown")
        }
    }

    // MARK: Everything else

    enum FieldKind {
        case access, conditionalLaunch, storage, inbound, deviceFeature, browser, protection, metadata, duration
    }

    static let kinds: [String: FieldKind] = {
        var table: [String: FieldKind] = [:]
        for k in ["pinRequired", "maximumPinRetries", "simplePinBlocked", "minimumPinLength", "pinCharacterSet",
                  "fingerprintBlocked", "faceIdBlocked", "disableAppPinIfDevicePinIsSet", "pinRequiredInsteadOfBiometric",
                  "previousPinBlockCount", "organizationalCredentialsRequired", "appActionIfMaximumPinRetriesExceeded",
                  "periodBeforePinResetRequired", "biometricAuthenticationBlocked", "requiredAndroidSafetyNetEvaluationType",
                  "appActionIfUnableToAuthenticateUser", "appActionIfAccountIsClockedOut"] { table[k] = .access }
        for k in ["deviceComplianceRequired", "appActionIfDeviceComplianceRequired", "minimumRequiredOsVersion",
                  "minimumWarningOsVersion", "minimumRequiredAppVersion", "minimumWarningAppVersion", "minimumWipeOsVersion",
                  "minimumWipeAppVersion", "minimumRequiredSdkVersion", "minimumWipeSdkVersion", "minimumWarningSdkVersion",
                  "minimumRequiredPatchVersion", "minimumWarningPatchVersion", "minimumWipePatchVersion",
                  "maximumRequiredOsVersion", "maximumWarningOsVersion", "maximumWipeOsVersion",
                  "allowedIosDeviceModels", "appActionIfIosDeviceModelNotAllowed", "allowedAndroidDeviceManufacturers",
                  "appActionIfAndroidDeviceManufacturerNotAllowed", "allowedAndroidDeviceModels",
                  "appActionIfAndroidDeviceModelNotAllowed", "requiredAndroidSafetyNetDeviceAttestationType",
                  "appActionIfAndroidSafetyNetDeviceAttestationFailed", "requiredAndroidSafetyNetAppsVerificationType",
                  "appActionIfAndroidSafetyNetAppsVerificationFailed", "maximumAllowedDeviceThreatLevel",
                  "mobileThreatDefenseRemediationAction", "mobileThreatDefensePartnerPriority",
                  "minimumRequiredCompanyPortalVersion", "minimumWarningCompanyPortalVersion", "minimumWipeCompanyPortalVersion",
                  "blockAfterCompanyPortalUpdateDeferralInDays", "warnAfterCompanyPortalUpdateDeferralInDays",
                  "wipeAfterCompanyPortalUpdateDeferralInDays"] { table[k] = .conditionalLaunch }
        for k in ["saveAsBlocked", "allowedDataStorageLocations", "allowedDataIngestionLocations",
                  "blockDataIngestionIntoOrganizationDocuments"] { table[k] = .storage }
        table["protectInboundDataFromUnknownSources"] = .inbound
        for k in ["dataBackupBlocked", "contactSyncBlocked", "screenCaptureBlocked", "thirdPartyKeyboardsBlocked",
                  "keyboardsRestricted", "approvedKeyboards", "dialerRestrictionLevel",
                  "customDialerAppProtocol", "customDialerAppPackageId", "customDialerAppDisplayName",
                  "disableAppEncryptionIfDeviceEncryptionIsEnabled", "genmojiConfigurationState",
                  "writingToolsConfigurationState", "screenCaptureConfigurationState"] { table[k] = .deviceFeature }
        for k in ["managedBrowser", "customBrowserProtocol", "customBrowserPackageId", "customBrowserDisplayName",
                  "shareWithBrowserVirtualSetting"] { table[k] = .browser }
        table["disableProtectionOfManagedOutboundOpenInData"] = .protection
        for k in ["id", "version", "createdDateTime", "lastModifiedDateTime", "roleScopeTagIds", "isAssigned",
                  "deployedAppCount", "targetedAppManagementLevels", "assignments", "deploymentSummary",
                  "appGroupType"] { table[k] = .metadata }
        for k in ["periodOfflineBeforeAccessCheck", "periodOnlineBeforeAccessCheck", "periodOfflineBeforeWipeIsEnforced",
                  "periodBeforePinReset", "pinRequiredInsteadOfBiometricTimeout",
                  "gracePeriodToBlockAppsDuringOffClockHours"] { table[k] = .duration }
        return table
    }()

    static let mappedFields: Set<String> = ["allowedOutboundDataTransferDestinations", "allowedOutboundClipboardSharingLevel",
                                            "printBlocked", "managedBrowserToOpenLinksRequired", "appDataEncryptionType",
                                            "encryptAppData", "exemptedAppProtocols", "exemptedAppPackages",
                                            "filterOpenInToOnlyManagedApps", "displayName", "description", "apps",
                                            "mobileAppIdentifierDeployments", "allowedOutboundClipboardSharingExceptionLength",
                                            "notificationRestriction", "allowedInboundDataTransferSources"]

    /// Whether `key` is a setting of a managed app protection (not metadata, not a name).
    static func isPolicyField(_ key: String) -> Bool {
        if let kind = kinds[key] { return kind != .metadata }
        return mappedFields.contains(key) && !["displayName", "description", "apps", "mobileAppIdentifierDeployments"].contains(key)
    }

    mutating func mapOther(_ key: String, _ value: JSONValue) {
        if key.contains("@odata.") {
            report(key, value, .notSupported, "Graph metadata")
            return
        }
        guard let kind = Self.kinds[key] else {
            report(key, value, .notSupported, "unknown to this importer; left out")
            unknownFields.append(key)
            return
        }
        switch kind {
        case .access:
            report(key, value, .notSupported, "app access (PIN, credentials): the server decides auth")
        case .conditionalLaunch:
            report(key, value, .notSupported, "conditional launch (versions, models, threats): the server decides auth")
        case .storage:
            report(key, value, .notSupported, "Save As and storage locations: not modelled")
        case .inbound:
            report(key, value, .notSupported, "protection of data from unknown sources: the library tells sources apart "
                   + "by bundle id only (openFrom)")
        case .deviceFeature:
            report(key, value, .notSupported, "device feature outside the library")
        case .browser:
            report(key, value, .notSupported, "which browser: the device's choice (only managedBrowserRequired is policy)")
        case .protection:
            if value == .bool(false) {
                report(key, value, .mapped, "protection stays on, as the library always keeps it")
            } else {
                report(key, value, .notSupported, "protection of handed-over data cannot be switched off in the library")
            }
        case .metadata:
            report(key, value, .notSupported, "Graph metadata")
        case .duration:
            mapDuration(key, value)
        }
    }

    mutating func mapClipboardException(_ key: String, _ value: JSONValue) {
        guard let n = value.integer else {
            if case .null = value {
                report(key, value, .mapped, "null: not set, so clipboardExceptionLength 0 (no exception)")
            } else {
                report(key, value, .invalidValue, "expected a whole number of characters; no exception (the most restrictive)")
                warnings.append("\(key): expected a whole number of characters (0 to 65535), got \(value.preview()); "
                                + "no exception")
            }
            return
        }
        guard n >= 0, n <= PolicySnapshot.maxClipboardExceptionLength else {
            report(key, value, .invalidValue, "outside 0...65535; no exception (the most restrictive)")
            warnings.append("\(key): \(n) is outside 0...65535 characters; no exception")
            return
        }
        policy.clipboardExceptionLength = n
        report(key, value, .mapped, n == 0 ? "-> clipboardExceptionLength 0 (no exception)"
               : "-> clipboardExceptionLength \(n): copies of plain text of at most \(n) characters (grapheme clusters) "
                 + "are written in the clear whatever the pasteboard policy")
    }

    mutating func mapDuration(_ key: String, _ value: JSONValue) {
        let timer = key == "periodOfflineBeforeAccessCheck" || key == "periodOfflineBeforeWipeIsEnforced"
        let what = timer ? "the Intune default applies (\(key == "periodOfflineBeforeAccessCheck" ? "12 hours" : "90 days"))"
            : "no such timer in the library (the server pushes auth)"
        // The timers are supported fields: a value they cannot take is an invalid value.
        let unreadable: IntuneFieldReport.Status = timer ? .invalidValue : .notSupported
        switch value {
        case .null:
            report(key, value, .notSupported, "null: not set; \(what)")
        case .string(let text):
            switch ISODuration.parse(text) {
            case .success(let d):
                if d.negative, d.seconds > 0 {
                    report(key, value, unreadable, "negative duration (\(d.humanReadable)), ignored; \(what)")
                    warnings.append("\(key): \(JSONValue.string(text).preview()) is a negative duration, which means nothing "
                                    + "for a timer; ignored")
                } else if timer, Int(d.seconds.rounded(.up)) == 0 {
                    // Zero, the strictest period, would read as "no limit" (0), the loosest: refused.
                    report(key, value, .invalidValue, "zero, ignored (0 would mean no limit); \(what)")
                    warnings.append("\(key): \(JSONValue.string(text).preview()) is zero, which Intune does not allow and "
                                    + "which would mean no limit here; ignored, \(what)")
                } else if timer {
                    durations[key] = d
                    // Reported once the document's periods are known (``result()``): a period can be clamped.
                    report(key, value, .mapped, d.humanReadable)
                } else {
                    durations[key] = d
                    report(key, value, .notSupported, "\(d.humanReadable); \(what)")
                }
            case .failure(let e):
                report(key, value, unreadable, "not an ISO 8601 duration, ignored; \(what)")
                warnings.append("\(key): \(JSONValue.string(text).preview()) is not an ISO 8601 duration (\(e.reason)); ignored")
            }
        default:
            report(key, value, unreadable, "expected an ISO 8601 duration string; ignored")
            warnings.append("\(key): expected an ISO 8601 duration such as \"PT12H\", got \(value.kindName); ignored")
        }
    }

    // MARK: Contradictions

    mutating func checkContradictions() {
        func string(_ key: String) -> String? { if case .string(let s)? = top[key] { s } else { nil } }
        func isTrue(_ key: String) -> Bool { top[key] == .bool(true) }
        let destinations = string("allowedOutboundDataTransferDestinations")
        if isTrue("filterOpenInToOnlyManagedApps"), destinations != "managedApps" {
            warnings.append("filterOpenInToOnlyManagedApps is true but allowedOutboundDataTransferDestinations is "
                            + "\(destinations ?? "not set"), not managedApps: Graph applies the filter only with managedApps")
        }
        if isTrue("disableProtectionOfManagedOutboundOpenInData"), destinations != "managedApps" {
            warnings.append("disableProtectionOfManagedOutboundOpenInData is true but allowedOutboundDataTransferDestinations "
                            + "is \(destinations ?? "not set"): Graph allows it only with managedApps")
        }
        if isTrue("protectInboundDataFromUnknownSources"), string("allowedInboundDataTransferSources") != "allApps" {
            warnings.append("protectInboundDataFromUnknownSources is true but allowedInboundDataTransferSources is not "
                            + "allApps: Graph allows it only with allApps")
        }
        let browserChosen = (string("managedBrowser").map { $0 != "notConfigured" } ?? false)
            || ["customBrowserProtocol", "customBrowserPackageId"].contains { !(string($0) ?? "").isEmpty }
        if browserChosen, !isTrue("managedBrowserToOpenLinksRequired") {
            warnings.append("a managed or custom browser is configured but managedBrowserToOpenLinksRequired is not true: "
                            + "links are not required to open in it (managedBrowserRequired false)")
        }
        if let n = top["allowedOutboundClipboardSharingExceptionLength"]?.integer, n > 0,
           string("allowedOutboundClipboardSharingLevel") == "allApps" {
            warnings.append("allowedOutboundClipboardSharingExceptionLength is \(n) but the clipboard is already open to all "
                            + "apps: the exception means nothing")
        }
        if let access = durations["periodOfflineBeforeAccessCheck"], let wipe = durations["periodOfflineBeforeWipeIsEnforced"],
           wipe.seconds > 0, access.seconds > 0, wipe.seconds <= access.seconds {
            warnings.append("periodOfflineBeforeWipeIsEnforced (\(wipe.humanReadable)) is not longer than "
                            + "periodOfflineBeforeAccessCheck (\(access.humanReadable)): the app would be wiped before "
                            + "access is even checked")
        }
        if top["encryptAppData"] == .bool(false), isTrue("disableAppEncryptionIfDeviceEncryptionIsEnabled") {
            warnings.append("disableAppEncryptionIfDeviceEncryptionIsEnabled is true while encryptAppData is false: "
                            + "there is no app encryption to disable")
        }
    }

    // MARK: Result

    func result() throws(IntuneImportError) -> IntuneImport {
        var p = policy
        var unsourced: [String] = []
        let defaults = PolicyUpdate.mostRestrictive
        if p.auth == nil {
            p.auth = .authorized
            unsourced.append("auth authorized: Intune has no such field; its access checks decide who gets in, and a user "
                             + "who passes them is authorized")
        }
        if p.authMessage == nil { p.authMessage = "" }
        func fill<T>(_ field: PolicyField, _ keyPath: WritableKeyPath<PolicyUpdate, T?>, _ name: String, from intune: String) {
            if p[keyPath: keyPath] == nil {
                p[keyPath: keyPath] = defaults[keyPath: keyPath]
                unsourced.append("\(field.rawValue) \(name): the most restrictive value (no readable \(intune))")
            }
        }
        fill(.openIn, \.openIn, "unauthorized", from: "allowedOutboundDataTransferDestinations")
        fill(.dragAndDrop, \.dragAndDrop, "none", from: "allowedOutboundDataTransferDestinations")
        fill(.pasteboard, \.pasteboard, "unauthorized", from: "allowedOutboundClipboardSharingLevel")
        fill(.print, \.print, "unauthorized", from: "printBlocked")
        fill(.secureFileIO, \.secureFileIO, "required",
             from: platform == .android ? "encryptAppData" : "appDataEncryptionType")
        fill(.managedBrowserRequired, \.managedBrowserRequired, "false", from: "managedBrowserToOpenLinksRequired")
        let strictest = PolicyUpdate(clipboardExceptionLength: 0, notifications: .block, openFrom: .unauthorized,
                                     pasteIn: .managedApps)
        func fillStrict<T>(_ field: PolicyField, _ keyPath: WritableKeyPath<PolicyUpdate, T?>, _ name: String, from intune: String) {
            if p[keyPath: keyPath] == nil {
                p[keyPath: keyPath] = strictest[keyPath: keyPath]
                unsourced.append("\(field.rawValue) \(name): the most restrictive value (no readable \(intune))")
            }
        }
        fillStrict(.clipboardExceptionLength, \.clipboardExceptionLength, "0",
                   from: "allowedOutboundClipboardSharingExceptionLength")
        fillStrict(.notifications, \.notifications, "block", from: "notificationRestriction")
        fillStrict(.openFrom, \.openFrom, "unauthorized", from: "allowedInboundDataTransferSources")
        fillStrict(.pasteIn, \.pasteIn, "managedApps", from: "allowedOutboundClipboardSharingLevel")
        // The offline timers: a readable, non-negative duration sets its period; otherwise Intune's
        // own default (12 hours, 90 days), which Intune applies when the field is not set.
        func seconds(_ key: String, default fallback: Int, _ name: String) -> Int {
            if let d = durations[key] { return min(Int(d.seconds.rounded(.up)), OfflinePolicy.maxSeconds) }
            unsourced.append("\(name) \(fallback): Intune's default (no readable \(key))")
            return fallback
        }
        var accessCheck = seconds("periodOfflineBeforeAccessCheck", default: 43_200, "offlineAccessCheckSeconds")
        let wipe = seconds("periodOfflineBeforeWipeIsEnforced", default: 7_776_000, "offlineWipeSeconds")
        if wipe > 0, accessCheck > wipe {
            // Wiped before access is checked (warned above): hold transfers back no later than the wipe.
            accessCheck = wipe
            unsourced.append("offlineAccessCheckSeconds \(wipe): shortened to the wipe period, which is shorter")
        }
        p.offline = OfflinePolicy(accessCheckSeconds: accessCheck, wipeSeconds: wipe)
        // The timers' lines say what the document holds, after the clamps.
        var reports = self.reports
        for (key, field, written) in [("periodOfflineBeforeAccessCheck", "offlineAccessCheckSeconds", accessCheck),
                                      ("periodOfflineBeforeWipeIsEnforced", "offlineWipeSeconds", wipe)] {
            guard let d = durations[key], let index = reports.lastIndex(where: { $0.field == key && $0.status == .mapped }) else { continue }
            let asked = Int(d.seconds.rounded(.up))
            var detail = "\(d.humanReadable) -> \(field) \(written)"
            if written != asked {
                detail += asked > OfflinePolicy.maxSeconds && written == OfflinePolicy.maxSeconds
                    ? " (the longest period, 10 years)" : " (shortened to the wipe period, which is shorter)"
            }
            let old = reports[index]
            reports[index] = IntuneFieldReport(field: old.field, value: old.value, status: old.status, detail: detail)
        }
        // Intune has no warn level (block or allow only): nothing maps to warn (the document has
        // no "warn", which reads as none), every exit blocks or allows as mapped above, and the
        // report says so.
        unsourced.append("warn none: Intune has no warn level (its settings block or allow); no exit asks the user, "
                         + "add \"warn\" by hand to let users go on with a reason")
        if p.logLevel == nil {
            p.logLevel = .status
            unsourced.append("logLevel status: Intune has no log level in app protection policies")
        }
        if p.config == nil {
            p.config = [:]
            unsourced.append("config {}: no exempted mailto: scheme")
        }

        var name: String?
        if case .string(let s)? = top["displayName"], !s.isEmpty { name = s }
        var description = "Imported from Intune \(platform?.rawValue ?? "managed app protection")"
        if let name { description += " \"\(name)\"" }
        if case .string(let s)? = top["description"], !s.isEmpty { description += ": " + s }
        if description.count > PolicyDocumentBounds.maxText {
            description = String(description.prefix(PolicyDocumentBounds.maxText - 1)) + "…"
        }
        let document = AppPolicyDocument(app: app, description: description, policy: p)
        // The output must pass the same strict check as any document.
        do {
            _ = try PolicyDocument.parse(document.jsonText)
        } catch {
            throw IntuneImportError("the imported policy failed its own validation (a bug in the importer):\n\(error)")
        }
        return IntuneImport(document: document, platform: platform, policyName: name, fields: reports,
                            unsourced: unsourced, warnings: warnings)
    }
}
