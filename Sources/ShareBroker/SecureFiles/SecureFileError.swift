#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBrokerCrypto

/// AppConnect's `ACError` codes, which secure file I/O reports (raw values as the iOS SDK
/// defines them). Every ``SecureFileError`` maps to one through ``SecureFileError/code``.
package enum SecureFileErrorCode: Int32, Sendable, CaseIterable, Hashable {
    /// `NoError`: success.
    case noError = 0
    /// `NoKeys`: secure services are unavailable (no keys delivered, the user is not authorized,
    /// the library is not ready, or the keys were wiped).
    case noKeys = 1
    /// `FileTooBig`: the file exceeds the documented size cap.
    case fileTooBig = 2
    /// `NegativeFileLen`: a negative offset or length was given.
    case negativeFileLength = 3
    /// `LowMemory`: guarded key memory or a buffer could not be allocated.
    case lowMemory = 4
    /// `BadKeyOrCorruptData`: the file is not readable with the keys at hand: wrong key, or
    /// damaged (altered, truncated, reordered) data.
    case badKeyOrCorruptData = 5
    /// `InvalidArg`: an argument was not acceptable (a bad name, a closed handle, a refused
    /// plaintext write).
    case invalidArgument = 6
    /// `RegularFileOnly`: the path names something other than a regular file.
    case regularFileOnly = 7
    /// `Internal`: the operating system refused an operation (see the error's description).
    case `internal` = 444
}

/// Why the key custodian's keys could not be used for secure files: the text of
/// ``SecureFileError/noKeys(reason:)``.
package enum SecureFileNoKeysReason: Sendable, Hashable, CustomStringConvertible {
    /// No policy has arrived yet; sensitive data is not reachable before ready.
    case notReady
    /// The user is not authorized (or the app was retired).
    case notAuthorized
    /// Secure services are unavailable: the management client has not delivered the keys.
    case secureServicesUnavailable
    /// The app is not entitled to the group's keys.
    case notEntitled
    /// The keys were wiped (retire) while they were in use.
    case wiped
    /// libsodium could not start in this process.
    case cryptoUnavailable

    package var description: String {
        switch self {
        case .notReady: "the library is not ready (no policy has arrived yet)"
        case .notAuthorized: "the user is not authorized"
        case .secureServicesUnavailable: "secure services are unavailable (no keys were delivered)"
        case .notEntitled: "the app is not entitled to the group's keys"
        case .wiped: "the keys were wiped"
        case .cryptoUnavailable: "libsodium could not be initialized"
        }
    }
}

