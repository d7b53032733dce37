#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBrokerAgentProtocol
import ShareBrokerPOSIX
import ShareBrokerCrypto

/// Why the agent could not read or write its state, and what to do.
public struct AgentStateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What the agent was doing (`write`, `fsync`, `rename`...).
    public var operation: String
    /// The file or folder.
    public var path: String
    /// `errno`, or 0 when the content (not the system) was at fault.
    public var code: Int32
    /// More detail for people, when `code` is 0.
    public var detail: String?

    /// Creates an error.
    public init(operation: String, path: String, code: Int32, detail: String? = nil) {
        self.operation = operation
        self.path = path
        self.code = code
        self.detail = detail
    }

    public var description: String {
        if let detail { return "could not \(operation) \(path): \(detail)" }
        let reason = String(cString: strerror(code))
        let advice: String
        switch code {
        case EACCES, EPERM: advice = "check the owner and permissions of the state folder (the agent keeps it 0700)"
        case ENOSPC, EDQUOT: advice = "free some space"
        case EROFS: advice = "the file system is read-only; give a writable --state folder"
        default: advice = "check the path and the file system"
        }
        return "could not \(operation) \(path): \(reason) (errno \(code)); \(advice)"
    }
}

extension AgentStateError {
    /// The agent's error for a failed call of the shared durable-file layer.
    init(_ failure: POSIXFailure) {
        self.init(operation: failure.operation, path: failure.path, code: failure.code)
    }
}

/// Atomic, durable file writes for the agent's state: ``DurableIO`` (the package's one
/// durable-file layer) with the agent's errors, plus reads that insist on files of its own.
enum DurableFile {
    static func parent(of path: String) -> String { DurableIO.parent(of: path) }

    /// fsyncs a folder so that renames and creations in it survive a power cut.
    static func syncDirectory(_ directory: String) throws(AgentStateError) {
        do throws(POSIXFailure) { try DurableIO.syncDirectory(directory) } catch { throw AgentStateError(error) }
    }

    /// Creates `directory` (and parents) with `mode`, durably.
    static func makeDirectories(_ directory: String, mode: mode_t = 0o700) throws(AgentStateError) {
        do throws(POSIXFailure) { try DurableIO.makeDirectories(directory, mode: mode) } catch { throw AgentStateError(error) }
    }

    /// Writes `bytes` to `fd` whole.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(AgentStateError) {
        do throws(POSIXFailure) { try DurableIO.writeAll(fd, bytes, path: path) } catch { throw AgentStateError(error) }
    }

    /// Replaces `path` with `bytes` atomically and durably (``DurableIO/writeAtomically(_:to:durable:)-(UnsafeRawBufferPointer,_,_)``).
    static func writeAtomically(_ bytes: UnsafeRawBufferPointer, to path: String) throws(AgentStateError) {
        do throws(POSIXFailure) { try DurableIO.writeAtomically(bytes, to: path) } catch { throw AgentStateError(error) }
    }

    /// Replaces `path` with `bytes` atomically and durably.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(AgentStateError) {
        do throws(POSIXFailure) { try DurableIO.writeAtomically(bytes, to: path) } catch { throw AgentStateError(error) }
    }

    /// The content of `path` (at most `limit` bytes), or `nil` when it does not exist. The file
    /// must be a regular file (not a link: `O_NOFOLLOW`) owned by the agent's user.
    static func read(_ path: String, limit: Int) throws(AgentStateError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            if errno == ELOOP {
                throw AgentStateError(operation: "open", path: path, code: 0,
                                      detail: "it is a symbolic link; the agent never follows links in its state folder: remove it")
            }
            throw AgentStateError(operation: "open", path: path, code: errno)
        }
        defer { close(fd) }
        try SecureFolders.checkOwnedFile(fd, path: path)
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while out.count <= limit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw AgentStateError(operation: "read", path: path, code: errno)
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        Zeroize.zero(&chunk)
        guard out.count <= limit else {
            throw AgentStateError(operation: "read", path: path, code: 0, detail: "the file is over \(limit) bytes")
        }
        return out
    }
}


