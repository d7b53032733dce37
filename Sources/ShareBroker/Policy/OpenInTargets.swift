/// The Open In targets one ``PolicySnapshot`` knows by name, the whitelist and the native mail
/// ids, looked up by their UTF-8 bytes: an Open In decision about an ASCII target costs a short
/// hash and a byte comparison instead of String hashing (SipHash over the normalized text), and
/// the C interface decides on the caller's bytes without building a String.
///
/// Exactly the answers of the String path (``NativeMail/contains(_:)`` and
/// `Set<String>.contains`), because the table answers only where bytes decide: Swift compares
/// Strings by canonical equivalence, and two ASCII strings are equivalent exactly when their
/// bytes are equal (ASCII text is its own normal form). So:
///
/// * a target that is not all ASCII is ``unknown`` (the caller takes the String path; for the C
///   interface that path also validates the UTF-8);
/// * only ASCII ids are in the table; when the whitelist holds an id that is not ASCII (which
///   could be canonically equal to an ASCII target: U+212A KELVIN SIGN is "K"), a target the
///   table does not hold is ``unknown`` rather than "not whitelisted";
/// * when a native mail id is not ASCII the table holds nothing and every answer is ``unknown``.
///
/// Built once per snapshot (and kept by the snapshots that do not change the whitelist or the
/// device); immutable afterwards.
@usableFromInline
package final class OpenInTargets: @unchecked Sendable {
    // @unchecked: the storage is written only in init and freed in deinit; lookups only read it.

    /// An entry of the open-addressed slot array; `flags == 0` marks an empty slot.
    @usableFromInline
    struct Slot {
        @usableFromInline var hash: UInt64
        @usableFromInline var offset: UInt32
        @usableFromInline var length: UInt32
        @usableFromInline var flags: UInt8
    }

    /// The flag of a whitelisted id.
    @inlinable static var whitelisted: UInt8 { 1 }
    /// The flag of a native mail id.
    @inlinable static var nativeMail: UInt8 { 2 }
    /// The answer when the bytes cannot decide: take the String path.
    @inlinable static var unknown: UInt8 { 0x80 }

    /// `capacity` slots (a power of two, at most half full).
    @usableFromInline let slots: UnsafeMutablePointer<Slot>
    /// `capacity - 1`.
    @usableFromInline let mask: Int
    /// The ids' bytes, one after the other.
    @usableFromInline let bytes: UnsafeMutableRawPointer
    /// Mixed into every hash (random per table).
    @usableFromInline let seed: UInt64
    /// The answer for an ASCII target not in the table: 0 (neither whitelisted nor native mail)
    /// when every id is ASCII, else ``unknown``.
    @usableFromInline let missFlags: UInt8

    /// The table of `whitelist` and `nativeMail`.
    package init(whitelist: Set<String>, nativeMail: [String]) {
        var entries: [(bytes: [UInt8], flags: UInt8)] = []
        var index: [[UInt8]: Int] = [:]
        var complete = true
        func add(_ id: String, _ flag: UInt8) -> Bool {
            let utf8 = Array(id.utf8)
            guard utf8.allSatisfy({ $0 < 0x80 }) else { return false }
            if let at = index[utf8] {
                entries[at].flags |= flag
            } else {
                index[utf8] = entries.count
                entries.append((utf8, flag))
            }
            return true
        }
        for id in nativeMail where !add(id, Self.nativeMail) { complete = false }
        if !complete {
            // A native mail id that is not ASCII: the table answers nothing.
            entries = []
        } else {
            for id in whitelist where !add(id, Self.whitelisted) { complete = false }
        }
        var total = entries.reduce(0) { $0 + $1.bytes.count }
        if total > Int(UInt32.max) {
            // Offsets are 32-bit: a whitelist of more than 4 GiB of ids answers nothing either.
            entries = []
            total = 0
            complete = false
        }
        var capacity = 1
        while capacity < entries.count * 2 { capacity <<= 1 }
        var generator = SystemRandomNumberGenerator()
        seed = generator.next()
        mask = capacity - 1
        missFlags = complete ? 0 : Self.unknown
        slots = UnsafeMutablePointer<Slot>.allocate(capacity: capacity)
        slots.initialize(repeating: Slot(hash: 0, offset: 0, length: 0, flags: 0), count: capacity)
        bytes = UnsafeMutableRawPointer.allocate(byteCount: max(total, 1), alignment: 8)
        var offset = 0
        for entry in entries {
            entry.bytes.withUnsafeBytes { source in
                if let base = source.baseAddress { (bytes + offset).copyMemory(from: base, byteCount: source.count) }
            }
            let hash = Self.hash(UnsafeRawBufferPointer(start: bytes + offset, count: entry.bytes.count), seed: seed).hash
            var at = Int(truncatingIfNeeded: hash) & mask
            while slots[at].flags != 0 { at = (at + 1) & mask }
            slots[at] = Slot(hash: hash, offset: UInt32(truncatingIfNeeded: offset),
                             length: UInt32(truncatingIfNeeded: entry.bytes.count), flags: entry.flags)
            offset += entry.bytes.count
        }
    }

    deinit {
        slots.deinitialize(count: mask + 1)
        slots.deallocate()
        bytes.deallocate()
    }

    /// The flags of the target spelled by `utf8` (``whitelisted``, ``nativeMail``, both or
    /// neither), or ``unknown`` when the bytes cannot decide (see the type's comment).
    @inlinable @inline(__always)
    func flags(ofUTF8 utf8: UnsafeRawBufferPointer) -> UInt8 {
        let (hash, ascii) = Self.hash(utf8, seed: seed)
        guard ascii else { return Self.unknown }
        var at = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = slots[at]
            if slot.flags == 0 { return missFlags }
            if slot.hash == hash, Int(slot.length) == utf8.count,
               Self.equal(bytes + Int(slot.offset), utf8, count: utf8.count) {
                return slot.flags
            }
            at = (at + 1) & mask
        }
    }

    /// A 64-bit hash of `utf8` and whether every byte is ASCII: 8 bytes at a time (the last
    /// word overlapping the one before; 4-byte and single-byte reads under 8 bytes).
    @inlinable @inline(__always)
    static func hash(_ utf8: UnsafeRawBufferPointer, seed: UInt64) -> (hash: UInt64, ascii: Bool) {
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        let count = utf8.count
        var hash = seed ^ (UInt64(truncatingIfNeeded: count) &* multiplier)
        var seen: UInt64 = 0
        if let base = utf8.baseAddress, count > 0 {
            if count >= 8 {
                var offset = 0
                while offset + 8 < count {
                    let word = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    seen |= word
                    hash = (hash ^ word) &* multiplier
                    hash ^= hash >> 29
                    offset += 8
                }
                let word = base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                seen |= word
                hash = (hash ^ word) &* multiplier
            } else if count >= 4 {
                let word = UInt64(base.loadUnaligned(as: UInt32.self))
                    | UInt64(base.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)) << 32
                seen = word
                hash = (hash ^ word) &* multiplier
            } else {
                let word = UInt64(base.load(as: UInt8.self))
                    | UInt64(base.load(fromByteOffset: count >> 1, as: UInt8.self)) << 8
                    | UInt64(base.load(fromByteOffset: count - 1, as: UInt8.self)) << 16
                seen = word
                hash = (hash ^ word) &* multiplier
            }
        }
        // The finalizer of MurmurHash3 (fmix64): every input bit reaches the slot index bits.
        hash ^= hash >> 33
        hash = hash &* 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 33
        hash = hash &* 0xC4CE_B9FE_1A85_EC53
        hash ^= hash >> 33
        return (hash, seen & 0x8080_8080_8080_8080 == 0)
    }

    /// Whether the `count` bytes at `stored` equal `utf8` (which holds `count` bytes).
    @inlinable @inline(__always)
    static func equal(_ stored: UnsafeRawPointer, _ utf8: UnsafeRawBufferPointer, count: Int) -> Bool {
        guard let base = utf8.baseAddress, count > 0 else { return true }
        if count >= 8 {
            var offset = 0
            while offset + 8 < count {
                if stored.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    != base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) { return false }
                offset += 8
            }
            return stored.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                == base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        }
        for offset in 0..<count where stored.load(fromByteOffset: offset, as: UInt8.self)
            != base.load(fromByteOffset: offset, as: UInt8.self) {
            return false
        }
        return true
    }
}
