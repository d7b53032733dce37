import ShareBrokerCrypto

extension TransferRules {
    /// Whether clear pasteboard items may be pasted (paste-in). Sealed items are governed by the
    /// keys instead. Pasting clear items was never gated by authorization, so this rule has no
    /// fail-closed guard: a user who is not authorized sees no managed content to paste into.
    /// - Parameters:
    ///   - managed: whether the content pasted into belongs to the managed identity.
    ///   - writtenByThisApp: whether the pasteboard holds what this app last wrote.
    @inlinable
    package static func pasteIn(managed: Bool, writtenByThisApp: Bool, in policy: PolicySnapshot) -> Decision {
        guard managed else { return Decision(allowed: true, rule: .pasteIntoUnmanagedContent, generation: policy.generation) }
        switch policy.pasteInPolicy {
        case .anyApp: return Decision(allowed: true, rule: .pasteInAnyApp, generation: policy.generation)
        case .managedApps:
            return writtenByThisApp
                ? Decision(allowed: true, rule: .pasteInOwnItem, generation: policy.generation)
                : Decision(allowed: false, rule: .pasteInFromOtherApp, generation: policy.generation)
        }
    }
}

/// What a copy did, with its decision (``ShareBroker/copy(_:fromWebView:)-(PasteboardItem,_)`` answers
/// the action).
package struct CopyResult: Sendable, Hashable {
    /// What was written: the item in the clear, a sealed item, or nothing.
    package var action: CopyAction
    /// The decision, with its rule and generation.
    package var decision: CopyDecision
}

/// How old a sealed item may be when it is pasted (item 8 of issue 13: an old sealed item put
/// back on the pasteboard is a replay). Times are the envelope's authenticated seal time and the
/// wall clock (ShareBrokerCrypto's `SealClock`), in seconds.
package struct SealedItemLimits: Sendable, Hashable {
    /// The default maximum age: 24 hours.
    package static let defaultMaximumAge: UInt64 = 86_400
    /// The default tolerance for a seal time in the future: 5 minutes.
    package static let defaultFutureTolerance: UInt64 = 300

    /// A version 2 item sealed longer ago than this is refused on paste (rule `sealedItemTooOld`).
    package var maximumAge: UInt64
    /// A version 2 item claiming a seal time more than this far in the future is refused
    /// (rule `sealedItemFromTheFuture`): only a key holder with a wrong clock, or one trying to
    /// outlive ``maximumAge``, writes one.
    package var futureTolerance: UInt64

    /// Creates limits (defaults: 24 h, 5 min).
    package init(maximumAge: UInt64 = defaultMaximumAge, futureTolerance: UInt64 = defaultFutureTolerance) {
        self.maximumAge = maximumAge
        self.futureTolerance = futureTolerance
    }
}

/// What a paste read: the item, and for a sealed item who sealed it and when (both
/// authenticated by the group key).
public struct PastedItem: Sendable, Hashable {
    /// The item's type and plaintext bytes.
    public var item: PasteboardItem
    /// Whether the item came from a sealed (SecureCopy) envelope.
    public var wasSealed: Bool
    /// The id of the app that sealed it (empty if it named none); `nil` for a clear item or a
    /// legacy (version 1) sealed item. Apps may show it, or refuse items from apps they do not trust.
    public var sealer: String?
    /// When it was sealed, in Unix seconds; `nil` for a clear item or a legacy sealed item.
    public var sealedAt: UInt64?

    /// Creates a pasted item.
    public init(item: PasteboardItem, wasSealed: Bool, sealer: String? = nil, sealedAt: UInt64? = nil) {
        self.item = item
        self.wasSealed = wasSealed
        self.sealer = sealer
        self.sealedAt = sealedAt
    }
}

