/// The sealed-item envelope, version 2 written, versions 1 and 2 read (byte-by-byte
/// description in `docs/FORMATS.md`).
///
/// ```
/// offset      size  field
/// 0           4     magic 0x89 'S' 'B' 'X'
/// 4           1     version (2; 1 is the legacy layout without the two v2 fields)
/// 5           1     kind: 0 single-shot, 1 chunked
/// 6           4     key id, UInt32 big-endian
/// 10          1     item type length L (0...255)
/// 11          L     item type, UTF-8
/// 11+L        8     v2 only: seal time, UInt64 big-endian Unix seconds (wall clock, UTC)
/// 19+L        1     v2 only: sealer length S (0...255)
/// 20+L        S     v2 only: sealer, the sealing app's id, UTF-8
/// 20+L+S      24    nonce (single-shot) or secretstream header (chunked)
/// 44+L+S      ...   body: ciphertext || tag (single-shot) or chunks (chunked)
/// ```
///
/// The whole header (magic through nonce) is the associated data, so the type, key id, seal
/// time and sealer cannot be changed without failing authentication.
public enum EnvelopeFormat {
    /// The four magic bytes. The first, 0x89, can never start valid UTF-8, so no plain-text
    /// paste is mistaken for a sealed item.
    public static let magic: [UInt8] = [0x89, 0x53, 0x42, 0x58]
    /// The format version this library writes (it reads this one and ``legacyVersion``).
    public static let version: UInt8 = 2
    /// The first format version: no seal time and no sealer. Still read (see `KeyRing.open`
    /// for what a legacy item may still do), never written.
    public static let legacyVersion: UInt8 = 1
    /// Version 2 bytes between the item type and the nonce besides the sealer: the 8-byte seal
    /// time and the sealer's 1-byte length.
    public static let provenanceFixedLength = 9
    /// Longest sealer (app id) a version 2 envelope carries, in UTF-8 bytes.
    public static let maxSealerLength = 255
    /// Bytes before the item type: magic, version, kind, key id, type length.
    public static let fixedHeaderLength = 11
    /// Longest item type, in UTF-8 bytes (its length is one byte).
    public static let maxItemTypeLength = 255
    /// Nonce (or secretstream header) length.
    public static let nonceLength = 24
    /// Poly1305 tag length of a single-shot body.
    public static let tagLength = 16
    /// Plaintexts longer than this are sealed in chunks (``Kind/chunked``): 1 MiB.
    public static let chunkingThreshold = 1 << 20
    /// Plaintext bytes per chunk; every chunk but the last is exactly this long: 64 KiB.
    public static let chunkSize = 64 << 10
    /// Bytes each chunk adds (secretstream tag byte + 16-byte MAC).
    public static let chunkOverhead = 17
    /// Largest plaintext that is sealed or opened: 64 MiB.
    public static let maxPlaintextSize = 64 << 20
    /// Largest envelope a reader accepts: the largest plaintext, the longest header and the
    /// overhead of the chunks it would take (67,126,826 bytes). Checked before any byte is read.
    public static let maxEnvelopeSize =
        maxPlaintextSize + fixedHeaderLength + maxItemTypeLength + provenanceFixedLength + maxSealerLength
        + nonceLength + (maxPlaintextSize / chunkSize) * chunkOverhead

    /// How the body is sealed.
    public enum Kind: UInt8, Sendable, Hashable, CaseIterable {
        /// One XChaCha20-Poly1305-IETF message: ciphertext then 16-byte tag.
        case singleShot = 0
        /// `crypto_secretstream_xchacha20poly1305` chunks of ``EnvelopeFormat/chunkSize``
        /// plaintext bytes, the last tagged FINAL.
        case chunked = 1
    }

    /// Version 2 header length for an item type of `itemTypeLength` and a sealer of
    /// `sealerLength` UTF-8 bytes.
    public static func headerLength(itemTypeLength: Int, sealerLength: Int = 0) -> Int {
        fixedHeaderLength + itemTypeLength + provenanceFixedLength + sealerLength + nonceLength
    }

    /// Version 1 (legacy) header length for an item type of `itemTypeLength` UTF-8 bytes.
    public static func legacyHeaderLength(itemTypeLength: Int) -> Int {
        fixedHeaderLength + itemTypeLength + nonceLength
    }

    /// Number of chunks a chunked body of `plaintextCount` bytes has (at least one).
    public static func chunkCount(plaintextCount: Int) -> Int {
        max(1, (plaintextCount + chunkSize - 1) / chunkSize)
    }

    /// The envelope size for a plaintext, item type and sealer, as ``KeyRing`` seals them.
    public static func sealedSize(plaintextCount: Int, itemTypeLength: Int, sealerLength: Int = 0) -> Int {
        let header = headerLength(itemTypeLength: itemTypeLength, sealerLength: sealerLength)
        if plaintextCount > chunkingThreshold {
            return header + plaintextCount + chunkCount(plaintextCount: plaintextCount) * chunkOverhead
        }
        return header + plaintextCount + tagLength
    }

    /// The magic as one word whose in-memory bytes are ``magic`` on any host, for a four-byte
    /// compare and store.
    package static let magicWord = UInt32(littleEndian: 0x5842_5389)
}

