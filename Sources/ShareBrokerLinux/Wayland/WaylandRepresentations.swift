import ShareBroker

/// How pasteboard items map to the MIME types a Wayland selection offers, and back.
///
/// A copy offers exactly what the X11 adapter offers (``X11Pasteboard/offer(for:placeholder:)``,
/// one rule for both desktops): clear representations under their targets, or, for a SecureCopy
/// item, the ``SealedSet`` under ``SealedSet/targetName`` and the placeholder under every text
/// type of a text representation, never the plaintext. Wayland names targets by MIME type; the
/// X11 names (`UTF8_STRING`, `STRING`, `TEXT`) are offered as well, as `wl-copy` does, for
/// clients reading through Xwayland.
///
/// Pure functions: what a copy offers and what a paste makes of what it read are tested
/// without a compositor.
enum WaylandRepresentations {
    /// One offered MIME type and the bytes served for it.
    struct Offer: Sendable, Equatable {
        var mimeType: String
        var bytes: [UInt8]
    }

    /// The text MIME types, in the order a paste prefers them.
    static let textMimeTypes = ["text/plain;charset=utf-8", "UTF8_STRING", "text/plain", "TEXT", "STRING"]

    /// The other types a paste reads when no text is offered, with their item types.
    static let otherReadable: [(mimeType: String, itemType: String)] = [
        ("text/html", "public.html"),
        ("image/png", "public.png"),
        ("image/jpeg", "public.jpeg"),
    ]

    /// What a copy of `items` offers (all clear, or all sealed: the broker never mixes them).
    /// - Throws: ``WaylandPasteboardError/unsupportedItems(_:)`` for a sealed item mixed with
    ///   clear ones, more than ``SealedSet/maxEnvelopes`` sealed ones, or no type to offer.
    static func offers(for items: [PasteboardItem], placeholder: String) throws(WaylandPasteboardError) -> [Offer] {
        do {
            return try X11Pasteboard.offer(for: items, placeholder: placeholder).targets.map { Offer(mimeType: $0.name, bytes: $0.bytes) }
        } catch {
            if case .unsupportedItems(let why) = error { throw .unsupportedItems(why) }
            throw .unsupportedItems(error.description)
        }
    }

    /// The MIME types a paste reads from an offer of `offered`: the sealed set first when there
    /// is one, then the best text type; when there is neither, one of ``otherReadable``.
    static func typesToRead(from offered: [String]) -> [String] {
        var out: [String] = []
        if offered.contains(SealedSet.targetName) { out.append(SealedSet.targetName) }
        if let text = textMimeTypes.first(where: offered.contains) { out.append(text) }
        if !out.isEmpty { return out }
        if let other = otherReadable.first(where: { offered.contains($0.mimeType) }) { return [other.mimeType] }
        return []
    }

    /// The items a paste hands the broker from what it read (`read`: the types of
    /// ``typesToRead(from:)`` that arrived): a sealed set reads as its sealed envelopes followed
    /// by the clear text (the placeholder), so the broker opens the set when this app may and
    /// otherwise pastes what any other app would; a set that does not decode is ignored.
    static func items(from read: [(mimeType: String, bytes: [UInt8])]) -> [PasteboardItem] {
        var sealed: [PasteboardItem] = []
        var clear: [PasteboardItem] = []
        for (mimeType, bytes) in read {
            if mimeType == SealedSet.targetName {
                if let envelopes = try? SealedSet.decode(bytes) {
                    sealed = envelopes.map { PasteboardItem(type: PasteboardItem.sealedType, bytes: $0) }
                }
            } else if textMimeTypes.contains(mimeType) {
                clear.append(PasteboardItem(type: PasteboardItem.textType, bytes: mimeType == "STRING" ? utf8(fromString: bytes) : bytes))
            } else if let other = otherReadable.first(where: { $0.mimeType == mimeType }) {
                clear.append(PasteboardItem(type: other.itemType, bytes: bytes))
            }
        }
        return sealed + clear.prefix(1)
    }

    /// `STRING` is Latin-1 by the X convention, but Wayland clients (wl-copy among them) serve
    /// UTF-8 under it too: valid UTF-8 stays as it is, anything else is read as Latin-1.
    static func utf8(fromString bytes: [UInt8]) -> [UInt8] {
        if String(validating: bytes, as: UTF8.self) != nil { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            if byte < 0x80 {
                out.append(byte)
            } else {
                out.append(0xC0 | byte >> 6)
                out.append(0x80 | byte & 0x3F)
            }
        }
        return out
    }
}
