import ShareBroker

/// Turns a parsed JSON value into a document, collecting every error and warning with its path.
/// It never stops at the first error (syntax errors are the parser's and do stop), and it
/// produces a value only when there is no error at all.
struct DocumentValidator {
    private(set) var errors: [PolicyDocumentIssue] = []
    private(set) var errorCount = 0
    private(set) var warnings: [PolicyDocumentIssue] = []
    private var warningCount = 0
    /// The `version` of the document being read (fields of a later version are refused).
    var documentVersion = PolicyDocument.version

    /// The error to throw, when any was found.
    var failure: PolicyDocumentError? {
        errorCount == 0 ? nil : PolicyDocumentError(issues: errors, omitted: errorCount - errors.count)
    }

    mutating func error(_ path: JSONPath, _ message: String) {
        errorCount += 1
        if errors.count < PolicyDocumentError.maxReported {
            errors.append(PolicyDocumentIssue(path: path.description, message: message))
        }
    }

    mutating func warn(_ path: JSONPath, _ message: String) {
        warningCount += 1
        if warnings.count < PolicyDocumentError.maxReported {
            warnings.append(PolicyDocumentIssue(path: path.description, message: message))
        } else if warningCount == PolicyDocumentError.maxReported + 1 {
            warnings.append(PolicyDocumentIssue(path: "$", message: "more warnings were left out"))
        }
    }

    // MARK: Documents

    static let appFields = ["$schema", "format", "version", "app", "description", "policy"]
    static let deviceFields = ["$schema", "format", "version", "description", "apps", "nativeMail"]
    static let appEntryFields = ["id", "name", "executable", "sha256", "appConnect", "handles", "policy", "users", "flatpak"]

    mutating func document(_ json: JSONValue) -> PolicyDocument? {
        guard case .object(let members) = json else {
            error(.root, "expected a JSON object with \"format\": \"\(PolicyDocument.appFormat)\" or "
                  + "\"\(PolicyDocument.deviceFormat)\"; got \(json.kindName)")
            return nil
        }
        let top = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        let formats = [PolicyDocument.appFormat, PolicyDocument.deviceFormat]
        guard let formatValue = top["format"] else {
            var message = "missing field \"format\": expected \"\(PolicyDocument.appFormat)\" (one app's policy) or "
                + "\"\(PolicyDocument.deviceFormat)\" (a device)"
            if top["@odata.type"] != nil {
                message += "; this looks like a Microsoft Graph body: convert it with `sharebroker policy import --from intune`"
            }
            error(.root, message)
            return nil
        }
        guard let format = choice(formatValue, at: JSONPath.root.key("format"), formats.map { ($0, $0) }) else { return nil }
        guard let versionValue = top["version"] else {
            error(.root, "missing field \"version\": expected \(PolicyDocument.version)")
            return nil
        }
        guard let v = versionValue.integer, (1 ... PolicyDocument.version).contains(v) else {
            if let v = versionValue.integer, v > PolicyDocument.version {
                error(JSONPath.root.key("version"), "version \(v) is newer than this tool reads (\(PolicyDocument.version)); "
                      + "upgrade sharebroker or write a version \(PolicyDocument.version) document")
            } else {
                error(JSONPath.root.key("version"), "expected the integer 1 or \(PolicyDocument.version); got \(versionValue.preview())")
            }
            return nil
        }
        documentVersion = v
        if format == PolicyDocument.appFormat {
            return appDocument(members)
        } else {
            return deviceDocument(members)
        }
    }

    private mutating func appDocument(_ members: [JSONMember]) -> PolicyDocument? {
        let f = fields(members, at: .root, known: Self.appFields, what: "an app policy document")
        let before = errorCount
        if let v = f["$schema"] { _ = string(v, at: JSONPath.root.key("$schema"), maxLength: PolicyDocumentBounds.maxText) }
        let app = required(f, "app", at: .root, hint: "the bundle id of the app, e.g. \"com.acme.notes\"")
            .flatMap { bundleID($0, at: JSONPath.root.key("app")) }
        let description = f["description"].flatMap { string($0, at: JSONPath.root.key("description"), maxLength: PolicyDocumentBounds.maxText) }
        let policy = required(f, "policy", at: .root, hint: "an object with the app's policy, e.g. {\"auth\": \"authorized\"}")
            .flatMap { self.policy($0, at: JSONPath.root.key("policy")) }
        guard errorCount == before, let app, let policy else { return nil }
        return .app(AppPolicyDocument(app: app, description: description, policy: policy))
    }

