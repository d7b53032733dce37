#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes every byte of `bytes` to `fd`, retrying short writes and `EINTR`.
/// - Returns: `nil` on success, or the `errno` of the write that failed.
package func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
    var written = 0
    while written < bytes.count {
        let n = bytes.withUnsafeBytes { raw in
            write(fd, raw.baseAddress.map { $0 + written }, raw.count - written)
        }
        if n < 0 {
            if errno == EINTR { continue }
            return errno
        }
        written += n
    }
    return nil
}
