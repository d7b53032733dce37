#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBrokerCrypto

/// Random-access reads of one encrypted file, in bounded memory; made by
/// ``SecureFileStore/open(_:)``.
///
/// ```swift
/// let reader = try files.open("video.mov")
/// let header = try reader.read(offset: 0, count: 512)
/// let tail = try reader.read(offset: reader.size - 4096, count: 4096)
/// reader.close()
/// ```
///
/// Opening authenticates the header and checks the file's length against it, so a truncated
/// or extended file is refused before any chunk is read. Each read authenticates the chunks
/// it touches (a chunk is decrypted only after its MAC checks out) and returns no byte of a
/// chunk that fails. ``verify()`` authenticates every chunk up front.
///
/// The reader holds two chunk-sized buffers (a ciphertext frame and one decrypted chunk kept
/// for the next small read, zeroed with `sodium_memzero` when replaced by an error, on
/// ``close()`` and when the reader is dropped) and the file's keys in guarded memory. It is not
/// thread-safe: use it from one thread at a time.
public final class SecureFileReader {
    /// The file's name in its store's folder.
    public let name: String
    /// The plaintext size in bytes (authenticated).
    public let size: Int

    private let access: SecureFileAccess
    private let path: String
    private var fd: Int32
    private let key: SecureFileKey
    private let chunkSize: Int
    private let chunkCount: Int
    private let fileSize: Int
    /// A chunk's associated data: `header[0..<48] || index (u32)`.
    private var aad: [UInt8]
    /// One frame of input (`chunkSize + frameOverhead` bytes).
    private let frame: UnsafeMutableRawPointer
    /// The last chunk decrypted for a partial read (`chunkSize` bytes).
    private let scratch: UnsafeMutableRawPointer
    private var cachedIndex = -1
    private var isOpen = true

    init(store: SecureFileStore, fileKeys: FileKeyRing, name: String, path: String) throws(SecureFileError) {
        let (fd, fileSize) = try SecureFileSystem.openForReading(path, name: name)
        let parsed: Result<(SecureFileKey, Int, Int, [UInt8]), SecureFileError> = Self.readHeader(
            fd: fd, fileSize: fileSize, path: path, fileKeys: fileKeys, access: store.access,
            limit: store.maximumFileSize)
        let key: SecureFileKey, size: Int, chunkSize: Int, boundHeader: [UInt8]
        switch parsed {
        case .success(let value): (key, size, chunkSize, boundHeader) = value
        case .failure(let error):
            SecureFileSystem.closeDescriptor(fd)
            throw error
        }
        self.name = name
        self.access = store.access
        self.path = path
        self.fd = fd
        self.key = key
        self.size = size
        self.chunkSize = chunkSize
        self.chunkCount = SecureFileFormat.chunkCount(plaintextLength: size, chunkSize: chunkSize)
        self.fileSize = fileSize
        self.aad = boundHeader + [0, 0, 0, 0]
        self.frame = UnsafeMutableRawPointer.allocate(byteCount: chunkSize + SecureFileFormat.frameOverhead, alignment: 16)
        self.scratch = UnsafeMutableRawPointer.allocate(byteCount: chunkSize, alignment: 16)
    }

    deinit {
        close()
        frame.deallocate()
        scratch.deallocate()
    }