    private mutating func deviceDocument(_ members: [JSONMember]) -> PolicyDocument? {
        let f = fields(members, at: .root, known: Self.deviceFields, what: "a device document")
        let before = errorCount
        if let v = f["$schema"] { _ = string(v, at: JSONPath.root.key("$schema"), maxLength: PolicyDocumentBounds.maxText) }
        let description = f["description"].flatMap { string($0, at: JSONPath.root.key("description"), maxLength: PolicyDocumentBounds.maxText) }
        let appsPath = JSONPath.root.key("apps")
        var apps: [RegisteredApp] = []
        if let value = required(f, "apps", at: .root, hint: "an array of the apps on the device") {
            if case .array(let items) = value {
                if items.count > PolicyDocumentBounds.maxDeviceApps {
                    error(appsPath, "\(items.count) apps; a device document lists at most \(PolicyDocumentBounds.maxDeviceApps)")
                } else {
                    if items.isEmpty { warn(appsPath, "the device lists no apps") }
                    for (i, item) in items.enumerated() {
                        if let app = registeredApp(item, at: appsPath.index(i)) { apps.append(app) }
                    }
                }
            } else {
                error(appsPath, "expected an array of apps; got \(value.kindName)")
            }
        }
        var nativeMail = NativeMail.appleDevices
        if let value = f["nativeMail"] {
            let path = JSONPath.root.key("nativeMail")
            if let ids = bundleIDList(value, at: path) {
                if let first = ids.first {
                    nativeMail = NativeMail(ids: ids, launchID: first)
                } else {
                    error(path, "an empty list: name the app ids that count as native mail (a whitelist must hold all "
                          + "of them), or leave nativeMail out for com.apple.UIKit.activity.Mail and com.apple.mobilemail")
                }
            }
        }
        guard errorCount == before else { return nil }
        crossCheck(apps, at: appsPath)
        guard errorCount == before else { return nil }
        return .device(DeviceRegistry(description: description, apps: apps, nativeMail: nativeMail))
    }

    private mutating func registeredApp(_ value: JSONValue, at path: JSONPath) -> RegisteredApp? {
        guard case .object(let members) = value else {
            error(path, "expected an app object with id, executable and appConnect; got \(value.kindName)")
            return nil
        }
        let f = fields(members, at: path, known: Self.appEntryFields, what: "an app")
        let before = errorCount
        let id = required(f, "id", at: path, hint: "the app's bundle id").flatMap { bundleID($0, at: path.key("id")) }
        let name = f["name"].flatMap { string($0, at: path.key("name"), maxLength: PolicyDocumentBounds.maxText) }
        let executable = required(f, "executable", at: path, hint: "the absolute path of the app's executable")
            .flatMap { executablePath($0, at: path.key("executable")) }
        let sha256 = f["sha256"].flatMap { digest($0, at: path.key("sha256")) }
        let appConnect = f["appConnect"].flatMap { bool($0, at: path.key("appConnect")) } ?? false
        let users = f["users"].flatMap { userIDs($0, at: path.key("users")) }
        let flatpak = f["flatpak"].flatMap { bool($0, at: path.key("flatpak")) } ?? false
        if flatpak, let id, !FlatpakAppID.isValid(id) {
            error(path.key("id"), "\(JSONWriter.quoted(id)) is not a Flatpak app id: a Flatpak app (\"flatpak\": true) is named by "
                  + "its app id, at least three dot-separated elements of letters, digits and '_' (and '-' but in the last), "
                  + "at most 255 bytes, such as \"org.acme.Notes\"")
        }
        if flatpak, let executable, !executable.hasPrefix("/app/") {
            error(path.key("executable"), "\(JSONWriter.quoted(executable)) is not inside the Flatpak's /app: for a Flatpak app "
                  + "the executable is its path inside the sandbox, such as \"/app/bin/acme-notes\"")
        }
        var schemes: [String] = []
        if let v = f["handles"] { schemes = urlSchemes(v, at: path.key("handles")) ?? [] }
        var policy: PolicyUpdate?
        if let v = f["policy"] {
            if appConnect {
                policy = self.policy(v, at: path.key("policy"))
            } else {
                error(path.key("policy"), "a policy is given but appConnect is not true: only apps that link the library "
                      + "have a policy; set \"appConnect\": true or remove the policy")
            }
        } else if appConnect {
            error(path, "missing field \"policy\": an AppConnect app (appConnect true) needs its policy")
        }
        guard errorCount == before, let id, let executable else { return nil }
        return RegisteredApp(id: id, name: name, executable: executable, sha256: sha256, isAppConnect: appConnect,
                             schemes: schemes, policy: policy, users: users, isFlatpak: flatpak)
    }

