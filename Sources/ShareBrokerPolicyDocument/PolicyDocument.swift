import ShareBroker

/// The native policy documents: versioned JSON for one app's policy, or for a device (the
/// registry of apps with their policies that the agent daemon reads). `docs/POLICY-DOCUMENTS.md`
/// describes the format and `docs/policy.schema.json` / `docs/device.schema.json` give its schema.
///
/// ```swift
/// let checked = try PolicyDocument.parse(bytes)          // throws every error, with JSON paths
/// if case .app(let app) = checked.document {
///     try broker.apply(app.policyUpdate)                 // the whole policy, nothing left stale
/// }
/// ```
///
/// Parsing is all or nothing: a document with any error produces no value, so a half-valid
/// policy can never be applied in part.
public enum PolicyDocument: Sendable, Hashable {
    /// One app's policy (`"format": "sharebroker.policy"`).
    case app(AppPolicyDocument)
    /// A device: its apps, and the policy of each AppConnect app (`"format": "sharebroker.device"`).
    case device(DeviceRegistry)

    /// The `format` of an app policy document.
    public static let appFormat = "sharebroker.policy"
    /// The `format` of a device document.
    public static let deviceFormat = "sharebroker.device"
    /// The newest format version this library reads and writes. It reads every version from 1;
    /// it writes version 1 unless a policy sets a field of version 2 (the clipboard exception,
    /// notifications, Open From, paste-in).
    public static let version = 2

    /// Parses and validates a document of either kind.
    ///
    /// - Throws: ``PolicyDocumentError`` with every error found (syntax errors stop at the first),
    ///   each naming its JSON path and what is allowed.
    public static func parse(_ bytes: [UInt8], limits: PolicyDocumentLimits = .standard)
        throws(PolicyDocumentError) -> ValidatedPolicyDocument {
        let json = try StrictJSONParser.parse(bytes, limits: limits)
        var validator = DocumentValidator()
        let document = validator.document(json)
        if let error = validator.failure { throw error }
        guard let document else {
            throw PolicyDocumentError(.root, "the document could not be read")
        }
        return ValidatedPolicyDocument(document: document, warnings: validator.warnings)
    }

    /// Parses and validates a document given as text.
    public static func parse(_ text: String, limits: PolicyDocumentLimits = .standard)
        throws(PolicyDocumentError) -> ValidatedPolicyDocument {
        try parse(Array(text.utf8), limits: limits)
    }

    /// The document as pretty-printed JSON (two-space indent, fields in a fixed order, sets
    /// sorted), which `parse` reads back to an equal value.
    public var jsonText: String {
        switch self {
        case .app(let app): app.jsonText
        case .device(let device): device.jsonText
        }
    }
}

/// A document that passed validation, and what deserves a second look.
public struct ValidatedPolicyDocument: Sendable, Hashable {
    /// The document.
    public let document: PolicyDocument
    /// Things that are valid but probably not what the author meant (an empty whitelist, a
    /// whitelist that names only one of the two native mail ids, an unauthorized user...).
    public let warnings: [PolicyDocumentIssue]
}

/// One app's policy document.
public struct AppPolicyDocument: Sendable, Hashable {
    /// The bundle id of the app the policy is for.
    public var app: String
    /// Free text for people.
    public var description: String?
    /// The policy as written: a field the document leaves out is `nil`.
    public var policy: PolicyUpdate

    /// Creates a document.
    public init(app: String, description: String? = nil, policy: PolicyUpdate) {
        self.app = app
        self.description = description
        self.policy = policy
    }

    /// The update to hand to ``ShareBroker/ShareBroker/apply(_:)``: every field set, a field
    /// the document leaves out at its most restrictive value (see ``PolicyUpdate/completed()``).
    public var policyUpdate: PolicyUpdate { policy.completed() }

    /// Parses an app policy document; a device document is an error.
    public static func parse(_ bytes: [UInt8], limits: PolicyDocumentLimits = .standard)
        throws(PolicyDocumentError) -> (document: AppPolicyDocument, warnings: [PolicyDocumentIssue]) {
        let checked = try PolicyDocument.parse(bytes, limits: limits)
        guard case .app(let app) = checked.document else {
            throw PolicyDocumentError(JSONPath.root.key("format"),
                                      "expected an app policy (\"\(PolicyDocument.appFormat)\"), got a device document")
        }
        return (app, checked.warnings)
    }
}

