import CSodium
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import ShareBroker
import ShareBrokerCrypto

/// Helpers shared by the Sealing suites.
enum SealingFixture {
    /// A plain-text pasteboard type.
    static let textType = "public.utf8-plain-text"

    /// Deterministic bytes of length `count` (not secret, not random: easy to compare).
    static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    /// Fresh random bytes.
    static func random(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress { randombytes_buf(base, buffer.count) }
        }
        return out
    }

    /// A ring of one key with known bytes (so tests can check against raw libsodium).
    static func ring(keyBytes: [UInt8], id: UInt32, nonces: NonceSource = .shared) throws -> KeyRing {
        KeyRing(current: KeyBox(key: try GroupKey(id: id, importing: keyBytes), nonces: nonces), previous: [])
    }

    /// Where the nonce of an envelope starts (version 1 or 2 layout).
    static func nonceOffset(of envelope: [UInt8]) -> Int {
        let typeEnd = EnvelopeFormat.fixedHeaderLength + Int(envelope[10])
        guard envelope[4] == EnvelopeFormat.version else { return typeEnd }
        return typeEnd + EnvelopeFormat.provenanceFixedLength + Int(envelope[typeEnd + 8])
    }

    /// Header length of an envelope (magic through nonce).
    static func headerLength(of envelope: [UInt8]) -> Int {
        nonceOffset(of: envelope) + EnvelopeFormat.nonceLength
    }

    /// The 24-byte nonce field of an envelope.
    static func nonce(of envelope: [UInt8]) -> [UInt8] {
        let start = nonceOffset(of: envelope)
        return Array(envelope[start..<(start + EnvelopeFormat.nonceLength)])
    }

    /// The key id field of an envelope.
    static func keyID(of envelope: [UInt8]) -> UInt32 {
        envelope[6..<10].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Writes `id` into an envelope's key id field.
    static func relabel(_ envelope: [UInt8], keyID id: UInt32) -> [UInt8] {
        var copy = envelope
        copy[6] = UInt8(truncatingIfNeeded: id >> 24)
        copy[7] = UInt8(truncatingIfNeeded: id >> 16)
        copy[8] = UInt8(truncatingIfNeeded: id >> 8)
        copy[9] = UInt8(truncatingIfNeeded: id)
        return copy
    }

    /// Parses hex (Wycheproof fields).
    static func hex(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for c in text.utf8 {
            let v: UInt8
            switch c {
            case 48...57: v = c - 48
            case 97...102: v = c - 87
            case 65...70: v = c - 55
            default: continue
            }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return out
    }

    /// Runs `body` and returns the `SealingError` it threw, or `nil` if it did not throw.
    static func sealingError<T>(_ body: () throws(SealingError) -> T) -> SealingError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    /// Runs `child` in a real `fork` child and returns its exit status and the bytes it produced:
    /// the child writes them to a pipe and leaves with `_exit` (no atexit handler, no Swift
    /// Testing code), status 0 only when `child` answered and every byte was written. The parent
    /// reads with a 20 s deadline, so a wedged child fails the test instead of hanging it (and is
    /// killed when it sent nothing).
    static func inForkChild(_ child: () -> [UInt8]?) -> (status: Int32, output: [UInt8]) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return (-1, []) }
        let pid = fork()
        if pid == 0 {
            var status: Int32 = 1
            if let output = child() {
                var offset = 0
                while offset < output.count {
                    let written = output.withUnsafeBytes { write(fds[1], $0.baseAddress! + offset, $0.count - offset) }
                    guard written > 0 else { break }
                    offset += written
                }
                if offset == output.count { status = 0 }
            }
            _exit(status)
        }
        close(fds[1])
        defer { close(fds[0]) }
        guard pid > 0 else { return (-1, []) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var pollSet = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        while poll(&pollSet, 1, 20_000) > 0 {
            let count = buffer.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        var status: Int32 = 0
        if received.isEmpty { kill(pid, SIGKILL) }
        _ = waitpid(pid, &status, 0)
        return (status, received)
    }
}
