#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBrokerCrypto
import ShareBrokerPOSIX

/// The app's own sensitive files, encrypted at rest, in one folder.
///
/// ```swift
/// let files = try broker.secureFiles(directory: appSupport + "/secure")   // a configured folder
/// try files.write(Array(notes.utf8), to: "notes.txt")          // atomic, encrypted
/// let writer = try files.createFile("video.mov")                 // streaming, bounded memory
/// try writer.write(part1); try writer.write(part2); try writer.close()
/// let reader = try files.open("video.mov")                       // random access
/// let middle = try reader.read(offset: 5_000_000, count: 4096)
/// ```
///
/// **Format.** Every file is a header and fixed-size chunks (64 KiB of plaintext each), each
/// sealed with libsodium's `crypto_secretstream_xchacha20poly1305` under a key derived for that
/// file alone from the app's own file key (format version 2; see `SecureFileFormat` and
/// `docs/FORMATS.md`). Memory stays at two chunk buffers whatever the file size, a damaged chunk
/// is found when it is read (``SecureFileReader/verify()`` checks them all up front), and
/// truncation, reordering and corruption are each reported with their own ``SecureFileError``.
///
/// **Keys and authorization.** Opening or creating a file takes the app's file keys
/// (`FileKeyRing`) from the key custodian: each app gets its own, never another app's, so no
/// other app can open this app's files, even one that holds the group's SecureCopy keys. The
/// custodian keeps every generation of an app's file keys (a new one after each loss of
/// entitlement), so files stay readable however often keys rotate. Legacy version 1 files,
/// sealed under a group key, still open (read only) through the group's `KeyRing`. Before the
/// library is ready, while the user is not authorized, or when secure services are unavailable
/// it throws ``SecureFileError/noKeys(reason:)`` (`ACError` NoKeys).
/// Readers and writers check again on every call, so a retire or a lost authorization stops
/// them at the next read or write.
///
/// **Policy.** Encrypted writes are always allowed (given keys). Under the `required` secure
/// file I/O policy, ``writePlaintext(_:to:)`` is refused with
/// ``SecureFileError/plaintextWriteRefused``.
///
/// **Atomicity.** A file is written to a temporary file in the same folder (`O_EXCL`, mode
/// 0600), fsynced, renamed over the target and the folder fsynced: readers see the old file or
/// the new one, never a mix, and a write that fails or is abandoned leaves the old one intact.
///
/// **Retire.** A retire zeroes the keys this process holds, but the group key lives on with the
/// custodian for the group's other apps. ``ShareBroker/secureFiles(directory:maximumFileSize:)``
/// opens stores only over the configuration's ``ShareBroker/Configuration/secureFileDirectories``,
/// which a retire erases.
///
/// A store is immutable and may be shared between threads; its readers and writers are not.
public final class SecureFileStore: Sendable {
    /// The default cap on a file's plaintext size (64 GiB).
    public static let defaultMaximumFileSize = 64 << 30

    /// The folder the files live in (created, mode 0700, on the first write).
    public let directory: String
    /// The largest plaintext a file of this store may hold: writing past it fails with
    /// ``SecureFileError/fileTooBig(size:limit:)`` and so does opening a file whose header
    /// declares more.
    public let maximumFileSize: Int
    /// Plaintext bytes per chunk for new files.
    let chunkSize: Int
    /// Where keys and policy come from.
    let access: SecureFileAccess

    /// A store whose keys, authorization and policy come from `broker`: files can be opened or
    /// created only while the library is ready, the user is authorized and secure services are
    /// available, and plaintext writes follow the broker's secure file I/O policy. Apps use
    /// ``ShareBroker/secureFiles(directory:maximumFileSize:)``, over a configured folder that a
    /// retire wipes.
    ///
    /// - Parameters:
    ///   - broker: the library instance of this app.
    ///   - directory: the folder for the files (an absolute path is best).
    ///   - maximumFileSize: the cap on a file's plaintext size (see ``maximumFileSize``).
    package convenience init(broker: ShareBroker, directory: String,
                            maximumFileSize: Int = SecureFileStore.defaultMaximumFileSize) {
        self.init(directory: directory, access: .broker(broker), maximumFileSize: maximumFileSize,
                  chunkSize: SecureFileFormat.defaultChunkSize)
    }

