import Foundation
import ShareBroker
import ShareBrokerAgentProtocol
import ShareBrokerCrypto

/// The group key ring and every app's file keys on disk, in the agent's state folder: file
/// `keyring`, mode 0600, replaced atomically and durably
/// (``DurableFile/writeAtomically(_:to:)-(UnsafeRawBufferPointer,_)``).
///
/// Layout, version 2 (big-endian): magic `SBKR`, version `02`, key count `n` (1 to 16), `n`
/// entries of a 4-byte key id and 32 key bytes (the sealing key first, then newest to oldest);
/// a 4-byte app count `a`, then `a` apps: a 2-byte length and that many bytes of the app id
/// (UTF-8), a 2-byte key count `m` (1 to 4096) and `m` entries (newest first) of that app's
/// file keys; then a 4-byte length `l` and `l` bytes of JSON metadata:
/// `{"entitled": [app ids], "rotation": N, "retiredAt": [seconds]}` (`retiredAt`: when each
/// group key after the first stopped being current, in Unix seconds; stores written before it
/// existed have none, and their old keys get 0, which opens no version 2 item, and none existed
/// before). The entitled set is the one the ring was last
/// rotated for, so an app deauthorized while the agent was down is noticed at the next start
/// and the key rotated then. Version 1 (no file-key section) is still read; the next save
/// writes version 2.
struct KeyStore {
    /// What is kept with the ring.
    struct Metadata: Codable, Equatable {
        /// The apps entitled when the ring was last written.
        var entitled: [String]
        /// How many rotations the ring has seen.
        var rotation: UInt64
        /// When each key after the first stopped being current (Unix seconds); `nil` in stores
        /// written before envelope version 2. Filled from the ring by ``KeyStore/save(_:)``.
        var retiredAt: [UInt64]? = nil
    }

    /// What the store holds.
    struct Contents {
        var ring: KeyRing
        /// Each app's file keys (every generation, newest first).
        var fileKeys: [String: FileKeyRing]
        var metadata: Metadata
    }

    static let magic: [UInt8] = Array("SBKR".utf8)
    static let version: UInt8 = 2
    static let maxFileSize = 64 << 20

    let path: String

    init(directory: String) {
        path = directory + "/keyring"
    }

    /// The keys and metadata, or `nil` when no ring was ever written.
    func load() throws(AgentStateError) -> Contents? {
        guard var bytes = try DurableFile.read(path, limit: Self.maxFileSize) else { return nil }
        defer { Zeroize.zero(&bytes) }
        func corrupt(_ why: String) -> AgentStateError {
            AgentStateError(operation: "read the key ring", path: path, code: 0,
                            detail: "\(why); restore it from a backup, or move it away to start new keys (items and secure files sealed before become unreadable)")
        }
        guard bytes.count >= 6, Array(bytes[0..<4]) == Self.magic else { throw corrupt("not a key ring file") }
        let version = bytes[4]
        guard version == 1 || version == Self.version else { throw corrupt("unknown key ring version \(version)") }
        // The reader keeps offsets, never a reference to `bytes`, so the zeroing above reaches
        // the only copy of the key bytes.
        var reader = Reader(offset: 5)
        guard let count = reader.uint(1, in: bytes), count >= 1, count <= KeyRingMessage.maxKeys,
              let groupKeys = reader.keys(count, in: bytes) else { throw corrupt("truncated group keys") }
        var fileKeyRanges: [(app: String, keys: [(id: UInt32, offset: Int)])] = []
        if version == Self.version {
            guard let apps = reader.uint(4, in: bytes) else { throw corrupt("truncated file keys") }
            for _ in 0..<apps {
                guard let length = reader.uint(2, in: bytes), let appRange = reader.take(length, in: bytes),
                      let app = String(validating: bytes[appRange], as: UTF8.self), fileKeyRanges.allSatisfy({ $0.app != app }),
                      let keyCount = reader.uint(2, in: bytes), keyCount >= 1, keyCount <= FileKeyRing.maximumGenerations,
                      let keys = reader.keys(keyCount, in: bytes) else { throw corrupt("truncated or malformed file keys") }
                fileKeyRanges.append((app, keys))
            }
        }
        guard let metaLength = reader.uint(4, in: bytes), let metaRange = reader.take(metaLength, in: bytes),
              reader.offset == bytes.count else {
            throw corrupt("truncated metadata")
        }
        guard let metadata = try? JSONDecoder().decode(Metadata.self, from: Data(bytes[metaRange])) else {
            throw corrupt("unreadable metadata")
        }
        let imported: Result<Contents, SealingError> = bytes.withUnsafeBytes { raw in
            func lend(_ keys: [(id: UInt32, offset: Int)]) -> [KeyRing.LentKey] {
                keys.map { ($0.id, UnsafeRawBufferPointer(rebasing: raw[$0.offset..<($0.offset + GroupKey.byteCount)])) }
            }
            return Result { () throws(SealingError) -> Contents in
                let ring = try KeyRing(importing: lend(groupKeys), retiredAt: metadata.retiredAt ?? [])
                var fileKeys: [String: FileKeyRing] = [:]
                for entry in fileKeyRanges {
                    fileKeys[entry.app] = try FileKeyRing(importing: lend(entry.keys))
                }
                return Contents(ring: ring, fileKeys: fileKeys, metadata: metadata)
            }
        }
        switch imported {
        case .success(let contents): return contents
        case .failure(let error): throw corrupt("keys could not be imported (\(error))")
        }
    }

