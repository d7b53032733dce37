import Dispatch
import ShareBrokerCrypto

extension TransferRules {
    /// The warn settings of `exit` under `policy`, for an attempt the exit's own policy blocks by
    /// a rule that may warn; `nil` when it does not warn. Never warns before the first policy or
    /// while the user is not authorized.
    package static func warning(_ exit: WarnExit, in policy: PolicySnapshot) -> WarnSettings? {
        guard policy.isOperational else { return nil }
        return policy.warnPolicy[exit]
    }

    /// Whether a blocked decision of `exit` with `rule` is one that may warn: copy under the
    /// pasteboard policy `unauthorized` (not SecureCopy's failures), Open In to a target outside
    /// the whitelist, print under the print policy `unauthorized`, a refused drop.
    package static func mayWarn(_ exit: WarnExit, rule: DecisionRule) -> Bool {
        switch exit {
        case .copy: false
        case .openIn: rule == .notInWhitelist
        case .print: rule == .printUnauthorized
        case .dragAndDrop: rule == .dragAndDropNone || rule == .dragAndDropNotAppConnectTarget
        }
    }
}

/// What a warned copy did.
public struct WarnedCopy: Sendable, Hashable {
    /// What was written: the items in the clear (the user went on, or the copy did not warn),
    /// sealed items, or nothing.
    public var action: CopyAction
    /// How the question ended; `nil` when the copy did not warn.
    public var outcome: WarnOutcome?
    /// The policy's decision when the copy did not warn (the simulator's `why`); `nil` otherwise.
    package var decision: CopyDecision?

    /// Creates a result.
    public init(action: CopyAction, outcome: WarnOutcome?) {
        self.action = action
        self.outcome = outcome
        self.decision = nil
    }

    /// A result with the decision of a copy that did not warn.
    package init(action: CopyAction, decision: CopyDecision) {
        self.action = action
        self.outcome = nil
        self.decision = decision
    }
}

/// What a warned Open In handed over.
public struct WarnedTransfer: Sendable, Hashable {
    /// Whether the target got the document (allowed, or the user went on).
    public var delivered: Bool
    /// Where the receiving app finds the file handed over.
    public var path: String
    /// The name the receiving app sees: the document's, or a dummy's.
    public var name: String
    /// The policy's decision.
    public var decision: Decision
    /// How the question ended; `nil` when the transfer did not warn.
    public var outcome: WarnOutcome?
}

extension ShareBroker {
    // MARK: The handler

    /// Sets who asks the user when an exit warns (`nil`: nobody, so every warned attempt is
    /// blocked with outcome ``WarnOutcome/noHandler``). The handler runs on a task of its own.
    public func setWarnHandler(_ handler: (any WarnHandler)?) {
        guard let handler else { return setWarnAsker(nil) }
        setWarnAsker { ticket in
            Task {
                let answer = await handler.answer(ticket.question)
                ticket.answer(answer)
            }
        }
    }

    /// Sets the function that shows a question, the completion-style form of
    /// ``setWarnHandler(_:)`` (the C interface's callback): called on the attempting thread, it
    /// must return at once and answer the ticket (``WarnTicket/answer(_:)``) later, once, from
    /// any thread. `nil`: nobody asks, so warned attempts are blocked (``WarnOutcome/noHandler``).
    public func setWarnAsker(_ asker: (@Sendable (WarnTicket) -> Void)?) {
        warnAsker.withLock { $0 = asker }
    }

    /// Runs questions without their answer timer (`true`): only ``WarnTicket/expire()`` times
    /// one out. The simulator plays the user's clock this way.
    package func setWarnTimers(manual: Bool) {
        warnTimersManual.store(manual, ordering: .relaxed)
    }

    // MARK: The question

