#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBrokerCrypto
import ShareBrokerPOSIX

/// Writes one encrypted file as a stream, in bounded memory; made by
/// ``SecureFileStore/createFile(_:)``.
///
/// ```swift
/// let writer = try files.createFile("export.bin")
/// for part in parts { try writer.write(part) }
/// try writer.close()                      // the file appears now, whole
/// ```
///
/// Bytes are encrypted chunk by chunk (`SecureFileFormat/defaultChunkSize` of plaintext each)
/// into a temporary file next to the target; ``close()`` seals the last chunk, authenticates
/// the header, fsyncs, renames over the target and fsyncs the folder. Until then the target is
/// untouched. A writer that is dropped or ``abandon()``ed before ``close()``, or that fails,
/// removes its temporary file and leaves any previous version of the file intact.
///
/// The writer holds two chunk-sized buffers (one of plaintext, zeroed after every use with
/// `sodium_memzero`, one of ciphertext) and the file's keys in guarded memory, zeroed when it
/// closes. It is not thread-safe: use it from one thread at a time.
public final class SecureFileWriter {
    /// The file's name in its store's folder.
    public let name: String
    /// Plaintext bytes accepted so far.
    public private(set) var bytesWritten = 0

    private let access: SecureFileAccess
    private let limit: Int
    private let chunkSize: Int
    private let directory: String
    private let path: String
    private let temporaryPath: String
    private var fd: Int32
    private let key: SecureFileKey
    /// The file header; bytes 0..<48 are final from the start, the length and MAC at close.
    private var header: [UInt8]
    /// A chunk's associated data: `header[0..<48] || index (u32)`.
    private var aad: [UInt8]
    /// Plaintext of the chunk being filled (`chunkSize` bytes): sealed (MESSAGE) when full,
    /// or at close (FINAL, 0 to `chunkSize - 1` bytes).
    private let pending: UnsafeMutableRawPointer
    private var pendingCount = 0
    /// One frame of output (`chunkSize + frameOverhead` bytes).
    private let frame: UnsafeMutableRawPointer
    private var chunkIndex = 0
    private var isOpen = true
    /// Whether this writer created ``temporaryPath`` (and so must remove it when abandoned).
    private var ownsTemporary = false

    init(store: SecureFileStore, keys: FileKeyRing, name: String, path: String) throws(SecureFileError) {
        self.name = name
        self.access = store.access
        self.limit = store.maximumFileSize
        self.chunkSize = store.chunkSize
        self.directory = store.directory
        self.path = path
        self.temporaryPath = store.temporaryPath()

        var header = [UInt8](repeating: 0, count: SecureFileFormat.headerLength)
        let keyResult: Result<SecureFileKey, SecureFileError> = header.withUnsafeMutableBytes { header in
            Result { () throws(SecureFileError) -> SecureFileKey in
                guard let base = header.baseAddress else { throw .outOfMemory }
                let fileID = UnsafeMutableRawBufferPointer(
                    start: base + SecureFileFormat.fileIDOffset, count: SecureFileFormat.fileIDLength)
                do throws(SealingError) {
                    try SecureMemory.fillRandom(fileID)
                    let key = try keys.secureFileKey(forWritingFileID: UnsafeRawPointer(fileID.baseAddress ?? base))
                    base.copyMemory(from: SecureFileFormat.magic, byteCount: SecureFileFormat.magic.count)
                    base.storeBytes(of: SecureFileFormat.version, toByteOffset: SecureFileFormat.versionOffset, as: UInt8.self)
                    BigEndianBytes.store32(UInt32(store.chunkSize), at: base + SecureFileFormat.chunkSizeOffset)
                    BigEndianBytes.store32(key.keyID, at: base + SecureFileFormat.keyIDOffset)
                    return key
                } catch {
                    throw SecureFileError(error)
                }
            }
        }
        self.key = try keyResult.get()
        self.header = header
        self.aad = Array(header[0..<SecureFileFormat.boundHeaderLength]) + [0, 0, 0, 0]
        self.pending = UnsafeMutableRawPointer.allocate(byteCount: chunkSize, alignment: 16)
        self.frame = UnsafeMutableRawPointer.allocate(
            byteCount: chunkSize + SecureFileFormat.frameOverhead, alignment: 16)
        self.fd = -1
        do throws(SecureFileError) {
            self.fd = try SecureFileSystem.createExclusive(temporaryPath)
            ownsTemporary = true
            // The header's length and MAC stay zero until close: an unfinished file never verifies.
            let written: Result<Void, SecureFileError> = header.withUnsafeBytes { raw in
                Result { () throws(SecureFileError) in try SecureFileSystem.writeAll(fd, raw, path: temporaryPath) }
            }
            try written.get()
        } catch {
            discard()
            throw error
        }
    }

    deinit {
        discard()
        pending.deallocate()
        frame.deallocate()
    }

    /// Appends `bytes` to the file.
    ///
    /// - Throws: ``SecureFileError/closed`` after ``close()``, ``abandon()`` or an earlier
    ///   failure; ``SecureFileError/noKeys(reason:)`` if the keys were wiped or the user may no
    ///   longer reach sensitive data; ``SecureFileError/fileTooBig(size:limit:)`` past the
    ///   store's cap; ``SecureFileError/io(operation:path:code:)``. Every failure abandons the
    ///   writer: nothing reaches the target file.
    public func write(_ bytes: [UInt8]) throws(SecureFileError) {
        let result: Result<Void, SecureFileError> = bytes.withUnsafeBytes { raw in
            Result { () throws(SecureFileError) in try write(raw) }
        }
        try result.get()
    }

