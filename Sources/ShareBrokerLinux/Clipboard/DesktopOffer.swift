import ShareBroker
import ShareBrokerCrypto

/// What a desktop selection offers: target names (`UTF8_STRING`, `text/html`, ...) and their
/// bytes, in the order the owner lists them. X11 names them by atom, Wayland by MIME type; the
/// names are the same strings.
package struct SelectionOffer: Sendable {
    /// One offered target. Its bytes are one array, or several served one after another (a
    /// sealed set: its framing, then each envelope as the core sealed it), so a large sealed item
    /// is never copied into a set of its own.
    package struct Target: Sendable {
        /// The target's name (an X atom's name, or a MIME type).
        package var name: String
        /// The bytes, in order; together they are what a requestor receives.
        package var parts: [[UInt8]]
        /// Whether the server zeroes the bytes when it drops the offer. `false` for the sealed
        /// set: ciphertext and framing, whose envelope arrays are shared with the app's own
        /// record of its copy (zeroing them would first copy each one).
        package var zeroedWhenDropped: Bool
        /// On X11, the type of the property the bytes are sent in, when it is not the target's
        /// own name: `TEXT` is answered with the encoding actually sent (ICCCM 2.7.1), `UTF8_STRING`.
        package var encoding: String?

        /// A target served as one array.
        package init(_ name: String, _ bytes: [UInt8], encoding: String? = nil) {
            self.name = name
            parts = [bytes]
            zeroedWhenDropped = true
            self.encoding = encoding
        }

        /// A target served as `parts`, one after another.
        package init(_ name: String, parts: [[UInt8]], zeroedWhenDropped: Bool = true) {
            self.name = name
            self.parts = parts
            self.zeroedWhenDropped = zeroedWhenDropped
            encoding = nil
        }

        /// The bytes as one array (a copy when there are several parts).
        package var bytes: [UInt8] { parts.count == 1 ? parts[0] : Array(parts.joined()) }

        /// How many bytes a requestor receives.
        package var count: Int { parts.reduce(0) { $0 + $1.count } }
    }

    /// The targets, in the order they are listed.
    package var targets: [Target] = []

    /// An offer of `targets`, in order.
    package init(targets: [Target] = []) {
        self.targets = targets
    }
}

