import ShareBrokerCrypto

/// The body of a ``AgentFrameType/keys`` frame: binary, so that key bytes never pass through
/// JSON or a `String`, and the buffers holding them can be zeroed.
///
/// Layout: one byte `n` (0 to ``maxKeys``), then `n` entries of a 4-byte big-endian key id and
/// 32 key bytes; the first entry is the key that seals, the others (newest first) open only.
/// `n == 0` means "you are not entitled to keys: drop the ones you hold".
///
/// Then, optionally (agents since envelope version 2 always send it), `n` 8-byte big-endian
/// retirement times in Unix seconds, one per entry in the same order: 0 for the first (current)
/// key, and for each other key when it stopped being current. A body without them gives every
/// old key the time 0, which opens no version 2 item (fail closed).
public enum KeyRingMessage {
    /// Bytes per key.
    public static let keyLength = 32
    /// The most keys one message carries.
    public static let maxKeys = 16

    /// Validates `body` and lends its entries to `read`, with pointers into `body`.
    ///
    /// - Throws: ``FrameError/invalidBody(_:)`` when the count is over ``maxKeys``, the length does
    ///   not match the count, or two entries share an id.
    public static func withEntries<R>(in body: [UInt8],
                                      _ read: ([(id: UInt32, bytes: UnsafeRawBufferPointer)]) -> R) throws(FrameError) -> R {
        guard let count = body.first.map(Int.init) else { throw .invalidBody("a key frame needs a count byte") }
        guard count <= maxKeys else { throw .invalidBody("a key frame holds at most \(maxKeys) keys, not \(count)") }
        guard body.count == 1 + count * (4 + keyLength) || body.count == 1 + count * (4 + keyLength + 8) else {
            throw .invalidBody("a key frame of \(count) keys must be \(1 + count * (4 + keyLength)) bytes, or "
                               + "\(1 + count * (4 + keyLength + 8)) with retirement times, not \(body.count)")
        }
        var ids = Set<UInt32>()
        for index in 0..<count {
            let offset = 1 + index * (4 + keyLength)
            let id = UInt32(body[offset]) << 24 | UInt32(body[offset + 1]) << 16 | UInt32(body[offset + 2]) << 8
                | UInt32(body[offset + 3])
            guard ids.insert(id).inserted else { throw .invalidBody("two keys share the id \(id)") }
        }
        return body.withUnsafeBytes { raw in
            var entries: [(id: UInt32, bytes: UnsafeRawBufferPointer)] = []
            for index in 0..<count {
                let offset = 1 + index * (4 + keyLength)
                let id = UInt32(raw[offset]) << 24 | UInt32(raw[offset + 1]) << 16 | UInt32(raw[offset + 2]) << 8
                    | UInt32(raw[offset + 3])
                entries.append((id, UnsafeRawBufferPointer(rebasing: raw[(offset + 4)..<(offset + 4 + keyLength)])))
            }
            return read(entries)
        }
    }

    /// The retirement times of a body that ``withEntries(in:_:)`` accepted, one per key after
    /// the first (Unix seconds); zeros when the body carries none.
    public static func retirementTimes(in body: [UInt8]) -> [UInt64] {
        guard let count = body.first.map(Int.init), count > 0 else { return [] }
        let timesStart = 1 + count * (4 + keyLength)
        guard body.count == timesStart + count * 8 else { return Array(repeating: 0, count: count - 1) }
        return (1..<count).map { index in
            let offset = timesStart + index * 8
            return body[offset..<(offset + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
    }

    /// Builds a body from lent keys (at most ``maxKeys``; more are left out, oldest first) and,
    /// when `retiredAt` is given, the retirement times of the keys after the first
    /// (``KeyRing/retiredAt``; missing ones are written as 0). Without it the body has the
    /// version 1 layout, entries only (the agent's key store embeds that). The caller must zero
    /// the returned array (and the frame built from it) after sending.
    public static func body(_ keys: [(id: UInt32, bytes: UnsafeRawBufferPointer)], retiredAt: [UInt64]? = nil) -> [UInt8] {
        let kept = keys.prefix(maxKeys)
        var out = [UInt8]()
        out.reserveCapacity(1 + kept.count * (4 + keyLength + 8))
        out.append(UInt8(kept.count))
        for key in kept {
            out.append(UInt8(truncatingIfNeeded: key.id >> 24))
            out.append(UInt8(truncatingIfNeeded: key.id >> 16))
            out.append(UInt8(truncatingIfNeeded: key.id >> 8))
            out.append(UInt8(truncatingIfNeeded: key.id))
            out.append(contentsOf: key.bytes.prefix(keyLength))
        }
        guard let retiredAt else { return out }
        for index in kept.indices {
            let time: UInt64 = index == 0 ? 0 : (index - 1 < retiredAt.count ? retiredAt[index - 1] : 0)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: time >> UInt64(shift))) }
        }
        return out
    }

    /// The body that tells a client to drop its keys.
    public static let none: [UInt8] = [0]
}
