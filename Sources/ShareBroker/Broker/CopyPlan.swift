/// A copy decided and prepared but not written yet (``ShareBroker/prepareCopy(_:fromWebView:)-(PasteboardItem,_)``):
/// the decision, and the items the pasteboard is to receive, owned by the plan (the clear items
/// copied out of the caller's buffers, or the sealed envelopes). Whoever writes them (the broker's
/// own pasteboard in ``ShareBroker/copy(_:fromWebView:)-(PasteboardItem,_)``, or an in-process hook
/// offering them on the app toolkit's own display connection) then calls
/// ``ShareBroker/commit(_:changeCount:origin:)`` once: it records the write for a retire, or
/// reports the block and calls the app's delegate.
package struct CopyPlan: Sendable {
    /// What the pasteboard is to receive.
    package enum Items: Sendable {
        /// Nothing: the copy is blocked, the pasteboard keeps what it had.
        case none
        /// One item (the usual copy: no array of its own).
        case one(PasteboardItem)
        /// Several representations of one item, in the order the app gave them.
        case several([PasteboardItem])
    }

    /// What the pasteboard is to receive: clear items, sealed items (type
    /// ``PasteboardItem/sealedType``, one envelope per representation), or nothing.
    package let items: Items
    /// The decision, with its rule and generation.
    package let decision: CopyDecision
    /// Whether a blocked copy owes the app its ``ShareBrokerDelegate/copyAttemptedWhenUnauthorized(policy:)``
    /// (the decision says so and the snapshot it read was ready).
    let notifiesApp: Bool
    /// The pasteboard policy of the snapshot the decision read (the callback's argument).
    let pasteboardPolicy: PasteboardPolicy
    /// For the debug log of a write: the first representation's type, how many there were, and
    /// their bytes (clear) or the sealing key's id (sealed); only when the snapshot's level logs it.
    let logRecord: LogRecord?
    /// The copy warnings of the snapshot the decision read, when this copy is blocked by the
    /// pasteboard policy and the policy lets the user go on (``WarnPolicy``); `nil` otherwise.
    package var warning: WarnSettings? = nil

    /// What the verbose log says about a written copy (never the content).
    struct LogRecord: Sendable {
        var type: String
        var representations: Int
        var bytes: Int
        var keyID: UInt32
    }

    /// Clear, sealed or blocked.
    package var action: CopyAction { decision.action }

    /// The items as an array (empty when blocked). The broker's own write uses ``items``, which
    /// keeps a single item out of an array.
    package var itemArray: [PasteboardItem] {
        switch items {
        case .none: []
        case .one(let item): [item]
        case .several(let items): items
        }
    }

    /// What ``ShareBroker/copy(_:fromWebView:)-(PasteboardItem,_)`` answers for this plan.
    package var result: CopyResult { CopyResult(action: decision.action, decision: decision) }
}

/// Where a copy came from, which decides whether repeated blocked attempts are reported one by
/// one or once per burst (``ShareBroker/commit(_:changeCount:origin:)``).
package enum CopyOrigin: Sendable, Hashable {
    /// The app asked the broker (`copy`, `sb_copy`, a host command): every blocked attempt is
    /// reported and calls the delegate.
    case call
    /// The app's toolkit set a selection (Ctrl+C, Ctrl+X, the menu's Copy, a text selection) and
    /// an in-process hook saw it. Blocked attempts on one selection less than
    /// ``CopyAttemptBursts/window`` apart (a selection dragged out by the user changes it on
    /// every pointer motion) are one attempt: reported and told to the delegate once.
    case toolkit(CopySelection)
}

/// The selection a toolkit wrote.
package enum CopySelection: Sendable, Hashable {
    /// The clipboard (Ctrl+C, Ctrl+X, the menu's Copy).
    case clipboard
    /// The primary selection (selecting text; middle-click pastes it).
    case primary
}

/// The bursts of blocked toolkit copies, one per selection: which blocked attempts are new and
/// which continue a burst. Pure (times are given), so it is tested without waiting.
package struct CopyAttemptBursts: Sendable {
    /// How close (in nanoseconds of the monotonic clock) a blocked attempt must follow the
    /// previous one of its burst to belong to it: 2 s. The window slides: a drag that keeps
    /// changing the selection stays one burst however long it lasts.
    package static let window: UInt64 = 2_000_000_000

    /// The last blocked attempt of a burst.
    private struct Last: Sendable {
        var at: UInt64
        var rule: CopyRule
        var generation: UInt64
    }

    private var clipboard: Last?
    private var primary: Last?

    /// No burst yet.
    package init() {}

    /// Records a blocked attempt on `selection` at `now` (monotonic nanoseconds) and answers
    /// whether it starts a new burst (to be reported) rather than continuing the last one: it does
    /// when the last attempt on that selection is more than ``window`` ago, or was blocked by
    /// another rule or under another policy generation.
    package mutating func startsBurst(_ selection: CopySelection, rule: CopyRule, generation: UInt64,
                                      at now: UInt64) -> Bool {
        let last = selection == .clipboard ? clipboard : primary
        let continues = last.map { last in
            last.rule == rule && last.generation == generation && now >= last.at && now - last.at <= Self.window
        } ?? false
        let record = Last(at: now, rule: rule, generation: generation)
        if selection == .clipboard { clipboard = record } else { primary = record }
        return !continues
    }
}
