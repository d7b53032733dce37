import ShareBroker

/// One screen, in words, of what a valid document allows and blocks: what `sharebroker policy
/// check` prints.
public enum PolicySummary {
    /// The summary of a validated document, with its warnings at the end.
    public static func render(_ checked: ValidatedPolicyDocument) -> String {
        var lines: [String]
        switch checked.document {
        case .app(let app): lines = render(app: app)
        case .device(let device): lines = render(device: device)
        }
        if !checked.warnings.isEmpty {
            lines.append("  warnings:")
            lines += checked.warnings.map { "    ! \($0)" }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func render(app document: AppPolicyDocument) -> [String] {
        var lines = ["\(document.app): valid \(PolicyDocument.appFormat) version \(document.policy.documentVersion)"]
        if let description = document.description, !description.isEmpty { lines.append("  " + cut(description, 100)) }
        lines += describe(document.policy, device: nil, indent: "  ")
        let unset = document.policy.unsetFields
        if !unset.isEmpty {
            let complete = document.policyUpdate
            let items = unset.map { "\($0.rawValue) \(value(of: $0, in: complete))" }
            lines.append("  not set, so at the most restrictive value: " + items.joined(separator: ", "))
        }
        return lines
    }

    static func render(device registry: DeviceRegistry) -> [String] {
        let managed = registry.apps.filter(\.isAppConnect).count
        var lines = ["device: valid \(PolicyDocument.deviceFormat) version \(registry.apps.compactMap(\.policy).map(\.documentVersion).max() ?? 1), "
                     + "\(registry.apps.count) app\(registry.apps.count == 1 ? "" : "s"), \(managed) AppConnect"]
        if let description = registry.description, !description.isEmpty { lines.append("  " + cut(description, 100)) }
        let shown = 20
        let width = min(40, registry.apps.prefix(shown).map(\.id.count).max() ?? 0)
        for app in registry.apps.prefix(shown) {
            var facts: [String] = []
            if app.isAppConnect { facts.append(app.isAuthorized ? "AppConnect, authorized" : "AppConnect, not authorized") }
            if !app.schemes.isEmpty { facts.append("handles " + app.schemes.prefix(4).joined(separator: ", ")
                                                   + (app.schemes.count > 4 ? ", …" : "")) }
            facts.append(app.isFlatpak ? "Flatpak, " + cut(app.executable, 51) + " in its sandbox" : cut(app.executable, 60))
            if let sha = app.sha256 { facts.append("sha256 \(sha.prefix(8))…") }
            if let users = app.users { facts.append("users " + users.prefix(4).map(String.init).joined(separator: ", ") + (users.count > 4 ? ", …" : "")) }
            lines.append("  " + app.id.padded(to: width)
                         + "  " + facts.joined(separator: " · "))
            if let policy = app.policy { lines.append("      " + compact(policy.completed(), device: registry)) }
        }
        if registry.apps.count > shown { lines.append("  … and \(registry.apps.count - shown) more apps") }
        return lines
    }

    // MARK: One policy

    /// The allows / blocks / settings lines of one policy as written.
    static func describe(_ written: PolicyUpdate, device: DeviceRegistry?, indent: String) -> [String] {
        let p = written.completed()
        var lines: [String] = []
        var allows: [String] = []
        var blocks: [String] = []
        var settings: [String] = []

        let auth = p.auth ?? .unauthorized
        let message = (p.authMessage ?? "").isEmpty ? "" : " (\(JSONWriter.quoted(cut(p.authMessage ?? "", 60))))"
        lines.append(indent + "user: \(PolicyNames.name(auth, in: PolicyNames.auth))\(message)")
        if auth != .authorized {
            lines.append(indent + "BLOCKS EVERY TRANSFER: the user is not authorized, so everything fails closed"
                         + (auth == .retired ? " and the app's data is wiped" : "") + ". Once authorized, the policy would:")
        }

        switch p.openIn ?? .unauthorized {
        case .authorized:
            allows.append("Open In (documents, and URLs with custom schemes) to any app")
        case .unauthorized:
            blocks.append("Open In to every app (targets get a dummy file) and URLs with custom schemes")
        case .whitelist(let ids):
            let sorted = ids.sorted()
            let listed = sorted.prefix(5).joined(separator: ", ") + (sorted.count > 5 ? ", … (\(sorted.count - 5) more)" : "")
            if ids.isEmpty {
                blocks.append("Open In to every app: the whitelist is empty")
            } else {
                allows.append("Open In to \(count(ids.count, "app")), matched exactly: \(listed)")
                blocks.append("Open In to any other app (it gets a dummy file), and through the share sheet, "
                              + "which cannot tell which app the user picks")
            }
        case .allAppConnectApps:
            var text = "Open In to authorized AppConnect apps"
            if let device {
                let ids = device.apps.filter(\.isAuthorized).map(\.id)
                text += ids.isEmpty ? " (none on this device)" : " (on this device: \(ids.prefix(5).joined(separator: ", "))"
                    + (ids.count > 5 ? ", …" : "") + ")"
            }
            allows.append(text)
            blocks.append("Open In to other apps, and through the share sheet, which cannot tell which app the user picks")
        }

        let schemeBlockingOff = p.config?[ServerConfigKey.disableSchemeBlocking]?.lowercased() == "true"
        switch p.openIn ?? .unauthorized {
        case .authorized:
            allows.append("native mail: the in-app composer and mailto: links")
        case .whitelist(let ids) where ids.contains(WellKnownApp.nativeMail) && ids.contains(WellKnownApp.mailActivity):
            allows.append("native mail: both mail ids are whitelisted")
        default:
            if schemeBlockingOff {
                allows.append("mailto: links to native mail (\(ServerConfigKey.disableSchemeBlocking) is true)")
                blocks.append("the in-app mail composer")
            } else {
                blocks.append("native mail: the in-app composer and mailto: links (an authorized AppConnect mail app "
                              + "still takes mailto:)")
            }
        }

        switch p.pasteboard ?? .unauthorized {
        case .authorized: allows.append("copy, in the clear: every app on the device can paste it")
        case .secureCopy:
            allows.append("copy, encrypted: only authorized AppConnect apps can paste it (copy is blocked while secure "
                          + "services are unavailable)")
        case .unauthorized: blocks.append("copy to the pasteboard")
        }

        if let n = p.clipboardExceptionLength, n > 0, p.pasteboard != .authorized {
            allows.append("copy of plain text of at most \(count(n, "character")) (grapheme clusters), in the clear")
        }
        if p.pasteIn == .managedApps {
            blocks.append("paste into managed content of clear items other apps wrote")
        }
        if p.print == .authorized { allows.append("print") } else { blocks.append("print") }
        if let offline = p.offline, offline != .unlimited {
            settings.append("offline: transfers held back after \(offline.accessCheckSeconds == 0 ? "never" : "\(offline.accessCheckSeconds) s")"
                            + ", wiped after \(offline.wipeSeconds == 0 ? "never" : "\(offline.wipeSeconds) s") without a confirmation")
        }
        switch p.notifications {
        case .block?: blocks.append("notifications of managed content")
        case .blockOrgData?: allows.append("notifications with generic text only (no organization data)")
        case .allow?, nil: break
        }
        switch p.openFrom {
        case .unauthorized?: blocks.append("documents and URLs from other apps (Open From)")
        case .whitelist(let ids)?: allows.append("documents from a whitelist of \(count(ids.count, "app")) (Open From)")
        case .allAppConnectApps?: allows.append("documents from authorized AppConnect apps only (Open From)")
        case .authorized?, nil: break
        }

        switch p.dragAndDrop ?? DragAndDropPolicy.noApps {
        case .allApps: allows.append("drag and drop to any app")
        case .appConnectApps:
            allows.append("drag and drop to authorized AppConnect apps")
            blocks.append("drag and drop to other apps")
        case .noApps: blocks.append("drag and drop")
        }

        settings.append(p.secureFileIO == .optional ? "app files may be plaintext (secureFileIO optional)"
                        : "app files must be encrypted (secureFileIO required)")
        settings.append(p.managedBrowserRequired == true
                        ? "external links in managed web views open in the managed browser"
                        : "web views open external links themselves (managedBrowserRequired false)")
        settings.append("log level \(PolicyNames.name(p.logLevel ?? .status, in: PolicyNames.logLevel))")
        if let config = p.config, !config.isEmpty {
            let entries = config.sorted { $0.key < $1.key }.prefix(4).map { "\($0.key)=\(cut($0.value, 30))" }
            settings.append("config: " + entries.joined(separator: ", ") + (config.count > 4 ? ", … (\(config.count) entries)" : ""))
        }

        if let warn = p.warn {
            let inert = Set(WarnDocument.inert(p).map(\.0))
            settings += WarnDocument.summary(WarnPolicy(warn.exits.filter { !inert.contains($0.key) }))
        }
        lines.append(indent + "allows:")
        lines += (allows.isEmpty ? ["nothing"] : allows).map { indent + "  + " + $0 }
        lines.append(indent + "blocks:")
        lines += (blocks.isEmpty ? ["nothing"] : blocks).map { indent + "  - " + $0 }
        lines.append(indent + "also:")
        lines += settings.map { indent + "    " + $0 }
        return lines
    }

    /// One line for a device listing.
    static func compact(_ p: PolicyUpdate, device: DeviceRegistry) -> String {
        var parts: [String] = []
        if p.auth != .authorized { parts.append("user \(PolicyNames.name(p.auth ?? .unauthorized, in: PolicyNames.auth)): all blocked") }
        switch p.openIn ?? .unauthorized {
        case .whitelist(let ids): parts.append("Open In: whitelist of \(count(ids.count, "app"))")
        case let other: parts.append("Open In: \(PolicyNames.name(of: other))")
        }
        parts.append("copy: \(PolicyNames.name(p.pasteboard ?? .unauthorized, in: PolicyNames.pasteboard))")
        parts.append("print: \(p.print == .authorized ? "allowed" : "blocked")")
        parts.append("drag: \(PolicyNames.name(p.dragAndDrop ?? DragAndDropPolicy.noApps, in: PolicyNames.dragAndDrop))")
        parts.append("files: \(PolicyNames.name(p.secureFileIO ?? .required, in: PolicyNames.secureFileIO))")
        return parts.joined(separator: " · ")
    }

    static func value(of field: PolicyField, in p: PolicyUpdate) -> String {
        switch field {
        case .auth: PolicyNames.name(p.auth ?? .unauthorized, in: PolicyNames.auth)
        case .authMessage: "\"\""
        case .openIn, .openInWhitelist: PolicyNames.name(of: p.openIn ?? .unauthorized)
        case .pasteboard: PolicyNames.name(p.pasteboard ?? .unauthorized, in: PolicyNames.pasteboard)
        case .print: PolicyNames.name(p.print ?? .unauthorized, in: PolicyNames.print)
        case .secureFileIO: PolicyNames.name(p.secureFileIO ?? .required, in: PolicyNames.secureFileIO)
        case .logLevel: PolicyNames.name(p.logLevel ?? .status, in: PolicyNames.logLevel)
        case .dragAndDrop: PolicyNames.name(p.dragAndDrop ?? DragAndDropPolicy.noApps, in: PolicyNames.dragAndDrop)
        case .managedBrowserRequired: (p.managedBrowserRequired ?? false) ? "true" : "false"
        case .config: "{}"
        case .clipboardExceptionLength: String(p.clipboardExceptionLength ?? 0)
        case .notifications: PolicyNames.name(p.notifications ?? .allow, in: PolicyNames.notifications)
        case .openFrom, .openFromWhitelist: PolicyNames.name(of: p.openFrom ?? .authorized)
        case .pasteIn: PolicyNames.name(p.pasteIn ?? .anyApp, in: PolicyNames.pasteIn)
        case .offlineAccessCheckSeconds: String(p.offline?.accessCheckSeconds ?? 0)
        case .offlineWipeSeconds: String(p.offline?.wipeSeconds ?? 0)
        case .warn: (p.warn ?? .none).exits.isEmpty ? "none"
            : WarnExit.allCases.filter { p.warn?[$0] != nil }.map(\.rawValue).joined(separator: ", ")
        }
    }

    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    static func cut(_ s: String, _ limit: Int) -> String {
        let flat = s.replacingAll("\n", with: " ")
        return flat.count > limit ? String(flat.prefix(limit - 1)) + "…" : flat
    }
}

extension String {
    /// This string with every `target` character replaced (no Foundation needed).
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