    /// Rules across the apps of a device: unique ids and executables, and warnings for schemes
    /// with two handlers and whitelists naming apps the device does not have.
    private mutating func crossCheck(_ apps: [RegisteredApp], at path: JSONPath) {
        var ids: [String: Int] = [:]
        var executables: [String: Int] = [:]
        var handlers: [String: Int] = [:]
        for (i, app) in apps.enumerated() {
            if let first = ids[app.id] {
                error(path.index(i).key("id"), "duplicate app id \(JSONWriter.quoted(app.id)) (also \(path.index(first).key("id"))): "
                      + "each app appears once")
            } else {
                ids[app.id] = i
            }
            if let first = executables[app.executable] {
                error(path.index(i).key("executable"), "\(JSONWriter.quoted(app.executable)) is also the executable of "
                      + "\(path.index(first)) (\(apps[first].id)): the agent could not tell the two apps apart")
            } else {
                executables[app.executable] = i
            }
            for scheme in app.schemes {
                if let first = handlers[scheme] {
                    warn(path.index(i).key("handles"), "\(scheme): is also handled by \(apps[first].id); "
                         + "the first app listed (\(apps[first].id)) opens such URLs")
                } else {
                    handlers[scheme] = i
                }
            }
        }
        for (i, app) in apps.enumerated() {
            guard case .whitelist(let list)? = app.policy?.openIn else { continue }
            let missing = list.filter { ids[$0] == nil && $0 != WellKnownApp.mailActivity }.sorted()
            if !missing.isEmpty {
                let shown = missing.prefix(5).joined(separator: ", ")
                warn(path.index(i).key("policy").key("openInWhitelist"),
                     "\(missing.count) whitelisted app\(missing.count == 1 ? " is" : "s are") not on this device (\(shown)"
                     + "\(missing.count > 5 ? ", …" : "")); they are allowed if installed later")
            }
        }
    }

    // MARK: Policy