    /// Reads and checks the header, in the order `docs/FORMATS.md` gives. Returns the file's
    /// keys, plaintext size, chunk size and bound header (bytes 0..<48). A version 2 file's key
    /// comes from the app's file keys, a legacy version 1 file's from the group's key ring
    /// (asked of `access` only then).
    private static func readHeader(fd: Int32, fileSize: Int, path: String, fileKeys: FileKeyRing, access: SecureFileAccess,
                                   limit: Int) -> Result<(SecureFileKey, Int, Int, [UInt8]), SecureFileError> {
        var header = [UInt8](repeating: 0, count: SecureFileFormat.headerLength)
        return header.withUnsafeMutableBytes { raw in
            Result { () throws(SecureFileError) -> (SecureFileKey, Int, Int, [UInt8]) in
                guard let base = raw.baseAddress else { throw .outOfMemory }
                let got = try SecureFileSystem.readFully(fd, into: base, count: raw.count, at: 0, path: path)
                let magic = SecureFileFormat.magic
                let magicPart = min(got, magic.count)
                guard raw[0..<magicPart].elementsEqual(magic[0..<magicPart]) else { throw .notASecureFile }
                guard got > SecureFileFormat.versionOffset else {
                    throw .truncated(expectedSize: SecureFileFormat.headerLength, actualSize: fileSize)
                }
                let version = raw[SecureFileFormat.versionOffset]
                guard version == SecureFileFormat.version || version == SecureFileFormat.legacyVersion else {
                    throw .unsupportedVersion(version)
                }
                guard got == SecureFileFormat.headerLength else {
                    throw .truncated(expectedSize: SecureFileFormat.headerLength, actualSize: fileSize)
                }
                let keyID = BigEndianBytes.load32(base + SecureFileFormat.keyIDOffset)
                let fileID = UnsafeRawPointer(base + SecureFileFormat.fileIDOffset)
                let key: SecureFileKey
                if version == SecureFileFormat.version {
                    do throws(SealingError) {
                        key = try fileKeys.secureFileKey(keyID: keyID, fileID: fileID)
                    } catch {
                        throw SecureFileError(error)
                    }
                } else {
                    let ring = try access.legacyKeyRing(keyID: keyID)
                    do throws(SealingError) {
                        key = try ring.secureFileKey(keyID: keyID, fileID: fileID)
                    } catch {
                        throw SecureFileError(error)
                    }
                }
                guard !key.isRevoked else { throw .noKeys(.wiped) }
                guard key.verifyHeaderMAC(UnsafeRawBufferPointer(start: base, count: SecureFileFormat.macOffset),
                                          mac: base + SecureFileFormat.macOffset) else {
                    throw .headerAuthenticationFailed
                }
                // Authentic from here on: what does not fit is a writer this library does not know.
                let chunkSize = Int(BigEndianBytes.load32(base + SecureFileFormat.chunkSizeOffset))
                guard raw[SecureFileFormat.reservedRange].allSatisfy({ $0 == 0 }),
                      SecureFileFormat.isValidChunkSize(chunkSize) else {
                    throw .unsupportedVersion(version)
                }
                let declared = BigEndianBytes.load64(base + SecureFileFormat.lengthOffset)
                let cap = min(limit, SecureFileFormat.maximumPlaintextLength(chunkSize: chunkSize))
                guard declared <= UInt64(cap) else {
                    throw .fileTooBig(size: declared > UInt64(Int.max) ? Int.max : Int(declared), limit: cap)
                }
                let size = Int(declared)
                let expected = SecureFileFormat.fileSize(plaintextLength: size, chunkSize: chunkSize)
                if fileSize < expected { throw .truncated(expectedSize: expected, actualSize: fileSize) }
                if fileSize > expected { throw .trailingData(expectedSize: expected, actualSize: fileSize) }
                return (key, size, chunkSize, Array(raw[0..<SecureFileFormat.boundHeaderLength]))
            }
        }
    }

    // MARK: Reading

