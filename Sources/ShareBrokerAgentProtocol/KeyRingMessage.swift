import ShareBrokerCrypto

/// The body of a ``AgentFrameType/keys`` frame: binary, so that key bytes never pass through
/// JSON or a `String`, and the buffers holding them can be zeroed.
///
/// Layout, format 2 (big-endian):
///
/// ```
/// marker 0x82 | n (1 byte, 0 ... 16) | n × (key id u32, 32 key bytes)       the group's keys
///             | n × retired at (u64, Unix seconds)                           one per group key
///             | m (u16, 0 ... 4096)  | m × (key id u32, 32 key bytes)       this app's file keys
/// ```
///
/// The first group key seals, the others (newest first) open only; each group key's retirement
/// time is 0 for the first (current) key and, for each other key, when it stopped being current
/// (``KeyRing/retiredAt``: an old key opens only version 2 envelopes sealed before then). The
/// file keys are the
/// receiving app's own generations, newest (the one that seals) first, never another app's.
/// `n == 0` (and then `m == 0`) means "you are not entitled to keys: drop the ones you hold".
///
/// The marker is over 16, so a format 1 reader (whose first byte is the key count, at most 16,
/// followed by the keys and optionally their retirement times) refuses a format 2 body rather
/// than misreading it; a format 2 reader refuses a format 1 body (first byte 1 ... 16) with
/// ``FrameError/invalidBody(_:)`` saying to update the agent, and reads the format 1 "no keys"
/// body (`[0]`) as "drop your keys", which is always safe.
public enum KeyRingMessage {
    /// Bytes per key.
    public static let keyLength = 32
    /// The most group keys one message carries.
    public static let maxKeys = 16
    /// The most file keys one message carries (``FileKeyRing/maximumGenerations``).
    public static let maxFileKeys = FileKeyRing.maximumGenerations
    /// The first byte of a format 2 body.
    public static let formatMarker: UInt8 = 0x82

    /// One key lent from a message: its id and its 32 bytes, valid only inside the closure.
    public typealias Entry = (id: UInt32, bytes: UnsafeRawBufferPointer)

    /// Validates `body` and lends its entries to `read`, with pointers into `body`: the group's
    /// keys and the app's file keys (both empty for "no keys").
    ///
    /// - Throws: ``FrameError/invalidBody(_:)`` for a format 1 body that carries keys (an agent
    ///   older than this client), an unknown format, a count over ``maxKeys`` or ``maxFileKeys``,
    ///   group keys without file keys or the reverse, a length that does not match the counts, or
    ///   two entries of one list sharing an id.
    public static func withEntries<R>(in body: [UInt8],
                                      _ read: (_ group: [Entry], _ files: [Entry]) -> R) throws(FrameError) -> R {
        guard let first = body.first else { throw .invalidBody("a key frame needs a format byte") }
        if first == 0 && body.count == 1 { return read([], []) } // format 1 "no keys": always safe to obey
        if first >= 1 && first <= UInt8(maxKeys) {
            throw .invalidBody("the agent sent a format 1 key frame (group keys only, no per-app file keys); update sharebrokerd to the version of this library")
        }
        guard first == formatMarker else {
            throw .invalidBody("unknown key frame format 0x\(String(first, radix: 16)); use matching agent and client")
        }
        guard body.count >= 2 else { throw .invalidBody("a key frame needs a group key count") }
        let groupCount = Int(body[1])
        guard groupCount <= maxKeys else { throw .invalidBody("a key frame holds at most \(maxKeys) group keys, not \(groupCount)") }
        let fileCountOffset = 2 + groupCount * (4 + keyLength + 8)
        guard body.count >= fileCountOffset + 2 else {
            throw .invalidBody("a key frame of \(groupCount) group keys is truncated (\(body.count) bytes)")
        }
        let fileCount = Int(body[fileCountOffset]) << 8 | Int(body[fileCountOffset + 1])
        guard fileCount <= maxFileKeys else { throw .invalidBody("a key frame holds at most \(maxFileKeys) file keys, not \(fileCount)") }
        guard (groupCount == 0) == (fileCount == 0) else {
            throw .invalidBody("a key frame carries group keys and file keys together, or neither (\(groupCount) and \(fileCount))")
        }
        let expected = fileCountOffset + 2 + fileCount * (4 + keyLength)
        guard body.count == expected else {
            throw .invalidBody("a key frame of \(groupCount) group and \(fileCount) file keys must be \(expected) bytes, not \(body.count)")
        }
        let groupOffsets = (0..<groupCount).map { 2 + $0 * (4 + keyLength) }
        let fileOffsets = (0..<fileCount).map { fileCountOffset + 2 + $0 * (4 + keyLength) }
        for (offsets, kind) in [(groupOffsets, "group"), (fileOffsets, "file")] {
            var ids = Set<UInt32>()
            for offset in offsets {
                guard ids.insert(loadID(body, at: offset)).inserted else {
                    throw .invalidBody("two \(kind) keys share the id \(loadID(body, at: offset))")
                }
            }
        }
        return body.withUnsafeBytes { raw in
            func entries(_ offsets: [Int]) -> [Entry] {
                offsets.map { offset in
                    (loadID(body, at: offset), UnsafeRawBufferPointer(rebasing: raw[(offset + 4)..<(offset + 4 + keyLength)]))
                }
            }
            return read(entries(groupOffsets), entries(fileOffsets))
        }
    }