    mutating func policy(_ value: JSONValue, at path: JSONPath) -> PolicyUpdate? {
        guard case .object(let members) = value else {
            error(path, "expected a policy object; got \(value.kindName)")
            return nil
        }
        let f = fields(members, at: path, known: PolicyField.allCases.map(\.rawValue), what: "a policy")
        let before = errorCount
        for field in PolicyField.allCases where field.version > documentVersion && f[field.rawValue] != nil {
            error(path.key(field.rawValue), "\(field.rawValue) is a field of version \(field.version) documents; "
                  + "set \"version\": \(field.version) at the top of the document to use it")
        }
        var p = PolicyUpdate()
        if let v = f["auth"] { p.auth = choice(v, at: path.key("auth"), PolicyNames.auth) }
        if let v = f["authMessage"] { p.authMessage = string(v, at: path.key("authMessage"), maxLength: PolicyDocumentBounds.maxText) }
        let kind = f["openIn"].flatMap { choice($0, at: path.key("openIn"), PolicyNames.openIn) }
        let whitelist = f["openInWhitelist"].flatMap { bundleIDList($0, at: path.key("openInWhitelist")) }
        let whitelistPath = path.key("openInWhitelist")
        switch (kind, f["openInWhitelist"] != nil) {
        case (.whitelist?, false):
            error(whitelistPath, "missing: openIn is \"whitelist\", so openInWhitelist must list the bundle ids "
                  + "documents may go to (an empty list blocks every target)")
        case (.whitelist?, true):
            if let whitelist { p.openIn = .whitelist(Set(whitelist)) }
        case (let other?, true):
            error(whitelistPath, "contradicts openIn \"\(PolicyNames.name(other, in: PolicyNames.openIn))\": a whitelist goes "
                  + "only with openIn \"whitelist\"; remove openInWhitelist or set openIn to \"whitelist\"")
        case (nil, true):
            if f["openIn"] == nil {
                error(whitelistPath, "given without openIn: set \"openIn\": \"whitelist\" for the whitelist to apply")
            }
        case (.unauthorized?, false): p.openIn = .unauthorized
        case (.authorized?, false): p.openIn = .authorized
        case (.appConnectApps?, false): p.openIn = .allAppConnectApps
        case (nil, false): break
        }
        if let v = f["pasteboard"] { p.pasteboard = choice(v, at: path.key("pasteboard"), PolicyNames.pasteboard) }
        if let v = f["print"] { p.print = choice(v, at: path.key("print"), PolicyNames.print) }
        if let v = f["secureFileIO"] { p.secureFileIO = choice(v, at: path.key("secureFileIO"), PolicyNames.secureFileIO) }
        if let v = f["logLevel"] { p.logLevel = choice(v, at: path.key("logLevel"), PolicyNames.logLevel) }
        if let v = f["dragAndDrop"] { p.dragAndDrop = choice(v, at: path.key("dragAndDrop"), PolicyNames.dragAndDrop) }
        if let v = f["managedBrowserRequired"] { p.managedBrowserRequired = bool(v, at: path.key("managedBrowserRequired")) }
        if let v = f["config"] { p.config = config(v, at: path.key("config")) }
        if let v = f["clipboardExceptionLength"] {
            let at = path.key("clipboardExceptionLength")
            if let n = v.integer, (0 ... PolicySnapshot.maxClipboardExceptionLength).contains(n) {
                p.clipboardExceptionLength = n
            } else {
                error(at, "expected a whole number of characters from 0 (no exception) to "
                      + "\(PolicySnapshot.maxClipboardExceptionLength); got \(v.preview())")
            }
        }
        if let v = f["notifications"] { p.notifications = choice(v, at: path.key("notifications"), PolicyNames.notifications) }
        let fromKind = f["openFrom"].flatMap { choice($0, at: path.key("openFrom"), PolicyNames.openFrom) }
        let fromList = f["openFromWhitelist"].flatMap { bundleIDList($0, at: path.key("openFromWhitelist")) }
        let fromListPath = path.key("openFromWhitelist")
        switch (fromKind, f["openFromWhitelist"] != nil) {
        case (.whitelist?, false):
            error(fromListPath, "missing: openFrom is \"whitelist\", so openFromWhitelist must list the bundle ids "
                  + "documents may come from (an empty list blocks every source)")
        case (.whitelist?, true):
            if let fromList { p.openFrom = .whitelist(Set(fromList)) }
        case (let other?, true):
            error(fromListPath, "contradicts openFrom \"\(PolicyNames.name(other, in: PolicyNames.openFrom))\": a whitelist "
                  + "goes only with openFrom \"whitelist\"; remove openFromWhitelist or set openFrom to \"whitelist\"")
        case (nil, true):
            if f["openFrom"] == nil {
                error(fromListPath, "given without openFrom: set \"openFrom\": \"whitelist\" for the whitelist to apply")
            }
        case (.unauthorized?, false): p.openFrom = .unauthorized
        case (.authorized?, false): p.openFrom = .authorized
        case (.appConnectApps?, false): p.openFrom = .allAppConnectApps
        case (nil, false): break
        }
        if let v = f["pasteIn"] { p.pasteIn = choice(v, at: path.key("pasteIn"), PolicyNames.pasteIn) }
        if f["offlineAccessCheckSeconds"] != nil || f["offlineWipeSeconds"] != nil {
            var seconds: [Int] = []
            for key in ["offlineAccessCheckSeconds", "offlineWipeSeconds"] {
                guard let v = f[key] else { seconds.append(0); continue }
                if let n = v.integer, (0 ... OfflinePolicy.maxSeconds).contains(n) {
                    seconds.append(n)
                } else {
                    error(path.key(key), "expected whole seconds from 0 (no limit) to \(OfflinePolicy.maxSeconds) (10 years); "
                          + "got \(v.preview())")
                }
            }
            if seconds.count == 2 {
                p.offline = OfflinePolicy(accessCheckSeconds: seconds[0], wipeSeconds: seconds[1])
                if seconds[1] > 0, seconds[0] > 0, seconds[1] < seconds[0] {
                    warn(path.key("offlineWipeSeconds"), "\(seconds[1]) seconds is shorter than offlineAccessCheckSeconds "
                         + "(\(seconds[0])): the app is wiped before transfers are ever held back")
                }
            }
        }
        if let v = f["warn"] { p.warn = warnPolicy(v, at: path.key("warn")) }
        guard errorCount == before else { return nil }
        policyWarnings(p, at: path)
        for (exit, why) in WarnDocument.inert(p) {
            warn(path.key("warn").key(exit.rawValue), "never applies: \(why)")
        }
        return p
    }