    /// Reads up to `count` bytes from `offset`: fewer only at the end of the file (none at or
    /// past it), like `pread`.
    ///
    /// - Throws: ``SecureFileError/negativeLength(_:)`` for a negative offset or count;
    ///   ``SecureFileError/closed``; ``SecureFileError/noKeys(reason:)``;
    ///   ``SecureFileError/corruptChunk(index:)``, ``SecureFileError/chunkOutOfOrder(position:foundIndex:)``,
    ///   ``SecureFileError/truncated(expectedSize:actualSize:)`` (the file shrank while open);
    ///   ``SecureFileError/io(operation:path:code:)``. No plaintext of a failing read is returned.
    public func read(offset: Int, count: Int) throws(SecureFileError) -> [UInt8] {
        guard count >= 0 else { throw .negativeLength(count) }
        guard offset >= 0 else { throw .negativeLength(offset) }
        let available = offset >= size ? 0 : min(count, size - offset)
        var failure: SecureFileError?
        let bytes = [UInt8](unsafeUninitializedCapacity: available) { buffer, initialized in
            do throws(SecureFileError) {
                initialized = try read(offset: offset, into: UnsafeMutableRawBufferPointer(buffer))
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Reads into `buffer` from `offset`, up to `buffer.count` bytes (fewer only at the end of
    /// the file), and returns how many were read. Whole chunks are decrypted straight into
    /// `buffer`. On a failure, the part of `buffer` written so far is zeroed.
    ///
    /// - Throws: as ``read(offset:count:)``.
    public func read(offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws(SecureFileError) -> Int {
        guard offset >= 0 else { throw .negativeLength(offset) }
        guard isOpen else { throw .closed }
        try checkKeys()
        guard offset < size, let out = buffer.baseAddress else { return 0 }
        let count = min(buffer.count, size - offset)
        var done = 0
        do throws(SecureFileError) {
            while done < count {
                let position = offset + done
                let index = position / chunkSize
                let within = position - index * chunkSize
                let length = chunkLength(index)
                let take = min(length - within, count - done)
                if index == cachedIndex {
                    (out + done).copyMemory(from: scratch + within, byteCount: take)
                } else if within == 0 && take == length {
                    try decryptChunk(index, into: out + done)
                } else {
                    try decryptChunk(index, into: scratch)
                    cachedIndex = index
                    (out + done).copyMemory(from: scratch + within, byteCount: take)
                }
                done += take
            }
        } catch {
            SecureMemory.zero(out, byteCount: done)
            throw error
        }
        return count
    }

    /// Authenticates every chunk of the file, in order, one chunk in memory at a time, so that
    /// damage anywhere is found before the app relies on the content.
    ///
    /// - Throws: as ``read(offset:count:)``.
    public func verify() throws(SecureFileError) {
        guard isOpen else { throw .closed }
        try checkKeys()
        for index in 0..<chunkCount {
            try decryptChunk(index, into: scratch)
            cachedIndex = index
        }
    }

    /// Authenticates the final chunk when it holds no plaintext (the file size is a multiple of
    /// the chunk size, or zero): no read covers it, yet it carries the FINAL tag and must not be
    /// altered unnoticed. Whole-file reads call this after reading.
    func authenticateEmptyFinalChunk() throws(SecureFileError) {
        guard isOpen else { throw .closed }
        let last = chunkCount - 1
        guard last >= 0, chunkLength(last) == 0, cachedIndex != last else { return }
        try decryptChunk(last, into: scratch)
        cachedIndex = last
    }

    /// Closes the file and zeroes the decrypted-chunk buffer and the keys. Idempotent.
    public func close() {
        guard isOpen else { return }
        isOpen = false
        SecureFileSystem.closeDescriptor(fd)
        fd = -1
        dropCache()
        key.zero()
    }

    // MARK: Internals

    /// Plaintext length of chunk `index`.
    private func chunkLength(_ index: Int) -> Int {
        index == chunkCount - 1 ? size - index * chunkSize : chunkSize // the last: P mod C
    }

    private func dropCache() {
        SecureMemory.zero(scratch, byteCount: chunkSize)
        cachedIndex = -1
    }

    /// Checks that the keys are still good and the user may still reach sensitive data.
    private func checkKeys() throws(SecureFileError) {
        try access.checkReachable()
        if key.isRevoked {
            dropCache()
            key.zero()
            throw .noKeys(.wiped)
        }
    }

    /// Reads frame `index`, authenticates it and decrypts it into `out` (``chunkLength(_:)``
    /// bytes). Nothing is written to `out` unless the chunk is authentic, in place and
    /// correctly tagged.
    private func decryptChunk(_ index: Int, into out: UnsafeMutableRawPointer) throws(SecureFileError) {
        if key.isRevoked { // a wipe during a long read stops it at the next chunk
            dropCache()
            key.zero()
            throw .noKeys(.wiped)
        }
        if out == scratch { cachedIndex = -1 }
        let length = chunkLength(index)
        let frameLength = length + SecureFileFormat.frameOverhead
        let frameOffset = SecureFileFormat.headerLength + index * (chunkSize + SecureFileFormat.frameOverhead)
        let got = try SecureFileSystem.readFully(fd, into: frame, count: frameLength, at: frameOffset, path: path)
        guard got == frameLength else {
            throw .truncated(expectedSize: fileSize, actualSize: frameOffset + got)
        }
        let stored = Int(BigEndianBytes.load32(frame))
        let sealed = UnsafeRawBufferPointer(start: frame + 4, count: frameLength - 4)
        if stored != index {
            // Authentic under the index it claims? Then it is a chunk of this file out of place.
            guard stored < chunkCount, open(sealed, as: stored, into: scratch) != nil else {
                throw .corruptChunk(index: index)
            }
            dropCache()
            throw .chunkOutOfOrder(position: index, foundIndex: stored)
        }
        guard let tag = open(sealed, as: index, into: out) else { throw .corruptChunk(index: index) }
        guard tag == (index == chunkCount - 1 ? .final : .message) else {
            // Authentic but tagged for another place: impossible for a file this library wrote.
            SecureMemory.zero(out, byteCount: length)
            throw .corruptChunk(index: index)
        }
    }

    /// Opens `sealed` with the associated data of chunk `index`; the tag, or `nil` if not authentic.
    private func open(_ sealed: UnsafeRawBufferPointer, as index: Int,
                      into out: UnsafeMutableRawPointer) -> SecureFileKey.ChunkTag? {
        aad.withUnsafeMutableBytes { aad -> SecureFileKey.ChunkTag? in
            guard let base = aad.baseAddress else { return nil }
            BigEndianBytes.store32(UInt32(truncatingIfNeeded: index), at: base + SecureFileFormat.boundHeaderLength)
            return key.openChunk(aad: UnsafeRawBufferPointer(aad), sealed: sealed, into: out)?.tag
        }
    }
}
