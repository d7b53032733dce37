import ShareBrokerCrypto

/// The byte format a desktop clipboard carries under its private sealed target
/// (``targetName``): the sealed envelopes of every representation of one copied item, in the
/// order the app gave them. Defined in docs/FORMATS.md ("Sealed target on the desktop
/// clipboard"); the X11 and Wayland adapters both use this codec.
///
/// Layout (big-endian): magic `89 53 42 53`, version `01`, count (2 bytes, 1 ... ``maxEnvelopes``),
/// then per envelope a 4-byte length and the envelope.
package enum SealedSet {
    /// The clipboard target (MIME type) under which the set is offered.
    package static let targetName = "application/x-sharebroker-sealed"
    /// The magic: `0x89 'S' 'B' 'S'` (like the envelope's, never the start of UTF-8 text).
    package static let magic: [UInt8] = [0x89, 0x53, 0x42, 0x53]
    /// The format version.
    package static let version: UInt8 = 1
    /// The most envelopes (representations) one set carries.
    package static let maxEnvelopes = 16
    /// The largest encoded set accepted: every envelope together within one envelope's limit,
    /// plus framing, as the core never seals more than `EnvelopeFormat/maxPlaintextSize` in total.
    package static let maxSize = EnvelopeFormat.maxEnvelopeSize + maxEnvelopes * (EnvelopeFormat.fixedHeaderLength
        + EnvelopeFormat.maxItemTypeLength + EnvelopeFormat.nonceLength + EnvelopeFormat.tagLength + 4) + 7

    /// Why bytes are not a sealed set.
    package enum DecodingError: Error, Sendable, Hashable, CustomStringConvertible {
        /// Over ``SealedSet/maxSize``; not read.
        case tooLarge(size: Int)
        /// Not the magic and version this reader knows.
        case notASealedSet
        /// The count is 0 or over ``SealedSet/maxEnvelopes``, or a length runs past the end, or
        /// bytes are left over.
        case malformed

        package var description: String {
            switch self {
            case .tooLarge(let size): "the sealed target is \(size) bytes, over the \(SealedSet.maxSize)-byte limit; it was not read"
            case .notASealedSet: "the sealed target does not start with the sealed-set magic and version 1"
            case .malformed: "the sealed target's envelope count or lengths do not match its size (cut short, or padded)"
            }
        }
    }

    /// Encodes the envelopes (1 ... ``maxEnvelopes`` of them; the caller, the core's copy, never
    /// gives more).
    package static func encode(_ envelopes: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(7 + envelopes.reduce(0) { $0 + 4 + $1.count })
        out.append(contentsOf: magic)
        out.append(version)
        out.append(UInt8(truncatingIfNeeded: envelopes.count >> 8))
        out.append(UInt8(truncatingIfNeeded: envelopes.count))
        for envelope in envelopes {
            let n = UInt32(truncatingIfNeeded: envelope.count)
            out.append(contentsOf: [UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)])
            out.append(contentsOf: envelope)
        }
        return out
    }

    /// Decodes a set; the envelopes themselves are checked when opened.
    package static func decode(_ bytes: [UInt8]) throws(DecodingError) -> [[UInt8]] {
        guard bytes.count <= maxSize else { throw .tooLarge(size: bytes.count) }
        guard bytes.count >= 7, Array(bytes[0..<4]) == magic, bytes[4] == version else { throw .notASealedSet }
        let count = Int(bytes[5]) << 8 | Int(bytes[6])
        guard count >= 1, count <= maxEnvelopes else { throw .malformed }
        var offset = 7
        var out: [[UInt8]] = []
        for _ in 0..<count {
            guard bytes.count - offset >= 4 else { throw .malformed }
            let length = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard bytes.count - offset >= length else { throw .malformed }
            out.append(Array(bytes[offset..<(offset + length)]))
            offset += length
        }
        guard offset == bytes.count else { throw .malformed }
        return out
    }
}