/// Reading the general pasteboard: clear items as they are, sealed items only with the group keys.
package enum PasteboardReader {
    /// The first item on `items` that a reader holding `keyRing` (or none) can read, in plaintext.
    /// A sealed item that does not open (no keys, a key the ring lacks, sealed under a retired key
    /// after its retirement, too old) reads as nothing and the next item is tried: a desktop
    /// clipboard offers a SecureCopy item's sealed representations followed by the placeholder
    /// text, which is what an app that may not open them pastes (like any unmanaged app). Items
    /// only sealed read as nothing. A sealed item that is broken for a reader with keys (cut short,
    /// altered, not an envelope) ends the read with nothing at all (rule `sealedItemBroken`):
    /// never partial plaintext, and never the placeholder in its place.
    ///
    /// With `clearItems` false (paste-in from managed apps only, for an item this app did not
    /// write) clear items are skipped: only sealed items can be read.
    package static func readable(_ items: [PasteboardItem], keyRing: KeyRing?, clearItems: Bool = true) -> PasteboardItem? {
        var origin = PasteOrigin()
        return readable(items, keyRing: keyRing, clearItems: clearItems, now: SealClock.now(), limits: SealedItemLimits(),
                        origin: &origin)
    }

    /// As ``readable(_:keyRing:clearItems:)``, at wall-clock time `now` (Unix seconds) under
    /// `limits`, with the sealer and seal time of a sealed item in `origin`, and the rule of the
    /// first sealed item refused as forged, replayed or broken (`sealedItemForged`, `sealedItemTooOld`,
    /// `sealedItemFromTheFuture`, `sealedItemBroken`), if any, in its ``PasteOrigin/refusal``.
    ///
    /// The item is the result and its origin goes to `origin`: ``ShareBroker/paste()`` returns
    /// the item as it comes (out of a `PastedItem?`, or a struct holding the item and its origin,
    /// the optimizer copied the item and destroyed the rest).
    @inline(__always)
    package static func readable(_ items: [PasteboardItem], keyRing: KeyRing?, clearItems: Bool = true, now: UInt64,
                                limits: SealedItemLimits, origin: inout PasteOrigin) -> PasteboardItem? {
        var refusal: String?
        defer { origin.refusal = refusal }
        // By index: the items are read in place, not copied out one by one.
        for index in items.indices {
            guard PasteboardItem.isSealedType(items[index].type) else {
                if clearItems { return items[index] }
                continue
            }
            guard keyRing != nil else { continue }
            var opened: OpenedItem
            do {
                // Through the optional: the caller's ring is borrowed for the call, not retained.
                guard let item = try keyRing?.open(items[index].bytes) else { continue }
                opened = item
            } catch {
                switch error {
                case .sealedAfterKeyRetired, .sealedBeforeKeyActivated, .legacyItemUnderRetiredKey:
                    refusal = refusal ?? "sealedItemForged"
                case .unknownKey, .wiped, .unsupportedVersion, .sodiumInitFailed, .outOfSecureMemory, .invalidKeyLength:
                    // Not for this reader's keys (another group, keys wiped, a newer format):
                    // what any app without the keys pastes.
                    break
                default:
                    // Cut short, altered, or not an envelope at all, under a key this reader
                    // holds: the set is broken. Nothing of it is pasted, and neither is the
                    // clear text offered with it (the placeholder is not a successful paste).
                    refusal = "sealedItemBroken"
                    return nil
                }
                continue
            }
            if let sealedAt = opened.sealedAt {
                let tooOld = now > sealedAt && now - sealedAt > limits.maximumAge
                let fromTheFuture = sealedAt > now && sealedAt - now > limits.futureTolerance
                if tooOld || fromTheFuture {
                    opened.zeroPlaintext()
                    refusal = refusal ?? (tooOld ? "sealedItemTooOld" : "sealedItemFromTheFuture")
                    continue
                }
            }
            // The plaintext moves into the result (consumed, not copied and released).
            let (type, sealer, sealedAt) = (opened.itemType, opened.sealer, opened.sealedAt)
            origin.wasSealed = true
            origin.sealer = sealer
            origin.sealedAt = sealedAt
            return PasteboardItem(type: type, bytes: (consume opened).plaintext)
        }
        return nil
    }
}

