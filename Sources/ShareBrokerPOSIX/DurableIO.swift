#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A system call that failed: what it was, on which path, and `errno`. Each module turns it into
/// its own error type (``DurableIO`` is the one implementation they share).
package struct POSIXFailure: Error, Sendable, Hashable {
    /// The call, in words (`write`, `fsync folder`, `rename`...).
    package var operation: String
    /// The file or folder.
    package var path: String
    /// `errno`.
    package var code: Int32

    package init(_ operation: String, _ path: String, _ code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }
}

/// Durable file plumbing in POSIX (no Foundation: it neither fsyncs nor creates with `O_EXCL`):
/// path parts, whole writes, folder syncs, folder creation and atomic replacement. The agent's
/// state, the wipe journal, secure files and the pasteboard file all write through it.
package enum DurableIO {
    /// The folder part of a path (`/` for a file at the root, `.` for a bare name).
    package static func parent(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == path.utf8.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// The last component of a path.
    package static func lastComponent(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.utf8.index(after: slash)...])
    }

    /// Writes all of `bytes` to `fd` at its position, retrying short writes and `EINTR`.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(POSIXFailure) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = write(fd, base + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw POSIXFailure("write", path, errno)
            }
            done += n
        }
    }

    /// Writes all of `bytes` to `fd` at `offset`, retrying short writes and `EINTR`.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, path: String) throws(POSIXFailure) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, base + done, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw POSIXFailure("write", path, errno)
            }
            done += n
        }
    }

    /// fsyncs a folder, so that creations, renames and removals in it survive a power cut.
    /// With `missingIsFine`, a folder that does not exist is not an error (nothing to keep).
    package static func syncDirectory(_ directory: String, missingIsFine: Bool = false) throws(POSIXFailure) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 {
            if missingIsFine && errno == ENOENT { return }
            throw POSIXFailure("open folder", directory, errno)
        }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw POSIXFailure("fsync folder", directory, errno) }
    }

    /// Creates `directory` and missing parents with `mode`, durably (each new folder's parent is
    /// fsynced, so a file made durable inside it cannot vanish with its folder). An existing
    /// folder is fine; an existing non-folder is `ENOTDIR`.
    package static func makeDirectories(_ directory: String, mode: mode_t = 0o700) throws(POSIXFailure) {
        var stats = stat()
        if stat(directory, &stats) == 0 {
            if (stats.st_mode & S_IFMT) == S_IFDIR { return }
            throw POSIXFailure("create folder", directory, ENOTDIR)
        }
        let up = parent(of: directory)
        if up != directory && up != "." && up != "/" { try makeDirectories(up, mode: mode) }
        if mkdir(directory, mode) != 0 {
            if errno == EEXIST { return }
            throw POSIXFailure("create folder", directory, errno)
        }
        try syncDirectory(up)
    }

    /// Replaces `path` with `bytes` atomically: a temporary file next to it (`PATH.tmp`, created
    /// with `O_EXCL | O_NOFOLLOW`, mode 0600; a leftover of a crash is removed first, and
    /// `unlink` never follows a link), written whole, fsynced, renamed over `path`, and the
    /// folder fsynced. A reader, or this process after a crash at any moment, sees the old
    /// content or the new, never a mix. With `durable` false the fsyncs are skipped (still
    /// atomic; a power cut may keep the old content).
    package static func writeAtomically(_ bytes: UnsafeRawBufferPointer, to path: String, durable: Bool = true) throws(POSIXFailure) {
        let temporary = path + ".tmp"
        var fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 && errno == EEXIST {
            unlink(temporary)
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        }
        guard fd >= 0 else { throw POSIXFailure("create", temporary, errno) }
        do throws(POSIXFailure) {
            _ = fchmod(fd, 0o600)
            try writeAll(fd, bytes, path: temporary)
            if durable && fsync(fd) != 0 { throw POSIXFailure("fsync", temporary, errno) }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw POSIXFailure("rename", temporary, code)
        }
        if durable { try syncDirectory(parent(of: path)) }
    }

    /// ``writeAtomically(_:to:durable:)-(UnsafeRawBufferPointer,_,_)`` of an array.
    package static func writeAtomically(_ bytes: [UInt8], to path: String, durable: Bool = true) throws(POSIXFailure) {
        let result: Result<Void, POSIXFailure> = bytes.withUnsafeBytes { raw in
            Result { () throws(POSIXFailure) in try writeAtomically(raw, to: path, durable: durable) }
        }
        try result.get()
    }
}
