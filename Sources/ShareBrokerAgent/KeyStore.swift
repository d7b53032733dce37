import Foundation
import ShareBroker
import ShareBrokerAgentProtocol
import ShareBrokerCrypto

/// The group key ring on disk, in the agent's state folder: file `keyring`, mode 0600, replaced
/// atomically and durably (``DurableFile/writeAtomically(_:to:)-(UnsafeRawBufferPointer,_)``).
///
/// Layout (big-endian): magic `SBKR`, version `01`, key count `n` (1 to 16), `n` entries of a
/// 4-byte key id and 32 key bytes (the sealing key first, then newest to oldest), a 4-byte
/// length `m` and `m` bytes of JSON metadata: `{"entitled": [app ids], "rotation": N,
/// "retiredAt": [seconds]}` (`retiredAt`: when each key after the first stopped being current,
/// in Unix seconds; stores written before it existed have none, and their old keys get 0, which
/// opens no version 2 item, and none existed before). The
/// entitled set is the one the ring was last rotated for, so an app deauthorized while the agent
/// was down is noticed at the next start and the key rotated then.
struct KeyStore {
    /// What is kept with the ring.
    struct Metadata: Codable, Equatable {
        /// The apps entitled when the ring was last written.
        var entitled: [String]
        /// How many rotations the ring has seen.
        var rotation: UInt64
        /// When each key after the first stopped being current (Unix seconds); `nil` in stores
        /// written before envelope version 2. Filled from the ring by ``KeyStore/save(_:metadata:)``.
        var retiredAt: [UInt64]? = nil
    }

    static let magic: [UInt8] = Array("SBKR".utf8)
    static let version: UInt8 = 1
    static let maxFileSize = 1 << 20

    let path: String

    init(directory: String) {
        path = directory + "/keyring"
    }

    /// The ring and its metadata, or `nil` when no ring was ever written.
    func load() throws(AgentStateError) -> (ring: KeyRing, metadata: Metadata)? {
        guard var bytes = try DurableFile.read(path, limit: Self.maxFileSize) else { return nil }
        defer { Zeroize.zero(&bytes) }
        func corrupt(_ why: String) -> AgentStateError {
            AgentStateError(operation: "read the key ring", path: path, code: 0,
                            detail: "\(why); restore it from a backup, or move it away to start a new group key (items sealed before become unreadable)")
        }
        guard bytes.count >= 6, Array(bytes[0..<4]) == Self.magic else { throw corrupt("not a key ring file") }
        guard bytes[4] == Self.version else { throw corrupt("unknown key ring version \(bytes[4])") }
        let count = Int(bytes[5])
        let keysEnd = 6 + count * 36
        guard count >= 1, count <= KeyRingMessage.maxKeys, bytes.count >= keysEnd + 4 else { throw corrupt("truncated") }
        let metaLength = Int(bytes[keysEnd]) << 24 | Int(bytes[keysEnd + 1]) << 16 | Int(bytes[keysEnd + 2]) << 8
            | Int(bytes[keysEnd + 3])
        guard bytes.count == keysEnd + 4 + metaLength else { throw corrupt("truncated metadata") }
        guard let metadata = try? JSONDecoder().decode(Metadata.self, from: Data(bytes[(keysEnd + 4)...])) else {
            throw corrupt("unreadable metadata")
        }
        var keyBody = Array(bytes[5..<keysEnd])
        defer { Zeroize.zero(&keyBody) }
        let ring: Result<KeyRing, SealingError>
        do {
            ring = try KeyRingMessage.withEntries(in: keyBody) { entries in
                Result { () throws(SealingError) -> KeyRing in try KeyRing(importing: entries, retiredAt: metadata.retiredAt ?? []) }
            }
        } catch {
            throw corrupt("bad key entries")
        }
        switch ring {
        case .success(let ring): return (ring, metadata)
        case .failure(let error): throw corrupt("keys could not be imported (\(error))")
        }
    }

    /// Writes the ring and its metadata atomically and durably; transient buffers are zeroed.
    func save(_ ring: KeyRing, metadata: Metadata) throws(AgentStateError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var metadata = metadata
        metadata.retiredAt = ring.retiredAt
        let meta = (try? Array(encoder.encode(metadata))) ?? Array("{}".utf8)
        var file: [UInt8]
        do {
            file = try ring.exportKeys { keys -> [UInt8] in
                var body = KeyRingMessage.body(keys)
                var out = [UInt8]()
                out.reserveCapacity(5 + body.count + 4 + meta.count)
                out.append(contentsOf: Self.magic)
                out.append(Self.version)
                out.append(contentsOf: body)
                Zeroize.zero(&body)
                let length = UInt32(meta.count)
                out.append(contentsOf: [UInt8(length >> 24 & 0xff), UInt8(length >> 16 & 0xff),
                                        UInt8(length >> 8 & 0xff), UInt8(length & 0xff)])
                out.append(contentsOf: meta)
                return out
            }
        } catch {
            throw AgentStateError(operation: "save the key ring", path: path, code: 0, detail: error.description)
        }
        defer { Zeroize.zero(&file) }
        try DurableFile.writeAtomically(file, to: path)
    }
}