    private static func loadID(_ body: [UInt8], at offset: Int) -> UInt32 {
        UInt32(body[offset]) << 24 | UInt32(body[offset + 1]) << 16 | UInt32(body[offset + 2]) << 8 | UInt32(body[offset + 3])
    }

    /// The retirement times of the group keys after the first (Unix seconds) in a format 2 body
    /// that ``withEntries(in:_:)`` accepted; empty for "no keys" or a body it refuses.
    public static func retirementTimes(in body: [UInt8]) -> [UInt64] {
        guard body.count >= 2, body[0] == formatMarker else { return [] }
        let groupCount = Int(body[1])
        guard groupCount > 1, groupCount <= maxKeys else { return [] }
        let timesStart = 2 + groupCount * (4 + keyLength)
        guard body.count >= timesStart + groupCount * 8 else { return [] }
        return (1..<groupCount).map { index in
            let offset = timesStart + index * 8
            return body[offset..<(offset + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
    }

    /// Builds a body from lent keys: the group's (at most ``maxKeys``; more are left out, oldest
    /// first) with the retirement times of those after the first (``KeyRing/retiredAt``; missing
    /// ones are written as 0, which opens no version 2 envelope), and the receiving app's own file
    /// keys (at most ``maxFileKeys``, newest first). Give both key lists or neither. The caller
    /// must zero the returned array (and the frame built from it) after sending.
    public static func body(group: [Entry], retiredAt: [UInt64], files: [Entry]) -> [UInt8] {
        let keptGroup = group.prefix(maxKeys)
        let keptFiles = files.prefix(maxFileKeys)
        var out = [UInt8]()
        out.reserveCapacity(4 + keptGroup.count * (4 + keyLength + 8) + keptFiles.count * (4 + keyLength))
        out.append(formatMarker)
        out.append(UInt8(keptGroup.count))
        for key in keptGroup { append(key, to: &out) }
        for index in keptGroup.indices {
            let time: UInt64 = index == 0 ? 0 : (index - 1 < retiredAt.count ? retiredAt[index - 1] : 0)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: time >> UInt64(shift))) }
        }
        out.append(UInt8(truncatingIfNeeded: keptFiles.count >> 8))
        out.append(UInt8(truncatingIfNeeded: keptFiles.count))
        for key in keptFiles { append(key, to: &out) }
        return out
    }

    private static func append(_ key: Entry, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: key.id >> 24))
        out.append(UInt8(truncatingIfNeeded: key.id >> 16))
        out.append(UInt8(truncatingIfNeeded: key.id >> 8))
        out.append(UInt8(truncatingIfNeeded: key.id))
        out.append(contentsOf: key.bytes.prefix(keyLength))
    }

    /// The body that tells a client to drop its keys.
    public static let none: [UInt8] = [formatMarker, 0, 0, 0]
}
