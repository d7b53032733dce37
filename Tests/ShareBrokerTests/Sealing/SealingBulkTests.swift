import CSodium
import Testing
@testable import ShareBrokerCrypto

/// Plaintexts from `XChaCha20Poly1305.bulkThreshold` up go through OpenSSL's ChaCha20-Poly1305
/// instead of libsodium's: the output must be byte-identical to libsodium's own XChaCha20-Poly1305,
/// a forgery must be refused, and the unauthenticated plaintext OpenSSL wrote must be zeroed.
@Suite("Sealing: bulk plaintexts (OpenSSL)")
struct SealingBulkTests {
    static let threshold = XChaCha20Poly1305.bulkThreshold

    /// libsodium's one-call XChaCha20-Poly1305, the reference.
    static func reference(key: [UInt8], nonce: [UInt8], aad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + XChaCha20Poly1305.tagByteCount)
        var outCount: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_encrypt(
            &out, &outCount, plaintext, UInt64(plaintext.count), aad, UInt64(aad.count), nil, nonce, key)
        #expect(status == 0)
        #expect(Int(outCount) == out.count)
        return out
    }

    static func random(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }

    @Test("byte-identical to libsodium's XChaCha20-Poly1305 on both sides of the threshold",
          arguments: [threshold - 1, threshold, threshold + 1, 65_536 + 3, 1 << 20])
    func identical(size: Int) throws {
        let key = Self.random(32), nonce = Self.random(24), aad = Self.random(57), plaintext = Self.random(size)
        let sealed = try XChaCha20Poly1305.encrypt(key: key, nonce: nonce, aad: aad, plaintext: plaintext)
        #expect(sealed == Self.reference(key: key, nonce: nonce, aad: aad, plaintext: plaintext))
        #expect(try XChaCha20Poly1305.decrypt(key: key, nonce: nonce, aad: aad, ciphertext: sealed) == plaintext)
        // Without associated data too.
        let bare = try XChaCha20Poly1305.encrypt(key: key, nonce: nonce, aad: [], plaintext: plaintext)
        #expect(bare == Self.reference(key: key, nonce: nonce, aad: [], plaintext: plaintext))
    }

    enum Tamper: CaseIterable { case firstCiphertextByte, lastCiphertextByte, tag, aad, nonce, key }

    @Test("a forgery is refused and the plaintext buffer is left zeroed", arguments: Tamper.allCases)
    func forgery(tamper: Tamper) throws {
        let size = Self.threshold * 3 + 5
        var key = Self.random(32), nonce = Self.random(24), aad = Self.random(40)
        let plaintext = [UInt8](repeating: 0x5A, count: size)
        var sealed = try XChaCha20Poly1305.encrypt(key: key, nonce: nonce, aad: aad, plaintext: plaintext)
        switch tamper {
        case .firstCiphertextByte: sealed[0] ^= 1
        case .lastCiphertextByte: sealed[size - 1] ^= 0x80
        case .tag: sealed[sealed.count - 1] ^= 1
        case .aad: aad[3] ^= 1
        case .nonce: nonce[20] ^= 1
        case .key: key[0] ^= 1
        }
        #expect(throws: SealingError.authenticationFailed) {
            _ = try XChaCha20Poly1305.decrypt(key: key, nonce: nonce, aad: aad, ciphertext: sealed)
        }
        // The pointer entry point: what OpenSSL decrypted before the tag failed is gone.
        var out = [UInt8](repeating: 0xEE, count: size)
        let authentic = key.withUnsafeBytes { key in
            nonce.withUnsafeBytes { nonce in
                aad.withUnsafeBytes { aad in
                    sealed.withUnsafeBytes { sealed in
                        out.withUnsafeMutableBytes { out in
                            XChaCha20Poly1305.open(key: key.baseAddress!, nonce: nonce.baseAddress!, aad: aad,
                                                   ciphertext: sealed, into: out.baseAddress)
                        }
                    }
                }
            }
        }
        #expect(!authentic)
        #expect(out.allSatisfy { $0 == 0 }, "the unauthenticated plaintext must be zeroed")
    }

    @Test("key rings of two processes: a 1 MiB item sealed by one opens in the other, byte for byte")
    func acrossRings() throws {
        let sealer = try KeyRing.generate()
        let reader = try sealer.exportKeys { keys in
            Result { () throws(SealingError) -> KeyRing in try KeyRing(importing: keys) }
        }.get()
        let plaintext = Self.random(1 << 20)
        let envelope = try sealer.seal(plaintext, itemType: "public.utf8-plain-text")
        let opened = try reader.open(envelope)
        #expect(opened.plaintext == plaintext)
        var cut = envelope
        cut[cut.count / 2] ^= 4
        #expect(throws: SealingError.authenticationFailed) { _ = try reader.open(cut) }
    }
}