/// A device document: the registry of apps on a device, as the agent daemon reads it.
public struct DeviceRegistry: Sendable, Hashable {
    /// Free text for people.
    public var description: String?
    /// The apps, in document order. Ids and executables are unique.
    public var apps: [RegisteredApp]
    /// Which ids count as native mail on this device (`nativeMail` in the document; the first id
    /// is the app `mailto:` opens when the platform names none). Default: the two Apple ids.
    package var nativeMail: NativeMail

    /// Creates a registry.
    package init(description: String? = nil, apps: [RegisteredApp], nativeMail: NativeMail = .appleDevices) {
        self.description = description
        self.apps = apps
        self.nativeMail = nativeMail
    }

    /// The app with exactly this id (case-sensitive, whole id).
    public subscript(id: String) -> RegisteredApp? { apps.first(where: { $0.id == id }) }

    /// The app whose executable is exactly this absolute path.
    public func app(forExecutable path: String) -> RegisteredApp? { apps.first(where: { $0.executable == path }) }

    /// The Flatpak app (``RegisteredApp/isFlatpak``) with exactly this app id (case-sensitive,
    /// whole id), or `nil` when the device registers no such Flatpak.
    public func app(forFlatpak appID: String) -> RegisteredApp? { apps.first(where: { $0.isFlatpak && $0.id == appID }) }

    /// The apps as the library's sharing rules see them, leaving out `excluded` (the app under
    /// test, which is not "another app on the device" to itself).
    package func deviceApps(excluding excluded: String? = nil) -> DeviceApps {
        DeviceApps(apps.filter { $0.id != excluded }.map(\.deviceApp), nativeMail: nativeMail)
    }

    /// Parses a device document; an app policy document is an error.
    public static func parse(_ bytes: [UInt8], limits: PolicyDocumentLimits = .standard)
        throws(PolicyDocumentError) -> (registry: DeviceRegistry, warnings: [PolicyDocumentIssue]) {
        let checked = try PolicyDocument.parse(bytes, limits: limits)
        guard case .device(let device) = checked.document else {
            throw PolicyDocumentError(JSONPath.root.key("format"),
                                      "expected a device document (\"\(PolicyDocument.deviceFormat)\"), got an app policy")
        }
        return (device, checked.warnings)
    }
}

/// One app in a device registry.
public struct RegisteredApp: Sendable, Hashable {
    /// The bundle id, unique on the device.
    public var id: String
    /// A display name for people.
    public var name: String?
    /// The absolute, normalized path of the app's executable, unique on the device: how the
    /// agent recognises the app's processes. For a Flatpak app (``isFlatpak``), its path inside
    /// the sandbox (under `/app/`).
    public var executable: String
    /// The SHA-256 of the executable, 64 lower-case hex digits, when the registry pins it.
    public var sha256: String?
    /// Whether the app links the library (and so has a policy).
    public var isAppConnect: Bool
    /// URL schemes the app opens, lower-cased.
    public var schemes: [String]
    /// The app's policy as written; present exactly when ``isAppConnect`` is true.
    public var policy: PolicyUpdate?
    /// The users (uids, from the kernel) whose processes of this app may receive keys and
    /// policy; `nil`: the agent's own user and root only.
    public var users: [UInt32]?
    /// Whether the app is a Flatpak whose app id (its desktop id) is ``id``: the agent identifies
    /// its processes from the sandbox's `/.flatpak-info`, cross-checked against the instance
    /// record Flatpak keeps and the installed app's files (docs/THREAT-MODEL.md), and
    /// ``executable`` is the path inside the sandbox.
    public var isFlatpak: Bool

    /// Creates a registry entry.
    public init(id: String, name: String? = nil, executable: String, sha256: String? = nil, isAppConnect: Bool = false,
                schemes: [String] = [], policy: PolicyUpdate? = nil, users: [UInt32]? = nil, isFlatpak: Bool = false) {
        self.users = users
        self.isFlatpak = isFlatpak
        self.id = id
        self.name = name
        self.executable = executable
        self.sha256 = sha256
        self.isAppConnect = isAppConnect
        self.schemes = schemes.map { $0.lowercased() }
        self.policy = policy
    }

    /// An AppConnect app whose policy authorizes its user: what "All AppConnect apps" and the
    /// drag-and-drop rules count.
    public var isAuthorized: Bool { isAppConnect && policy?.auth == .authorized }

    /// The app as the sharing rules see it.
    package var deviceApp: DeviceApp {
        DeviceApp(id: id, isAppConnect: isAppConnect, isAuthorized: isAuthorized, schemes: schemes)
    }

    /// The complete update for this app (see ``PolicyUpdate/completed()``), or `nil` for an app
    /// that does not link the library.
    public var policyUpdate: PolicyUpdate? { policy?.completed() }
}
