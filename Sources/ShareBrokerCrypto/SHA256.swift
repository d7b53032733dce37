import CSodium

/// SHA-256 of bytes fed in pieces (libsodium's `crypto_hash_sha256`): executable pins.
public struct SHA256: ~Copyable {
    private var state = crypto_hash_sha256_state()

    /// Starts an empty digest.
    public init() {
        crypto_hash_sha256_init(&state)
    }

    /// Feeds `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        _ = crypto_hash_sha256_update(&state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }

    /// The digest of everything fed, as 64 lower-case hex digits.
    public consuming func hexDigest() -> String {
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256_final(&state, &digest)
        let hex: [Character] = Array("0123456789abcdef")
        return String(digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xf)]] })
    }
}
