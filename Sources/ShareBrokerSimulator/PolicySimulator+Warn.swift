import Foundation
import ShareBroker

/// Warnings (issue 33): the `warn` field of `policy`, the warned answers of `copy`, `openIn`,
/// `print` and `dragAndDrop`, and the `answer` op that plays the user.
extension PolicySimulator {
    /// The question the simulated user has not answered yet, and how to finish its op's result.
    final class OpenQuestion: Sendable {
        let op: String
        let ticket: Mutex<WarnTicket?> = Mutex(nil)
        /// The op's final result, set by the completion (synchronously, on the answer).
        let result: Mutex<[(String, JSON)]?> = Mutex(nil)

        init(op: String) { self.op = op }

        func finish(_ members: [(String, JSON)]) { result.withLock { $0 = members } }
    }

    /// The `warn` field of `policy`: per exit, the settings (see docs/SIMULATE.md).
    static func warnPolicy(_ f: Fields) throws(SimulatorError) -> WarnPolicy? {
        guard let warn = try f.object("warn") else { return nil }
        guard case .object(let members) = warn.object else { return nil }
        var policy = WarnPolicy()
        for (key, value) in members {
            guard let exit = WarnExit(rawValue: key) else {
                throw SimulatorError("field 'warn' has unknown exit '\(key)'; expected any of "
                                     + WarnExit.allCases.map(\.rawValue).joined(separator: ", "))
            }
            guard case .object = value else { throw SimulatorError("field 'warn.\(key)' must be an object of settings") }
            let settings = try warnSettings(try Fields(value), at: "warn.\(key)")
            if let problem = settings.problem { throw SimulatorError("field 'warn.\(key)': \(problem)") }
            policy[exit] = settings
        }
        return policy
    }

    private static func warnSettings(_ f: Fields, at path: String) throws(SimulatorError) -> WarnSettings {
        func inside<T>(_ body: () throws(SimulatorError) -> T) throws(SimulatorError) -> T {
            do { return try body() } catch { throw SimulatorError("in '\(path)': \(error.message)") }
        }
        var settings = WarnSettings()
        settings.reasonRequired = try inside { () throws(SimulatorError) in try f.bool("reasonRequired") } ?? false
        settings.freeTextAllowed = try inside { () throws(SimulatorError) in try f.bool("freeText") } ?? false
        settings.proceedLifetimeMinutes = try inside { () throws(SimulatorError) in
            try f.integer("proceedMinutes", in: 0 ... 1_440) } ?? 0
        settings.answerTimeoutMilliseconds = (try inside { () throws(SimulatorError) in
            try f.integer("answerSeconds", in: 1 ... 600) } ?? 60) * 1_000
        if let value = f.object["reasons"] {
            guard case .array(let items) = value else { throw SimulatorError("field '\(path).reasons' must be an array of {code, label}") }
            for item in items {
                guard case .object = item else { throw SimulatorError("field '\(path).reasons' must be an array of {code, label}") }
                let reason = try Fields(item)
                let code = try inside { () throws(SimulatorError) in try reason.requiredString("code") }
                let label = try inside { () throws(SimulatorError) in try reason.requiredString("label") }
                settings.reasons.append(WarnReason(code: code, label: label))
            }
        }
        if let limit = try inside({ () throws(SimulatorError) in try f.object("rateLimit") }) {
            let proceeds = try inside { () throws(SimulatorError) in try limit.integer("proceeds", in: 1 ... 1_000) }
            let minutes = try inside { () throws(SimulatorError) in try limit.integer("minutes", in: 1 ... 1_440) }
            guard let proceeds, let minutes else {
                throw SimulatorError("field '\(path).rateLimit' needs 'proceeds' and 'minutes'")
            }
            settings.rateLimit = WarnRateLimit(proceeds: proceeds, minutes: minutes)
        }
        return settings
    }

    /// The question as the result shows it (never content or a document name).
    static func questionJSON(_ question: WarnQuestion) -> JSON {
        .object([
            ("exit", .string(question.exit.rawValue)),
            ("target", question.target.map(JSON.string) ?? .null),
            ("reasonRequired", .bool(question.reasonRequired)),
            ("reasons", .array(question.reasons.map { .object([("code", .string($0.code)), ("label", .string($0.label))]) })),
            ("freeText", .bool(question.freeTextAllowed)),
            ("answerSeconds", .number(Double(question.timeoutMilliseconds / 1_000))),
        ])
    }

