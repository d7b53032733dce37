// Shared by the libFuzzer harnesses under Fuzz/Sources/Fuzz*/ (see scripts/fuzz.sh and Fuzz/README.md).
// Nothing here is part of the library; the harness executables are built with
// `--sanitize=fuzzer --sanitize=address` by scripts/fuzz.sh and as do-nothing executables by a
// plain `swift build`.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads structured values from a fuzz input, front to back, so a harness can turn bytes into
/// choices (which key, how long, which mutation). Past the end every read returns zero or an
/// empty array, so every input means something and the same input always means the same thing.
public struct FuzzInput {
    /// The whole input.
    public let bytes: [UInt8]
    /// The next byte to read.
    public private(set) var offset = 0

    /// An input over a copy of `count` bytes at `start` (libFuzzer's arguments).
    public init(_ start: UnsafePointer<UInt8>?, _ count: Int) {
        if let start, count > 0 {
            bytes = Array(UnsafeBufferPointer(start: start, count: count))
        } else {
            bytes = []
        }
    }

    /// An input over `bytes` (regression tests).
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Bytes not read yet.
    public var remaining: Int { bytes.count - offset }

    /// Whether everything has been read.
    public var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte, or 0 at the end.
    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next two bytes, big-endian.
    public mutating func uint16() -> UInt16 {
        UInt16(byte()) << 8 | UInt16(byte())
    }

    /// The next four bytes, big-endian.
    public mutating func uint32() -> UInt32 {
        UInt32(uint16()) << 16 | UInt32(uint16())
    }

    /// A number in `0...upper` taken from the next two bytes.
    public mutating func int(upTo upper: Int) -> Int {
        precondition(upper >= 0)
        return Int(uint16()) % (upper + 1)
    }

    /// The next `count` bytes, fewer at the end.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        let n = max(0, min(count, remaining))
        defer { offset += n }
        return Array(bytes[offset..<(offset + n)])
    }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] {
        bytes(remaining)
    }
}

/// Stops the process with `message` when an invariant a harness checks does not hold: libFuzzer
/// reports it as a crash and saves the input.
public func fuzzRequire(_ condition: Bool, _ message: @autoclosure () -> String,
                        file: StaticString = #fileID, line: UInt = #line) {
    if !condition {
        fatalError("fuzz invariant violated: \(message())", file: file, line: line)
    }
}

/// Runs `body` over a heap copy of `bytes` that is exactly `bytes.count` long, so that
/// AddressSanitizer reports a read even one byte past the end (an array's storage is often
/// longer than its count, which hides such reads).
public func withExactCopy<R>(of bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
    defer { buffer.deallocate() }
    if !bytes.isEmpty {
        bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
    }
    return try body(UnsafeRawBufferPointer(buffer))
}

/// Whether two byte arrays are equal, with `memcmp` (an unoptimized build compares arrays
/// element by element through generics, which dominates a run over megabyte inputs).
public func sameBytes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { a in
        b.withUnsafeBytes { b in
            guard let x = a.baseAddress, let y = b.baseAddress else { return true }
            return memcmp(x, y, a.count) == 0
        }
    }
}

/// `count` bytes of `seed` repeated (zeros for an empty seed), copied in doubling blocks.
public func repeated(_ seed: [UInt8], count: Int) -> [UInt8] {
    guard !seed.isEmpty, count > 0 else { return [UInt8](repeating: 0, count: max(0, count)) }
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        guard let base = buffer.baseAddress else { return }
        let first = min(seed.count, count)
        seed.withUnsafeBufferPointer { source in
            if let from = source.baseAddress { base.initialize(from: from, count: first) }
        }
        var filled = first
        while filled < count {
            let n = min(filled, count - filled)
            (base + filled).initialize(from: base, count: n)
            filled += n
        }
        initialized = count
    }
}
