import ShareBroker

/// How pasteboard items map to the MIME types a Wayland selection offers, and back.
///
/// Pure functions: what a copy offers is decided here, so it is tested without a compositor.
enum WaylandRepresentations {
    /// The private MIME type of a sealed (SecureCopy) envelope.
    static let sealedMimeType = "application/x-sharebroker-sealed"
    /// The plain-text MIME types, in the order a paste prefers them. Everything a text reader on
    /// Wayland or (through Xwayland) X11 asks for.
    static let textMimeTypes = ["text/plain;charset=utf-8", "text/plain", "UTF8_STRING", "STRING", "TEXT"]

    /// Known item types and their MIME type (other types that look like MIME types pass as is).
    static let knownTypes: [(itemType: String, mimeType: String)] = [
        ("public.html", "text/html"),
        ("public.png", "image/png"),
        ("public.jpeg", "image/jpeg"),
        ("public.rtf", "text/rtf"),
    ]

    /// One offered MIME type and the bytes served for it.
    struct Offer: Sendable, Equatable {
        var mimeType: String
        var bytes: [UInt8]
    }

    /// What a copy of `items` offers. With a sealed item among them: the envelope under
    /// ``sealedMimeType`` and `placeholder` under every text type, and nothing else (no clear
    /// item is ever offered beside a sealed one). Otherwise every item under its MIME types,
    /// the first item winning a MIME type two items map to.
    static func offers(for items: [PasteboardItem], placeholder: [UInt8]) -> [Offer] {
        if let sealed = items.first(where: { $0.type == PasteboardItem.sealedType }) {
            return [Offer(mimeType: sealedMimeType, bytes: sealed.bytes)]
                + textMimeTypes.map { Offer(mimeType: $0, bytes: placeholder) }
        }
        var out: [Offer] = []
        var seen: Set<String> = []
        for item in items {
            for mime in mimeTypes(forItemType: item.type) where seen.insert(mime).inserted {
                out.append(Offer(mimeType: mime, bytes: item.bytes))
            }
        }
        return out
    }

    /// The MIME types an item of `itemType` is offered under (empty for a type that is neither
    /// known nor a MIME type: it is not offered).
    static func mimeTypes(forItemType itemType: String) -> [String] {
        if itemType == PasteboardItem.textType || textMimeTypes.contains(itemType) { return textMimeTypes }
        if let known = knownTypes.first(where: { $0.itemType == itemType }) { return [known.mimeType] }
        if isMimeType(itemType), itemType != sealedMimeType { return [itemType] }
        return []
    }

    /// The item type of bytes read under `mimeType`.
    static func itemType(forMimeType mimeType: String) -> String {
        if mimeType == sealedMimeType { return PasteboardItem.sealedType }
        if textMimeTypes.contains(mimeType) || mimeType.hasPrefix("text/plain") { return PasteboardItem.textType }
        if let known = knownTypes.first(where: { $0.mimeType == mimeType }) { return known.itemType }
        return mimeType
    }

    /// The MIME types a paste reads from an offer of `offered`, in the order of the items it
    /// returns: the sealed envelope first when there is one, then the best text type; when there
    /// is neither, the first known type, else the first MIME type offered.
    static func typesToRead(from offered: [String]) -> [String] {
        var out: [String] = []
        if offered.contains(sealedMimeType) { out.append(sealedMimeType) }
        let text = textMimeTypes.first(where: offered.contains)
            ?? offered.first(where: { $0.hasPrefix("text/plain") })
        if let text { out.append(text) }
        if !out.isEmpty { return out }
        if let known = knownTypes.first(where: { offered.contains($0.mimeType) }) { return [known.mimeType] }
        if let any = offered.first(where: isMimeType) { return [any] }
        return []
    }

    static func isMimeType(_ string: String) -> Bool {
        let parts = string.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty
    }
}
