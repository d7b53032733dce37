import ShareBrokerCrypto

/// Why a copy or paste could not be carried out at all (a policy block is a normal outcome).
public enum ClipboardError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The item is larger than `EnvelopeFormat/maxPlaintextSize`; nothing was written. Copy less.
    case itemTooLarge(size: Int, limit: Int)
    /// The item type is empty or longer than `EnvelopeFormat/maxItemTypeLength` bytes.
    case invalidItemType
    /// The copy names a web view the app never declared.
    case webView(WebViewError)
    /// A copy of several representations gave none, more than ``SealedSet/maxEnvelopes``, or
    /// the same type twice; nothing was written.
    case invalidRepresentations(count: Int)
    /// The platform's pasteboard refused the write (`reason` is the adapter's error); the
    /// pasteboard keeps what it had. Try again, or check the pasteboard adapter.
    case pasteboardWriteFailed(reason: String)

    public var description: String {
        switch self {
        case .itemTooLarge(let size, let limit):
            "the item is \(size) bytes, more than the \(limit)-byte limit; nothing was written"
        case .invalidItemType:
            "the item type must be 1 to \(EnvelopeFormat.maxItemTypeLength) bytes of UTF-8; nothing was written"
        case .webView(let e): e.description
        case .invalidRepresentations(let count):
            "a copy carries 1 to \(SealedSet.maxEnvelopes) representations of distinct types (this one had \(count)); nothing was written"
        case .pasteboardWriteFailed(let reason):
            "the pasteboard refused the write (\(reason)); nothing was written"
        }
    }
}

