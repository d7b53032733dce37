#if canImport(Glibc)
import Glibc
#endif
import CGIO
import ShareBrokerPOSIX

/// The files a desktop hand-off gives an app: a private folder under the app's runtime folder
/// (`$XDG_RUNTIME_DIR/app/<app-id>/`, the folder Flatpak shares with the app's sandbox), holding
/// a copy of the document or an empty dummy, readable by the user only.
enum PrivateCopy {
    /// A document opened for copying: a regular file. The path the user named may be or go
    /// through symbolic links (a Documents folder on another disk): they are resolved once, and
    /// the file they lead to is opened following no link at all, so a link swapped in after the
    /// resolution fails the open instead of redirecting it. The bytes are then copied once, into
    /// the private copy, so the target never reads the user's file.
    struct Source: ~Copyable {
        let fd: Int32
        let size: Int

        /// Opens `path` (no FIFO: `O_NONBLOCK` keeps a FIFO from blocking the open), refusing a
        /// file that is, or that `path` leads to, in one of `brokerFolders` (the hand-off folders:
        /// another app's private copy is never handed on).
        /// File names are bytes: `path` is taken as it is, UTF-8 or not.
        init(path: [UInt8], brokerFolders: [[UInt8]]) throws(DesktopHandOffError) {
            guard let resolvedPath = realpath(cPath(path), nil) else { throw .documentUnreadable(errno: errno) }
            let resolved = Array(UnsafeRawBufferPointer(start: resolvedPath, count: strlen(resolvedPath)))
            free(resolvedPath)
            for folder in brokerFolders
            where resolved == folder || (resolved.starts(with: folder) && resolved.count > folder.count
                                         && resolved[folder.count] == UInt8(ascii: "/")) {
                throw .documentInBrokerFolder
            }
            let fd = sharebroker_open_no_links(cPath(resolved), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw .documentUnreadable(errno: errno) }
            var st = stat()
            guard fstat(fd, &st) == 0 else {
                let code = errno
                close(fd)
                throw .documentUnreadable(errno: code)
            }
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                close(fd)
                throw .documentNotRegular
            }
            self.fd = fd
            self.size = Int(st.st_size)
        }

        deinit { close(fd) }
    }

    /// `path` as a NUL-terminated C string (a path's bytes, UTF-8 or not).
    static func cPath(_ path: [UInt8]) -> [CChar] {
        path.map { CChar(bitPattern: $0) } + [0]
    }

    /// `folder/name` as bytes.
    static func join(_ folder: String, _ name: [UInt8]) -> [UInt8] {
        Array(folder.utf8) + [UInt8(ascii: "/")] + name
    }

    /// Makes a fresh private folder for `appID` under `runtime` and returns its path.
    static func makeFolder(runtime: String, appID: String) throws(DesktopHandOffError) -> String {
        var st = stat()
        guard lstat(runtime, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw .runtimeFolder(path: runtime, reason: "it does not exist; set XDG_RUNTIME_DIR to the session's runtime folder")
        }
        guard st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else {
            throw .runtimeFolder(path: runtime, reason: "it must belong to this user with mode 0700")
        }
        let apps = runtime + "/app"
        try ensurePrivateFolder(apps)
        let mine = apps + "/" + appID
        try ensurePrivateFolder(mine)
        for _ in 0..<8 {
            var rng = SystemRandomNumberGenerator()
            let folder = mine + "/sharebroker-" + hex(rng.next()) + hex(rng.next())
            if mkdir(folder, 0o700) == 0 { return folder }
            if errno != EEXIST { throw .runtimeFolder(path: mine, reason: "mkdir failed (errno \(errno))") }
        }
        throw .runtimeFolder(path: mine, reason: "could not pick a fresh folder name")
    }

    /// Creates `path` as a folder of this user's, mode 0700, or checks the one there is.
    private static func ensurePrivateFolder(_ path: String) throws(DesktopHandOffError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .runtimeFolder(path: path, reason: "mkdir failed (errno \(errno))")
        }
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == geteuid() else {
            throw .runtimeFolder(path: path, reason: "it is not a folder of this user's (a symbolic link?)")
        }
        if st.st_mode & 0o077 != 0 && chmod(path, 0o700) != 0 {
            throw .runtimeFolder(path: path, reason: "cannot make it private (errno \(errno))")
        }
    }

    /// Creates `folder/name` exclusively, mode 0600.
    private static func create(_ path: [UInt8]) throws(DesktopHandOffError) -> Int32 {
        let fd = open(cPath(path), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .copyFailed(errno: errno) }
        return fd
    }

    /// Copies `source` into `path`: a reflink where the file system shares extents, else
    /// `copy_file_range` (in-kernel), else read/write.
    static func copy(_ source: borrowing Source, to path: [UInt8]) throws(DesktopHandOffError) {
        let out = try create(path)
        defer { close(out) }
        do throws(DesktopHandOffError) {
            if sharebroker_ficlone(out, source.fd) == 0 { return }
            var inKernel = true
            while true {
                if inKernel {
                    // Until end of file (0), whatever size the file has grown or shrunk to.
                    let n = sharebroker_copy_file_range(source.fd, out, max(source.size, 1 << 20))
                    if n > 0 { continue }
                    if n == 0 { return }
                    if errno == EINTR { continue }
                    if errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP || errno == EPERM {
                        inKernel = false
                        continue
                    }
                    throw .copyFailed(errno: errno)
                }
                try readWrite(from: source.fd, to: out)
                return
            }
        } catch {
            unlink(cPath(path))
            throw error
        }
    }

    /// Writes `bytes` into a new `path` (the in-memory document path).
    static func write(_ bytes: [UInt8], to path: [UInt8]) throws(DesktopHandOffError) {
        let out = try create(path)
        defer { close(out) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(out, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                unlink(cPath(path))
                throw .copyFailed(errno: code)
            }
            offset += n
        }
    }

    private static func readWrite(from input: Int32, to output: Int32) throws(DesktopHandOffError) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n == 0 { return }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .copyFailed(errno: errno)
            }
            let written: Result<Void, POSIXFailure> = buffer.withUnsafeBytes { raw in
                Result { () throws(POSIXFailure) in
                    try DurableIO.writeAll(output, UnsafeRawBufferPointer(rebasing: raw[0 ..< n]), path: "")
                }
            }
            if case .failure(let failure) = written { throw .copyFailed(errno: failure.code) }
        }
    }

    /// Removes a hand-off that could not be completed.
    static func discard(file: [UInt8]?, folder: String) {
        if let file { unlink(cPath(file)) }
        rmdir(folder)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