/// Where a pasted item came from (``PastedItem``'s fields besides the item), and the rule of the
/// first sealed item a paste refused as forged or replayed, if any.
package struct PasteOrigin {
    /// Whether the item came from a sealed envelope.
    package var wasSealed = false
    /// For a sealed item, the app that sealed it (``PastedItem/sealer``).
    package var sealer: String?
    /// For a sealed item, when it was sealed (``PastedItem/sealedAt``).
    package var sealedAt: UInt64?
    /// `sealedItemForged`, `sealedItemTooOld`, `sealedItemFromTheFuture` or `sealedItemBroken`, or `nil`.
    package var refusal: String?

    package init() {}
}

extension PasteboardItem {
    /// Whether `type` is ``sealedType``: what `type == sealedType` answers, without the standard
    /// library's out-of-line comparison for the types items carry. Equal bytes are equal; an ASCII
    /// string is in normal form, so its canonical equivalence to the ASCII ``sealedType`` is byte
    /// equality; anything else is left to `==`.
    @inline(__always)
    package static func isSealedType(_ type: String) -> Bool {
        let answer = type.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            let same = sealedType.utf8.withContiguousStorageIfAvailable { sealed -> Bool in
                guard sealed.count == bytes.count else { return false }
                for offset in 0..<sealed.count where sealed[offset] != bytes[offset] { return false }
                return true
            }
            if same == true { return true }
            var high: UInt8 = 0
            for byte in bytes { high |= byte }
            return high < 0x80 && same == false ? false : nil
        }
        if let answer, let answer { return answer }
        return type == sealedType
    }
}

extension ShareBroker {
    /// Decides a copy of the current identity's content without writing anything: what a copy of
    /// one item with that many characters does. Never allocates.
    /// - Parameter characters: for plain text, ``PasteboardItem/characterCount(limit:)`` with the
    ///   snapshot's ``PolicySnapshot/clipboardExceptionLength`` as the limit; `nil` for anything else.
    @inlinable
    package func decideCopy(characters: Int?) -> CopyDecision {
        let snapshot = currentSnapshot
        return TransferRules.copy(managed: snapshot.identity == .managed, characters: characters, in: snapshot)
    }