    /// Asks about `exit` toward `target` under `settings` (read from the snapshot of
    /// `generation`), and calls `completion` once with how it ended: remembered or rate-limited
    /// at once, no handler at once, else the handler's answer or the timeout. A proceed is
    /// checked again under the policy in force when it comes, and counted.
    func ask(_ exit: WarnExit, target: String?, settings: WarnSettings,
             completion: @escaping @Sendable (WarnResolution) -> Void) {
        let now = monotonicNanoseconds()
        let early = warnLedger.withLock { ledger -> WarnResolution? in
            if let remembered = ledger.remembered(exit, target: target, at: now) {
                return WarnResolution(outcome: .remembered, reasonCode: remembered)
            }
            if ledger.isRateLimited(exit, limit: settings.rateLimit, at: now) {
                return WarnResolution(outcome: .rateLimited)
            }
            return nil
        }
        if let early {
            if early.outcome == .rateLimited {
                logger.notice("warn: too many proceeds in the policy's window; blocked without a question",
                              metadata: ["exit": .string(exit.rawValue)])
            }
            return completion(early)
        }
        guard let asker = warnAsker.withLock({ $0 }) else {
            logger.notice("warn: the app has no handler for questions; the attempt is blocked",
                          metadata: ["exit": .string(exit.rawValue)])
            return completion(WarnResolution(outcome: .noHandler))
        }
        let question = WarnQuestion(exit: exit, target: target, reasonRequired: settings.reasonRequired,
                                    reasons: settings.reasons, freeTextAllowed: settings.freeTextAllowed,
                                    timeoutMilliseconds: settings.answerTimeoutMilliseconds)
        let ticket = WarnTicket(question: question, settings: settings, logger: logger) { [weak self] resolution in
            guard let self, resolution.outcome == .proceeded else { return completion(resolution) }
            completion(self.admitProceed(exit, target: target, resolution: resolution))
        }
        asker(ticket)
        // After the asker: a question answered at once (a host that decides by itself) starts no
        // timer. One answered later meanwhile finds the ticket closed and the timer is not kept.
        if !warnTimersManual.load(ordering: .relaxed), ticket.isOpen { ticket.startTimer() }
    }

    /// A user's proceed, checked under the policy in force now (still warning, user still
    /// authorized, window not used up) and counted.
    private func admitProceed(_ exit: WarnExit, target: String?, resolution: WarnResolution) -> WarnResolution {
        var resolution = resolution
        guard let settings = TransferRules.warning(exit, in: currentSnapshot) else {
            logger.notice("warn: the policy changed while the user decided and no longer lets this exit warn; blocked",
                          metadata: ["exit": .string(exit.rawValue)])
            resolution.outcome = .policyChanged
            return resolution
        }
        let now = monotonicNanoseconds()
        let limited = warnLedger.withLock { ledger -> Bool in
            if ledger.isRateLimited(exit, limit: settings.rateLimit, at: now) { return true }
            ledger.recordProceed(exit, target: target, reasonCode: resolution.reasonCode, settings: settings, at: now)
            return false
        }
        if limited {
            logger.notice("warn: too many proceeds in the policy's window; blocked", metadata: ["exit": .string(exit.rawValue)])
            resolution.outcome = .rateLimited
        }
        return resolution
    }

    /// The audit record of a warned attempt (the text escaped; never content or names) and a log line.
    func reportWarned(_ exit: WarnExit, target: String?, resolution: WarnResolution, generation: UInt64) {
        platform.reportSink.warnedAttempt(WarnedAttemptRecord(
            exit: exit, target: target, outcome: resolution.outcome,
            reasonCode: resolution.reasonCode, text: resolution.text.map(WarnText.escaped), generation: generation))
        logger.info("warned \(exit.rawValue)", metadata: [
            "target": .string(target ?? "-"), "outcome": .string(resolution.outcome.rawValue),
            "reason": .string(resolution.reasonCode ?? "-"), "generation": .stringConvertible(generation)])
    }

    // MARK: Copy

    /// Copies `item` as ``copy(_:fromWebView:)-(PasteboardItem,_)`` does, except that a copy the
    /// pasteboard policy blocks and the warn policy lets the user decide (``WarnPolicy``) is held
    /// in protected memory while the handler asks, and written in the clear if the user goes on.
    /// `completion` runs once, on the answering thread (or at once when nothing is asked).
    package func copyAsking<Items: RandomAccessCollection>(
        _ representations: Items, fromWebView webView: WebViewHandle? = nil,
        completion: @escaping @Sendable (Result<WarnedCopy, ShareBrokerError>) -> Void
    ) where Items.Element: CopyRepresentation {
        let plan: CopyPlan
        do {
            plan = try prepareAny(representations, fromWebView: webView)
        } catch {
            return completion(.failure(error))
        }
        guard let settings = plan.warning else {
            // Not warned: the ordinary copy.
            do {
                let changeCount: Int? = switch plan.items {
                case .none: nil
                case .one(let item): try platform.pasteboard.write(item)
                case .several(let items): try platform.pasteboard.write(items)
                }
                commit(plan, changeCount: changeCount)
                return completion(.success(WarnedCopy(action: plan.action, decision: plan.decision)))
            } catch {
                return completion(.failure(.pasteboardWriteFailed(reason: String(describing: error))))
            }
        }
        let generation = plan.decision.generation
        let held: HeldCopy
        do {
            held = try HeldCopy(representations)
        } catch {
            logger.error("warn: the copy could not be held in protected memory; blocked",
                         metadata: ["error": .string(String(describing: error))])
            reportWarned(.copy, target: nil, resolution: WarnResolution(outcome: .holdFailed), generation: generation)
            return completion(.success(WarnedCopy(action: .blocked, outcome: .holdFailed)))
        }
        ask(.copy, target: nil, settings: settings) { [weak self] resolution in
            defer { held.release() }
            guard let self else { return completion(.success(WarnedCopy(action: .blocked, outcome: resolution.outcome))) }
            self.reportWarned(.copy, target: nil, resolution: resolution, generation: generation)
            guard resolution.outcome.proceeds else {
                return completion(.success(WarnedCopy(action: .blocked, outcome: resolution.outcome)))
            }
            let items = held.items()
            do {
                let changeCount = items.count == 1 ? try self.platform.pasteboard.write(items[0])
                                                   : try self.platform.pasteboard.write(items)
                self.pasteboardWrites.record(changeCount)
                completion(.success(WarnedCopy(action: .writeClear, outcome: resolution.outcome)))
            } catch {
                completion(.failure(.pasteboardWriteFailed(reason: String(describing: error))))
            }
        }
    }