    /// Appends the bytes in `bytes` (only read); see ``write(_:)-([UInt8])``.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(SecureFileError) {
        guard isOpen else { throw .closed }
        do throws(SecureFileError) {
            try checkKeys()
            let total = bytesWritten + bytes.count
            guard total <= limit else { throw SecureFileError.fileTooBig(size: total, limit: limit) }
            guard var input = bytes.baseAddress else { return }
            var remaining = bytes.count
            while remaining > 0 {
                if pendingCount == 0 && remaining >= chunkSize {
                    // A whole chunk: seal it straight from the caller's bytes, no copy.
                    try sealAndWrite(UnsafeRawBufferPointer(start: input, count: chunkSize), isFinal: false)
                    input += chunkSize
                    remaining -= chunkSize
                    continue
                }
                let take = min(chunkSize - pendingCount, remaining)
                (pending + pendingCount).copyMemory(from: input, byteCount: take)
                pendingCount += take
                input += take
                remaining -= take
                if pendingCount == chunkSize {
                    try sealAndWrite(UnsafeRawBufferPointer(start: pending, count: chunkSize), isFinal: false)
                    SecureMemory.zero(pending, byteCount: chunkSize)
                    pendingCount = 0
                }
            }
            bytesWritten = total
        } catch {
            discard()
            throw error
        }
    }

    /// Seals the last chunk, authenticates the header and puts the file in place atomically
    /// and durably (fsync, rename, fsync of the folder). The writer is closed afterwards
    /// whatever happens.
    ///
    /// - Throws: ``SecureFileError/closed`` if already closed or abandoned;
    ///   ``SecureFileError/noKeys(reason:)``; ``SecureFileError/io(operation:path:code:)``. A failure
    ///   before the rename leaves the previous version of the file intact; a failure to fsync
    ///   the folder after it (reported as `io`) leaves the new file in place, possibly not yet
    ///   durable.
    public func close() throws(SecureFileError) {
        guard isOpen else { throw .closed }
        do throws(SecureFileError) {
            try checkKeys()
            try sealAndWrite(UnsafeRawBufferPointer(start: pending, count: pendingCount), isFinal: true)
            let length = UInt64(bytesWritten)
            let headerWrite: Result<Void, SecureFileError> = header.withUnsafeMutableBytes { raw in
                Result { () throws(SecureFileError) in
                    guard let base = raw.baseAddress else { throw .outOfMemory }
                    BigEndianBytes.store64(length, at: base + SecureFileFormat.lengthOffset)
                    key.headerMAC(UnsafeRawBufferPointer(start: base, count: SecureFileFormat.macOffset),
                                  into: base + SecureFileFormat.macOffset)
                    let tail = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(raw)[SecureFileFormat.lengthOffset...])
                    try SecureFileSystem.writeAll(fd, tail, at: SecureFileFormat.lengthOffset, path: temporaryPath)
                }
            }
            try headerWrite.get()
            try SecureFileSystem.sync(fd, path: temporaryPath)
            SecureFileSystem.closeDescriptor(fd)
            fd = -1
            try SecureFileSystem.moveIntoPlace(temporaryPath, to: path)
            ownsTemporary = false
        } catch {
            discard()
            throw error
        }
        finish()
        try SecureFileSystem.syncDirectory(directory)
    }

    /// Gives up on the file: removes the temporary file, zeroes the buffers and keys. The
    /// target file (any previous version) is untouched. Idempotent.
    public func abandon() {
        discard()
    }

    // MARK: Internals

    /// Checks that the keys are still good and the user may still reach sensitive data.
    private func checkKeys() throws(SecureFileError) {
        try access.checkReachable()
        if key.isRevoked {
            key.zero()
            throw .noKeys(.wiped)
        }
    }

    /// Seals `plaintext` as the next chunk into ``frame`` and appends the frame to the file.
    private func sealAndWrite(_ plaintext: UnsafeRawBufferPointer, isFinal: Bool) throws(SecureFileError) {
        if key.isRevoked { // a wipe during a long write stops it at the next chunk
            key.zero()
            throw .noKeys(.wiped)
        }
        let index = UInt32(truncatingIfNeeded: chunkIndex)
        BigEndianBytes.store32(index, at: frame)
        let sealed = aad.withUnsafeMutableBytes { aad -> Int in
            guard let base = aad.baseAddress else { return 0 }
            BigEndianBytes.store32(index, at: base + SecureFileFormat.boundHeaderLength)
            return key.sealChunk(aad: UnsafeRawBufferPointer(aad), plaintext: plaintext, isFinal: isFinal, into: frame + 4)
        }
        try SecureFileSystem.writeAll(fd, UnsafeRawBufferPointer(start: frame, count: 4 + sealed), path: temporaryPath)
        chunkIndex += 1
    }

    /// Closes the writer after a successful rename: zeroes the plaintext buffer and the keys.
    private func finish() {
        isOpen = false
        SecureMemory.zero(pending, byteCount: chunkSize)
        pendingCount = 0
        key.zero()
    }

    /// Abandons the writer: closes and removes the temporary file, zeroes buffer and keys.
    private func discard() {
        guard isOpen else { return }
        if fd >= 0 {
            SecureFileSystem.closeDescriptor(fd)
            fd = -1
        }
        if ownsTemporary {
            unlink(temporaryPath)
            ownsTemporary = false
        }
        finish()
    }
}
