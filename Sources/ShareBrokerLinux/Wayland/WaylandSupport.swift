#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// A result handed from the event thread to a waiting caller, at most once.
final class Completion<T: Sendable>: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let slot = Mutex<T?>(nil)

    /// Delivers `value` unless a value was already delivered.
    func complete(_ value: T) {
        let first = slot.withLock { slot -> Bool in
            guard slot == nil else { return false }
            slot = value
            return true
        }
        if first { semaphore.signal() }
    }

    /// The value, or `nil` when none came within `timeout`.
    func wait(timeout: Duration) -> T? {
        _ = semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.nanoseconds)))
        return slot.withLock { $0 }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue + attoseconds / 1_000_000_000
    }

    /// Milliseconds for `poll`, at least 1, at most `Int32.max`.
    var pollMilliseconds: Int32 {
        Int32(clamping: max(1, nanoseconds / 1_000_000))
    }
}

/// Blocks `SIGPIPE` for the calling thread (threads it starts inherit the mask).
func blockSIGPIPE() {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGPIPE)
    pthread_sigmask(SIG_BLOCK, &set, nil)
}

/// Sets `O_NONBLOCK` on `fd`; returns whether it could.
@discardableResult
func setNonBlocking(_ fd: Int32) -> Bool {
    let flags = fcntl(fd, F_GETFL)
    return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0
}

/// Writes `bytes` to the non-blocking `fd`, waiting at most `idleTimeout` for the reader each
/// time the pipe is full, then closes `fd`. Returns whether every byte was written. A reader
/// that stops reading (or closes its end) ends the transfer after `idleTimeout` (or at once).
@discardableResult
func serveAndClose(_ fd: Int32, _ bytes: [UInt8], idleTimeout: Duration) -> Bool {
    defer { close(fd) }
    guard setNonBlocking(fd) else { return false }
    var written = 0
    let chunk = 1 << 16
    while written < bytes.count {
        let n = bytes.withUnsafeBytes { raw in
            write(fd, raw.baseAddress.map { $0 + written }, min(chunk, raw.count - written))
        }
        if n > 0 {
            written += n
            continue
        }
        if n < 0 && errno == EINTR { continue }
        guard n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) else { return false }
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&pfd, 1, idleTimeout.pollMilliseconds)
        if ready < 0 && errno == EINTR { continue }
        guard ready > 0, pfd.revents & Int16(POLLERR | POLLHUP | POLLNVAL) == 0 else { return false }
    }
    return true
}

/// How reading a transfer ended.
enum TransferRead: Equatable {
    case complete([UInt8])
    case timedOut
    case tooLarge
    case failed(Int32)
}

/// Reads `fd` to end of file, waiting at most `idleTimeout` for each next byte, finishing by
/// `deadline` (if any) and taking at most `limit` bytes, then closes `fd`.
func readAllAndClose(_ fd: Int32, limit: Int, idleTimeout: Duration, deadline: ContinuousClock.Instant? = nil) -> TransferRead {
    defer { close(fd) }
    guard setNonBlocking(fd) else { return .failed(errno) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n > 0 {
            guard out.count + n <= limit else { return .tooLarge }
            out.append(contentsOf: buffer[0..<n])
            continue
        }
        if n == 0 { return .complete(out) }
        if errno == EINTR { continue }
        guard errno == EAGAIN || errno == EWOULDBLOCK else { return .failed(errno) }
        var wait = idleTimeout
        if let deadline {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return .timedOut }
            wait = min(wait, left)
        }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, wait.pollMilliseconds)
        if ready < 0 && errno == EINTR { continue }
        if ready == 0 { return .timedOut }
        if ready < 0 { return .failed(errno) }
    }
}
