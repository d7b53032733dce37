import ShareBroker

/// The `warn` field of a policy (version 2 documents, issue 33): which exits warn instead of only
/// blocking, and how. The same names as the simulator's `policy` op.
///
/// ```json
/// "warn": {"copy": {"reasonRequired": true, "reasons": [{"code": "customer", "label": "A customer asked"}],
///                   "freeText": true, "proceedMinutes": 30, "answerSeconds": 60,
///                   "rateLimit": {"proceeds": 5, "minutes": 60}}}
/// ```
enum WarnDocument {
    static let settingsFields = ["reasonRequired", "reasons", "freeText", "proceedMinutes", "answerSeconds", "rateLimit"]

    /// The document value of `policy`.
    static func json(_ policy: WarnPolicy) -> JSONValue {
        .object(WarnExit.allCases.compactMap { exit in
            policy[exit].map { JSONMember(key: exit.rawValue, value: json($0)) }
        })
    }

    private static func json(_ s: WarnSettings) -> JSONValue {
        var members = [JSONMember(key: "reasonRequired", value: .bool(s.reasonRequired))]
        if !s.reasons.isEmpty {
            members.append(JSONMember(key: "reasons", value: .array(s.reasons.map { reason in
                .object([JSONMember(key: "code", value: .string(reason.code)),
                         JSONMember(key: "label", value: .string(reason.label))])
            })))
        }
        members.append(JSONMember(key: "freeText", value: .bool(s.freeTextAllowed)))
        members.append(JSONMember(key: "proceedMinutes", value: .number(String(s.proceedLifetimeMinutes))))
        members.append(JSONMember(key: "answerSeconds", value: .number(String(max(s.answerTimeoutMilliseconds / 1_000, 1)))))
        if let limit = s.rateLimit {
            members.append(JSONMember(key: "rateLimit", value: .object([
                JSONMember(key: "proceeds", value: .number(String(limit.proceeds))),
                JSONMember(key: "minutes", value: .number(String(limit.minutes))),
            ])))
        }
        return .object(members)
    }

    /// One line per warning exit for the summary (`policy check`, `explain`).
    static func summary(_ policy: WarnPolicy) -> [String] {
        WarnExit.allCases.compactMap { exit in
            guard let s = policy[exit] else { return nil }
            var parts: [String] = []
            if s.reasonRequired { parts.append("a reason is required") }
            if !s.reasons.isEmpty { parts.append("reasons: " + s.reasons.map(\.code).joined(separator: ", ")) }
            if s.freeTextAllowed { parts.append("free text up to \(WarnSettings.maxTextLength) characters") }
            parts.append(s.proceedLifetimeMinutes > 0 ? "a proceed lasts \(s.proceedLifetimeMinutes) min for the same target"
                                                      : "asks every time")
            parts.append("\(s.answerTimeoutMilliseconds / 1_000) s to answer, then blocked")
            if let limit = s.rateLimit { parts.append("at most \(limit.proceeds) proceeds per \(limit.minutes) min") }
            return "\(name(exit)) warns: the user may go on (\(parts.joined(separator: "; ")))"
        }
    }

    static func name(_ exit: WarnExit) -> String {
        switch exit {
        case .copy: "copy in the clear"
        case .openIn: "Open In outside the whitelist"
        case .print: "print"
        case .dragAndDrop: "drag and drop"
        }
    }

    /// Exits whose warnings can never apply under `p` (their policy never blocks them the way a
    /// warning replaces), each with why.
    static func inert(_ p: PolicyUpdate) -> [(WarnExit, String)] {
        guard let warn = p.warn else { return [] }
        var out: [(WarnExit, String)] = []
        if warn[.copy] != nil, (p.pasteboard ?? .unauthorized) != .unauthorized {
            out.append((.copy, "pasteboard is not \"unauthorized\": copies are written or encrypted, never held for a question"))
        }
        if warn[.openIn] != nil {
            if case .whitelist = p.openIn ?? .unauthorized {} else if p.openIn != .allAppConnectApps {
                out.append((.openIn, "openIn is not a whitelist: only a target outside a whitelist warns"))
            }
        }
        if warn[.print] != nil, p.print == .authorized { out.append((.print, "print is authorized: nothing to warn about")) }
        if warn[.dragAndDrop] != nil, p.dragAndDrop == .allApps {
            out.append((.dragAndDrop, "dragAndDrop is \"all\": nothing to warn about"))
        }
        return out
    }
}

