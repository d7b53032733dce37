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
    /// A sealed item that does not open (no keys, a key the ring lacks, tampering, sealed under a
    /// retired key after its retirement, too old) reads as nothing and the next item is tried: a
    /// desktop clipboard offers a SecureCopy item's sealed representations followed by the
    /// placeholder text, which is what an app that may not open them pastes (like any unmanaged
    /// app). Items only sealed read as nothing.
    ///
    /// With `clearItems` false (paste-in from managed apps only, for an item this app did not
    /// write) clear items are skipped: only sealed items can be read.
    package static func readable(_ items: [PasteboardItem], keyRing: KeyRing?, clearItems: Bool = true) -> PasteboardItem? {
        readable(items, keyRing: keyRing, clearItems: clearItems, now: SealClock.now(), limits: SealedItemLimits()).item?.item
    }

    /// As ``readable(_:keyRing:clearItems:)``, at wall-clock time `now` (Unix seconds) under
    /// `limits`, with the sealer and seal time of a sealed item, and the rule of the first sealed
    /// item refused as forged or replayed (`sealedItemForged`, `sealedItemTooOld`,
    /// `sealedItemFromTheFuture`), if any.
    @inline(__always)
    package static func readable(_ items: [PasteboardItem], keyRing: KeyRing?, clearItems: Bool = true, now: UInt64,
                                limits: SealedItemLimits) -> (item: PastedItem?, refusal: String?) {
        var refusal: String?
        // By index: the items are read in place, not copied out one by one.
        for index in items.indices {
            guard items[index].type == PasteboardItem.sealedType else {
                if clearItems { return (PastedItem(item: items[index], wasSealed: false), refusal) }
                continue
            }
            guard let keyRing else { continue }
            var opened: OpenedItem
            do {
                opened = try keyRing.open(items[index].bytes)
            } catch {
                switch error {
                case .sealedAfterKeyRetired, .legacyItemUnderRetiredKey: refusal = refusal ?? "sealedItemForged"
                default: break
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
            return (PastedItem(item: PasteboardItem(type: type, bytes: (consume opened).plaintext), wasSealed: true,
                               sealer: sealer, sealedAt: sealedAt), refusal)
        }
        return (nil, refusal)
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

    /// The copy behind both entry points.
    private func copy<Items: RandomAccessCollection>(
        representations: Items, fromWebView webView: WebViewHandle?
    ) throws(ShareBrokerError) -> CopyResult where Items.Element == PasteboardItem {
        guard let first = representations.first, representations.count <= SealedSet.maxEnvelopes,
              !Self.hasDuplicateTypes(representations) else {
            throw .invalidRepresentations(count: representations.count)
        }
        let total = representations.reduce(0) { $0 + $1.bytes.count }
        guard total <= EnvelopeFormat.maxPlaintextSize else {
            throw .itemTooLarge(size: total, limit: EnvelopeFormat.maxPlaintextSize)
        }
        for item in representations {
            guard !item.type.isEmpty, item.type.utf8.count <= EnvelopeFormat.maxItemTypeLength,
                  item.type != PasteboardItem.sealedType else { throw .invalidItemType }
        }
        let (snapshot, keyRing) = snapshotAndKeyRing()
        var managed = snapshot.identity == .managed
        if let webView {
            managed = try webViews.resolve(webView, currentIdentity: snapshot.identity,
                                           treatAllWebViewsAsUnmanaged: snapshot.manifest.treatAllWebViewsAsUnmanaged)
                .identity == .managed
        }
        // The character-count exception: only one plain-text representation can qualify (types
        // are distinct), and the text is counted only when the exception could change the outcome.
        var characters: Int?
        let exception = snapshot.clipboardExceptionLength
        if managed, exception > 0, snapshot.pasteboardPolicy != .authorized, representations.count == 1 {
            characters = first.characterCount(limit: exception)
        }
        var decision = TransferRules.copy(managed: managed, characters: characters, in: snapshot)
        switch decision.action {
        case .writeClear:
            try write(Array(representations))
            // Debug records exist only from the verbose level up: checked on the snapshot in hand, so
            // a copy at any other level does not load the snapshot again for a logger.
            if snapshot.logLevel >= .verbose {
                logger.debug("copied in the clear", metadata: ["type": .string(first.type),
                                                               "representations": .stringConvertible(representations.count),
                                                               "bytes": .stringConvertible(total)])
            }
        case .writeSealed:
            var sealed: [PasteboardItem] = []
            var keyID: UInt32 = 0
            do {
                let ring = try groupKeyRing(keyRing)
                let now = wallClock()
                sealed.reserveCapacity(representations.count)
                for item in representations {
                    sealed.append(PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal(item.bytes, itemType: item.type,
                                                                                                         sealer: appID, sealedAt: now)))
                }
                keyID = ring.currentKeyID
            } catch {
                // No keys after all (or sealing failed): fail closed, nothing written.
                decision = CopyDecision(action: .blocked, rule: .noKeys, notifiesApp: false,
                                        generation: decision.generation)
            }
            if decision.action == .writeSealed {
                try write(sealed)
                if snapshot.logLevel >= .verbose {
                    logger.debug("copied sealed", metadata: ["type": .string(first.type),
                                                             "representations": .stringConvertible(representations.count),
                                                             "keyID": .stringConvertible(keyID)])
                }
            }
        case .blocked:
            break
        }
        if decision.action == .blocked {
            reportBlocked("copy", target: nil, rule: decision.rule.rawValue, generation: decision.generation)
            if decision.notifiesApp && snapshot.isReady {
                delegate?.copyAttemptedWhenUnauthorized(policy: snapshot.pasteboardPolicy)
            }
        }
        return CopyResult(action: decision.action, decision: decision)
    }

    /// Whether two representations name the same type (at most ``SealedSet/maxEnvelopes``, so
    /// pairwise, without allocating a set).
    private static func hasDuplicateTypes<Items: RandomAccessCollection>(_ items: Items) -> Bool
    where Items.Element == PasteboardItem {
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
        // Inlined, so the item is moved out of the pasted item rather than copied and released.
        pasteItem()?.item
    }

    /// As ``paste()``, with the item's origin: for a sealed item, the id of the app that sealed
    /// it and when (authenticated by the group key), so the app can show it or refuse it.
    ///
    /// A sealed item is refused, and the refusal reported as a blocked paste, when it was sealed
    /// under a retired key after the key's retirement (rule `sealedItemForged`: a deauthorized
    /// app that kept its key), or is older than ``ShareBroker/Configuration/sealedItemMaximumAge`` (rule
    /// `sealedItemTooOld`: an old item put back on the pasteboard) or dated in the future
    /// (`sealedItemFromTheFuture`).
    public func pasteWithOrigin() -> PastedItem? {
        pasteItem()
    }

    /// The paste behind ``paste()`` and ``pasteWithOrigin()``.
    @inline(__always)
    private func pasteItem() -> PastedItem? {
        let (snapshot, keyRing) = snapshotAndKeyRing()
        var ring: KeyRing?
        if snapshot.isOperational && snapshot.secureServices == .available {
            ring = try? groupKeyRing(keyRing)
        }
        let contents = platform.pasteboard.read()
        let own = pasteboardWrites.last == contents.changeCount
        let decision = TransferRules.pasteIn(managed: snapshot.identity == .managed, writtenByThisApp: own, in: snapshot)
        let (item, refusal) = PasteboardReader.readable(contents.items, keyRing: ring, clearItems: decision.allowed,
                                                        now: wallClock(), limits: sealedItemLimits)
        if let refusal {
            reportBlocked("paste", target: nil, rule: refusal, generation: decision.generation)
        }
        if !decision.allowed, item == nil, contents.items.contains(where: { $0.type != PasteboardItem.sealedType }) {
            reportBlocked("paste", target: nil, rule: decision.rule.rawValue, generation: decision.generation)
        }
        return item
    }

    /// Decides whether clear pasteboard items may be pasted into the app's content now: what
    /// ``paste()`` does with a clear item. Never allocates.
    /// - Parameter writtenByThisApp: whether the pasteboard holds what this app last wrote.
    @inlinable
    public func decidePasteIn(writtenByThisApp: Bool) -> Decision {
        let snapshot = currentSnapshot
        return TransferRules.pasteIn(managed: snapshot.identity == .managed, writtenByThisApp: writtenByThisApp, in: snapshot)
    }

    /// Writes to the platform's pasteboard and records the write as this app's (for a retire's
    /// "clear if nobody wrote since"); a refused write is reported to the copy, not recorded.
    private func write(_ items: [PasteboardItem]) throws(ShareBrokerError) {
        let changeCount: Int
        do {
            changeCount = try platform.pasteboard.write(items)
        } catch {
            throw .pasteboardWriteFailed(reason: String(describing: error))
        }
        record(write: changeCount)
    }

    private func record(write changeCount: Int) {
        pasteboardWrites.record(changeCount)
    }
}
