#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBrokerCrypto
import ShareBrokerPOSIX

/// A file-system call that failed during a wipe or while keeping the wipe journal.
///
/// Carries the path and `errno`, never file contents.
package struct WipeFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call that failed, e.g. `unlink`, `open`, `fsync`, `rename`.
    package var operation: String
    /// The path it was called on.
    package var path: String
    /// The `errno` it set.
    package var code: Int32

    /// Creates an error.
    package init(operation: String, path: String, code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    package var description: String {
        "could not \(operation) \(path): \(reasonAndAdvice)"
    }

    /// The wipe's error for a failed call of the shared durable-file layer.
    init(_ failure: POSIXFailure) {
        self.init(operation: failure.operation, path: failure.path, code: failure.code)
    }

    /// Why, and what to do, without the path.
    var reasonAndAdvice: String {
        let reason = String(cString: strerror(code))
        let advice: String
        switch code {
        case EACCES, EPERM: advice = "check the owner and permissions of the file and its folder"
        case EROFS: advice = "the file system is read-only; remount it writable"
        case ENOSPC, EDQUOT: advice = "free some space"
        case EXDEV: advice = "it is a mount point inside a registered folder; unmount it or register it separately"
        case EMFILE, ENFILE: advice = "too many open files; raise the open-file limit"
        default: advice = "check the path and the file system"
        }
        return "\(reason) (errno \(code)); \(advice)"
    }

    /// One line for the failures of erasing the registered `location`, naming the location and
    /// how many entries failed but no entry inside it: names of documents stay out of wipe
    /// reports, which reach the app's delegate and the agent's audit log. Grouped by cause.
    static func summary(of failures: [WipeFileError], under location: String) -> [String] {
        var causes: [String: (count: Int, operations: Set<String>)] = [:]
        var order: [String] = []
        for failure in failures {
            let cause = failure.reasonAndAdvice
            if causes[cause] == nil { order.append(cause) }
            causes[cause, default: (0, [])].count += 1
            causes[cause, default: (0, [])].operations.insert(failure.operation)
        }
        return order.compactMap { cause in
            guard let entry = causes[cause] else { return nil }
            let what = entry.count == 1 ? "1 entry" : "\(entry.count) entries"
            return "could not erase \(what) in \(location) (\(entry.operations.sorted().joined(separator: ", "))): \(cause)"
        }
    }
}

/// The POSIX calls the wipe and its journal need: recursive removal that never follows a
/// symbolic link nor crosses into another file system, durable (fsynced) writes and removals.
///
/// Not Foundation: Foundation's file manager neither fsyncs nor handles file names that are
/// not valid UTF-8, and a wipe must remove those too.
enum DurableFiles {
    /// The folder part of a path (``DurableIO/parent(of:)``).
    static func parent(of path: String) -> String { DurableIO.parent(of: path) }

    /// The last component of a path.
    static func lastComponent(of path: String) -> String { DurableIO.lastComponent(of: path) }

    /// Makes the entries of `directory` durable: a rename, creation or removal in it survives
    /// a power cut once this returns. A missing folder is not an error (there is nothing to keep).
    static func syncDirectory(_ directory: String) throws(WipeFileError) {
        do throws(POSIXFailure) { try DurableIO.syncDirectory(directory, missingIsFine: true) } catch { throw WipeFileError(error) }
    }

    /// Creates `directory` and any missing parents with mode 0700, durably.
    static func makeDirectories(_ directory: String) throws(WipeFileError) {
        do throws(POSIXFailure) { try DurableIO.makeDirectories(directory) } catch { throw WipeFileError(error) }
    }

    /// Replaces `path` with `bytes` atomically and (unless `durable` is false) durably; the file
    /// gets mode 0600 (``DurableIO/writeAtomically(_:to:durable:)-([UInt8],_,_)``).
    static func writeAtomically(_ bytes: [UInt8], to path: String, durable: Bool = true) throws(WipeFileError) {
        do throws(POSIXFailure) { try DurableIO.writeAtomically(bytes, to: path, durable: durable) } catch { throw WipeFileError(error) }
    }