extension DocumentValidator {
    /// The `warn` field: an object of exits, each an object of settings.
    mutating func warnPolicy(_ value: JSONValue, at path: JSONPath) -> WarnPolicy? {
        guard case .object(let members) = value else {
            error(path, "expected an object of exits (\(WarnExit.allCases.map(\.rawValue).joined(separator: ", "))); got \(value.kindName)")
            return nil
        }
        let before = errorCount
        let f = fields(members, at: path, known: WarnExit.allCases.map(\.rawValue), what: "warn")
        var policy = WarnPolicy()
        for exit in WarnExit.allCases {
            guard let v = f[exit.rawValue] else { continue }
            if let settings = warnSettings(v, at: path.key(exit.rawValue)) { policy[exit] = settings }
        }
        return errorCount == before ? policy : nil
    }

    private mutating func warnSettings(_ value: JSONValue, at path: JSONPath) -> WarnSettings? {
        guard case .object(let members) = value else {
            error(path, "expected an object of settings (\(WarnDocument.settingsFields.joined(separator: ", "))); got \(value.kindName)")
            return nil
        }
        let before = errorCount
        let f = fields(members, at: path, known: WarnDocument.settingsFields, what: "warn settings")
        var s = WarnSettings()
        if let v = f["reasonRequired"] { s.reasonRequired = flag(v, at: path.key("reasonRequired")) ?? false }
        if let v = f["freeText"] { s.freeTextAllowed = flag(v, at: path.key("freeText")) ?? false }
        if let v = f["proceedMinutes"] { s.proceedLifetimeMinutes = whole(v, at: path.key("proceedMinutes"), 0 ... 1_440, "minutes") ?? 0 }
        if let v = f["answerSeconds"] {
            s.answerTimeoutMilliseconds = (whole(v, at: path.key("answerSeconds"), 1 ... 600, "seconds") ?? 60) * 1_000
        }
        if let v = f["reasons"] {
            if case .array(let items) = v {
                for (i, item) in items.enumerated() {
                    guard case .object(let rm) = item else {
                        error(path.key("reasons").index(i), "expected {\"code\": …, \"label\": …}; got \(item.kindName)")
                        continue
                    }
                    let r = fields(rm, at: path.key("reasons").index(i), known: ["code", "label"], what: "a reason")
                    guard case .string(let code)? = r["code"], case .string(let label)? = r["label"] else {
                        error(path.key("reasons").index(i), "a reason needs a string \"code\" and a string \"label\"")
                        continue
                    }
                    s.reasons.append(WarnReason(code: code, label: label))
                }
            } else {
                error(path.key("reasons"), "expected an array of {\"code\": …, \"label\": …}; got \(v.kindName)")
            }
        }
        if let v = f["rateLimit"] {
            if case .object(let lm) = v {
                let l = fields(lm, at: path.key("rateLimit"), known: ["proceeds", "minutes"], what: "a rate limit")
                let proceeds = l["proceeds"].flatMap { whole($0, at: path.key("rateLimit").key("proceeds"), 1 ... 1_000, "proceeds") }
                let minutes = l["minutes"].flatMap { whole($0, at: path.key("rateLimit").key("minutes"), 1 ... 1_440, "minutes") }
                if let proceeds, let minutes {
                    s.rateLimit = WarnRateLimit(proceeds: proceeds, minutes: minutes)
                } else if l["proceeds"] == nil || l["minutes"] == nil {
                    error(path.key("rateLimit"), "a rate limit needs both \"proceeds\" and \"minutes\"")
                }
            } else {
                error(path.key("rateLimit"), "expected {\"proceeds\": N, \"minutes\": M}; got \(v.kindName)")
            }
        }
        guard errorCount == before else { return nil }
        if let problem = s.problem {
            error(path, problem)
            return nil
        }
        return s
    }

    private mutating func flag(_ value: JSONValue, at path: JSONPath) -> Bool? {
        guard case .bool(let b) = value else {
            error(path, "expected true or false; got \(value.kindName)")
            return nil
        }
        return b
    }

    private mutating func whole(_ value: JSONValue, at path: JSONPath, _ range: ClosedRange<Int>, _ unit: String) -> Int? {
        guard let n = value.integer, range.contains(n) else {
            error(path, "expected whole \(unit) from \(range.lowerBound) to \(range.upperBound); got \(value.preview())")
            return nil
        }
        return n
    }
}