/// A parsed, not yet authenticated, envelope header.
package struct EnvelopeHeader {
    /// The format version (``EnvelopeFormat/version`` or ``EnvelopeFormat/legacyVersion``).
    package let version: UInt8
    /// Version 2: the seal time (Unix seconds) the header names; `nil` for a legacy item.
    package let sealedAt: UInt64?
    /// Version 2: where the sealer's bytes are; empty for a legacy item.
    package let sealerRange: Range<Int>
    /// How the body is sealed.
    package let kind: EnvelopeFormat.Kind
    /// The key id the envelope names.
    package let keyID: UInt32
    /// Where the item type's bytes are.
    package let itemTypeRange: Range<Int>
    /// Where the 24-byte nonce (or secretstream header) starts.
    package let nonceOffset: Int
    /// Header length: the associated data, and where the body starts.
    package var length: Int { nonceOffset + EnvelopeFormat.nonceLength }

    /// Parses the header, checking each field before reading the next.
    ///
    /// - Throws: ``SealingError/badMagic``, ``SealingError/unsupportedVersion(_:)``,
    ///   ``SealingError/unsupportedKind(_:)``, or ``SealingError/truncated`` if the bytes end
    ///   before the header does (including a strict prefix of the magic).
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(SealingError) -> EnvelopeHeader {
        let count = bytes.count
        guard count >= 4 else {
            for index in 0..<count where bytes[index] != EnvelopeFormat.magic[index] { throw .badMagic }
            throw .truncated
        }
        guard let base = bytes.baseAddress else { throw .truncated }
        guard base.loadUnaligned(as: UInt32.self) == EnvelopeFormat.magicWord else { throw .badMagic }
        guard count > 4 else { throw .truncated }
        let version = bytes[4]
        guard version == EnvelopeFormat.version || version == EnvelopeFormat.legacyVersion else {
            throw .unsupportedVersion(version)
        }
        guard count > 5 else { throw .truncated }
        guard let kind = EnvelopeFormat.Kind(rawValue: bytes[5]) else { throw .unsupportedKind(bytes[5]) }
        guard count >= EnvelopeFormat.fixedHeaderLength else { throw .truncated }
        let keyID = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: 6, as: UInt32.self))
        let typeLength = Int(bytes[10])
        let typeStart = EnvelopeFormat.fixedHeaderLength
        let typeEnd = typeStart + typeLength
        guard version == EnvelopeFormat.version else {
            let header = EnvelopeHeader(version: version, sealedAt: nil, sealerRange: typeEnd..<typeEnd, kind: kind,
                                        keyID: keyID, itemTypeRange: typeStart..<typeEnd, nonceOffset: typeEnd)
            guard count >= header.length else { throw .truncated }
            return header
        }
        guard count >= typeEnd + EnvelopeFormat.provenanceFixedLength else { throw .truncated }
        let sealedAt = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: typeEnd, as: UInt64.self))
        let sealerLength = Int(bytes[typeEnd + 8])
        let sealerStart = typeEnd + EnvelopeFormat.provenanceFixedLength
        let header = EnvelopeHeader(version: version, sealedAt: sealedAt,
                                    sealerRange: sealerStart..<(sealerStart + sealerLength), kind: kind,
                                    keyID: keyID, itemTypeRange: typeStart..<typeEnd,
                                    nonceOffset: sealerStart + sealerLength)
        guard count >= header.length else { throw .truncated }
        return header
    }

    /// Writes a version 2 header up to the nonce (magic, version, kind, key id, type length,
    /// type, seal time, sealer length, sealer) to `out`; returns the nonce offset. `typeBytes`
    /// and `sealerBytes` must be at most 255 bytes each.
    @inline(__always)
    package static func write(kind: EnvelopeFormat.Kind, keyID: UInt32, typeBytes: UnsafeRawBufferPointer,
                              sealedAt: UInt64, sealerBytes: UnsafeRawBufferPointer,
                              to out: UnsafeMutableRawPointer) -> Int {
        out.storeBytes(of: EnvelopeFormat.magicWord, as: UInt32.self)
        out.storeBytes(of: EnvelopeFormat.version, toByteOffset: 4, as: UInt8.self)
        out.storeBytes(of: kind.rawValue, toByteOffset: 5, as: UInt8.self)
        out.storeBytes(of: keyID.bigEndian, toByteOffset: 6, as: UInt32.self)
        out.storeBytes(of: UInt8(truncatingIfNeeded: typeBytes.count), toByteOffset: 10, as: UInt8.self)
        if let typeBase = typeBytes.baseAddress, typeBytes.count > 0 {
            (out + EnvelopeFormat.fixedHeaderLength).copyMemory(from: typeBase, byteCount: typeBytes.count)
        }
        let typeEnd = EnvelopeFormat.fixedHeaderLength + typeBytes.count
        out.storeBytes(of: sealedAt.bigEndian, toByteOffset: typeEnd, as: UInt64.self)
        out.storeBytes(of: UInt8(truncatingIfNeeded: sealerBytes.count), toByteOffset: typeEnd + 8, as: UInt8.self)
        let sealerStart = typeEnd + EnvelopeFormat.provenanceFixedLength
        if let sealerBase = sealerBytes.baseAddress, sealerBytes.count > 0 {
            (out + sealerStart).copyMemory(from: sealerBase, byteCount: sealerBytes.count)
        }
        return sealerStart + sealerBytes.count
    }
}

extension EnvelopeFormat {
    /// The item type a sealed envelope names in its header, read without a key (the header is
    /// authenticated, not secret), or `nil` if `envelope` is not a well-formed envelope header
    /// or its type is not UTF-8. A desktop adapter uses it to decide which placeholders to offer;
    /// an unauthentic envelope can lie here, and then simply fails to open.
    public static func itemType(ofEnvelope envelope: [UInt8]) -> String? {
        envelope.withUnsafeBytes { raw -> String? in
            guard let header = try? EnvelopeHeader.parse(raw) else { return nil }
            return String(validating: envelope[header.itemTypeRange], as: UTF8.self)
        }
    }
}