    /// A store over keys held directly, for processes that hold keys themselves (a key daemon,
    /// tools, tests). Apps use ``ShareBroker/secureFiles(directory:maximumFileSize:)`` so that
    /// authorization, policy and a retire's wipe apply.
    ///
    /// - Parameters:
    ///   - directory: the folder for the files.
    ///   - fileKeys: the app's own file keys: new files are sealed under the newest generation;
    ///     files under any generation open.
    ///   - legacyKeyRing: the group's key ring, to open legacy version 1 files sealed under a
    ///     group key; `nil`: such files are refused with ``SecureFileError/unknownKey(id:)``.
    ///   - policy: the secure file I/O policy for ``writePlaintext(_:to:)``.
    ///   - maximumFileSize: the cap on a file's plaintext size.
    package convenience init(directory: String, fileKeys: FileKeyRing, legacyKeyRing: KeyRing? = nil,
                            policy: SecureFileIOPolicy = .required,
                            maximumFileSize: Int = SecureFileStore.defaultMaximumFileSize) {
        self.init(directory: directory, access: .keys(fileKeys, legacy: legacyKeyRing, policy: policy),
                  maximumFileSize: maximumFileSize, chunkSize: SecureFileFormat.defaultChunkSize)
    }

    /// The designated initializer; tests choose small chunks.
    init(directory: String, access: SecureFileAccess, maximumFileSize: Int, chunkSize: Int) {
        let chunk = SecureFileFormat.isValidChunkSize(chunkSize) ? chunkSize : SecureFileFormat.defaultChunkSize
        self.directory = directory
        self.access = access
        self.chunkSize = chunk
        self.maximumFileSize = min(max(0, maximumFileSize), SecureFileFormat.maximumPlaintextLength(chunkSize: chunk))
    }

    /// The secure file I/O policy in force now.
    public var policy: SecureFileIOPolicy { access.policy }

    // MARK: Files

    /// Starts writing the encrypted file `name`; the file appears (replacing any file of that
    /// name) only when ``SecureFileWriter/close()`` succeeds.
    ///
    /// - Throws: ``SecureFileError/invalidName(_:)``, ``SecureFileError/noKeys(reason:)``,
    ///   ``SecureFileError/outOfMemory``, ``SecureFileError/io(operation:path:code:)``.
    public func createFile(_ name: String) throws(SecureFileError) -> SecureFileWriter {
        let path = try path(for: name)
        let keys = try access.fileKeys()
        try SecureFileSystem.makeDirectories(directory)
        return try SecureFileWriter(store: self, keys: keys, name: name, path: path)
    }

    /// Opens the encrypted file `name` for random-access reads. The header is authenticated and
    /// the file's size checked against it before this returns; chunks are authenticated as
    /// they are read.
    ///
    /// - Throws: ``SecureFileError/invalidName(_:)``, ``SecureFileError/noKeys(reason:)``,
    ///   ``SecureFileError/notFound(_:)``, ``SecureFileError/notARegularFile(_:)``,
    ///   ``SecureFileError/notASecureFile``, ``SecureFileError/unsupportedVersion(_:)``,
    ///   ``SecureFileError/unknownKey(id:)`` (another app's file, or a key this app no longer
    ///   holds), ``SecureFileError/headerAuthenticationFailed``,
    ///   ``SecureFileError/fileTooBig(size:limit:)``,
    ///   ``SecureFileError/truncated(expectedSize:actualSize:)``,
    ///   ``SecureFileError/trailingData(expectedSize:actualSize:)``,
    ///   ``SecureFileError/outOfMemory``, ``SecureFileError/io(operation:path:code:)``.
    public func open(_ name: String) throws(SecureFileError) -> SecureFileReader {
        let path = try path(for: name)
        let keys = try access.fileKeys()
        return try SecureFileReader(store: self, fileKeys: keys, name: name, path: path)
    }

    /// Writes `bytes` as the encrypted file `name`, atomically (see ``createFile(_:)``).
    ///
    /// - Throws: as ``createFile(_:)`` and ``SecureFileWriter/write(_:)-([UInt8])``.
    public func write(_ bytes: [UInt8], to name: String) throws(SecureFileError) {
        let result: Result<Void, SecureFileError> = bytes.withUnsafeBytes { bytes in
            Result { () throws(SecureFileError) in try write(bytes, to: name) }
        }
        try result.get()
    }

    /// Writes the bytes in `bytes` as the encrypted file `name`, atomically. The bytes are only read.
    public func write(_ bytes: UnsafeRawBufferPointer, to name: String) throws(SecureFileError) {
        let writer = try createFile(name)
        try writer.write(bytes)
        try writer.close()
    }

