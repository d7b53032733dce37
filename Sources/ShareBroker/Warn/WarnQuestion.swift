import Logging
import Synchronization

/// What the app shows the user when an exit warns: which exit, where to, and what the policy
/// asks for. Never carries the content or a document's name.
public struct WarnQuestion: Sendable, Hashable {
    /// The exit.
    public var exit: WarnExit
    /// The app the transfer is headed to (Open In, drag and drop), or `nil`.
    public var target: String?
    /// Whether going on needs a reason.
    public var reasonRequired: Bool
    /// The reasons to offer (codes with labels).
    public var reasons: [WarnReason]
    /// Whether the user may type text of their own (at most ``WarnSettings/maxTextLength``).
    public var freeTextAllowed: Bool
    /// How long the user has to answer, in milliseconds; then the attempt is blocked.
    public var timeoutMilliseconds: Int
}

/// The user's answer.
public enum WarnAnswer: Sendable, Hashable {
    /// Go on, with a reason code from the question's reasons (or `nil`) and text (or `nil`).
    case proceed(reasonCode: String?, text: String?)
    /// Do not go on: the attempt is blocked.
    case cancel
}

/// How a warned attempt ended: the audit record's `outcome`.
public enum WarnOutcome: String, Sendable, Hashable, CaseIterable {
    /// The user went on (with the reason the record carries): the transfer happened.
    case proceeded
    /// The user went on earlier for the same exit and target, within the policy's proceed
    /// lifetime: the transfer happened without a question.
    case remembered
    /// The user cancelled: blocked.
    case cancelled
    /// No answer in time: blocked.
    case timedOut
    /// The app has no handler for questions: blocked.
    case noHandler
    /// The answer broke the policy (a reason code not offered, no reason where one is
    /// required): blocked.
    case invalidAnswer
    /// The user went on too often in the policy's window: blocked without a question for the
    /// rest of the window.
    case rateLimited
    /// The policy changed while the question was open, and no longer lets the exit warn (or the
    /// user is no longer authorized): blocked.
    case policyChanged
    /// The copy could not be held in protected memory: blocked.
    case holdFailed

    /// Whether the transfer happened.
    public var proceeds: Bool { self == .proceeded || self == .remembered }
}

/// What the broker did with an answer given to a ``WarnTicket``.
public enum WarnAnswerStatus: Sendable, Hashable {
    /// The answer ended the question (see the outcome the asking call returns).
    case accepted
    /// The question had already been answered: this answer is ignored (and logged).
    case ignoredDuplicate
    /// The question had already timed out: this answer is ignored (and logged).
    case ignoredLate
}

/// An open question: the app answers it once, from any thread (``answer(_:)``). The first answer
/// or the timeout ends it; whatever comes after is ignored and logged.
public final class WarnTicket: Sendable {
    /// What to ask.
    public let question: WarnQuestion
    private let settings: WarnSettings
    private let logger: Logger
    private let state: Mutex<State>

    private enum State {
        case open(onEnd: @Sendable (WarnResolution) -> Void, timer: Task<Void, Never>?)
        case answered
        case timedOut
    }

    init(question: WarnQuestion, settings: WarnSettings, logger: Logger,
         onEnd: @escaping @Sendable (WarnResolution) -> Void) {
        self.question = question
        self.settings = settings
        self.logger = logger
        self.state = Mutex(.open(onEnd: onEnd, timer: nil))
    }