    /// Copies `item` to the general pasteboard, as the pasteboard policy says: in the clear,
    /// sealed (SecureCopy, while secure services are available), or not at all, in which case
    /// the pasteboard keeps exactly what it had.
    ///
    /// - Parameters:
    ///   - item: what to copy (its type and bytes).
    ///   - webView: the handle of the web view the content comes from, if any (see
    ///     ``webViews``): its effective identity decides whether the content is managed. Content
    ///     of an unmanaged identity is not restricted.
    /// - Returns: what was written: the item in the clear, a sealed item, or nothing.
    @discardableResult
    public func copy(_ item: PasteboardItem, fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyAction {
        try copyResult(item, fromWebView: webView).action
    }

    /// ``copy(_:fromWebView:)-(PasteboardItem,_)`` with its decision (the C interface, the
    /// simulator, the CLI and tests read the rule).
    @discardableResult
    package func copyResult(_ item: PasteboardItem, fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyResult {
        // CollectionOfOne: a single-item copy allocates no array of its own on the hot path.
        try copy(representations: CollectionOfOne(item), fromWebView: webView)
    }

    /// ``copyResult(_:fromWebView:)-(PasteboardItem,_)`` of an item whose bytes are borrowed from
    /// the caller (the C interface's `sb_copy`): sealed straight from them, copied only to be
    /// written in the clear. A concrete overload, so the copy is specialized in this module.
    @discardableResult
    package func copyResult(_ item: BorrowedRepresentation, fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyResult {
        try copy(representations: CollectionOfOne(item), fromWebView: webView)
    }

    /// Copies several representations of one item (e.g. plain text, HTML and PNG of the same
    /// selection) to the general pasteboard. The pasteboard policy decides once for all of them:
    /// all in the clear, all sealed (one envelope per representation, in the given order, each
    /// naming its own type), or none, in which case the pasteboard keeps exactly what it had.
    ///
    /// - Parameters:
    ///   - representations: 1 to 16 items of distinct types, together at
    ///     most `EnvelopeFormat/maxPlaintextSize` bytes.
    ///   - webView: the web view the content comes from, if any, as for a single item.
    /// - Returns: what was written: the items in the clear, sealed items, or nothing.
    @discardableResult
    public func copy(_ representations: [PasteboardItem], fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyAction {
        try copyResult(representations, fromWebView: webView).action
    }

    /// ``copy(_:fromWebView:)-([PasteboardItem],_)`` with its decision.
    @discardableResult
    package func copyResult(_ representations: [PasteboardItem], fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyResult {
        try copy(representations: representations, fromWebView: webView)
    }

    /// ``copyResult(_:fromWebView:)-([PasteboardItem],_)`` of representations borrowed from the
    /// caller (`sb_copy_representations`).
    @discardableResult
    package func copyResult(_ representations: [BorrowedRepresentation], fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyResult {
        try copy(representations: representations, fromWebView: webView)
    }

    /// The copy behind every entry point: prepare, write to the platform's pasteboard, commit.
    private func copy<Items: RandomAccessCollection>(
        representations: Items, fromWebView webView: WebViewHandle?
    ) throws(ShareBrokerError) -> CopyResult where Items.Element: CopyRepresentation {
        let plan = try prepare(representations: representations, fromWebView: webView)
        let changeCount: Int?
        do {
            switch plan.items {
            case .none: changeCount = nil
            case .one(let item): changeCount = try platform.pasteboard.write(item)
            case .several(let items): changeCount = try platform.pasteboard.write(items)
            }
        } catch {
            throw .pasteboardWriteFailed(reason: String(describing: error))
        }
        commit(plan, changeCount: changeCount)
        return plan.result
    }

    // MARK: Prepare and commit

    /// Decides a copy of `item` and prepares what it writes, without writing anything: the first
    /// half of ``copy(_:fromWebView:)-(PasteboardItem,_)``, for a writer other than the platform's
    /// pasteboard (an in-process hook that offers the items on the app toolkit's own connection).
    /// Write the plan's ``CopyPlan/items`` (nothing when blocked), then call
    /// ``commit(_:changeCount:origin:)`` once, also for a blocked plan. A plan that is not
    /// committed records nothing and reports nothing.
    ///
    /// - Throws: what ``copy(_:fromWebView:)-(PasteboardItem,_)`` throws for a bad item or web view.
    package func prepareCopy(_ item: PasteboardItem, fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyPlan {
        try prepare(representations: CollectionOfOne(item), fromWebView: webView)
    }

    /// ``prepareCopy(_:fromWebView:)-(PasteboardItem,_)`` of an item borrowed from the caller: its
    /// bytes are read during the call only (sealed straight from them, or copied into the plan).
    package func prepareCopy(_ item: BorrowedRepresentation, fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyPlan {
        try prepare(representations: CollectionOfOne(item), fromWebView: webView)
    }

    /// ``prepareCopy(_:fromWebView:)-(PasteboardItem,_)`` of several representations of one item,
    /// decided once for all (as ``copy(_:fromWebView:)-([PasteboardItem],_)``).
    package func prepareCopy(_ representations: [PasteboardItem], fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyPlan {
        try prepare(representations: representations, fromWebView: webView)
    }

    /// ``prepareCopy(_:fromWebView:)-([PasteboardItem],_)`` of representations borrowed from the
    /// caller for the length of the call.
    package func prepareCopy(_ representations: [BorrowedRepresentation], fromWebView webView: WebViewHandle? = nil) throws(ShareBrokerError) -> CopyPlan {
        try prepare(representations: representations, fromWebView: webView)
    }

    /// Finishes a copy whose plan was written (or not, when blocked): records `changeCount`, the
    /// change count the pasteboard gave the write, as this app's last write (a retire takes back
    /// what it wrote), and logs it; for a blocked plan, reports the attempt to the server's audit
    /// and calls the delegate's ``ShareBrokerDelegate/copyAttemptedWhenUnauthorized(policy:)``, once
    /// per attempt for ``CopyOrigin/call`` and once per burst for ``CopyOrigin/toolkit(_:)``.
    ///
    /// - Parameters:
    ///   - plan: from ``prepareCopy(_:fromWebView:)-(PasteboardItem,_)``.
    ///   - changeCount: the write's change count; `nil` when nothing was written (a blocked plan,
    ///     or a writer that keeps no count: then a retire cannot take the items back).
    ///   - origin: who made the copy.
    package func commit(_ plan: CopyPlan, changeCount: Int?, origin: CopyOrigin = .call) {
        guard plan.decision.action != .blocked else {
            reportBlockedCopy(plan.decision, notifiesApp: plan.notifiesApp, policy: plan.pasteboardPolicy, origin: origin)
            return
        }
        if let changeCount { pasteboardWrites.record(changeCount) }
        if let record = plan.logRecord {
            if plan.decision.action == .writeClear {
                logger.debug("copied in the clear", metadata: ["type": .string(record.type),
                                                               "representations": .stringConvertible(record.representations),
                                                               "bytes": .stringConvertible(record.bytes)])
            } else {
                logger.debug("copied sealed", metadata: ["type": .string(record.type),
                                                         "representations": .stringConvertible(record.representations),
                                                         "keyID": .stringConvertible(record.keyID)])
            }
        }
    }

    /// Reports a copy attempt that a hook blocked without a plan of its own (it decided with
    /// ``decideCopy(characters:)``, or could not read what the toolkit offered): the audit record
    /// and the delegate's callback, as ``commit(_:changeCount:origin:)`` does for a blocked plan,
    /// under the snapshot in force now.
    package func reportBlockedCopy(_ decision: CopyDecision, origin: CopyOrigin) {
        let snapshot = currentSnapshot
        reportBlockedCopy(decision, notifiesApp: decision.notifiesApp && snapshot.isReady,
                          policy: snapshot.pasteboardPolicy, origin: origin)
    }

    /// The audit record and the callback of a blocked copy, once per burst for a toolkit's.
    private func reportBlockedCopy(_ decision: CopyDecision, notifiesApp: Bool, policy: PasteboardPolicy,
                                   origin: CopyOrigin) {
        if case .toolkit(let selection) = origin {
            let now = monotonicNanoseconds()
            let starts = copyAttemptBursts.withLock {
                $0.startsBurst(selection, rule: decision.rule, generation: decision.generation, at: now)
            }
            guard starts else { return }
        }
        reportBlocked(.copy, target: nil, rule: decision.rule.rawValue, generation: decision.generation)
        if notifiesApp { delegate?.copyAttemptedWhenUnauthorized(policy: policy) }
    }

    /// The checks and the plan behind every prepare.
    private func prepare<Items: RandomAccessCollection>(
        representations: Items, fromWebView webView: WebViewHandle?
    ) throws(ShareBrokerError) -> CopyPlan where Items.Element: CopyRepresentation {
        guard !representations.isEmpty, representations.count <= SealedSet.maxEnvelopes,
              !Self.hasDuplicateTypes(representations) else {
            throw .invalidRepresentations(count: representations.count)
        }
        let total = representations.reduce(0) { $0 + $1.byteCount }
        guard total <= EnvelopeFormat.maxPlaintextSize else {
            throw .itemTooLarge(size: total, limit: EnvelopeFormat.maxPlaintextSize)
        }
        // By index: the items are read in place, not copied out.
        for index in representations.indices {
            let type = representations[index].type
            guard !type.isEmpty, type.utf8.count <= EnvelopeFormat.maxItemTypeLength,
                  !PasteboardItem.isSealedType(type) else { throw .invalidItemType }
        }
        let (state, keyRingGeneration) = clipboardState()
        // `state` is kept alive until the plan is made, and it holds the snapshot and the cached
        // ring as constants (an update or a retire swaps in a new record; it never changes this
        // one): both are used borrowed, not retained once more each.
        let result = withExtendedLifetime(state) {
            Unmanaged.passUnretained(state.snapshot)._withUnsafeGuaranteedRef { snapshot in
                Result { () throws(ShareBrokerError) -> CopyPlan in
                    try prepare(representations: representations, total: total, fromWebView: webView,
                                snapshot: snapshot, state: state, keyRingGeneration: keyRingGeneration)
                }
            }
        }
        return try result.get()
    }

    /// The decision of a copy whose representations were checked, and its items, under `snapshot`
    /// and with the group ring `state` caches (``clipboardState()``).
    @inline(__always)
    private func prepare<Items: RandomAccessCollection>(
        representations: Items, total: Int, fromWebView webView: WebViewHandle?,
        snapshot: PolicySnapshot, state: PolicyStore.State, keyRingGeneration: UInt64?
    ) throws(ShareBrokerError) -> CopyPlan where Items.Element: CopyRepresentation {
        var managed = snapshot.identity == .managed
        if let webView {
            managed = try webViews.resolve(webView, currentIdentity: snapshot.identity,
                                           treatAllWebViewsAsUnmanaged: snapshot.manifest.treatAllWebViewsAsUnmanaged)
                .identity == .managed
        }
        // The character-count exception: only one plain-text representation can qualify (types
        // are distinct), and the text is counted only when the exception could change the outcome.
        // The text counted is the text written: the count reads an owned copy, and a write in the
        // clear writes that copy (a borrowed buffer could change between a count and a later copy,
        // and long text would go out in the clear under the short-text rule).
        var characters: Int?
        var counted: PasteboardItem?
        let exception = snapshot.clipboardExceptionLength
        if managed, exception > 0, snapshot.pasteboardPolicy != .authorized, representations.count == 1 {
            let item = representations[representations.startIndex].ownedItem
            characters = item.characterCount(limit: exception)
            counted = item
        }
        var decision = TransferRules.copy(managed: managed, characters: characters, in: snapshot)
        // Debug records exist only from the verbose level up: checked on the snapshot in hand, so
        // a copy at any other level does not load the snapshot again for a logger.
        let logs = snapshot.logLevel >= .verbose
        var items = CopyPlan.Items.none
        var keyID: UInt32 = 0
        switch decision.action {
        case .writeClear:
            // The plan owns its items: a borrowed representation is copied here, once.
            if let counted {
                items = .one(counted)
            } else if representations.count == 1 {
                items = .one(representations[representations.startIndex].ownedItem)
            } else {
                items = .several(representations.map(\.ownedItem))
            }
        case .writeSealed:
            do {
                if let keyRingGeneration, let cached = state.unretainedKeyRing(at: keyRingGeneration) {
                    // Borrowed: `state` holds it until the plan is made (see above).
                    keyID = try cached._withUnsafeGuaranteedRef { ring in
                        try seal(representations, with: ring, into: &items)
                    }
                } else {
                    keyID = try seal(representations, with: try groupKeyRing(state, generation: keyRingGeneration),
                                     into: &items)
                }
            } catch {
                // No keys after all (or sealing failed): fail closed, nothing written.
                items = .none
                decision = CopyDecision(action: .blocked, rule: .noKeys, notifiesApp: false,
                                        generation: decision.generation)
            }
        case .blocked:
            break
        }
        let record = logs && decision.action != .blocked
            ? CopyPlan.LogRecord(type: representations[representations.startIndex].type,
                                 representations: representations.count, bytes: total, keyID: keyID)
            : nil
        var plan = CopyPlan(items: items, decision: decision, notifiesApp: decision.notifiesApp && snapshot.isReady,
                            pasteboardPolicy: snapshot.pasteboardPolicy, logRecord: record)
        if decision.rule == .pasteboardUnauthorized { plan.warning = TransferRules.warning(.copy, in: snapshot) }
        return plan
    }

    /// Seals each representation with `ring` into `items` (one item, or several in order);
    /// returns the id of the key that sealed them.
    @inline(__always)
    private func seal<Items: RandomAccessCollection>(
        _ representations: Items, with ring: KeyRing, into items: inout CopyPlan.Items
    ) throws(SealingError) -> UInt32 where Items.Element: CopyRepresentation {
        let now = wallClock()
        // Straight from each representation's bytes (a borrowed one is never copied).
        func sealedItem(_ item: Items.Element) throws(SealingError) -> PasteboardItem {
            let envelope = try item.withBytes { (bytes) throws(SealingError) -> [UInt8] in
                try ring.seal(bytes, itemType: item.type, sealer: appID, sealedAt: now)
            }
            return PasteboardItem(type: PasteboardItem.sealedType, bytes: envelope)
        }
        if representations.count == 1, let item = representations.first {
            items = .one(try sealedItem(item))
            return ring.currentKeyID
        }
        var sealed: [PasteboardItem] = []
        sealed.reserveCapacity(representations.count)
        for item in representations {
            sealed.append(try sealedItem(item))
        }
        items = .several(sealed)
        return ring.currentKeyID
    }

    /// Whether two representations name the same type (at most ``SealedSet/maxEnvelopes``, so
    /// pairwise, without allocating a set).
    private static func hasDuplicateTypes<Items: RandomAccessCollection>(_ items: Items) -> Bool
    where Items.Element: CopyRepresentation {
        var i = items.startIndex
        while i != items.endIndex {
            var j = items.index(after: i)
            while j != items.endIndex {
                if items[i].type == items[j].type { return true }
                j = items.index(after: j)
            }
            i = items.index(after: i)
        }
        return false
    }

    /// What this app reads from the general pasteboard: clear items unless the paste-in policy
    /// refuses them (``PasteInPolicy/managedApps``: into managed content, only clear items this
    /// app wrote itself); sealed items only while the user is authorized and secure services are
    /// available. `nil` when there is nothing readable. See ``pasteWithOrigin()`` for which app
    /// sealed the item and when.
    public func paste() -> PasteboardItem? {
        // The item is the paste's result as it is (the origin stays behind in a local).
        var origin = PasteOrigin()
        return pasteRead(origin: &origin)
    }

    /// As ``paste()``, with the item's origin: for a sealed item, the id of the app that sealed
    /// it and when (authenticated by the group key), so the app can show it or refuse it.
    ///
    /// A sealed item is refused, and the refusal reported as a blocked paste, when it was sealed
    /// under a retired key after the key's retirement (rule `sealedItemForged`: a deauthorized
    /// app that kept its key), or is older than ``ShareBroker/Configuration/sealedItemMaximumAge`` (rule
    /// `sealedItemTooOld`: an old item put back on the pasteboard) or dated in the future
    /// (`sealedItemFromTheFuture`). A sealed item that is cut short or altered (rule
    /// `sealedItemBroken`) pastes nothing at all, not the placeholder offered with it.
    public func pasteWithOrigin() -> PastedItem? {
        var origin = PasteOrigin()
        guard let item = pasteRead(origin: &origin) else { return nil }
        return PastedItem(item: item, wasSealed: origin.wasSealed, sealer: origin.sealer, sealedAt: origin.sealedAt)
    }

    /// The paste behind ``paste()`` and ``pasteWithOrigin()``: the item, its origin in `origin`.
    @inline(__always)
    private func pasteRead(origin: inout PasteOrigin) -> PasteboardItem? {
        let contents = platform.pasteboard.read()
        return paste(contents.items, changeCount: contents.changeCount, origin: &origin)
    }

    /// What this app may paste of `items`, which a hook already read from the clipboard's owner
    /// (an in-process hook answering the app toolkit's own read): the decision and the opening of
    /// ``pasteWithOrigin()`` without reading the platform's pasteboard. `items` are what an
    /// adapter's read gives: the sealed items of a sealed set first, then the clear text (the
    /// placeholder), or clear items. `nil` when nothing is readable; refusals are reported as
    /// ``pasteWithOrigin()`` reports them.
    ///
    /// - Parameters:
    ///   - items: the items read.
    ///   - changeCount: the change count of the pasteboard they were read from, compared with
    ///     this app's last write (``commit(_:changeCount:origin:)``) for the paste-in rule.
    package func paste(from items: [PasteboardItem], changeCount: Int) -> PastedItem? {
        var origin = PasteOrigin()
        guard let item = paste(items, changeCount: changeCount, origin: &origin) else { return nil }
        return PastedItem(item: item, wasSealed: origin.wasSealed, sealer: origin.sealer, sealedAt: origin.sealedAt)
    }

    /// The decision and the opening of every paste: the item, its origin in `origin`.
    @inline(__always)
    private func paste(_ items: [PasteboardItem], changeCount: Int, origin: inout PasteOrigin) -> PasteboardItem? {
        let (state, keyRingGeneration) = clipboardState()
        // `state` is kept alive until the paste returns, and it holds the snapshot and the cached
        // ring as constants (an update or a retire swaps in a new record; it never changes this
        // one): both are used borrowed, not retained once more each.
        return withExtendedLifetime(state) { () -> PasteboardItem? in
            Unmanaged.passUnretained(state.snapshot)._withUnsafeGuaranteedRef { (snapshot) -> PasteboardItem? in
                var cached: Unmanaged<KeyRing>?
                var fetched: KeyRing?
                if snapshot.isOperational && snapshot.secureServices == .available {
                    if let keyRingGeneration, let ring = state.unretainedKeyRing(at: keyRingGeneration) {
                        cached = ring
                    } else {
                        fetched = try? groupKeyRing(state, generation: keyRingGeneration)
                    }
                }
                let own = pasteboardWrites.last == changeCount
                let decision = TransferRules.pasteIn(managed: snapshot.identity == .managed, writtenByThisApp: own,
                                                     in: snapshot)
                let now = wallClock()
                let limits = sealedItemLimits
                let item = if let cached {
                    cached._withUnsafeGuaranteedRef { ring in
                        PasteboardReader.readable(items, keyRing: ring, clearItems: decision.allowed, now: now,
                                                  limits: limits, origin: &origin)
                    }
                } else {
                    PasteboardReader.readable(items, keyRing: fetched, clearItems: decision.allowed, now: now,
                                              limits: limits, origin: &origin)
                }
                if let refusal = origin.refusal {
                    reportBlocked(.paste, target: nil, rule: refusal, generation: decision.generation)
                }
                if !decision.allowed, item == nil, items.contains(where: { !PasteboardItem.isSealedType($0.type) }) {
                    reportBlocked(.paste, target: nil, rule: decision.rule.rawValue, generation: decision.generation)
                }
                return item
            }
        }
    }

    /// Decides whether clear pasteboard items may be pasted into the app's content now: what
    /// ``paste()`` does with a clear item. Never allocates.
    /// - Parameter writtenByThisApp: whether the pasteboard holds what this app last wrote.
    @inlinable
    public func decidePasteIn(writtenByThisApp: Bool) -> Decision {
        let snapshot = currentSnapshot
        return TransferRules.pasteIn(managed: snapshot.identity == .managed, writtenByThisApp: writtenByThisApp, in: snapshot)
    }
}