    /// The whole plaintext of the encrypted file `name` (every chunk authenticated).
    ///
    /// - Throws: as ``open(_:)`` and ``SecureFileReader/read(offset:count:)``.
    public func read(_ name: String) throws(SecureFileError) -> [UInt8] {
        let reader = try open(name)
        defer { reader.close() }
        var bytes = try reader.read(offset: 0, count: reader.size)
        do {
            try reader.authenticateEmptyFinalChunk()
        } catch {
            bytes.withUnsafeMutableBytes { SecureMemory.zero($0.baseAddress, byteCount: $0.count) }
            throw error
        }
        return bytes
    }

    /// Writes `bytes` as the file `name` **in the clear**, atomically, if the secure file I/O
    /// policy allows it (`optional`). Under `required` nothing is written.
    ///
    /// - Throws: ``SecureFileError/plaintextWriteRefused`` under `required`;
    ///   ``SecureFileError/invalidName(_:)``; ``SecureFileError/io(operation:path:code:)``.
    public func writePlaintext(_ bytes: [UInt8], to name: String) throws(SecureFileError) {
        let path = try path(for: name)
        guard access.policy == .optional else { throw .plaintextWriteRefused }
        try SecureFileSystem.makeDirectories(directory)
        let temporary = temporaryPath()
        let fd = try SecureFileSystem.createExclusive(temporary)
        do throws(SecureFileError) {
            let result: Result<Void, SecureFileError> = bytes.withUnsafeBytes { raw in
                Result { () throws(SecureFileError) in try SecureFileSystem.writeAll(fd, raw, path: temporary) }
            }
            try result.get()
            try SecureFileSystem.sync(fd, path: temporary)
            SecureFileSystem.closeDescriptor(fd)
        } catch {
            SecureFileSystem.closeDescriptor(fd)
            unlink(temporary)
            throw error
        }
        do throws(SecureFileError) {
            try SecureFileSystem.moveIntoPlace(temporary, to: path)
        } catch {
            unlink(temporary)
            throw error
        }
        try SecureFileSystem.syncDirectory(directory)
    }

    /// Removes the file `name` durably. Needs no keys.
    ///
    /// - Returns: whether a file was removed (`false`: there was none).
    /// - Throws: ``SecureFileError/invalidName(_:)``, ``SecureFileError/notARegularFile(_:)``
    ///   for a folder, ``SecureFileError/io(operation:path:code:)``.
    @discardableResult
    public func remove(_ name: String) throws(SecureFileError) -> Bool {
        let path = try path(for: name)
        if unlink(path) != 0 {
            switch errno {
            case ENOENT, ENOTDIR: return false
            default:
                let code = errno
                if isDirectory(path) { throw .notARegularFile(name) }
                throw .io(operation: "unlink", path: path, code: code)
            }
        }
        try SecureFileSystem.syncDirectory(directory)
        return true
    }

    /// Whether an entry named `name` exists in the folder (nothing is read or authenticated).
    public func contains(_ name: String) -> Bool {
        guard let path = try? path(for: name) else { return false }
        var stats = stat()
        return lstat(path, &stats) == 0
    }

    /// Removes the temporary files that writers of a crashed process left in the folder (they
    /// hold ciphertext only, so they leak nothing, but they take space). Call it when no writer
    /// of this folder is open, e.g. at launch.
    ///
    /// - Returns: how many were removed.
    /// - Throws: ``SecureFileError/io(operation:path:code:)`` if the folder cannot be read.
    @discardableResult
    public func removeAbandonedTemporaryFiles() throws(SecureFileError) -> Int {
        guard let stream = opendir(directory) else {
            if errno == ENOENT { return 0 }
            throw .io(operation: "open folder", path: directory, code: errno)
        }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) {
                    String(cString: $0)
                }
            }
            if name.hasPrefix(".") && name.hasSuffix(SecureFileFormat.temporarySuffix) { names.append(name) }
        }
        closedir(stream)
        var removed = 0
        for name in names where unlink(directory + "/" + name) == 0 { removed += 1 }
        if removed > 0 { try SecureFileSystem.syncDirectory(directory) }
        return removed
    }

    // MARK: Paths

    /// The path of `name` in the folder, after checking that `name` is one plain file name.
    func path(for name: String) throws(SecureFileError) -> String {
        let utf8 = name.utf8
        guard !utf8.isEmpty, utf8.count <= 255, name != ".", name != "..",
              !utf8.contains(UInt8(ascii: "/")), !utf8.contains(0),
              !name.hasSuffix(SecureFileFormat.temporarySuffix) else {
            throw .invalidName(name)
        }
        return directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// A fresh temporary path in the folder: `.` + 16 random hex digits + the temporary suffix.
    func temporaryPath() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = String(generator.next() as UInt64, radix: 16)
        let padded = String(repeating: "0", count: 16 - digits.count) + digits
        let name = "." + padded + SecureFileFormat.temporarySuffix
        return directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    private func isDirectory(_ path: String) -> Bool {
        var stats = stat()
        return lstat(path, &stats) == 0 && (stats.st_mode & S_IFMT) == S_IFDIR
    }
}