    private mutating func policyWarnings(_ p: PolicyUpdate, at path: JSONPath) {
        switch p.auth {
        case nil:
            warn(path.key("auth"), "not set, so the user is unauthorized and every transfer fails closed; "
                 + "set \"auth\": \"authorized\" for the rest of this policy to apply")
        case .unauthorized?, .retired?:
            let name = PolicyNames.name(p.auth ?? .unauthorized, in: PolicyNames.auth)
            warn(path.key("auth"), "\"\(name)\": every transfer fails closed whatever the rest of the policy says"
                 + (p.auth == .retired ? ", and the app's data is wiped" : ""))
        case .authorized?: break
        }
        if case .whitelist(let list)? = p.openIn {
            if list.isEmpty {
                warn(path.key("openInWhitelist"), "the whitelist is empty: every target is blocked, as with openIn \"unauthorized\"")
            }
            let hasMail = list.contains(WellKnownApp.nativeMail)
            let hasActivity = list.contains(WellKnownApp.mailActivity)
            if hasMail != hasActivity {
                warn(path.key("openInWhitelist"), "native mail counts as whitelisted only when the whitelist holds both "
                     + "\(WellKnownApp.nativeMail) and \(WellKnownApp.mailActivity); it holds only "
                     + (hasMail ? WellKnownApp.nativeMail : WellKnownApp.mailActivity))
            }
        }
        if case .whitelist(let list)? = p.openFrom, list.isEmpty {
            warn(path.key("openFromWhitelist"), "the whitelist is empty: every source is blocked, as with openFrom \"unauthorized\"")
        }
        if let n = p.clipboardExceptionLength, n > 0, p.pasteboard == .authorized {
            warn(path.key("clipboardExceptionLength"), "\(n) characters, but pasteboard is \"authorized\": every copy is "
                 + "already written in the clear, so the exception changes nothing")
        }
        if let value = p.config?["MI_AC_DISABLE_OPEN_IN_ENFORCEMENT"], value.lowercased() == "true" {
            warn(path.key("config").key("MI_AC_DISABLE_OPEN_IN_ENFORCEMENT"),
                 "this library always enforces Open In; the setting has no effect")
        }
    }

    private mutating func config(_ value: JSONValue, at path: JSONPath) -> [String: String]? {
        guard case .object(let members) = value else {
            error(path, "expected an object of string values, e.g. {\"\(ServerConfigKey.disableSchemeBlocking)\": \"true\"}; "
                  + "got \(value.kindName)")
            return nil
        }
        guard members.count <= PolicyDocumentBounds.maxConfigEntries else {
            error(path, "\(members.count) entries; a config holds at most \(PolicyDocumentBounds.maxConfigEntries)")
            return nil
        }
        var out: [String: String] = [:]
        var ok = true
        for member in members {
            let p = path.key(member.key)
            if member.key.isEmpty || member.key.count > PolicyDocumentBounds.maxConfigKey {
                error(p, "config keys are 1 to \(PolicyDocumentBounds.maxConfigKey) characters")
                ok = false
                continue
            }
            guard case .string(let s) = member.value else {
                error(p, "expected a string (config values are strings, e.g. \"true\"); got \(member.value.kindName)")
                ok = false
                continue
            }
            guard s.count <= PolicyDocumentBounds.maxConfigValue else {
                error(p, "the value is longer than \(PolicyDocumentBounds.maxConfigValue) characters")
                ok = false
                continue
            }
            if member.key == ServerConfigKey.disableSchemeBlocking || member.key == "MI_AC_DISABLE_OPEN_IN_ENFORCEMENT",
               !["true", "false"].contains(s.lowercased()) {
                error(p, "unknown value \(JSONWriter.quoted(s)); allowed values: \"true\", \"false\"")
                ok = false
                continue
            }
            out[member.key] = s
        }
        return ok ? out : nil
    }

