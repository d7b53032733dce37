#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBrokerPOSIX

/// The POSIX calls secure files need, with `EINTR` and short transfers handled and failures
/// turned into ``SecureFileError``. Not Foundation: it neither fsyncs nor creates with `O_EXCL`.
enum SecureFileSystem {
    /// Creates `path` for writing with `O_CREAT | O_EXCL` (never an existing file or a link),
    /// mode 0600.
    static func createExclusive(_ path: String) throws(SecureFileError) -> Int32 {
        while true {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            throw .io(operation: "create", path: path, code: errno)
        }
    }

    /// Opens the regular file `path` for reading and returns its descriptor and size.
    ///
    /// - Throws: ``SecureFileError/notFound(_:)``, ``SecureFileError/notARegularFile(_:)`` (a
    ///   folder, a symbolic link, a device or a FIFO: never followed, never blocked on),
    ///   ``SecureFileError/io(operation:path:code:)``.
    static func openForReading(_ path: String, name: String) throws(SecureFileError) -> (fd: Int32, size: Int) {
        var fd: Int32
        repeat {
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        } while fd < 0 && errno == EINTR
        if fd < 0 {
            switch errno {
            case ENOENT, ENOTDIR: throw .notFound(name)
            case ELOOP: throw .notARegularFile(name)
            default: throw .io(operation: "open", path: path, code: errno)
            }
        }
        var stats = stat()
        guard fstat(fd, &stats) == 0 else {
            let code = errno
            close(fd)
            throw .io(operation: "stat", path: path, code: code)
        }
        guard (stats.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .notARegularFile(name)
        }
        return (fd, Int(stats.st_size))
    }

    /// Writes all of `bytes` at the current position.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(SecureFileError) {
        do throws(POSIXFailure) { try DurableIO.writeAll(fd, bytes, path: path) } catch { throw .io(error) }
    }

    /// Writes all of `bytes` at `offset`.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, path: String) throws(SecureFileError) {
        do throws(POSIXFailure) { try DurableIO.writeAll(fd, bytes, at: offset, path: path) } catch { throw .io(error) }
    }

    /// Reads up to `count` bytes at `offset` into `buffer`, stopping early only at end of file.
    /// Returns the number of bytes read.
    static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int,
                          path: String) throws(SecureFileError) -> Int {
        var done = 0
        while done < count {
            let n = pread(fd, buffer + done, count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(operation: "read", path: path, code: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Closes a descriptor (the result is ignored: the data was fsynced first where it matters).
    static func closeDescriptor(_ fd: Int32) {
        _ = close(fd)
    }

    /// Flushes the file's data and metadata to stable storage.
    static func sync(_ fd: Int32, path: String) throws(SecureFileError) {
        if fsync(fd) != 0 {
            throw .io(operation: "fsync", path: path, code: errno)
        }
    }

    /// Atomically replaces `target` with `source` (same folder).
    static func moveIntoPlace(_ source: String, to target: String) throws(SecureFileError) {
        if rename(source, target) != 0 {
            throw .io(operation: "rename", path: source, code: errno)
        }
    }

    /// Makes the entries of `directory` durable (a rename or removal in it survives a power cut).
    static func syncDirectory(_ directory: String) throws(SecureFileError) {
        do throws(POSIXFailure) { try DurableIO.syncDirectory(directory, missingIsFine: true) } catch { throw .io(error) }
    }

    /// Creates `directory` and missing parents with mode 0700, durably.
    static func makeDirectories(_ directory: String) throws(SecureFileError) {
        do throws(POSIXFailure) { try DurableIO.makeDirectories(directory) } catch { throw .io(error) }
    }
}

extension SecureFileError {
    /// The secure files' error for a failed call of the shared durable-file layer.
    static func io(_ failure: POSIXFailure) -> SecureFileError {
        .io(operation: failure.operation, path: failure.path, code: failure.code)
    }
}