extension TransferRules {
    /// Whether clear pasteboard items may be pasted (paste-in). Sealed items are governed by the
    /// keys instead. Pasting clear items was never gated by authorization, so this rule has no
    /// fail-closed guard: a user who is not authorized sees no managed content to paste into.
    /// - Parameters:
    ///   - managed: whether the content pasted into belongs to the managed identity.
    ///   - writtenByThisApp: whether the pasteboard holds what this app last wrote.
    @inlinable
    public static func pasteIn(managed: Bool, writtenByThisApp: Bool, in policy: PolicySnapshot) -> Decision {
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

/// What a copy did.
public struct CopyResult: Sendable, Hashable {
    /// What was written: the item in the clear, a sealed item, or nothing.
    public var action: CopyAction
    /// The decision, with its rule and generation.
    public var decision: CopyDecision
}

/// Reading the general pasteboard: clear items as they are, sealed items only with the group keys.
package enum PasteboardReader {
    /// The first item on `items` that a reader holding `keyRing` (or none) can read, in plaintext.
    /// A sealed item that does not open (no keys, a key the ring lacks, tampering) reads as
    /// nothing and the next item is tried: a desktop clipboard offers a SecureCopy item's sealed
    /// representations followed by the placeholder text, which is what an app that may not open
    /// them pastes (like any unmanaged app). Items only sealed read as nothing.
    ///
    /// With `clearItems` false (paste-in from managed apps only, for an item this app did not
    /// write) clear items are skipped: only sealed items can be read.
    public static func readable(_ items: [PasteboardItem], keyRing: KeyRing?, clearItems: Bool = true) -> PasteboardItem? {
        for item in items {
            guard item.type == PasteboardItem.sealedType else {
                if clearItems { return item }
                continue
            }
            guard let keyRing, let opened = try? keyRing.open(item.bytes) else { continue }
            return PasteboardItem(type: opened.itemType, bytes: opened.plaintext)
        }
        return nil
    }
}

extension ShareBroker {
    /// Decides a copy of the current identity's content without writing anything: what a copy of
    /// one item with that many characters does. Never allocates.
    /// - Parameter characters: for plain text, ``PasteboardItem/characterCount(limit:)`` with the
    ///   snapshot's ``PolicySnapshot/clipboardExceptionLength`` as the limit; `nil` for anything else.
    @inlinable
    public func decideCopy(characters: Int?) -> CopyDecision {
        let snapshot = currentSnapshot
        return TransferRules.copy(managed: snapshot.identity == .managed, characters: characters, in: snapshot)
    }

    /// Copies `item` to the general pasteboard, as the pasteboard policy says: in the clear,
    /// sealed (SecureCopy, while secure services are available), or not at all, in which case
    /// the pasteboard keeps exactly what it had.
    ///
    /// - Parameters:
    ///   - item: what to copy (its type and bytes).
    ///   - webView: the web view the content comes from, if any: its effective identity
    ///     decides whether the content is managed. Content of an unmanaged identity is not restricted.
    @discardableResult
    public func copy(_ item: PasteboardItem, fromWebView webView: String? = nil) throws(ClipboardError) -> CopyResult {
        // CollectionOfOne: a single-item copy allocates no array of its own on the hot path.
        try copy(representations: CollectionOfOne(item), fromWebView: webView)
    }

    /// Copies several representations of one item (e.g. plain text, HTML and PNG of the same
    /// selection) to the general pasteboard. The pasteboard policy decides once for all of them:
    /// all in the clear, all sealed (one envelope per representation, in the given order, each
    /// naming its own type), or none, in which case the pasteboard keeps exactly what it had.
    ///
    /// - Parameters:
    ///   - representations: 1 to ``SealedSet/maxEnvelopes`` items of distinct types, together at
    ///     most `EnvelopeFormat/maxPlaintextSize` bytes.
    ///   - webView: the web view the content comes from, if any, as for a single item.
    @discardableResult
    public func copy(_ representations: [PasteboardItem], fromWebView webView: String? = nil) throws(ClipboardError) -> CopyResult {
        try copy(representations: representations, fromWebView: webView)
    }

    /// The copy behind both entry points.
    private func copy<Items: RandomAccessCollection>(
        representations: Items, fromWebView webView: String?
    ) throws(ClipboardError) -> CopyResult where Items.Element == PasteboardItem {
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
        let snapshot = currentSnapshot
        var managed = snapshot.identity == .managed
        if let webView {
            do {
                managed = try webViews.resolve(webView, currentIdentity: snapshot.identity,
                                               treatAllWebViewsAsUnmanaged: snapshot.manifest.treatAllWebViewsAsUnmanaged)
                    .identity == .managed
            } catch {
                throw .webView(error)
            }
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
            logger.debug("copied in the clear", metadata: ["type": .string(first.type),
                                                           "representations": .stringConvertible(representations.count),
                                                           "bytes": .stringConvertible(total)])
        case .writeSealed:
            var sealed: [PasteboardItem] = []
            var keyID: UInt32 = 0
            do {
                let ring = try platform.secureServices.keyRing(for: appID)
                sealed.reserveCapacity(representations.count)
                for item in representations {
                    sealed.append(PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal(item.bytes, itemType: item.type)))
                }
                keyID = ring.currentKeyID
            } catch {
                // No keys after all (or sealing failed): fail closed, nothing written.
                decision = CopyDecision(action: .blocked, rule: .noKeys, notifiesApp: false,
                                        generation: decision.generation)
            }
            if decision.action == .writeSealed {
                try write(sealed)
                logger.debug("copied sealed", metadata: ["type": .string(first.type),
                                                         "representations": .stringConvertible(representations.count),
                                                         "keyID": .stringConvertible(keyID)])
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
    /// available. `nil` when there is nothing readable.
    public func paste() -> PasteboardItem? {
        let snapshot = currentSnapshot
        var ring: KeyRing?
        if snapshot.isOperational && snapshot.secureServices == .available {
            ring = try? platform.secureServices.keyRing(for: appID)
        }
        let contents = platform.pasteboard.read()
        let own = pasteboardWrites.last == contents.changeCount
        let decision = TransferRules.pasteIn(managed: snapshot.identity == .managed, writtenByThisApp: own, in: snapshot)
        let item = PasteboardReader.readable(contents.items, keyRing: ring, clearItems: decision.allowed)
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
    private func write(_ items: [PasteboardItem]) throws(ClipboardError) {
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