    // MARK: Building blocks

    /// The members of an object as a dictionary, after reporting every key not in `known`.
    mutating func fields(_ members: [JSONMember], at path: JSONPath, known: [String], what: String) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for member in members {
            if known.contains(member.key) {
                out[member.key] = member.value
            } else {
                var message = "unknown field \(JSONWriter.quoted(member.key)) in \(what); allowed fields: "
                    + known.joined(separator: ", ")
                if let near = Self.nearest(member.key, in: known) { message += " (did you mean \"\(near)\"?)" }
                error(path.key(member.key), message)
            }
        }
        return out
    }

    private mutating func required(_ f: [String: JSONValue], _ key: String, at path: JSONPath, hint: String) -> JSONValue? {
        if let value = f[key] { return value }
        error(path, "missing field \"\(key)\": \(hint)")
        return nil
    }

    mutating func choice<T>(_ value: JSONValue, at path: JSONPath, _ table: [(String, T)]) -> T? {
        let allowed = table.map { "\"\($0.0)\"" }.joined(separator: ", ")
        guard case .string(let s) = value else {
            error(path, "expected a string, one of \(allowed); got \(value.kindName)")
            return nil
        }
        if let hit = table.first(where: { $0.0 == s }) { return hit.1 }
        var message = "unknown value \(JSONValue.string(s).preview()); allowed values: \(allowed)"
        if let near = Self.nearest(s, in: table.map(\.0)) { message += " (did you mean \"\(near)\"?)" }
        error(path, message)
        return nil
    }

    private mutating func string(_ value: JSONValue, at path: JSONPath, maxLength: Int) -> String? {
        guard case .string(let s) = value else {
            error(path, "expected a string; got \(value.kindName)")
            return nil
        }
        guard s.count <= maxLength else {
            error(path, "the text is longer than \(maxLength) characters")
            return nil
        }
        return s
    }

    private mutating func bool(_ value: JSONValue, at path: JSONPath) -> Bool? {
        guard case .bool(let b) = value else {
            var message = "expected true or false; got \(value.kindName)"
            if case .string(let s) = value, ["true", "false"].contains(s.lowercased()) {
                message += " (write \(s.lowercased()) without quotes)"
            }
            error(path, message)
            return nil
        }
        return b
    }

    /// Whether `s` is a bundle id: 1 to 255 ASCII letters, digits, `.`, `-` or `_`.
    static func isBundleID(_ s: String) -> Bool {
        let bytes = s.utf8
        guard !bytes.isEmpty, bytes.count <= PolicyDocumentBounds.maxBundleID else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
    }

    private mutating func bundleID(_ value: JSONValue, at path: JSONPath) -> String? {
        guard case .string(let s) = value else {
            error(path, "expected a bundle id string such as \"com.acme.viewer\"; got \(value.kindName)")
            return nil
        }
        guard Self.isBundleID(s) else {
            error(path, "\(value.preview()) is not a bundle id: use 1 to \(PolicyDocumentBounds.maxBundleID) ASCII letters, "
                  + "digits, '.', '-' and '_' (ids are matched exactly, case-sensitive)")
            return nil
        }
        return s
    }

    private mutating func bundleIDList(_ value: JSONValue, at path: JSONPath) -> [String]? {
        guard case .array(let items) = value else {
            error(path, "expected an array of bundle ids; got \(value.kindName)")
            return nil
        }
        guard items.count <= PolicyDocumentBounds.maxWhitelist else {
            error(path, "\(items.count) bundle ids; a whitelist holds at most \(PolicyDocumentBounds.maxWhitelist)")
            return nil
        }
        var out: [String] = []
        var seen: [String: Int] = [:]
        var folded: [String: Int] = [:]
        var ok = true
        for (i, item) in items.enumerated() {
            guard let id = bundleID(item, at: path.index(i)) else {
                ok = false
                continue
            }
            if let first = seen[id] {
                warn(path.index(i), "\(JSONWriter.quoted(id)) is listed twice (also \(path.index(first)))")
                continue
            }
            seen[id] = i
            let lower = id.lowercased()
            if let first = folded[lower] {
                warn(path.index(i), "\(JSONWriter.quoted(id)) differs from \(path.index(first)) only in case: ids are matched "
                     + "exactly, so these are two different apps")
            } else {
                folded[lower] = i
            }
            out.append(id)
        }
        return ok ? out : nil
    }

    private mutating func executablePath(_ value: JSONValue, at path: JSONPath) -> String? {
        guard case .string(let s) = value else {
            error(path, "expected an absolute path such as \"/opt/acme/notes/bin/notes\"; got \(value.kindName)")
            return nil
        }
        let components = s.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let normalized = s.hasPrefix("/") && s.count > 1
            && !components.contains { $0.isEmpty || $0 == "." || $0 == ".." }
            && !s.utf8.contains(0)
        guard normalized, s.utf8.count <= PolicyDocumentBounds.maxPath else {
            error(path, "\(value.preview()) is not an absolute, normalized path: it must start with '/', have no empty, "
                  + "'.' or '..' components and no trailing '/', and be at most \(PolicyDocumentBounds.maxPath) bytes")
            return nil
        }
        return s
    }

    /// The uids allowed to run an app: an array of at most 1,024 integers in 0...4294967294.
    private mutating func userIDs(_ value: JSONValue, at path: JSONPath) -> [UInt32]? {
        guard case .array(let items) = value else {
            error(path, "expected an array of user ids (numbers, as `id -u` prints them), such as [1000]; got \(value.kindName)")
            return nil
        }
        guard items.count <= 1_024 else {
            error(path, "at most 1024 user ids; got \(items.count) (use a dedicated user per app instead)")
            return nil
        }
        var out: [UInt32] = []
        for (index, item) in items.enumerated() {
            guard case .number(let text) = item, let uid = UInt32(text), uid != UInt32.max else {
                error(path.index(index), "expected a user id, an integer from 0 to 4294967294 (as `id -u NAME` prints it); got \(item.preview())")
                continue
            }
            if !out.contains(uid) { out.append(uid) }
        }
        return out
    }

    private mutating func digest(_ value: JSONValue, at path: JSONPath) -> String? {
        guard case .string(let s) = value else {
            error(path, "expected 64 lower-case hex digits (the output of `sha256sum`); got \(value.kindName)")
            return nil
        }
        let hex = s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
        guard s.utf8.count == 64, hex else {
            var message = "\(value.preview(limit: 70)) is not a SHA-256: expected 64 lower-case hex digits (the output of `sha256sum`)"
            if s.utf8.count == 64, s.lowercased() != s { message += "; write it in lower case" }
            error(path, message)
            return nil
        }
        return s
    }

    private mutating func urlSchemes(_ value: JSONValue, at path: JSONPath) -> [String]? {
        guard case .array(let items) = value else {
            error(path, "expected an array of URL schemes such as [\"mailto\"]; got \(value.kindName)")
            return nil
        }
        guard items.count <= PolicyDocumentBounds.maxSchemes else {
            error(path, "\(items.count) schemes; an app handles at most \(PolicyDocumentBounds.maxSchemes)")
            return nil
        }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item, Self.isScheme(s) else {
                error(path.index(i), "\(item.preview()) is not a URL scheme: a letter, then letters, digits, '+', '-' or '.', "
                      + "without the ':' (RFC 3986), at most 64 characters")
                continue
            }
            let lower = s.lowercased()
            if out.contains(lower) {
                warn(path.index(i), "the scheme \(lower) is listed twice (schemes are case-insensitive)")
            } else {
                out.append(lower)
            }
        }
        return out
    }

    static func isScheme(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        guard let first = bytes.first, bytes.count <= 64,
              (first >= 0x41 && first <= 0x5A) || (first >= 0x61 && first <= 0x7A) else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
                || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
        }
    }

    /// The candidate closest to `word` (same letters ignoring case, or at most two edits away),
    /// for "did you mean" hints. Long words are not compared, which keeps hostile input cheap.
    static func nearest(_ word: String, in candidates: [String]) -> String? {
        guard word.count <= 40 else { return nil }
        let lower = Array(word.lowercased())
        var best: (String, Int)?
        for candidate in candidates {
            let c = Array(candidate.lowercased())
            let distance = c == lower ? 0 : editDistance(lower, c)
            if distance <= 2, distance < (best?.1 ?? .max) { best = (candidate, distance) }
        }
        return best?.0
    }

    private static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
