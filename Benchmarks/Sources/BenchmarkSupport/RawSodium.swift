// Raw libsodium fixtures and helpers shared by the benchmark targets.

import Benchmark
import CSodiumBench

/// Random bytes from libsodium.
public func randomBytes(_ count: Int) -> [UInt8] {
    precondition(sodium_init() >= 0, "sodium_init failed")
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
    return bytes
}

/// A fresh `count`-byte array filled by `fill`, made the way `KeyRing` makes its results: on the
/// stack then copied once up to 1 KiB (cheaper than a fresh array's set-up on Linux), in place
/// above.
@inlinable
public func freshBytes(count: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> Void) -> [UInt8] {
    if count <= 1024 {
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
            fill(buffer.baseAddress!)
            return [UInt8](buffer)
        }
    }
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        fill(buffer.baseAddress!)
        initialized = count
    }
}

/// Buffers for the raw libsodium baselines, allocated and touched once, reused by every call.
public final class SodiumBuffers: @unchecked Sendable {
    public let size: Int
    public let key: UnsafeMutablePointer<UInt8>
    public let nonce: UnsafeMutablePointer<UInt8>
    public let message: UnsafeMutablePointer<UInt8>
    public let output: UnsafeMutablePointer<UInt8>
    /// `message` sealed under `key` and `nonce` (no AAD): what the decrypt baselines open.
    public let ciphertext: UnsafeMutablePointer<UInt8>
    /// Where the recycled decrypt baseline writes the plaintext (touched once).
    public let plaintextOutput: UnsafeMutablePointer<UInt8>

    public init(size: Int) {
        precondition(sodium_init() >= 0, "sodium_init failed")
        self.size = size
        key = .allocate(capacity: Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES))
        nonce = .allocate(capacity: Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES))
        message = .allocate(capacity: size)
        output = .allocate(capacity: size + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
        crypto_aead_xchacha20poly1305_ietf_keygen(key)
        randombytes_buf(nonce, Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES))
        randombytes_buf(message, size)
        // Touch every output page now: the benchmark measures recycled memory, not page faults.
        output.initialize(repeating: 0, count: size + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
        ciphertext = .allocate(capacity: size + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
        plaintextOutput = .allocate(capacity: max(1, size))
        plaintextOutput.initialize(repeating: 0, count: max(1, size))
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(ciphertext, nil, message, UInt64(size), nil, 0, nil, nonce, key)
    }

    deinit {
        key.deallocate()
        nonce.deallocate()
        message.deallocate()
        output.deallocate()
        ciphertext.deallocate()
        plaintextOutput.deallocate()
    }

    public var ciphertextCount: Int { size + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES) }

    /// One seal into the reused output buffer. The nonce is fixed: this measures the cipher, not
    /// nonce generation (never reuse a nonce outside a benchmark).
    @inlinable
    public func encrypt() -> Int32 {
        crypto_aead_xchacha20poly1305_ietf_encrypt(output, nil, message, UInt64(size), nil, 0, nil, nonce, key)
    }

    /// One seal into `destination` (at least `ciphertextCount` bytes).
    @inlinable
    public func encrypt(into destination: UnsafeMutablePointer<UInt8>) -> Int32 {
        crypto_aead_xchacha20poly1305_ietf_encrypt(destination, nil, message, UInt64(size), nil, 0, nil, nonce, key)
    }

    /// One verified decryption of `ciphertext` into `destination` (at least `size` bytes).
    /// Fails (traps) if authentication fails: the benchmark must not time an early exit.
    @inlinable
    public func decrypt(into destination: UnsafeMutablePointer<UInt8>) {
        let status = crypto_aead_xchacha20poly1305_ietf_decrypt(
            destination, nil, nil, ciphertext, UInt64(ciphertextCount), nil, 0, nonce, key)
        precondition(status == 0, "raw decrypt failed")
    }
}