    /// The whole content of a regular file, or `nil` when it does not exist (nor can: a part of
    /// its folder's path is a file).
    static func contents(of path: String) throws(WipeFileError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw WipeFileError(operation: "open", path: path, code: errno)
        }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw WipeFileError(operation: "read", path: path, code: errno)
            }
            if n == 0 { return result }
            result.append(contentsOf: chunk[0 ..< n])
        }
    }

    /// Removes one file and makes the removal durable. A file already gone is not an error.
    static func removeFile(_ path: String) throws(WipeFileError) {
        if unlink(path) != 0 && errno != ENOENT {
            throw WipeFileError(operation: "unlink", path: path, code: errno)
        }
        try syncDirectory(parent(of: path))
    }

    /// Erases a registered location and makes the erasure durable.
    ///
    /// * A folder keeps existing but loses everything inside it, recursively.
    /// * A file, or a symbolic link, is unlinked. Links are never followed, at any depth, so a
    ///   link cannot make the wipe reach outside the registered locations.
    /// * A folder of another file system mounted inside is not entered; it is reported.
    /// * A location that does not exist is already erased.
    ///
    /// Every entry is attempted even when some fail; the failures are returned, in order.
    /// The folders whose entries changed are fsynced, so the removals survive a power cut.
    static func eraseLocation(_ path: String) -> [WipeFileError] {
        var stats = stat()
        if lstat(path, &stats) != 0 {
            if errno == ENOENT {
                // Gone already; a removal an earlier run made may not have reached the disk.
                do { try syncDirectory(parent(of: path)) } catch { return [error] }
                return []
            }
            return [WipeFileError(operation: "stat", path: path, code: errno)]
        }
        guard (stats.st_mode & S_IFMT) == S_IFDIR else {
            do { try removeFile(path) } catch { return [error] }
            return []
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return [WipeFileError(operation: "open", path: path, code: errno)] }
        defer { close(fd) }
        var failures = removeContents(of: fd, path: path, device: stats.st_dev)
        if fsync(fd) != 0 {
            failures.append(WipeFileError(operation: "fsync", path: path, code: errno))
        }
        return failures
    }

    /// ``eraseLocation(_:)`` as lines for a wipe report: ``WipeFileError/summary(of:under:)``.
    static func eraseLocationForReport(_ path: String) -> [String] {
        WipeFileError.summary(of: eraseLocation(path), under: path)
    }

    /// Removes every entry of the open folder `fd`, recursively, staying on `device`.
    private static func removeContents(of fd: Int32, path: String, device: dev_t) -> [WipeFileError] {
        var failures: [WipeFileError] = []
        // Entries created while we remove (by a racing writer) get two more passes.
        for _ in 0 ..< 3 {
            let names: [[CChar]]
            switch entryNames(of: fd, path: path) {
            case .success(let list): names = list
            case .failure(let error): return failures + [error]
            }
            if names.isEmpty { return failures }
            failures = []
            for name in names {
                failures += removeEntry(name, in: fd, parentPath: path, device: device)
            }
            if !failures.isEmpty { return failures }
        }
        return failures
    }

    /// Removes one entry of the open folder `parentFD`: a folder with its contents, anything
    /// else by unlinking it.
    private static func removeEntry(_ name: [CChar], in parentFD: Int32, parentPath: String,
                                    device: dev_t) -> [WipeFileError] {
        let path = parentPath + "/" + displayName(name)
        var stats = stat()
        let found = fstatat(parentFD, name, &stats, AT_SYMLINK_NOFOLLOW)
        if found != 0 {
            if errno == ENOENT { return [] }
            return [WipeFileError(operation: "stat", path: path, code: errno)]
        }
        if (stats.st_mode & S_IFMT) == S_IFDIR {
            if stats.st_dev != device {
                return [WipeFileError(operation: "enter", path: path, code: EXDEV)]
            }
            let child = openat(parentFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard child >= 0 else {
                if errno == ENOENT { return [] }
                return [WipeFileError(operation: "open", path: path, code: errno)]
            }
            let failures = removeContents(of: child, path: path, device: device)
            close(child)
            if !failures.isEmpty { return failures }
            let removed = unlinkat(parentFD, name, AT_REMOVEDIR)
            if removed != 0 && errno != ENOENT {
                return [WipeFileError(operation: "remove folder", path: path, code: errno)]
            }
            return []
        }
        let removed = unlinkat(parentFD, name, 0)
        if removed != 0 && errno != ENOENT {
            return [WipeFileError(operation: "unlink", path: path, code: errno)]
        }
        return []
    }

    /// The names in an open folder (without `.` and `..`), as raw NUL-terminated bytes: a name
    /// need not be valid UTF-8, and a repaired name would name a different file.
    private static func entryNames(of fd: Int32, path: String) -> Result<[[CChar]], WipeFileError> {
        // fdopendir takes ownership of its descriptor: give it a duplicate.
        let copy = dup(fd)
        guard copy >= 0 else { return .failure(WipeFileError(operation: "dup", path: path, code: errno)) }
        guard let stream = fdopendir(copy) else {
            let code = errno
            close(copy)
            return .failure(WipeFileError(operation: "open folder", path: path, code: code))
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [[CChar]] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { return .failure(WipeFileError(operation: "read folder", path: path, code: errno)) }
                return .success(names)
            }
            let name: [CChar] = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) { start in
                    Array(UnsafeBufferPointer(start: start, count: strlen(start) + 1))
                }
            }
            if name == [46, 0] || name == [46, 46, 0] { continue }  // "." and ".."
            names.append(name)
        }
    }

    /// A printable form of a raw name for error messages (invalid UTF-8 is repaired here only).
    private static func displayName(_ name: [CChar]) -> String {
        String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
