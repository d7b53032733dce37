import ShareBroker

/// Why an explanation could not be produced.
public struct PolicyExplainError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong and what to do.
    public let message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// The decision the library made for one action, and the rule that made it.
public struct PolicyExplanation: Sendable, Hashable {
    /// The action's op.
    public let op: String
    /// Whether the simulator refused the action line itself (a malformed action, say).
    public let rejected: Bool
    /// The outcome (`delivered`, `dummy`, `opened`, `blocked`, `allowed`, ...), when the op has one.
    public let outcome: String?
    /// The rule that decided, in words: the simulator result's `why`.
    public let why: String?
    /// The app that took a URL, when there is one.
    public let handler: String?
    /// The delegate callbacks the action invoked.
    public let notifications: [String]
    /// The simulator's result line, as it printed it.
    public let result: String

    /// For people: `outcome: why` on the first line (e.g. `dummy: blocked: target org.example.sheets
    /// is not in the whitelist of 3 apps; the whitelist is matched exactly`), then the callbacks.
    public var text: String {
        var lines: [String] = []
        if rejected {
            lines.append("rejected: \(why ?? "the simulator refused the action")")
        } else if let outcome {
            let by = handler.map { " (\($0))" } ?? ""
            if let why, by.isEmpty, why.hasPrefix(outcome + ":") {
                lines.append(why)  // "blocked: blocked: ..." says it once
            } else {
                lines.append(why.map { "\(outcome)\(by): \($0)" } ?? "\(outcome)\(by)")
            }
        } else {
            lines.append("result: \(result)")
        }
        if !notifications.isEmpty { lines.append("  callbacks: " + notifications.joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }
}

/// Builds the simulated world a document describes, performs one action in it through the
/// policy simulator (the real library), and reports the decision with its rule.
///
/// The simulator is reached through its JSON Lines contract (`simulate` is
/// `PolicySimulator.handle(line:number:)` serialized), so this library does not link it:
///
/// ```swift
/// let simulator = PolicySimulator(outboxDirectory: folder)
/// let explanation = try PolicyExplainer.explain(document, action: #"{"op":"print"}"#) { line, number in
///     simulator.handle(line: line, number: number)?.json.serialized()
/// }
/// ```
public enum PolicyExplainer {
    /// Every optional callback of the contract: the simulated app implements them all, so an
    /// explanation lists every callback the action invokes.
    public static let callbacks = [
        "configChanged", "openInPolicyChanged", "openInAttemptedWhenBlocked", "openURLAttemptedWhenUnauthorized",
        "dragAndDropToNonAppConnectApp", "pasteboardPolicyChanged", "copyAttemptedWhenUnauthorized",
        "printPolicyChanged", "secureServicesAvailabilityChanged", "secureFileIOPolicyChanged", "logLevelChanged",
        "willResignActive", "didBecomeActive", "openFromAttemptedWhenBlocked",
        // Not a delegate callback: the app's handler for warnings (issue 33), so a warned action
        // explains as the question it asks.
        "warnHandler",
    ]

    /// The app under test a document and an optional `--app` choose.
    public static func appUnderTest(_ document: PolicyDocument, app: String?) throws(PolicyExplainError)
        -> (id: String, policy: PolicyUpdate) {
        switch document {
        case .app(let doc):
            if let app, app != doc.app {
                throw PolicyExplainError("the policy is for \(doc.app), not \(app): drop --app or use the right policy")
            }
            return (doc.app, doc.policy)
        case .device(let registry):
            let managed = registry.apps.filter(\.isAppConnect)
            if let app {
                guard let entry = registry[app] else {
                    throw PolicyExplainError("the device has no app \(app); its AppConnect apps are "
                                             + managed.map(\.id).joined(separator: ", "))
                }
                guard let policy = entry.policy else {
                    throw PolicyExplainError("\(app) is not an AppConnect app on this device, so it has no policy to explain")
                }
                return (app, policy)
            }
            guard managed.count == 1, let only = managed.first, let policy = only.policy else {
                throw PolicyExplainError(managed.isEmpty
                    ? "the device has no AppConnect app, so there is no policy to explain"
                    : "the device has \(managed.count) AppConnect apps; choose one with --app: "
                        + managed.map(\.id).joined(separator: ", "))
            }
            return (only.id, policy)
        }
    }

    /// The simulator lines that build the world: `start` (the app under test, the other apps
    /// of the device, every optional callback implemented) and one `policy` with every field.
    ///
    /// - Parameters:
    ///   - document: an app policy, or a device (whose apps become the simulated device).
    ///   - app: the app under test in a device document (optional when it has one AppConnect app).
    ///   - device: other apps for an app policy document.
    public static func setupLines(for document: PolicyDocument, app: String? = nil, device: DeviceRegistry? = nil)
        throws(PolicyExplainError) -> [String] {
        let (id, policy) = try appUnderTest(document, app: app)
        var registry = device
        if case .device(let own) = document { registry = own }
        let others = (registry?.apps ?? []).filter { $0.id != id }.map { other in
            JSONValue.object([
                JSONMember(key: "id", value: .string(other.id)),
                JSONMember(key: "appConnect", value: .bool(other.isAppConnect)),
                JSONMember(key: "authorized", value: .bool(other.isAuthorized)),
                JSONMember(key: "handles", value: .array(other.schemes.map(JSONValue.string))),
            ])
        }
        let start = JSONValue.object([
            JSONMember(key: "op", value: .string("start")),
            JSONMember(key: "app", value: .string(id)),
            JSONMember(key: "implements", value: .array(callbacks.map(JSONValue.string))),
            JSONMember(key: "apps", value: .array(others)),
        ])
        guard case .object(let fields) = DocumentWriter.policy(policy.completed()) else { return [] }
        let policyLine = JSONValue.object([JSONMember(key: "op", value: .string("policy"))] + fields)
        return [JSONWriter.compact(start), JSONWriter.compact(policyLine)]
    }

    /// Builds the world, performs `action` (one simulator op as JSON, anything but `start`),
    /// and returns the decision.
    ///
    /// - Parameter simulate: answers one simulator line (text, 1-based line number) with the
    ///   result line, as `PolicySimulator.handle(line:number:)` does.
    public static func explain(_ document: PolicyDocument, app: String? = nil, device: DeviceRegistry? = nil,
                               action: String, simulate: (String, Int) -> String?) throws(PolicyExplainError)
        -> PolicyExplanation {
        let actionJSON: JSONValue
        do {
            actionJSON = try StrictJSONParser.parse(Array(action.utf8), limits: PolicyDocumentLimits(maxDocumentBytes: 1 << 20))
        } catch {
            throw PolicyExplainError("the action is not valid JSON: \(error)")
        }
        guard case .object = actionJSON, case .string(let op)? = actionJSON["op"] else {
            throw PolicyExplainError("the action must be one simulator op as a JSON object with an \"op\", "
                                     + "e.g. {\"op\":\"openIn\",\"document\":\"a.pdf\",\"content\":\"x\",\"target\":\"org.example.sheets\"}")
        }
        guard op != "start" else {
            throw PolicyExplainError("the world is built from the policy: give the action to explain, not a start op")
        }
        let lines = try setupLines(for: document, app: app, device: device)
        for (i, line) in lines.enumerated() {
            let answer = simulate(line, i + 1).flatMap { try? StrictJSONParser.parse(Array($0.utf8), limits: .standard) }
            guard let answer else { throw PolicyExplainError("the simulator gave no answer to its setup line \(i + 1)") }
            if case .string(let error)? = answer["error"] {
                throw PolicyExplainError("the simulator refused the world built from the policy: \(error)")
            }
        }
        guard let resultText = simulate(JSONWriter.compact(actionJSON), lines.count + 1) else {
            throw PolicyExplainError("the simulator gave no answer to the action")
        }
        let result: JSONValue
        do {
            result = try StrictJSONParser.parse(Array(resultText.utf8), limits: .standard)
        } catch {
            throw PolicyExplainError("the simulator's answer is not valid JSON: \(error)")
        }
        func string(_ key: String) -> String? {
            if case .string(let s)? = result[key] { return s }
            return nil
        }
        var notifications: [String] = []
        if case .array(let items)? = result["notifications"] {
            notifications = items.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        let error = string("error")
        return PolicyExplanation(op: op, rejected: error != nil, outcome: string("outcome"), why: error ?? string("why"),
                                 handler: string("handler"), notifications: notifications, result: resultText)
    }
}