    /// Runs a warnable op: `start` begins it with a completion that finishes `question`. When the
    /// op finished at once (no question, or one decided without asking), its result; else the
    /// `warn` result with the question, and the question stays open for `answer`.
    func warnable(_ op: String, _ w: World, _ start: (OpenQuestion) -> Void) throws(SimulatorError) -> [(String, JSON)] {
        guard openQuestion == nil else {
            throw SimulatorError("a question is open (from '\(openQuestion?.op ?? "")'): play the user with an 'answer' op first")
        }
        let question = OpenQuestion(op: op)
        if w.warnHandler {
            w.broker.setWarnAsker { ticket in question.ticket.withLock { $0 = ticket } }
        } else {
            w.broker.setWarnAsker(nil)
        }
        w.app.begin()
        start(question)
        if let finished = question.result.withLock({ $0 }) {
            // A bad item or name: the op failed before anything changed (the line is rejected).
            if finished.first?.0 == "outcome", case .string("failed") = finished[0].1,
               case .string(let message)? = finished.last?.1 {
                throw SimulatorError(message)
            }
            return finished
        }
        guard let ticket = question.ticket.withLock({ $0 }) else {
            throw SimulatorError("the library neither answered nor asked; this is a bug in the simulator")
        }
        openQuestion = question
        return [("outcome", .string("warn")), ("question", Self.questionJSON(ticket.question)),
                ("notifications", .array(w.app.notifications.map(JSON.string))),
                ("why", .string("warn: the policy lets the user decide; play the user with an 'answer' op"))]
    }

    /// The `answer` op: `{"op":"answer","answer":"proceed","reason":"internal","text":"..."}`,
    /// `"answer":"cancel"`, or `"answer":"timeout"` (the user's time runs out).
    func answer(_ f: Fields, _ w: World) throws(SimulatorError) -> [(String, JSON)] {
        guard let question = openQuestion, let ticket = question.ticket.withLock({ $0 }) else {
            throw SimulatorError("no question is open: 'answer' follows a copy, openIn, print or dragAndDrop whose outcome was warn")
        }
        let kind = try f.choice("answer", ["proceed": "proceed", "cancel": "cancel", "timeout": "timeout"])
        guard let kind else { throw SimulatorError("missing required field 'answer' (proceed, cancel or timeout)") }
        let reason = try f.string("reason")
        let text = try f.string("text")
        if kind != "proceed", reason != nil || text != nil {
            throw SimulatorError("fields 'reason' and 'text' go only with answer proceed")
        }
        openQuestion = nil
        w.app.begin()
        switch kind {
        case "proceed": ticket.answer(.proceed(reasonCode: reason, text: text))
        case "cancel": ticket.answer(.cancel)
        default: ticket.expire()
        }
        let finished = question.result.withLock { $0 } ?? [("outcome", .string("blocked"))]
        return [("for", .string(question.op))] + finished
    }

    /// The members a warned op's result adds: the warning's outcome and its audit record.
    static func warnMembers(_ outcome: WarnOutcome?, _ w: World) -> [(String, JSON)] {
        guard let outcome else { return [] }
        var members: [(String, JSON)] = [("warning", .string(outcome.rawValue))]
        if let record = w.sink.warnedAttempts.last { members.append(("audit", warnedJSON(record))) }
        return members
    }

    /// A warned audit record as `serverLog` and results show it.
    static func warnedJSON(_ record: WarnedAttemptRecord) -> JSON {
        .object([("exit", .string(record.exit.rawValue)), ("target", record.target.map(JSON.string) ?? .null),
                 ("outcome", .string(record.outcome.rawValue)), ("reason", record.reasonCode.map(JSON.string) ?? .null),
                 ("text", record.text.map(JSON.string) ?? .null)])
    }

    /// Why a warned op ended as it did, for people.
    static func warnWhy(_ outcome: WarnOutcome) -> String {
        switch outcome {
        case .proceeded: "allowed: the user went on after the warning, with the reason recorded"
        case .remembered: "allowed: the user went on for this exit and target earlier, within the policy's proceed lifetime"
        case .cancelled: "blocked: the user cancelled after the warning"
        case .timedOut: "blocked: the user did not answer the warning in time"
        case .noHandler: "blocked: the app has no handler to ask the user (implements lacks warnHandler)"
        case .invalidAnswer: "blocked: the answer broke the policy (a reason not offered, or none where one is required)"
        case .rateLimited: "blocked: the user went on too often in the policy's window; blocked for the rest of it"
        case .policyChanged: "blocked: the policy changed while the user decided"
        case .holdFailed: "blocked: the copy could not be held in protected memory"
        }
    }
}