/// Where a ``SecureFileStore`` gets its keys and policy, and the check every read and write
/// makes that sensitive data may still be reached.
enum SecureFileAccess: Sendable {
    /// Through the library: readiness, authorization, secure services, policy.
    case broker(ShareBroker)
    /// Keys held directly: the app's file keys and, for legacy version 1 files, a group ring;
    /// with a fixed policy.
    case keys(FileKeyRing, legacy: KeyRing?, policy: SecureFileIOPolicy)

    /// The secure file I/O policy in force.
    var policy: SecureFileIOPolicy {
        switch self {
        case .broker(let broker): broker.currentSnapshot.secureFileIOPolicy
        case .keys(_, _, let policy): policy
        }
    }

    /// The app's file keys, to create files (version 2) and open version 2 files with.
    ///
    /// - Throws: ``SecureFileError/noKeys(reason:)`` with the reason.
    func fileKeys() throws(SecureFileError) -> FileKeyRing {
        let keys: FileKeyRing
        switch self {
        case .broker(let broker):
            try Self.checkBroker(broker)
            do {
                keys = try broker.platform.secureServices.fileKeys(for: broker.appID)
            } catch {
                throw Self.noKeys(error)
            }
        case .keys(let fileKeys, _, _):
            keys = fileKeys
        }
        guard !keys.isWiped else { throw .noKeys(.wiped) }
        return keys
    }

    /// The group's key ring, to open legacy version 1 files with (`keyID` is the file's).
    ///
    /// - Throws: ``SecureFileError/noKeys(reason:)`` with the reason; ``SecureFileError/unknownKey(id:)``
    ///   when no group ring was given to a store over keys held directly.
    func legacyKeyRing(keyID: UInt32) throws(SecureFileError) -> KeyRing {
        let ring: KeyRing
        switch self {
        case .broker(let broker):
            try Self.checkBroker(broker)
            do {
                ring = try broker.platform.secureServices.keyRing(for: broker.appID)
            } catch {
                throw Self.noKeys(error)
            }
        case .keys(_, let legacy, _):
            guard let legacy else { throw .unknownKey(id: keyID) }
            ring = legacy
        }
        guard !ring.isWiped else { throw .noKeys(.wiped) }
        return ring
    }

    private static func noKeys(_ error: ShareBrokerError) -> SecureFileError {
        if case .notEntitled = error { return .noKeys(.notEntitled) }
        return .noKeys(.secureServicesUnavailable)
    }

    /// Checks, on every read and write, that the user may still reach sensitive data.
    @inline(__always)
    func checkReachable() throws(SecureFileError) {
        if case .broker(let broker) = self {
            try Self.checkBroker(broker)
        }
    }

    private static func checkBroker(_ broker: ShareBroker) throws(SecureFileError) {
        let snapshot = broker.currentSnapshot
        guard snapshot.isReady else { throw .noKeys(.notReady) }
        guard snapshot.authState == .authorized else { throw .noKeys(.notAuthorized) }
        guard snapshot.secureServices == .available,
              broker.platform.secureServices.availability == .available else {
            throw .noKeys(.secureServicesUnavailable)
        }
    }
}

extension ShareBroker {
    /// A ``SecureFileStore`` for the app's sensitive files in `directory`, under this library's
    /// keys, authorization and secure file I/O policy.
    ///
    /// - Parameters:
    ///   - directory: one of the configuration's ``Configuration/secureFileDirectories`` (created,
    ///     mode 0700, on the first write; a trailing `/` does not matter).
    ///   - maximumFileSize: the cap on a file's plaintext size.
    /// - Throws: ``ShareBrokerError/secureFileDirectoryNotConfigured(_:)`` for a folder the
    ///   configuration does not name: every folder of encrypted files is known before
    ///   ``start(delegate:)``, so a retire (and one a crash interrupted, finished at start)
    ///   erases everything in it (wipe step `sharebroker.secure-files`).
    public func secureFiles(directory: String,
                            maximumFileSize: Int = SecureFileStore.defaultMaximumFileSize) throws(ShareBrokerError) -> SecureFileStore {
        guard secureFileDirectories.contains(Self.normalizedFolder(directory)) else {
            throw .secureFileDirectoryNotConfigured(directory)
        }
        return SecureFileStore(broker: self, directory: directory, maximumFileSize: maximumFileSize)
    }
}