/// What went wrong with a secure file, and what to do about it.
///
/// Every way a file can be unreadable has its own case: "not ours" (``notASecureFile``), "ours,
/// but a key we do not hold" (``unknownKey(id:)``), "wrong key or damaged header"
/// (``headerAuthenticationFailed``), and damage to the body: ``corruptChunk(index:)``,
/// ``truncated(expectedSize:actualSize:)``, ``chunkOutOfOrder(position:foundIndex:)``,
/// ``trailingData(expectedSize:actualSize:)``. `code` (package access) maps each case to AppConnect's `ACError`
/// and ``posixErrorCode`` to the `errno` a POSIX-like call would set. No case carries file
/// contents or key bytes.
public enum SecureFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No keys: secure services are unavailable, or the user may not reach sensitive data now;
    /// `reason` says which, in words (the library is not ready, the user is not authorized,
    /// secure services are unavailable, the app is not entitled, the keys were wiped).
    /// Nothing was read or written. Wait for the keys (``ShareBrokerDelegate`` reports ready,
    /// authorization and secure services) and try again. `ACError` NoKeys, `EACCES`.
    case noKeys(reason: String)

    /// ``noKeys(reason:)`` for `reason`.
    package static func noKeys(_ reason: SecureFileNoKeysReason) -> SecureFileError {
        .noKeys(reason: reason.description)
    }
    /// The secure file I/O policy is `required`, so a plaintext write through this API was
    /// refused; nothing was written. Write through ``SecureFileStore/write(_:to:)-([UInt8],_)``
    /// instead. `ACError` InvalidArg, `EPERM`.
    case plaintextWriteRefused
    /// The file (written so far, or as its header declares) exceeds the cap given to the store
    /// (``SecureFileStore/maximumFileSize``); a write is abandoned, leaving any previous version
    /// intact, and a read refuses the file before decrypting it. `ACError` FileTooBig, `EFBIG`.
    case fileTooBig(size: Int, limit: Int)
    /// A negative offset or byte count was given. `ACError` NegativeFileLen, `EINVAL`.
    case negativeLength(Int)
    /// Guarded key memory or a chunk buffer could not be allocated. Free memory and retry.
    /// `ACError` LowMemory, `ENOMEM`.
    case outOfMemory
    /// The file does not start with the secure file magic: it is not a secure file (perhaps a
    /// plaintext file). `ACError` BadKeyOrCorruptData, `EIO`.
    case notASecureFile
    /// The file was written in a format version (or with a layout) this library does not read.
    /// Update the library. `ACError` BadKeyOrCorruptData, `EIO`.
    case unsupportedVersion(UInt8)
    /// The file is sealed under a key this app does not hold: a version 2 file of another app
    /// (file keys are per app), one whose keys were dropped when the app was retired, or a
    /// legacy version 1 file under a group key rotated out long ago. `ACError`
    /// BadKeyOrCorruptData, `EIO`.
    case unknownKey(id: UInt32)
    /// The file header failed authentication: the key with this id is not the one that wrote
    /// the file (a wrong key), or the header was altered. Nothing was decrypted.
    /// `ACError` BadKeyOrCorruptData, `EIO`.
    case headerAuthenticationFailed
    /// The chunk at `index` (0-based) failed authentication: its bytes were altered (or it
    /// comes from another file). No byte of it was returned. `ACError` BadKeyOrCorruptData, `EIO`.
    case corruptChunk(index: Int)
    /// The file is shorter than its authenticated header says: it was cut short (a chunk
    /// dropped, or cut mid-chunk). `ACError` BadKeyOrCorruptData, `EIO`.
    case truncated(expectedSize: Int, actualSize: Int)
    /// The chunk at `position` is an authentic chunk of this file that belongs at `foundIndex`:
    /// chunks were reordered. `ACError` BadKeyOrCorruptData, `EIO`.
    case chunkOutOfOrder(position: Int, foundIndex: Int)
    /// The file is longer than its authenticated header says: bytes were appended.
    /// `ACError` BadKeyOrCorruptData, `EIO`.
    case trailingData(expectedSize: Int, actualSize: Int)
    /// The name is not a single file name: empty, `.` or `..`, containing `/` or NUL, longer
    /// than 255 bytes, or ending in the reserved temporary suffix. `ACError` InvalidArg, `EINVAL`.
    case invalidName(String)
    /// No file of this name exists in the store's folder. `ACError` InvalidArg, `ENOENT`.
    case notFound(String)
    /// The writer or reader was already closed (or abandoned after an error). Open a new one.
    /// `ACError` InvalidArg, `EBADF`.
    case closed
    /// The name refers to something other than a regular file (a folder, a link, a device).
    /// `ACError` RegularFileOnly, `EISDIR`/`ELOOP`.
    case notARegularFile(String)
    /// A system call failed: `operation` on `path` set `errno` to `code`. Nothing was half
    /// written. `ACError` Internal.
    case io(operation: String, path: String, code: Int32)

    /// The AppConnect `ACError` code this error corresponds to.
    package var code: SecureFileErrorCode {
        switch self {
        case .noKeys: .noKeys
        case .fileTooBig: .fileTooBig
        case .negativeLength: .negativeFileLength
        case .outOfMemory: .lowMemory
        case .notASecureFile, .unsupportedVersion, .unknownKey, .headerAuthenticationFailed, .corruptChunk,
             .truncated, .chunkOutOfOrder, .trailingData:
            .badKeyOrCorruptData
        case .plaintextWriteRefused, .invalidName, .notFound, .closed: .invalidArgument
        case .notARegularFile: .regularFileOnly
        case .io: .internal
        }
    }

    /// The `errno` a POSIX-like call would set for this error (`EACCES` for no keys, `EIO` for a
    /// wrong key or corrupt data, as AppConnect's secure file calls do).
    public var posixErrorCode: Int32 {
        switch self {
        case .noKeys: EACCES
        case .plaintextWriteRefused: EPERM
        case .fileTooBig: EFBIG
        case .negativeLength, .invalidName: EINVAL
        case .outOfMemory: ENOMEM
        case .notASecureFile, .unsupportedVersion, .unknownKey, .headerAuthenticationFailed, .corruptChunk,
             .truncated, .chunkOutOfOrder, .trailingData:
            EIO
        case .notFound: ENOENT
        case .closed: EBADF
        case .notARegularFile: EISDIR
        case .io(_, _, let code): code
        }
    }

    public var description: String {
        switch self {
        case .noKeys(let reason):
            "no keys: \(reason); secure files cannot be opened or created until the keys are delivered and the user is authorized"
        case .plaintextWriteRefused:
            "the secure file I/O policy is required: plaintext writes are refused; write the file encrypted"
        case .fileTooBig(let size, let limit):
            "the file is \(size) bytes, over the \(limit)-byte cap; nothing was written or decrypted"
        case .negativeLength(let value):
            "negative offset or length \(value); pass a value of 0 or more"
        case .outOfMemory:
            "memory for keys or chunk buffers could not be allocated; free memory and retry"
        case .notASecureFile:
            "the file is not a secure file (wrong magic); it was not written by this API"
        case .unsupportedVersion(let version):
            "the secure file has format version \(version) or a layout this library does not read; update the library"
        case .unknownKey(let id):
            "the file is sealed under key \(KeyIDFormat.hex(id)), which this app does not hold: secure files are sealed under per-app file keys, so it is another app's file (or its keys were dropped when the app was retired); it cannot be read here"
        case .headerAuthenticationFailed:
            "the file header failed authentication: wrong key or altered header; nothing was decrypted"
        case .corruptChunk(let index):
            "chunk \(index) of the file failed authentication (corrupt data); restore the file from a good copy"
        case .truncated(let expected, let actual):
            "the file is truncated: \(actual) bytes where its header says \(expected); restore the file from a good copy"
        case .chunkOutOfOrder(let position, let found):
            "chunk \(found) of the file was found at position \(position): chunks were reordered; restore the file from a good copy"
        case .trailingData(let expected, let actual):
            "the file has \(actual - expected) bytes appended after its last chunk (\(actual) bytes, header says \(expected)); restore the file from a good copy"
        case .invalidName(let name):
            "'\(name)' is not a valid secure file name: use one path component, not '.', '..' or a name ending in '\(SecureFileFormat.temporarySuffix)'"
        case .notFound(let name):
            "no secure file named '\(name)' exists in the store's folder"
        case .closed:
            "the secure file handle is closed; open a new one"
        case .notARegularFile(let name):
            "'\(name)' is not a regular file (a folder, link or device); secure files are regular files only"
        case .io(let operation, let path, let code):
            "could not \(operation) \(path): \(String(cString: strerror(code))) (errno \(code)); nothing was half written"
        }
    }
}

extension SecureFileError {
    /// Maps a key ring failure to the secure file error it means here.
    init(_ error: SealingError) {
        switch error {
        case .wiped: self = .noKeys(.wiped)
        case .sodiumInitFailed: self = .noKeys(.cryptoUnavailable)
        case .outOfSecureMemory: self = .outOfMemory
        case .unknownKey(let id): self = .unknownKey(id: id)
        default: self = .headerAuthenticationFailed
        }
    }
}