/// Owner, mode and symbolic-link checks for the agent's folders and state files: a folder or
/// file another user created (or a link planted in its place) is an error, never used.
enum SecureFolders {
    /// Creates `directory` (and missing parents) with `mode`, or checks the one that exists
    /// (`lstat`): it must be a real folder, not a link, owned by the agent's user (or root), and
    /// writable by nobody else; a `private` folder must also be unreadable by anyone else (it
    /// is made 0700 when the agent owns it).
    static func makeDirectories(_ directory: String, mode: mode_t = 0o700, private: Bool) throws(AgentStateError) {
        var info = stat()
        if lstat(directory, &info) != 0 {
            guard errno == ENOENT else { throw AgentStateError(operation: "inspect folder", path: directory, code: errno) }
            let up = DurableFile.parent(of: directory)
            if up != directory && up != "." && up != "/" {
                var upInfo = stat()
                if lstat(up, &upInfo) != 0 { try makeDirectories(up, mode: mode, private: false) }
            }
            if mkdir(directory, mode) != 0 && errno != EEXIST {
                throw AgentStateError(operation: "create folder", path: directory, code: errno)
            }
            try DurableFile.syncDirectory(up)
            guard lstat(directory, &info) == 0 else {
                throw AgentStateError(operation: "inspect folder", path: directory, code: errno)
            }
        }
        try check(directory, info, private: `private`)
        if `private` {
            // Whoever owns the folder above can rename or replace this one: it must be ours (or
            // root's) and writable by nobody else too.
            let up = DurableFile.parent(of: directory)
            var upInfo = stat()
            guard lstat(up, &upInfo) == 0 else { throw AgentStateError(operation: "inspect folder", path: up, code: errno) }
            try check(up, upInfo, private: false)
        }
        if `private` && (info.st_mode & 0o077) != 0 && info.st_uid == geteuid() {
            guard chmod(directory, 0o700) == 0 else { throw AgentStateError(operation: "chmod 0700", path: directory, code: errno) }
        }
    }

    static func check(_ directory: String, _ info: stat, private: Bool) throws(AgentStateError) {
        let kind = info.st_mode & S_IFMT
        if kind == S_IFLNK {
            throw AgentStateError(operation: "use folder", path: directory, code: 0,
                                  detail: "it is a symbolic link; the agent uses only real folders it owns: remove the link, or give another path")
        }
        guard kind == S_IFDIR else {
            throw AgentStateError(operation: "use folder", path: directory, code: 0, detail: "it is not a folder; remove it, or give another path")
        }
        let me = geteuid()
        guard info.st_uid == me || (!`private` && info.st_uid == 0) else {
            throw AgentStateError(operation: "use folder", path: directory, code: 0,
                                  detail: "it belongs to uid \(info.st_uid), not to the agent's user (uid \(me)); someone else created it. Remove it (as root), or set XDG_RUNTIME_DIR / SHAREBROKER_RUNTIME_DIR to a folder of your own")
        }
        guard (info.st_mode & 0o022) == 0 else {
            throw AgentStateError(operation: "use folder", path: directory, code: 0,
                                  detail: "it is writable by other users (mode \(String(info.st_mode & 0o7777, radix: 8))); use a folder only its owner can write (chmod go-w), or give another path")
        }
    }

    /// An open state file must be a regular file owned by the agent's user.
    static func checkOwnedFile(_ fd: Int32, path: String) throws(AgentStateError) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw AgentStateError(operation: "inspect", path: path, code: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw AgentStateError(operation: "use", path: path, code: 0, detail: "it is not a regular file; remove it")
        }
        guard info.st_uid == geteuid() else {
            throw AgentStateError(operation: "use", path: path, code: 0,
                                  detail: "it belongs to uid \(info.st_uid), not to the agent's user (uid \(geteuid())); someone else planted it: remove it")
        }
    }
}