/// The one rule for what a managed copy offers on a desktop selection and for what a paste
/// makes of an owner's offer, whichever way the offer travels: the X11 adapter
/// (``X11Pasteboard``), the Wayland adapter (``WaylandPasteboard``), and a hook inside the app
/// that offers on the app toolkit's own connection.
///
/// * **Clear items** are offered under their targets (``targets(for:)``): text under every
///   name of ``textTargets``, HTML as `text/html`, PNG as `image/png`, a MIME type as itself.
/// * **Sealed items** (SecureCopy) are offered only as the ``SealedSet`` under
///   ``SealedSet/targetName``, and the placeholder under every text target of a text
///   representation: never the plaintext, in no format.
/// * **Every offer** carries the clipboard-manager secret hint (``passwordManagerHintTargets``,
///   value `secret`) that KeePassXC, Klipper, CopyQ, cliphist and `wl-paste --watch` honour: a
///   managed app's copies stay out of clipboard histories.
/// * **A paste** reads the sealed set first, then the best text target; a sealed set that does
///   not decode is an error (``items(from:)``), never a fallback to the text targets.
///
/// Pure functions: tested without a display.
package enum DesktopOffer {
    /// Why items cannot be offered.
    package struct Unsupported: Error, Sendable, Hashable {
        /// What is wrong with them.
        package var reason: String
    }

    /// The text targets: every one is offered for text, and a paste prefers them in this order
    /// (X11's own names first; Wayland clients offer the MIME ones, which follow).
    package static let textTargets = ["UTF8_STRING", "text/plain;charset=utf-8", "text/plain", "STRING", "TEXT"]

    /// The other targets a paste reads when no text is offered, with their item types.
    package static let otherReadable: [(target: String, itemType: String)] = [
        ("text/html", "public.html"),
        ("image/png", "public.png"),
        ("image/jpeg", "public.jpeg"),
    ]

    /// The clipboard-manager secret hint: KDE's name, and the same with a `text/` prefix (GTK 4
    /// drops format names without a slash). Offered with ``passwordManagerHintValue``.
    package static let passwordManagerHintTargets = ["x-kde-passwordManagerHint", "text/x-kde-passwordManagerHint"]
    /// The hint's value: `secret`.
    package static let passwordManagerHintValue: [UInt8] = Array("secret".utf8)

    /// The size over which a sealed set is served in parts rather than copied into one array.
    package static let partsThreshold = 64 << 10

    /// What to offer for `items` (all clear, or all sealed: the broker never mixes them): clear
    /// representations under their targets, or the sealed set plus the placeholder under every
    /// text target of a text representation; then the secret hint. With `sealedInParts` a sealed
    /// set of more than ``partsThreshold`` bytes is its framing followed by the envelopes
    /// themselves (served one after another, never copied into one array); else, and for smaller
    /// sets, one array.
    ///
    /// - Throws: ``Unsupported`` for a sealed item mixed with clear ones, more than
    ///   ``SealedSet/maxEnvelopes`` sealed ones, or no target for the item types.
    package static func offer(for items: [PasteboardItem], placeholder: String,
                              sealedInParts: Bool = false) throws(Unsupported) -> SelectionOffer {
        var offer = try representations(for: items, placeholder: placeholder, sealedInParts: sealedInParts)
        for name in passwordManagerHintTargets {
            offer.targets.append(.init(name, passwordManagerHintValue))
        }
        return offer
    }

    /// ``offer(for:placeholder:sealedInParts:)`` without the hint.
    private static func representations(for items: [PasteboardItem], placeholder: String,
                                        sealedInParts: Bool) throws(Unsupported) -> SelectionOffer {
        let sealed = items.filter { $0.type == PasteboardItem.sealedType }
        var offer = SelectionOffer()
        if !sealed.isEmpty {
            guard sealed.count == items.count else {
                throw Unsupported(reason: "a sealed item cannot travel with clear ones")
            }
            guard sealed.count <= SealedSet.maxEnvelopes else {
                throw Unsupported(reason: "more than \(SealedSet.maxEnvelopes) sealed representations")
            }
            let envelopes = sealed.map(\.bytes)
            let inParts = sealedInParts && envelopes.reduce(0, { $0 + $1.count }) > partsThreshold
            offer.targets.append(inParts ? .init(SealedSet.targetName, parts: sealedSetParts(envelopes), zeroedWhenDropped: false)
                                         : .init(SealedSet.targetName, SealedSet.encode(envelopes)))
            let innerTypes = sealed.compactMap { EnvelopeFormat.itemType(ofEnvelope: $0.bytes) }
            var names: [String] = []
            for type in innerTypes where isText(type) {
                for name in targets(for: type) where !names.contains(name) { names.append(name) }
            }
            for name in names {
                offer.targets.append(textTarget(name, utf8: Array(placeholder.utf8), latin1: latin1(placeholder)))
            }
            return offer
        }
        for item in items {
            for name in targets(for: item.type) where !offer.targets.contains(where: { $0.name == name }) {
                if name == "STRING" {
                    guard let latin = latin1OrNil(item.bytes) else { continue }
                    offer.targets.append(.init(name, latin))
                } else {
                    offer.targets.append(textTarget(name, utf8: item.bytes, latin1: nil))
                }
            }
        }
        guard !offer.targets.isEmpty else {
            throw Unsupported(reason: "no desktop target for the item types \(items.map(\.type))")
        }
        return offer
    }

    /// A target of text: `STRING` in Latin-1, `TEXT` as UTF-8 sent with the type `UTF8_STRING`,
    /// any other as UTF-8.
    private static func textTarget(_ name: String, utf8: [UInt8], latin1: [UInt8]?) -> SelectionOffer.Target {
        switch name {
        case "STRING": .init(name, latin1 ?? utf8)
        case "TEXT": .init(name, utf8, encoding: "UTF8_STRING")
        default: .init(name, utf8)
        }
    }

    /// The targets of a pasteboard item type.
    package static func targets(for type: String) -> [String] {
        switch type {
        case PasteboardItem.textType, "public.plain-text", "public.text": textTargets
        case "public.html": ["text/html"]
        case "public.png": ["image/png"]
        case "public.jpeg": ["image/jpeg"]
        default: type.contains("/") ? [type] : []
        }
    }

    /// Whether a type is text (gets the placeholder under SecureCopy).
    package static func isText(_ type: String) -> Bool {
        type == PasteboardItem.textType || type == "public.plain-text" || type == "public.text"
            || type == "public.html" || type.hasPrefix("text/")
    }

    // MARK: Sealed set parts

    /// ``SealedSet/encode(_:)`` of `envelopes` as parts that, joined, are exactly its bytes: the
    /// framing before each envelope, and the envelope arrays themselves (shared, not copied).
    package static func sealedSetParts(_ envelopes: [[UInt8]]) -> [[UInt8]] {
        var parts: [[UInt8]] = []
        var framing = SealedSet.magic + [SealedSet.version, UInt8(truncatingIfNeeded: envelopes.count >> 8),
                                         UInt8(truncatingIfNeeded: envelopes.count)]
        for envelope in envelopes {
            let n = UInt32(truncatingIfNeeded: envelope.count)
            framing += [UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
            parts.append(framing)
            parts.append(envelope)
            framing = []
        }
        return parts
    }

    /// The envelopes of the sealed set in `set` (``SealedSet/decode(_:)``). A set of one envelope
    /// (every single-representation copy) is unwrapped in place: its framing is removed from
    /// `set`, which becomes the envelope, without a second payload-sized buffer. `nil` when there
    /// is no set.
    /// - Throws: ``SealedSet/DecodingError`` when the bytes are not a whole sealed set (cut
    ///   short, padded, or not one at all).
    package static func envelopes(inSet set: inout [UInt8]?) throws(SealedSet.DecodingError) -> [[UInt8]]? {
        guard var bytes = set else { return nil }
        set = nil
        let framing = SealedSet.magic.count + 3 + 4
        if bytes.count >= framing, bytes.count <= SealedSet.maxSize, bytes.starts(with: SealedSet.magic),
           bytes[4] == SealedSet.version, bytes[5] == 0, bytes[6] == 1,
           bytes[7..<framing].reduce(0, { $0 << 8 | Int($1) }) == bytes.count - framing {
            bytes.removeSubrange(0..<framing)
            return [bytes]
        }
        return try SealedSet.decode(bytes)
    }

    // MARK: Paste

    /// The targets a paste reads from an offer of `offered`: the sealed set first when there is
    /// one, then the best text target; when there is neither, one of ``otherReadable``.
    package static func typesToRead(from offered: [String]) -> [String] {
        var out: [String] = []
        if offered.contains(SealedSet.targetName) { out.append(SealedSet.targetName) }
        if let text = textTargets.first(where: offered.contains) { out.append(text) }
        if !out.isEmpty { return out }
        if let other = otherReadable.first(where: { offered.contains($0.target) }) { return [other.target] }
        return []
    }

    /// The items a paste hands the broker from what it read (`read`: targets of
    /// ``typesToRead(from:)`` and their bytes): a sealed set reads as its sealed envelopes
    /// followed by the clear text (the placeholder), so the broker opens the set when this app
    /// may and otherwise pastes what any other app would.
    /// - Throws: ``SealedSet/DecodingError`` when the sealed set does not decode (cut short,
    ///   forged framing): the paste is an error, never the placeholder in its place.
    package static func items(from read: [(target: String, bytes: [UInt8])]) throws(SealedSet.DecodingError) -> [PasteboardItem] {
        var sealed: [PasteboardItem] = []
        var clear: [PasteboardItem] = []
        for (target, bytes) in read {
            if target == SealedSet.targetName {
                var set: [UInt8]? = bytes
                sealed = (try envelopes(inSet: &set) ?? []).map { PasteboardItem(type: PasteboardItem.sealedType, bytes: $0) }
            } else if textTargets.contains(target) {
                clear.append(PasteboardItem(type: PasteboardItem.textType, bytes: target == "STRING" ? utf8(fromString: bytes) : bytes))
            } else if let other = otherReadable.first(where: { $0.target == target }) {
                clear.append(PasteboardItem(type: other.itemType, bytes: bytes))
            }
        }
        return sealed + clear.prefix(1)
    }

    // MARK: Encodings

    /// `STRING` is Latin-1 by the X convention, but Wayland clients (wl-copy among them) serve
    /// UTF-8 under it too: valid UTF-8 stays as it is, anything else is read as Latin-1.
    package static func utf8(fromString bytes: [UInt8]) -> [UInt8] {
        if String(validating: bytes, as: UTF8.self) != nil { return bytes }
        return utf8(fromLatin1: bytes)
    }

    /// Latin-1 bytes as UTF-8.
    package static func utf8(fromLatin1 bytes: [UInt8]) -> [UInt8] {
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

    /// `string` in Latin-1, `?` for what Latin-1 lacks (the placeholder under `STRING`).
    static func latin1(_ string: String) -> [UInt8] {
        string.unicodeScalars.map { $0.value < 256 ? UInt8($0.value) : UInt8(ascii: "?") }
    }

    /// UTF-8 `utf8` in Latin-1, or `nil` when it is not valid UTF-8, holds a character Latin-1
    /// lacks, or is over 1 MiB (then `STRING` is not offered).
    static func latin1OrNil(_ utf8: [UInt8]) -> [UInt8]? {
        if !utf8.contains(where: { $0 >= 0x80 }) { return utf8 }
        guard utf8.count <= 1 << 20 else { return nil }
        guard let string = String(validating: utf8, as: UTF8.self) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count)
        for scalar in string.unicodeScalars {
            guard scalar.value < 256 else { return nil }
            out.append(UInt8(scalar.value))
        }
        return out
    }
}