    /// ``prepareCopy(_:fromWebView:)-(PasteboardItem,_)`` of any representations.
    private func prepareAny<Items: RandomAccessCollection>(
        _ representations: Items, fromWebView webView: WebViewHandle?
    ) throws(ShareBrokerError) -> CopyPlan where Items.Element: CopyRepresentation {
        if representations.count == 1, let only = representations.first {
            if let item = only as? PasteboardItem { return try prepareCopy(item, fromWebView: webView) }
            if let item = only as? BorrowedRepresentation { return try prepareCopy(item, fromWebView: webView) }
        }
        if let items = representations as? [PasteboardItem] { return try prepareCopy(items, fromWebView: webView) }
        return try prepareCopy(representations.map(\.ownedItem), fromWebView: webView)
    }

    /// Copies `item`, asking the user when the copy warns (see ``WarnPolicy``): without a
    /// question, what ``copy(_:fromWebView:)-(PasteboardItem,_)`` does. While the user decides,
    /// the item is held in protected memory, and zeroed when the question ends; the calling
    /// thread is never blocked.
    public func copyAsking(_ item: PasteboardItem, fromWebView webView: WebViewHandle? = nil) async throws(ShareBrokerError) -> WarnedCopy {
        try await copyAsking([item], fromWebView: webView)
    }

    /// ``copyAsking(_:fromWebView:)-(PasteboardItem,_)`` with a completion instead of `async`:
    /// `completion` runs once, before this returns when nothing is asked (or the asker answered
    /// at once), else on the answering thread.
    public func copyAsking(_ item: PasteboardItem, fromWebView webView: WebViewHandle? = nil,
                           completion: @escaping @Sendable (Result<WarnedCopy, ShareBrokerError>) -> Void) {
        copyAsking(CollectionOfOne(item), fromWebView: webView, completion: completion)
    }

