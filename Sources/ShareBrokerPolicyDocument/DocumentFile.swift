#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a document file could not be read (as opposed to read and found invalid).
public struct PolicyDocumentFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file.
    public let path: String
    /// What went wrong, from the system, and what to do.
    public let reason: String
    /// Whether the file was readable but over the size limit: a data error, not an I/O error.
    public let tooLarge: Bool

    /// `path: reason`.
    public var description: String { "\(path): \(reason)" }
}

/// Reads document files without ever holding more than the size limit in memory.
public enum PolicyDocumentFile {
    /// Reads at most ``PolicyDocumentLimits/maxDocumentBytes`` bytes of `path` (`-` is standard
    /// input). A larger file is refused after reading one byte past the limit, whatever its size,
    /// so a 10 GB file or an endless pipe costs 4 MiB, not 10 GB.
    public static func read(_ path: String, limits: PolicyDocumentLimits = .standard)
        throws(PolicyDocumentFileError) -> [UInt8] {
        let fd: Int32 = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure(path, errno) }
        defer { if fd != 0 { close(fd) } }
        let cap = limits.maxDocumentBytes + 1
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while out.count < cap {
            let want = min(chunk.count, cap - out.count)
            let n = chunk.withUnsafeMutableBytes { Glue.read(fd, $0.baseAddress, want) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure(path, errno)
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        if out.count > limits.maxDocumentBytes {
            throw PolicyDocumentFileError(path: path, reason: StrictJSONParser.tooLarge(nil, limits: limits), tooLarge: true)
        }
        return out
    }

    private static func failure(_ path: String, _ code: Int32) -> PolicyDocumentFileError {
        let reason: String
        switch code {
        case ENOENT: reason = "no such file; check the path"
        case EACCES: reason = "permission denied; check the file's permissions"
        case EISDIR: reason = "this is a folder; give the path of a JSON file"
        default: reason = "cannot read the file (\(String(cString: strerror(code))))"
        }
        return PolicyDocumentFileError(path: path, reason: reason, tooLarge: false)
    }
}

/// The C `read`, named apart from ``PolicyDocumentFile/read(_:limits:)``.
private enum Glue {
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.read(fd, buffer, count)
        #elseif canImport(Musl)
        Musl.read(fd, buffer, count)
        #else
        Darwin.read(fd, buffer, count)
        #endif
    }
}
