/// The exits that can leak and may warn instead of only blocking (issue 33).
public enum WarnExit: String, Sendable, Hashable, CaseIterable {
    /// A copy to the general pasteboard that would be written in the clear: held until the user
    /// decides (the pasteboard policy's unauthorized level with copy warnings set).
    case copy
    /// Open In to a target outside the whitelist.
    case openIn
    /// Printing while the print policy blocks it.
    case print
    /// A drop onto an app the drag-and-drop policy refuses.
    case dragAndDrop
}

/// A reason the user may give for going on: a stable code (what the audit keeps) and a label
/// (what the app shows).
public struct WarnReason: Sendable, Hashable {
    /// At most ``maxCodeLength`` bytes of ASCII letters, digits, `-`, `_` and `.`.
    public var code: String
    /// What the app shows; at most ``maxLabelLength`` characters.
    public var label: String

    /// The longest code, in bytes.
    public static let maxCodeLength = 64
    /// The longest label, in characters.
    public static let maxLabelLength = 200

    /// Creates a reason. Check it with ``isValid``.
    public init(code: String, label: String) {
        self.code = code
        self.label = label
    }

    /// Whether ``code`` and ``label`` are within their bounds (the policy documents refuse others).
    public var isValid: Bool {
        !code.isEmpty && code.utf8.count <= Self.maxCodeLength
            && code.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E }
            && !label.isEmpty && label.count <= Self.maxLabelLength
            && !label.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}

/// How many times a user may go on in a window: more proceeds than ``proceeds`` within
/// ``minutes`` of the window's first proceed are refused, and the exit is blocked for the rest
/// of the window.
public struct WarnRateLimit: Sendable, Hashable {
    /// Proceeds allowed per window (1 to 1,000).
    public var proceeds: Int
    /// The window, in minutes (1 to 1,440).
    public var minutes: Int

    /// Creates a limit.
    public init(proceeds: Int, minutes: Int) {
        self.proceeds = proceeds
        self.minutes = minutes
    }

    /// Whether both values are in range.
    public var isValid: Bool { (1...1_000).contains(proceeds) && (1...1_440).contains(minutes) }
}

/// What one exit's warning asks and allows.
public struct WarnSettings: Sendable, Hashable {
    /// Whether going on needs a reason: a code from ``reasons``, or free text when ``reasons`` is
    /// empty and ``freeTextAllowed``.
    public var reasonRequired: Bool
    /// The reasons offered (codes with labels), at most ``maxReasons``, codes distinct.
    public var reasons: [WarnReason]
    /// Whether the user may add text of their own (at most ``maxTextLength`` characters; longer
    /// text is cut there).
    public var freeTextAllowed: Bool
    /// How long a proceed lasts for the same exit and target, in minutes: 0 (the default) asks
    /// every time; at most 1,440.
    public var proceedLifetimeMinutes: Int
    /// How long the user has to answer, in milliseconds; then the attempt is blocked. 1 ms to 10
    /// minutes (policy documents give seconds); 60 s by default.
    public var answerTimeoutMilliseconds: Int
    /// At most so many proceeds per window, or no limit.
    public var rateLimit: WarnRateLimit?

    /// The most reasons an exit offers.
    public static let maxReasons = 32
    /// The longest free text kept, in characters (Unicode scalars).
    public static let maxTextLength = 256
    /// The longest answer time: 10 minutes.
    public static let maxAnswerTimeoutMilliseconds = 600_000

    /// Creates settings (defaults: no reason needed, none offered, no text, ask every time, 60 s, no limit).
    public init(reasonRequired: Bool = false, reasons: [WarnReason] = [], freeTextAllowed: Bool = false,
                proceedLifetimeMinutes: Int = 0, answerTimeoutMilliseconds: Int = 60_000,
                rateLimit: WarnRateLimit? = nil) {
        self.reasonRequired = reasonRequired
        self.reasons = reasons
        self.freeTextAllowed = freeTextAllowed
        self.proceedLifetimeMinutes = proceedLifetimeMinutes
        self.answerTimeoutMilliseconds = answerTimeoutMilliseconds
        self.rateLimit = rateLimit
    }

    /// What is wrong with these settings, for people, or `nil` when they are valid.
    public var problem: String? {
        if reasons.count > Self.maxReasons { return "at most \(Self.maxReasons) reasons may be offered" }
        if let bad = reasons.first(where: { !$0.isValid }) {
            return "reason '\(bad.code)' is invalid: a code of 1 to \(WarnReason.maxCodeLength) letters, digits, '-', '_' or '.', and a label of 1 to \(WarnReason.maxLabelLength) characters without control characters"
        }
        if Set(reasons.map(\.code)).count != reasons.count { return "reason codes must be distinct" }
        if reasonRequired && reasons.isEmpty && !freeTextAllowed {
            return "a reason is required but none is offered and free text is not allowed: the user could never go on"
        }
        if !(0...1_440).contains(proceedLifetimeMinutes) { return "the proceed lifetime must be 0 to 1440 minutes" }
        if !(1...Self.maxAnswerTimeoutMilliseconds).contains(answerTimeoutMilliseconds) {
            return "the answer time must be 1 ms to 10 minutes"
        }
        if let rateLimit, !rateLimit.isValid { return "the rate limit must be 1 to 1000 proceeds per 1 to 1440 minutes" }
        return nil
    }

    /// The reason of `code` among ``reasons``.
    public func reason(_ code: String) -> WarnReason? { reasons.first { $0.code == code } }
}

/// Which exits warn, and how: an exit without settings blocks as its policy says. Part of the
/// immutable ``PolicySnapshot`` (``PolicySnapshot/warnPolicy``), swapped with it.
///
/// An exit warns only where its own policy would block it for a policy reason: a copy under the
/// pasteboard policy `unauthorized` (SecureCopy copies are sealed and never warn), Open In to a
/// target outside the whitelist, print under the print policy `unauthorized`, a drop the
/// drag-and-drop policy refuses. Before the first policy and while the user is not authorized
/// everything still fails closed without a question.
public struct WarnPolicy: Sendable, Hashable {
    /// Per exit.
    public var exits: [WarnExit: WarnSettings]

    /// No exit warns (the default: everything blocks as before).
    public static let none = WarnPolicy()

    /// Creates a policy.
    public init(_ exits: [WarnExit: WarnSettings] = [:]) {
        self.exits = exits
    }

    /// The settings of `exit`, or `nil` when it does not warn.
    public subscript(_ exit: WarnExit) -> WarnSettings? {
        get { exits[exit] }
        set { exits[exit] = newValue }
    }

    /// The first problem of any exit's settings, for people, or `nil`.
    public var problem: String? {
        for exit in WarnExit.allCases {
            if let problem = exits[exit]?.problem { return "warn.\(exit.rawValue): \(problem)" }
        }
        return nil
    }
}