    /// Writes the keys and metadata atomically and durably; transient buffers are zeroed.
    func save(_ contents: Contents) throws(AgentStateError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var metadata = contents.metadata
        metadata.retiredAt = contents.ring.retiredAt
        let meta = (try? Array(encoder.encode(metadata))) ?? Array("{}".utf8)
        let apps = contents.fileKeys.keys.sorted()
        // Sized up front: the array never grows, so no copy of key bytes is left in freed memory.
        let entry = 4 + GroupKey.byteCount
        let size = 6 + entry * KeyRingMessage.maxKeys + 4
            + apps.reduce(0) { $0 + 4 + $1.utf8.count + entry * (contents.fileKeys[$1]?.count ?? 0) } + 4 + meta.count
        var file: [UInt8] = []
        file.reserveCapacity(size)
        file.append(contentsOf: Self.magic)
        file.append(Self.version)
        defer { Zeroize.zero(&file) }
        do throws(SealingError) {
            try contents.ring.exportKeys { keys in
                file.append(UInt8(min(keys.count, KeyRingMessage.maxKeys)))
                for key in keys.prefix(KeyRingMessage.maxKeys) { Self.append(key, to: &file) }
            }
            Self.append(UInt32(apps.count), bytes: 4, to: &file)
            for app in apps {
                guard let ring = contents.fileKeys[app] else { continue }
                let id = Array(app.utf8.prefix(Int(UInt16.max)))
                Self.append(UInt32(id.count), bytes: 2, to: &file)
                file.append(contentsOf: id)
                try ring.exportKeys { keys in
                    Self.append(UInt32(keys.count), bytes: 2, to: &file)
                    for key in keys { Self.append(key, to: &file) }
                }
            }
        } catch {
            throw AgentStateError(operation: "save the key ring", path: path, code: 0, detail: error.description)
        }
        Self.append(UInt32(meta.count), bytes: 4, to: &file)
        file.append(contentsOf: meta)
        try DurableFile.writeAtomically(file, to: path)
    }

    private static func append(_ key: KeyRing.LentKey, to out: inout [UInt8]) {
        append(key.id, bytes: 4, to: &out)
        out.append(contentsOf: key.bytes.prefix(GroupKey.byteCount))
    }

    private static func append(_ value: UInt32, bytes: Int, to out: inout [UInt8]) {
        for index in stride(from: bytes - 1, through: 0, by: -1) {
            out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(index))))
        }
    }

    /// Reads big-endian fields from the file, never past its end; keeps only an offset.
    private struct Reader {
        var offset: Int

        mutating func uint(_ width: Int, in bytes: [UInt8]) -> Int? {
            guard bytes.count - offset >= width else { return nil }
            var value = 0
            for index in 0..<width { value = value << 8 | Int(bytes[offset + index]) }
            offset += width
            return value
        }

        mutating func take(_ count: Int, in bytes: [UInt8]) -> Range<Int>? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return offset..<(offset + count)
        }

        /// `count` key entries: their ids and the offsets of their bytes (unique ids).
        mutating func keys(_ count: Int, in bytes: [UInt8]) -> [(id: UInt32, offset: Int)]? {
            var keys: [(id: UInt32, offset: Int)] = []
            for _ in 0..<count {
                guard let id = uint(4, in: bytes), bytes.count - offset >= GroupKey.byteCount else { return nil }
                keys.append((UInt32(id), offset))
                offset += GroupKey.byteCount
            }
            guard Set(keys.map(\.id)).count == keys.count else { return nil }
            return keys
        }
    }
}
