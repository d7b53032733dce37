import CSodium
import Foundation
import Testing
@testable import ShareBroker
import ShareBrokerCrypto

/// Project Wycheproof's XChaCha20-Poly1305 vectors, run through the binding every envelope uses
/// (``XChaCha20Poly1305``: HChaCha20 then ChaCha20-Poly1305-IETF) and, for the valid ones,
/// through libsodium's own XChaCha20 function too.
@Suite("Sealing: Wycheproof XChaCha20-Poly1305")
struct SealingWycheproofTests {
    struct File: Decodable {
        let algorithm: String
        let numberOfTests: Int
        let testGroups: [Group]
    }

    struct Group: Decodable {
        let ivSize: Int
        let keySize: Int
        let tagSize: Int
        let tests: [Vector]
    }

    struct Vector: Decodable {
        let tcId: Int
        let comment: String
        let key: String
        let iv: String
        let aad: String
        let msg: String
        let ct: String
        let tag: String
        let result: String
        let flags: [String]
    }

    static func load() throws -> File {
        let url = try #require(Bundle.module.url(
            forResource: "xchacha20_poly1305_test", withExtension: "json", subdirectory: "Resources/wycheproof"))
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
    }

    @Test("all 315 vectors: valid ones match, invalid ones (including 9 wrong nonce sizes) are rejected")
    func allVectors() throws {
        let file = try Self.load()
        #expect(file.algorithm == "XCHACHA20-POLY1305")
        var total = 0, validPassed = 0, invalidRejected = 0, nonceSizeRejected = 0
        var failures: [Int] = []
        for group in file.testGroups {
            for vector in group.tests {
                total += 1
                let key = SealingFixture.hex(vector.key), nonce = SealingFixture.hex(vector.iv)
                let aad = SealingFixture.hex(vector.aad), msg = SealingFixture.hex(vector.msg)
                let sealed = SealingFixture.hex(vector.ct) + SealingFixture.hex(vector.tag)
                let encrypted = Result { () throws(SealingError) in
                    try XChaCha20Poly1305.encrypt(key: key, nonce: nonce, aad: aad, plaintext: msg)
                }
                let decrypted = Result { () throws(SealingError) in
                    try XChaCha20Poly1305.decrypt(key: key, nonce: nonce, aad: aad, ciphertext: sealed)
                }
                switch vector.result {
                case "valid":
                    if (try? encrypted.get()) == sealed, (try? decrypted.get()) == msg {
                        validPassed += 1
                    } else {
                        failures.append(vector.tcId)
                    }
                case "invalid":
                    if nonce.count != XChaCha20Poly1305.nonceByteCount {
                        // The C API cannot see the size; the Swift layer must refuse both ways.
                        if case .failure(.invalidNonceLength) = encrypted,
                           case .failure(.invalidNonceLength) = decrypted {
                            nonceSizeRejected += 1
                            invalidRejected += 1
                        } else {
                            failures.append(vector.tcId)
                        }
                    } else if case .failure(.authenticationFailed) = decrypted {
                        invalidRejected += 1
                    } else {
                        failures.append(vector.tcId)
                    }
                default:
                    failures.append(vector.tcId)
                }
            }
        }
        #expect(failures.isEmpty, "failing tcIds: \(failures)")
        #expect(total == 315)
        #expect(file.numberOfTests == 315)
        #expect(validPassed == 246)
        #expect(invalidRejected == 69)
        #expect(nonceSizeRejected == 9)
    }

    @Test("the split HChaCha20 + IETF path is byte-identical to crypto_aead_xchacha20poly1305_ietf_encrypt")
    func splitPathMatchesLibsodium() throws {
        let file = try Self.load()
        var compared = 0
        for vector in file.testGroups.flatMap(\.tests) where vector.result == "valid" {
            let key = SealingFixture.hex(vector.key), nonce = SealingFixture.hex(vector.iv)
            let aad = SealingFixture.hex(vector.aad), msg = SealingFixture.hex(vector.msg)
            var direct = [UInt8](repeating: 0, count: msg.count + 16)
            var directLength: UInt64 = 0
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &direct, &directLength, msg, UInt64(msg.count), aad, UInt64(aad.count), nil, nonce, key)
            let split = try XChaCha20Poly1305.encrypt(key: key, nonce: nonce, aad: aad, plaintext: msg)
            #expect(split == direct, "tcId \(vector.tcId)")
            compared += 1
        }
        // And random inputs of many sizes.
        for size in [0, 1, 15, 16, 17, 63, 64, 65, 1000, 4096, 70_000] {
            let key = SealingFixture.random(32), nonce = SealingFixture.random(24)
            let aad = SealingFixture.random(size % 97), msg = SealingFixture.random(size)
            var direct = [UInt8](repeating: 0, count: msg.count + 16)
            var directLength: UInt64 = 0
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &direct, &directLength, msg, UInt64(msg.count), aad, UInt64(aad.count), nil, nonce, key)
            #expect(try XChaCha20Poly1305.encrypt(key: key, nonce: nonce, aad: aad, plaintext: msg) == direct)
            compared += 1
        }
        #expect(compared == 246 + 11)
    }

    @Test("wrong key and nonce sizes are refused before libsodium sees them")
    func sizesAreValidated() {
        for keySize in [0, 16, 31, 33, 64] {
            #expect(throws: SealingError.invalidKeyLength) {
                try XChaCha20Poly1305.encrypt(key: [UInt8](repeating: 1, count: keySize), nonce: [UInt8](repeating: 0, count: 24), aad: [], plaintext: [1])
            }
            #expect(throws: SealingError.invalidKeyLength) {
                try XChaCha20Poly1305.decrypt(key: [UInt8](repeating: 1, count: keySize), nonce: [UInt8](repeating: 0, count: 24), aad: [], ciphertext: [UInt8](repeating: 0, count: 17))
            }
        }
        for nonceSize in [0, 8, 12, 23, 25, 32] {
            #expect(throws: SealingError.invalidNonceLength) {
                try XChaCha20Poly1305.encrypt(key: [UInt8](repeating: 1, count: 32), nonce: [UInt8](repeating: 0, count: nonceSize), aad: [], plaintext: [1])
            }
        }
        #expect(throws: SealingError.truncated) {
            try XChaCha20Poly1305.decrypt(key: [UInt8](repeating: 1, count: 32), nonce: [UInt8](repeating: 0, count: 24), aad: [], ciphertext: [UInt8](repeating: 0, count: 15))
        }
    }
}