    /// Starts the answer timer (once, right after the ticket is made).
    func startTimer() {
        let milliseconds = question.timeoutMilliseconds
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(milliseconds))
            guard !Task.isCancelled else { return }
            self?.expire()
        }
        let keep = state.withLock { state -> Bool in
            guard case .open(let onEnd, .none) = state else { return false }
            state = .open(onEnd: onEnd, timer: timer)
            return true
        }
        if !keep { timer.cancel() }
    }

    /// Answers the question: the first answer ends it, a later one (or one after the timeout) is
    /// ignored and logged. Callable from any thread.
    @discardableResult
    public func answer(_ answer: WarnAnswer) -> WarnAnswerStatus {
        let taken = state.withLock { state -> (@Sendable (WarnResolution) -> Void, Task<Void, Never>?)? in
            guard case .open(let onEnd, let timer) = state else { return nil }
            state = .answered
            return (onEnd, timer)
        }
        guard let (onEnd, timer) = taken else {
            let late = state.withLock { if case .timedOut = $0 { true } else { false } }
            logger.notice(late ? "warn: an answer after the timeout was ignored; the attempt stays blocked"
                               : "warn: a second answer to one question was ignored",
                          metadata: ["exit": .string(question.exit.rawValue)])
            return late ? .ignoredLate : .ignoredDuplicate
        }
        timer?.cancel()
        onEnd(resolve(answer))
        return .accepted
    }

    /// Ends the question as timed out: what the answer timer does (the simulator's `answer`
    /// op with `timeout`, tests). Ignored once the question has ended.
    package func expire() {
        let taken = state.withLock { state -> (@Sendable (WarnResolution) -> Void)? in
            guard case .open(let onEnd, _) = state else { return nil }
            state = .timedOut
            return onEnd
        }
        guard let onEnd = taken else { return }
        logger.notice("warn: no answer in time; the attempt is blocked",
                      metadata: ["exit": .string(question.exit.rawValue),
                                 "timeoutMs": .stringConvertible(question.timeoutMilliseconds)])
        onEnd(WarnResolution(outcome: .timedOut))
    }

    /// Whether the question is still open.
    public var isOpen: Bool { state.withLock { if case .open = $0 { true } else { false } } }

    /// The outcome of `answer` under the settings: a proceed is checked against the reasons, and
    /// its text bounded (and dropped when free text is not allowed).
    func resolve(_ answer: WarnAnswer) -> WarnResolution {
        guard case .proceed(let code, let rawText) = answer else { return WarnResolution(outcome: .cancelled) }
        var text = rawText.flatMap { settings.freeTextAllowed ? WarnText.bounded($0) : nil }
        if text?.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) == true { text = nil }
        if rawText != nil, !settings.freeTextAllowed {
            logger.notice("warn: free text is not allowed by the policy; the text was dropped",
                          metadata: ["exit": .string(question.exit.rawValue)])
        }
        if let code, settings.reason(code) == nil {
            logger.notice("warn: the answer named a reason the policy does not offer; the attempt is blocked",
                          metadata: ["exit": .string(question.exit.rawValue), "code": .string(WarnText.escaped(WarnText.bounded(code)))])
            return WarnResolution(outcome: .invalidAnswer, reasonCode: nil, text: text)
        }
        if settings.reasonRequired {
            let satisfied = settings.reasons.isEmpty ? text != nil : code != nil
            guard satisfied else {
                logger.notice("warn: the policy requires a reason and the answer gave none; the attempt is blocked",
                              metadata: ["exit": .string(question.exit.rawValue)])
                return WarnResolution(outcome: .invalidAnswer, reasonCode: nil, text: text)
            }
        }
        return WarnResolution(outcome: .proceeded, reasonCode: code, text: text)
    }
}

/// How a question ended, before the broker acts on it.
struct WarnResolution: Sendable, Hashable {
    var outcome: WarnOutcome
    var reasonCode: String?
    var text: String?
}

/// The user's free text: bounded, and escaped for the audit.
package enum WarnText {
    /// `text` cut to ``WarnSettings/maxTextLength`` Unicode scalars.
    package static func bounded(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > WarnSettings.maxTextLength else { return text }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars.prefix(WarnSettings.maxTextLength))
        return String(out)
    }

    /// Text from another process that claims to be escaped (an audit record's): bounded to what
    /// an escaped ``WarnSettings/maxTextLength``-scalar text can be, and with any control, format,
    /// separator character or double quote still in it escaped (a backslash is kept: it starts
    /// the escapes).
    package static func sanitizedEscaped(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars.prefix(WarnSettings.maxTextLength * 10) {
            let category = scalar.properties.generalCategory
            if category == .control || category == .format || category == .lineSeparator
                || category == .paragraphSeparator || scalar == "\"" {
                out.append(contentsOf: ("\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}").unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// `text` with every control and format character, backslash and double quote written as
    /// `\u{XXXX}`: one line that no log or terminal interprets.
    package static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            let category = scalar.properties.generalCategory
            if category == .control || category == .format || category == .lineSeparator
                || category == .paragraphSeparator || scalar == "\\" || scalar == "\"" {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

/// Asks the user, for apps written in Swift: set with ``ShareBroker/setWarnHandler(_:)``.
public protocol WarnHandler: AnyObject, Sendable {
    /// Shows `question` and returns the user's answer. Called on a task of the broker's, never on
    /// the thread that attempted the transfer. An answer after the question's timeout is
    /// ignored (the attempt was blocked).
    func answer(_ question: WarnQuestion) async -> WarnAnswer
}

/// A warned transfer other than a copy or an Open In: whether it may go ahead.
public struct WarnedDecision: Sendable, Hashable {
    /// Whether the transfer may happen now.
    public var allowed: Bool
    /// The policy's decision (blocked, with its rule, when a question was asked).
    public var decision: Decision
    /// How the question ended; `nil` when the exit did not warn (the decision alone decided).
    public var outcome: WarnOutcome?

    /// Creates a result.
    public init(allowed: Bool, decision: Decision, outcome: WarnOutcome?) {
        self.allowed = allowed
        self.decision = decision
        self.outcome = outcome
    }
}

/// The audit record of one warned attempt: the exit, the target, the outcome, the reason code and
/// the user's text (bounded and escaped). Never content or a document name.
package struct WarnedAttemptRecord: Sendable, Hashable {
    package var exit: WarnExit
    package var target: String?
    package var outcome: WarnOutcome
    package var reasonCode: String?
    /// Escaped (``WarnText/escaped(_:)``) and bounded.
    package var text: String?
    package var generation: UInt64

    package init(exit: WarnExit, target: String?, outcome: WarnOutcome, reasonCode: String?, text: String?,
                 generation: UInt64) {
        self.exit = exit
        self.target = target
        self.outcome = outcome
        self.reasonCode = reasonCode
        self.text = text
        self.generation = generation
    }
}