    /// Several representations of one item, as ``copyAsking(_:fromWebView:)-(PasteboardItem,_)``.
    public func copyAsking(_ representations: [PasteboardItem], fromWebView webView: WebViewHandle? = nil) async throws(ShareBrokerError) -> WarnedCopy {
        let result = await withCheckedContinuation { continuation in
            copyAsking(representations, fromWebView: webView) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// The synchronous form of ``copyAsking(_:fromWebView:)-(PasteboardItem,_)``: blocks the
    /// calling thread until the user answers or the question times out. Never call it from the
    /// thread the handler needs to show the question.
    public func copyWaitingForAnswer(_ item: PasteboardItem, fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> WarnedCopy {
        try Self.wait { done in copyAsking([item], fromWebView: webView, completion: done) }.get()
    }

    // MARK: Print, drag and drop

    /// Whether the app may print, asking the user when print warns: without a question, what
    /// ``print()`` decides. The calling thread is never blocked.
    public func printAsking() async -> WarnedDecision {
        await withCheckedContinuation { continuation in printAsking { continuation.resume(returning: $0) } }
    }

    /// ``printAsking()`` with a completion, called once.
    package func printAsking(completion: @escaping @Sendable (WarnedDecision) -> Void) {
        let snapshot = currentSnapshot
        let decision = TransferRules.print(in: snapshot)
        decideAsking(.print, target: nil, decision: decision, snapshot: snapshot, completion: completion) {
            self.print()
        }
    }

    /// The synchronous form of ``printAsking()``: blocks the calling thread until the user answers.
    public func printWaitingForAnswer() -> WarnedDecision {
        Self.wait { done in printAsking(completion: done) }
    }

    /// Whether content may be dropped onto `target`, asking the user when the drop warns:
    /// without a question, what ``dragAndDrop(to:)`` decides.
    public func dragAndDropAsking(to target: String) async -> WarnedDecision {
        await withCheckedContinuation { continuation in
            dragAndDropAsking(to: target) { continuation.resume(returning: $0) }
        }
    }

    /// ``dragAndDropAsking(to:)`` with a completion, called once.
    package func dragAndDropAsking(to target: String, completion: @escaping @Sendable (WarnedDecision) -> Void) {
        let snapshot = currentSnapshot
        let decision = TransferRules.dragAndDrop(target: target, in: snapshot)
        decideAsking(.dragAndDrop, target: target, decision: decision, snapshot: snapshot, completion: completion) {
            self.dragAndDrop(to: target)
        }
    }

    /// The synchronous form of ``dragAndDropAsking(to:)``.
    public func dragAndDropWaitingForAnswer(to target: String) -> WarnedDecision {
        Self.wait { done in dragAndDropAsking(to: target, completion: done) }
    }

    /// A decision-only exit: asks when `decision` is a block that warns, else runs `unwarned`
    /// (the ordinary call, which reports a block as before).
    private func decideAsking(_ exit: WarnExit, target: String?, decision: Decision, snapshot: PolicySnapshot,
                              completion: @escaping @Sendable (WarnedDecision) -> Void,
                              unwarned: () -> Decision) {
        guard !decision.allowed, TransferRules.mayWarn(exit, rule: decision.rule),
              let settings = TransferRules.warning(exit, in: snapshot) else {
            let decided = unwarned()
            return completion(WarnedDecision(allowed: decided.allowed, decision: decided, outcome: nil))
        }
        ask(exit, target: target, settings: settings) { [weak self] resolution in
            self?.reportWarned(exit, target: target, resolution: resolution, generation: decision.generation)
            completion(WarnedDecision(allowed: resolution.outcome.proceeds, decision: decision, outcome: resolution.outcome))
        }
    }

    // MARK: Open In

    /// Hands `bytes` to `target` as ``openIn(_:named:target:via:)`` does, except that a target
    /// outside the whitelist, when Open In warns, gets the document only if the user goes on
    /// (else a dummy, as a blocked Open In). The calling thread is never blocked; the document's
    /// name is never in the question or the audit.
    public func openInAsking(_ bytes: [UInt8], named name: String, target: String,
                             via channel: TransferChannel = .documentInteraction) async throws(ShareBrokerError) -> WarnedTransfer {
        let outbox = platform.outbox
        let result = await withCheckedContinuation { continuation in
            openInAsking(documentNamed: name, target: target, via: channel, handOff: { request throws(ShareBrokerError) in
                try outbox.handOver(name: request.name, bytes: request.delivers ? bytes : DummyFile.contents)
            }, completion: { continuation.resume(returning: $0) })
        }
        return try result.get()
    }

    /// ``openInAsking(_:named:target:via:)`` with the hand-off done by `handOff` (called once,
    /// possibly on the answering thread) and a completion called once.
    package func openInAsking(documentNamed name: String, target: String, via channel: TransferChannel,
                              handOff: @escaping @Sendable (HandOffRequest) throws(ShareBrokerError) -> String,
                              completion: @escaping @Sendable (Result<WarnedTransfer, ShareBrokerError>) -> Void) {
        do {
            try HandOverName.validate(name)
        } catch {
            return completion(.failure(error))
        }
        let snapshot = currentSnapshot
        let decision = TransferRules.openIn(target: target, via: channel, in: snapshot)
        guard !decision.allowed, TransferRules.mayWarn(.openIn, rule: decision.rule),
              let settings = TransferRules.warning(.openIn, in: snapshot) else {
            completion(Result { () throws(ShareBrokerError) -> WarnedTransfer in
                let result = try openIn(documentNamed: name, target: target, via: channel, handOff: handOff)
                return WarnedTransfer(delivered: result.delivered, path: result.path, name: result.name,
                                      decision: result.decision, outcome: nil)
            })
            return
        }
        ask(.openIn, target: target, settings: settings) { [weak self] resolution in
            self?.reportWarned(.openIn, target: target, resolution: resolution, generation: decision.generation)
            let proceeds = resolution.outcome.proceeds
            let handed = proceeds ? name : DummyFile.mangledName()
            completion(Result { () throws(ShareBrokerError) -> WarnedTransfer in
                let path = try handOff(HandOffRequest(name: handed, delivers: proceeds, target: target,
                                                      channel: channel, decision: decision))
                return WarnedTransfer(delivered: proceeds, path: path, name: handed, decision: decision,
                                      outcome: resolution.outcome)
            })
        }
    }

    // MARK: Waiting

    /// Runs `start` and blocks the calling thread until its completion runs (the synchronous forms).
    private static func wait<T: Sendable>(_ start: (@escaping @Sendable (T) -> Void) -> Void) -> T {
        let semaphore = DispatchSemaphore(value: 0)
        let box = Mutex<T?>(nil)
        start { value in
            box.withLock { $0 = value }
            semaphore.signal()
        }
        // The completion stores the value before it signals.
        while true {
            semaphore.wait()
            if let value = box.withLock({ $0 }) { return value }
        }
    }
}
