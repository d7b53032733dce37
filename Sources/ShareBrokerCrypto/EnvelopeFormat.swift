/// The sealed-item envelope, version 1 (byte-by-byte description in `docs/FORMATS.md`).
///
/// ```
/// offset      size  field
/// 0           4     magic 0x89 'S' 'B' 'X'
/// 4           1     version (1)
/// 5           1     kind: 0 single-shot, 1 chunked
/// 6           4     key id, UInt32 big-endian
/// 10          1     item type length L (0...255)
/// 11          L     item type, UTF-8
/// 11+L        24    nonce (single-shot) or secretstream header (chunked)
/// 35+L        ...   body: ciphertext || tag (single-shot) or chunks (chunked)
/// ```
///
/// Bytes `0..<35+L` (the whole header) are the associated data, so the type and key id cannot
/// be changed without failing authentication.
public enum EnvelopeFormat {
    /// The four magic bytes. The first, 0x89, can never start valid UTF-8, so no plain-text
    /// paste is mistaken for a sealed item.
    public static let magic: [UInt8] = [0x89, 0x53, 0x42, 0x58]
    /// The format version this library writes and reads.
    public static let version: UInt8 = 1
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
    /// overhead of the chunks it would take (67,126,562 bytes). Checked before any byte is read.
    public static let maxEnvelopeSize =
        maxPlaintextSize + fixedHeaderLength + maxItemTypeLength + nonceLength
        + (maxPlaintextSize / chunkSize) * chunkOverhead

    /// How the body is sealed.
    public enum Kind: UInt8, Sendable, Hashable, CaseIterable {
        /// One XChaCha20-Poly1305-IETF message: ciphertext then 16-byte tag.
        case singleShot = 0
        /// `crypto_secretstream_xchacha20poly1305` chunks of ``EnvelopeFormat/chunkSize``
        /// plaintext bytes, the last tagged FINAL.
        case chunked = 1
    }

    /// Header length for an item type of `itemTypeLength` UTF-8 bytes.
    public static func headerLength(itemTypeLength: Int) -> Int {
        fixedHeaderLength + itemTypeLength + nonceLength
    }

    /// Number of chunks a chunked body of `plaintextCount` bytes has (at least one).
    public static func chunkCount(plaintextCount: Int) -> Int {
        max(1, (plaintextCount + chunkSize - 1) / chunkSize)
    }

    /// The envelope size for a plaintext and item type, as ``KeyRing`` seals them.
    public static func sealedSize(plaintextCount: Int, itemTypeLength: Int) -> Int {
        let header = headerLength(itemTypeLength: itemTypeLength)
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
        guard bytes[4] == EnvelopeFormat.version else { throw .unsupportedVersion(bytes[4]) }
        guard count > 5 else { throw .truncated }
        guard let kind = EnvelopeFormat.Kind(rawValue: bytes[5]) else { throw .unsupportedKind(bytes[5]) }
        guard count >= EnvelopeFormat.fixedHeaderLength else { throw .truncated }
        let keyID = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: 6, as: UInt32.self))
        let typeLength = Int(bytes[10])
        let typeStart = EnvelopeFormat.fixedHeaderLength
        let header = EnvelopeHeader(kind: kind, keyID: keyID, itemTypeRange: typeStart..<(typeStart + typeLength),
                                    nonceOffset: typeStart + typeLength)
        guard count >= header.length else { throw .truncated }
        return header
    }

    /// Writes magic, version, kind, key id, type length and type to `out`; returns the nonce
    /// offset. `typeBytes` must be at most 255 bytes.
    @inline(__always)
    package static func write(kind: EnvelopeFormat.Kind, keyID: UInt32, typeBytes: UnsafeRawBufferPointer,
                      to out: UnsafeMutableRawPointer) -> Int {
        out.storeBytes(of: EnvelopeFormat.magicWord, as: UInt32.self)
        out.storeBytes(of: EnvelopeFormat.version, toByteOffset: 4, as: UInt8.self)
        out.storeBytes(of: kind.rawValue, toByteOffset: 5, as: UInt8.self)
        out.storeBytes(of: keyID.bigEndian, toByteOffset: 6, as: UInt32.self)
        out.storeBytes(of: UInt8(truncatingIfNeeded: typeBytes.count), toByteOffset: 10, as: UInt8.self)
        if let typeBase = typeBytes.baseAddress, typeBytes.count > 0 {
            (out + EnvelopeFormat.fixedHeaderLength).copyMemory(from: typeBase, byteCount: typeBytes.count)
        }
        return EnvelopeFormat.fixedHeaderLength + typeBytes.count
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
