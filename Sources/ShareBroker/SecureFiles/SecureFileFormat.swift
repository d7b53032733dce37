/// The secure file format, version 2 (version 1 is read only): constants and layout.
/// `docs/FORMATS.md` ("Secure files") describes it byte by byte.
///
/// ```
/// header (88 bytes) || frame 0 || frame 1 || ... || frame n-1      n = floor(P / C) + 1
/// header  = magic "\x89SBF" | version 2 | 3 reserved zero bytes | chunk size C (u32)
///           | key id (u32) | file id (32 random bytes) | plaintext length P (u64)
///           | header MAC (32 bytes, BLAKE2b-256 keyed with the file's header key over bytes 0..<56)
/// frame i = chunk index i (u32) || secretstream header (24) || secretstream message (len_i + 17)
/// ```
///
/// Integers are big-endian. Every chunk is sealed as its own one-message
/// `crypto_secretstream_xchacha20poly1305` stream under the file's chunk key, with associated
/// data `header[0..<48] || i (u32)` and tag `FINAL` on the last chunk, `MESSAGE` on the others.
/// Every chunk but the last holds exactly `C` bytes; the last holds `P mod C` (possibly none),
/// so a writer seals each full chunk as soon as it has it.
package enum SecureFileFormat {
    /// The first four bytes of every secure file: `0x89 'S' 'B' 'F'` (not valid UTF-8, so no
    /// text file starts with it).
    package static let magic: [UInt8] = [0x89, 0x53, 0x42, 0x46]
    /// The format version this library writes: the key id names one of the app's own file keys
    /// (`FileKeyRing`), so no other app can open the file.
    package static let version: UInt8 = 2
    /// The legacy format version this library still reads (never writes): the key id names a
    /// group key (`KeyRing`), which every entitled app holds.
    package static let legacyVersion: UInt8 = 1
    /// Size of the file header in bytes.
    package static let headerLength = 88
    /// Plaintext bytes per chunk that ``SecureFileStore`` writes (64 KiB).
    package static let defaultChunkSize = 65_536
    /// The smallest chunk size a reader accepts.
    package static let minimumChunkSize = 256
    /// The largest chunk size a reader accepts (1 MiB), which bounds a reader's buffers.
    package static let maximumChunkSize = 1 << 20
    /// Bytes a frame adds to its chunk's plaintext: the 4-byte index, the 24-byte secretstream
    /// header, the 1-byte encrypted tag and the 16-byte MAC.
    package static let frameOverhead = 4 + 24 + 17
    /// The largest chunk count the 32-bit index allows.
    package static let maximumChunkCount = Int(UInt32.max)
    /// The suffix of the temporary files a writer creates next to its target; names ending with
    /// it are refused.
    package static let temporarySuffix = ".sbsf-tmp"

    // MARK: Header offsets

    static let versionOffset = 4
    static let reservedRange = 5..<8
    static let chunkSizeOffset = 8
    static let keyIDOffset = 12
    static let fileIDOffset = 16
    static let fileIDLength = 32
    /// Bytes `0..<boundHeaderLength` are the associated data prefix of every chunk (everything
    /// but the length, unknown while streaming, and the MAC).
    static let boundHeaderLength = 48
    static let lengthOffset = 48
    static let macOffset = 56
    static let macLength = 32
    /// Length of a chunk's associated data: the bound header and the 4-byte index.
    static let chunkAADLength = boundHeaderLength + 4

    /// The number of chunks a plaintext of `plaintextLength` bytes is split into:
    /// `floor(P / C) + 1`. Full chunks, then a FINAL chunk of the remaining `P mod C` bytes
    /// (empty when `C` divides `P`, and for an empty file).
    package static func chunkCount(plaintextLength: Int, chunkSize: Int = defaultChunkSize) -> Int {
        plaintextLength / chunkSize + 1
    }

    /// The size on disk of a secure file of `plaintextLength` plaintext bytes:
    /// `88 + P + 45 n`, with `n` from ``chunkCount(plaintextLength:chunkSize:)``.
    package static func fileSize(plaintextLength: Int, chunkSize: Int = defaultChunkSize) -> Int {
        headerLength + plaintextLength + frameOverhead * chunkCount(plaintextLength: plaintextLength, chunkSize: chunkSize)
    }

    /// The largest plaintext the format can hold with `chunkSize`-byte chunks.
    package static func maximumPlaintextLength(chunkSize: Int = defaultChunkSize) -> Int {
        (maximumChunkCount - 1) * chunkSize
    }

    /// Whether `size` is a chunk size readers accept: a power of two from
    /// ``minimumChunkSize`` to ``maximumChunkSize``.
    static func isValidChunkSize(_ size: Int) -> Bool {
        size >= minimumChunkSize && size <= maximumChunkSize && size & (size - 1) == 0
    }
}

/// Big-endian integer access on raw bytes (the formats are big-endian everywhere).
enum BigEndianBytes {
    static func store32(_ value: UInt32, at pointer: UnsafeMutableRawPointer) {
        pointer.storeBytes(of: value.bigEndian, as: UInt32.self)
    }

    static func store64(_ value: UInt64, at pointer: UnsafeMutableRawPointer) {
        pointer.storeBytes(of: value.bigEndian, as: UInt64.self)
    }

    static func load32(_ pointer: UnsafeRawPointer) -> UInt32 {
        UInt32(bigEndian: pointer.loadUnaligned(as: UInt32.self))
    }

    static func load64(_ pointer: UnsafeRawPointer) -> UInt64 {
        UInt64(bigEndian: pointer.loadUnaligned(as: UInt64.self))
    }
}
