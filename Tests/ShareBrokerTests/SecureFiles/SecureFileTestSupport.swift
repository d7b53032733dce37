#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSodium
@testable import ShareBroker
import ShareBrokerCrypto

/// A fresh folder under the system temporary folder, removed (with its contents) when dropped.
final class SecureFileScratchFolder {
    let path: String

    init() {
        var template = Array("/tmp/sbsecurefile-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
            return String(cString: base)
        }
        path = made ?? "/tmp/sbsecurefile-fallback-\(UInt64.random(in: 0...UInt64.max))"
        if made == nil { mkdir(path, 0o700) }
    }

    deinit {
        _ = DurableFiles.eraseLocation(path)
        rmdir(path)
    }

    /// The names in the folder (without `.` and `..`), sorted.
    var entries: [String] {
        guard let stream = opendir(path) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) {
                    String(cString: $0)
                }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// The raw bytes of file `name` in the folder.
    func raw(_ name: String) -> [UInt8] {
        (try? DurableFiles.contents(of: path + "/" + name)) .flatMap { $0 } ?? []
    }

    /// Replaces file `name` with `bytes` (as an attacker or a damaged disk would).
    func overwrite(_ name: String, with bytes: [UInt8]) throws {
        try DurableFiles.writeAtomically(bytes, to: path + "/" + name)
    }

    /// The permission bits of file `name`.
    func mode(_ name: String) -> mode_t {
        var stats = stat()
        guard lstat(path + "/" + name, &stats) == 0 else { return 0 }
        return stats.st_mode & 0o777
    }
}

enum SecureFileFixture {
    static let appID = "com.acme.notes"

    /// Deterministic, position-dependent bytes: `bytes(n, seed:)[i]` differs between positions
    /// and seeds, so a misplaced chunk never compares equal.
    static func bytes(_ count: Int, seed: UInt32 = 1) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { raw in
            var state = seed &* 2_654_435_761 | 1
            for i in 0..<raw.count {
                state ^= state << 13
                state ^= state >> 17
                state ^= state << 5
                raw[i] = UInt8(truncatingIfNeeded: state)
            }
        }
        return out
    }

    /// A store over `ring` in `folder` with `chunkSize`-byte chunks.
    static func store(_ folder: SecureFileScratchFolder, ring: KeyRing, policy: SecureFileIOPolicy = .required,
                      chunkSize: Int = SecureFileFormat.defaultChunkSize,
                      maximumFileSize: Int = SecureFileStore.defaultMaximumFileSize) -> SecureFileStore {
        SecureFileStore(directory: folder.path, access: .keys(FileKeyRing(sharingKeysOf: ring), legacy: ring, policy: policy), maximumFileSize: maximumFileSize,
                        chunkSize: chunkSize)
    }

    /// Offset of frame `index` in a file with `chunkSize`-byte chunks.
    static func frameOffset(_ index: Int, chunkSize: Int) -> Int {
        SecureFileFormat.headerLength + index * (chunkSize + SecureFileFormat.frameOverhead)
    }

    /// Whether `haystack` contains any 16-byte run of `needle`.
    static func containsRun(of needle: [UInt8], in haystack: [UInt8], length: Int = 16) -> Bool {
        guard needle.count >= length, haystack.count >= length else { return false }
        var runs = Set<ArraySlice<UInt8>>()
        var i = 0
        while i + length <= needle.count {
            runs.insert(needle[i..<(i + length)])
            i += length
        }
        for j in 0...(haystack.count - length) where runs.contains(haystack[j..<(j + length)]) { return true }
        return false
    }

    /// Whether `a` and `b` hold the same bytes (memcmp: fast in debug builds).
    static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
        return memcmp(pa, pb, a.count) == 0
    }
}
