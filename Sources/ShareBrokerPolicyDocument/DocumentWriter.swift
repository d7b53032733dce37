import ShareBroker

/// Writes documents in their canonical form: fields in a fixed order, sets and config keys
/// sorted, so that the same policy always gives the same bytes (and diffs stay small).
enum DocumentWriter {
    static func policy(_ p: PolicyUpdate) -> JSONValue {
        var members: [JSONMember] = []
        func add(_ key: PolicyField, _ value: JSONValue?) {
            if let value { members.append(JSONMember(key: key.rawValue, value: value)) }
        }
        add(.auth, p.auth.map { .string(PolicyNames.name($0, in: PolicyNames.auth)) })
        add(.authMessage, p.authMessage.map(JSONValue.string))
        if let openIn = p.openIn {
            add(.openIn, .string(PolicyNames.name(of: openIn)))
            if case .whitelist(let ids) = openIn { add(.openInWhitelist, .array(ids.sorted().map(JSONValue.string))) }
        }
        add(.pasteboard, p.pasteboard.map { .string(PolicyNames.name($0, in: PolicyNames.pasteboard)) })
        add(.print, p.print.map { .string(PolicyNames.name($0, in: PolicyNames.print)) })
        add(.secureFileIO, p.secureFileIO.map { .string(PolicyNames.name($0, in: PolicyNames.secureFileIO)) })
        add(.logLevel, p.logLevel.map { .string(PolicyNames.name($0, in: PolicyNames.logLevel)) })
        add(.dragAndDrop, p.dragAndDrop.map { .string(PolicyNames.name($0, in: PolicyNames.dragAndDrop)) })
        add(.managedBrowserRequired, p.managedBrowserRequired.map(JSONValue.bool))
        add(.config, p.config.map { config in
            .object(config.sorted { $0.key < $1.key }.map { JSONMember(key: $0.key, value: .string($0.value)) })
        })
        add(.clipboardExceptionLength, p.clipboardExceptionLength.map { .number(String($0)) })
        add(.notifications, p.notifications.map { .string(PolicyNames.name($0, in: PolicyNames.notifications)) })
        if let openFrom = p.openFrom {
            add(.openFrom, .string(PolicyNames.name(of: openFrom)))
            if case .whitelist(let ids) = openFrom { add(.openFromWhitelist, .array(ids.sorted().map(JSONValue.string))) }
        }
        add(.pasteIn, p.pasteIn.map { .string(PolicyNames.name($0, in: PolicyNames.pasteIn)) })
        if let offline = p.offline {
            add(.offlineAccessCheckSeconds, .number(String(offline.accessCheckSeconds)))
            add(.offlineWipeSeconds, .number(String(offline.wipeSeconds)))
        }
        if let warn = p.warn, warn != .none { add(.warn, WarnDocument.json(warn)) }
        return .object(members)
    }

    static func app(_ d: AppPolicyDocument) -> JSONValue {
        var members = [
            JSONMember(key: "format", value: .string(PolicyDocument.appFormat)),
            JSONMember(key: "version", value: .number(String(d.policy.documentVersion))),
            JSONMember(key: "app", value: .string(d.app)),
        ]
        if let description = d.description { members.append(JSONMember(key: "description", value: .string(description))) }
        members.append(JSONMember(key: "policy", value: policy(d.policy)))
        return .object(members)
    }

    static func device(_ d: DeviceRegistry) -> JSONValue {
        var members = [
            JSONMember(key: "format", value: .string(PolicyDocument.deviceFormat)),
            JSONMember(key: "version", value: .number(String(d.apps.compactMap(\.policy).map(\.documentVersion).max() ?? 1))),
        ]
        if let description = d.description { members.append(JSONMember(key: "description", value: .string(description))) }
        members.append(JSONMember(key: "apps", value: .array(d.apps.map(app))))
        if d.nativeMail != .appleDevices {
            let ids = [d.nativeMail.launchID] + d.nativeMail.ids.filter { $0 != d.nativeMail.launchID }
            members.append(JSONMember(key: "nativeMail", value: .array(ids.map(JSONValue.string))))
        }
        return .object(members)
    }

    static func app(_ a: RegisteredApp) -> JSONValue {
        var members = [JSONMember(key: "id", value: .string(a.id))]
        if let name = a.name { members.append(JSONMember(key: "name", value: .string(name))) }
        members.append(JSONMember(key: "executable", value: .string(a.executable)))
        if let sha256 = a.sha256 { members.append(JSONMember(key: "sha256", value: .string(sha256))) }
        members.append(JSONMember(key: "appConnect", value: .bool(a.isAppConnect)))
        if !a.schemes.isEmpty { members.append(JSONMember(key: "handles", value: .array(a.schemes.map(JSONValue.string)))) }
        if let users = a.users { members.append(JSONMember(key: "users", value: .array(users.map { JSONValue.number(String($0)) }))) }
        if let p = a.policy { members.append(JSONMember(key: "policy", value: policy(p))) }
        return .object(members)
    }
}

extension AppPolicyDocument {
    /// The document as pretty-printed canonical JSON, ending with a newline.
    public var jsonText: String { JSONWriter.pretty(DocumentWriter.app(self)) }
}

extension DeviceRegistry {
    /// The document as pretty-printed canonical JSON, ending with a newline.
    public var jsonText: String { JSONWriter.pretty(DocumentWriter.device(self)) }
}
