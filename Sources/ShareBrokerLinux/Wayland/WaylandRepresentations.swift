import ShareBroker

/// What the Wayland adapter offers, as MIME types and bytes: ``DesktopOffer``'s offer (one rule
/// for both desktops: clear representations under their types, or the ``SealedSet`` under
/// ``SealedSet/targetName`` and the placeholder under every text type, never the plaintext; and
/// the clipboard-manager secret hint). Wayland names targets by MIME type; the X11 names
/// (`UTF8_STRING`, `STRING`, `TEXT`) are offered as well, as `wl-copy` does, for clients reading
/// through Xwayland. What a paste reads and makes of it is ``DesktopOffer/typesToRead(from:)``
/// and ``DesktopOffer/items(from:)``.
enum WaylandRepresentations {
    /// One offered MIME type and the bytes served for it.
    struct Offer: Sendable, Equatable {
        var mimeType: String
        var bytes: [UInt8]
    }

    /// What a copy of `items` offers (all clear, or all sealed: the broker never mixes them).
    /// - Throws: ``WaylandPasteboardError/unsupportedItems(_:)`` for a sealed item mixed with
    ///   clear ones, more than ``SealedSet/maxEnvelopes`` sealed ones, or no type to offer.
    static func offers(for items: [PasteboardItem], placeholder: String) throws(WaylandPasteboardError) -> [Offer] {
        do {
            return try DesktopOffer.offer(for: items, placeholder: placeholder).targets.map { Offer(mimeType: $0.name, bytes: $0.bytes) }
        } catch {
            throw .unsupportedItems(error.reason)
        }
    }
}
