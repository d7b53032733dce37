/// Why a copy or paste could not be carried out at all (a policy block is a normal outcome).
public enum ClipboardError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The item is larger than ``EnvelopeFormat/maxPlaintextSize``; nothing was written. Copy less.
    case itemTooLarge(size: Int, limit: Int)
    /// The item type is empty or longer than ``EnvelopeFormat/maxItemTypeLength`` bytes.
    case invalidItemType
    /// The copy names a web view the app never declared.
    case webView(WebViewError)

    public var description: String {
        switch self {
        case .itemTooLarge(let size, let limit):
            "the item is \(size) bytes, more than the \(limit)-byte limit; nothing was written"
        case .invalidItemType:
            "the item type must be 1 to \(EnvelopeFormat.maxItemTypeLength) bytes of UTF-8; nothing was written"
        case .webView(let e): e.description
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
public enum PasteboardReader {
    /// The first item on `items` that a reader holding `keyRing` (or none) can read, in plaintext.
    /// A sealed item that does not open (no keys, a key the ring lacks, tampering) reads as nothing.
    public static func readable(_ items: [PasteboardItem], keyRing: KeyRing?) -> PasteboardItem? {
        guard let item = items.first else { return nil }
        guard item.type == PasteboardItem.sealedType else { return item }
        guard let keyRing, let opened = try? keyRing.open(item.bytes) else { return nil }
        return PasteboardItem(type: opened.itemType, bytes: opened.plaintext)
    }
}

extension ShareBroker {
    /// Copies `item` to the general pasteboard, as the pasteboard policy says: in the clear,
    /// sealed (SecureCopy, while secure services are available), or not at all, in which case
    /// the pasteboard keeps exactly what it had.
    ///
    /// - Parameter webView: the web view the content comes from, if any: its effective identity
    ///   decides whether the content is managed. Content of an unmanaged identity is not restricted.
    @discardableResult
    public func copy(_ item: PasteboardItem, fromWebView webView: String? = nil) throws(ClipboardError) -> CopyResult {
        guard item.bytes.count <= EnvelopeFormat.maxPlaintextSize else {
            throw .itemTooLarge(size: item.bytes.count, limit: EnvelopeFormat.maxPlaintextSize)
        }
        guard !item.type.isEmpty, item.type.utf8.count <= EnvelopeFormat.maxItemTypeLength,
              item.type != PasteboardItem.sealedType else { throw .invalidItemType }
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
        var decision = TransferRules.copy(managed: managed, in: snapshot)
        switch decision.action {
        case .writeClear:
            record(write: platform.pasteboard.write([item]))
            logger.debug("copied in the clear", metadata: ["type": .string(item.type), "bytes": .stringConvertible(item.bytes.count)])
        case .writeSealed:
            do {
                let ring = try platform.secureServices.keyRing(for: appID)
                let sealed = try ring.seal(item.bytes, itemType: item.type)
                record(write: platform.pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: sealed)]))
                logger.debug("copied sealed", metadata: ["type": .string(item.type), "keyID": .stringConvertible(ring.currentKeyID)])
            } catch {
                // No keys after all (or sealing failed): fail closed, nothing written.
                decision = CopyDecision(action: .blocked, rule: .noKeys, notifiesApp: false,
                                        generation: decision.generation)
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

    /// What this app reads from the general pasteboard: clear items always (pasting is not
    /// restricted by the pasteboard policy); sealed items only while the user is authorized and
    /// secure services are available. `nil` when there is nothing readable.
    public func paste() -> PasteboardItem? {
        let snapshot = currentSnapshot
        var ring: KeyRing?
        if snapshot.isOperational && snapshot.secureServices == .available {
            ring = try? platform.secureServices.keyRing(for: appID)
        }
        return PasteboardReader.readable(platform.pasteboard.read().items, keyRing: ring)
    }

    private func record(write changeCount: Int) {
        pasteboardWrites.record(changeCount)
    }
}
