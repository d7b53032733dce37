import Testing
@testable import ShareBroker
import ShareBrokerCrypto

/// One test per typed error: each case is triggered the way a caller would meet it, and its
/// description says what happened.
@Suite("Sealing: every typed error")
struct SealingErrorTests {
    static func sealed(_ ring: KeyRing) throws -> [UInt8] {
        try ring.seal([1, 2, 3, 4], itemType: "public.text")
    }

    @Test(".sodiumInitFailed: a failing sodium_init result is mapped to it")
    func sodiumInitFailed() throws {
        #expect(throws: SealingError.sodiumInitFailed) { try Sodium.check(initResult: -1) }
        try Sodium.check(initResult: 0)
        try Sodium.check(initResult: 1)
        try Sodium.ensureInitialized()
    }

    @Test(".outOfSecureMemory: sodium_malloc refuses an impossible size")
    func outOfSecureMemory() {
        #expect(throws: SealingError.outOfSecureMemory) { _ = try SecureMemory.allocate(byteCount: Int.max / 2) }
        #expect(throws: SealingError.outOfSecureMemory) { _ = try SecureMemory.allocate(byteCount: -1) }
    }

    @Test(".badMagic: plain text, other binary formats, a damaged magic")
    func badMagic() throws {
        let ring = try KeyRing.generate()
        for bytes: [UInt8] in [Array("hello".utf8), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A], [0], [0x89, 0x53, 0x00]] {
            #expect(throws: SealingError.badMagic) { try ring.open(bytes) }
        }
        var envelope = try Self.sealed(ring)
        envelope[3] ^= 0x01
        #expect(throws: SealingError.badMagic) { try ring.open(envelope) }
    }

    @Test(".unsupportedVersion: any version but 1 and 2")
    func unsupportedVersion() throws {
        let ring = try KeyRing.generate()
        for version: UInt8 in [0, 3, 0xFF] {
            var envelope = try Self.sealed(ring)
            envelope[4] = version
            #expect(throws: SealingError.unsupportedVersion(version)) { try ring.open(envelope) }
        }
    }

    @Test(".unsupportedKind: any kind but 0 and 1")
    func unsupportedKind() throws {
        let ring = try KeyRing.generate()
        for kind: UInt8 in [2, 0x80, 0xFF] {
            var envelope = try Self.sealed(ring)
            envelope[5] = kind
            #expect(throws: SealingError.unsupportedKind(kind)) { try ring.open(envelope) }
        }
    }

    @Test(".truncated: cut inside the header, before the tag, or before the FINAL chunk")
    func truncated() throws {
        let ring = try KeyRing.generate()
        let envelope = try Self.sealed(ring)
        for length in [0, 2, 4, 5, 6, 9, 10, 11, 20, 30, 40, 50] {
            #expect(throws: SealingError.truncated) { try ring.open(Array(envelope[0..<length])) }
        }
        // A type length that runs past the end.
        var longType = Array(envelope[0..<11])
        longType[10] = 200
        #expect(throws: SealingError.truncated) { try ring.open(longType + [UInt8](repeating: 0, count: 100)) }
    }

    @Test(".tooLarge: checked before a byte is read, on seal and open")
    func tooLarge() throws {
        let ring = try KeyRing.generate()
        // Seal: an oversize buffer that is never touched (left uninitialized).
        let big = UnsafeMutableRawBufferPointer.allocate(byteCount: EnvelopeFormat.maxPlaintextSize + 1, alignment: 16)
        defer { big.deallocate() }
        #expect(throws: SealingError.tooLarge(size: EnvelopeFormat.maxPlaintextSize + 1, limit: EnvelopeFormat.maxPlaintextSize)) {
            try ring.seal(UnsafeRawBufferPointer(big), itemType: "t")
        }
        // Open: the size check comes before the magic check (these bytes have no magic).
        let oversize = UnsafeMutableRawBufferPointer.allocate(byteCount: EnvelopeFormat.maxEnvelopeSize + 1, alignment: 16)
        defer { oversize.deallocate() }
        #expect(throws: SealingError.tooLarge(size: EnvelopeFormat.maxEnvelopeSize + 1, limit: EnvelopeFormat.maxEnvelopeSize)) {
            try ring.open(UnsafeRawBufferPointer(oversize))
        }
        let oversizeArray = [UInt8](repeating: 0, count: EnvelopeFormat.maxEnvelopeSize + 1)
        #expect(throws: SealingError.tooLarge(size: oversizeArray.count, limit: EnvelopeFormat.maxEnvelopeSize)) {
            try ring.open(oversizeArray)
        }
        #expect(EnvelopeFormat.maxEnvelopeSize == 67_126_826)
    }

    @Test(".tooLarge: a single-shot body whose plaintext would exceed the cap")
    func tooLargeSingleShotBody() throws {
        let ring = try KeyRing.generate()
        let envelope = try ring.seal([], itemType: "")
        // A well-formed header followed by a body just over the plaintext cap plus tag; the
        // envelope itself is under the envelope cap.
        let header = Array(envelope[0..<SealingFixture.headerLength(of: envelope)])
        let count = header.count + EnvelopeFormat.maxPlaintextSize + 1 + EnvelopeFormat.tagLength
        #expect(count <= EnvelopeFormat.maxEnvelopeSize)
        let forged = header + [UInt8](repeating: 0, count: count - header.count)
        #expect(throws: SealingError.tooLarge(size: EnvelopeFormat.maxPlaintextSize + 1, limit: EnvelopeFormat.maxPlaintextSize)) {
            try ring.open(forged)
        }
    }

    @Test(".unknownKey: a key this ring never held")
    func unknownKey() throws {
        let ring = try KeyRing.generate()
        let other = try KeyRing.generate()
        let envelope = try Self.sealed(other)
        #expect(throws: SealingError.unknownKey(id: other.currentKeyID)) { try ring.open(envelope) }
    }

    @Test(".authenticationFailed: altered ciphertext or tag, wrong key under a known id")
    func authenticationFailed() throws {
        let ring = try KeyRing.generate()
        var envelope = try Self.sealed(ring)
        envelope[envelope.count - 1] ^= 0x80
        #expect(throws: SealingError.authenticationFailed) { try ring.open(envelope) }
        let impostor = try KeyRing(current: GroupKey(id: ring.currentKeyID, importing: SealingFixture.random(32)))
        #expect(throws: SealingError.authenticationFailed) { try impostor.open(Self.sealed(ring)) }
    }

    @Test(".invalidNonceLength and .invalidKeyLength: the raw AEAD entry points")
    func lengths() {
        #expect(throws: SealingError.invalidNonceLength) {
            try XChaCha20Poly1305.encrypt(key: SealingFixture.random(32), nonce: SealingFixture.random(12), aad: [], plaintext: [])
        }
        #expect(throws: SealingError.invalidNonceLength) {
            try XChaCha20Poly1305.decrypt(key: SealingFixture.random(32), nonce: [], aad: [], ciphertext: SealingFixture.random(16))
        }
        #expect(throws: SealingError.invalidKeyLength) {
            try XChaCha20Poly1305.encrypt(key: SealingFixture.random(16), nonce: SealingFixture.random(24), aad: [], plaintext: [])
        }
        #expect(throws: SealingError.invalidKeyLength) { _ = try GroupKey(id: 1, importing: []) }
    }

    @Test(".wiped: seal, open and rotate after wipe")
    func wiped() throws {
        let ring = try KeyRing.generate()
        let envelope = try Self.sealed(ring)
        ring.wipe()
        #expect(throws: SealingError.wiped) { try ring.seal([1], itemType: "t") }
        #expect(throws: SealingError.wiped) { try ring.open(envelope) }
        #expect(throws: SealingError.wiped) { try ring.rotated() }
    }

    @Test(".itemTypeTooLong: more than 255 UTF-8 bytes")
    func itemTypeTooLong() throws {
        let ring = try KeyRing.generate()
        #expect(throws: SealingError.itemTypeTooLong(length: 256, limit: 255)) {
            try ring.seal([1], itemType: String(repeating: "a", count: 256))
        }
        // 128 two-byte characters: 256 bytes, though only 128 characters.
        #expect(throws: SealingError.itemTypeTooLong(length: 256, limit: 255)) {
            try ring.seal([1], itemType: String(repeating: "é", count: 128))
        }
    }

    @Test(".invalidItemType: an authentic envelope whose type is not UTF-8")
    func invalidItemType() throws {
        let ring = try KeyRing.generate()
        let plaintext: [UInt8] = [1, 2]
        let typeBytes: [UInt8] = [0x70, 0xFF, 0xFE]
        let envelope = try plaintext.withUnsafeBytes { plaintext in
            try typeBytes.withUnsafeBytes { type in try ring.seal(plaintext, typeBytes: type) }
        }
        #expect(throws: SealingError.invalidItemType) { try ring.open(envelope) }
    }

    @Test("every description is non-empty, says what to do, and differs from the others")
    func descriptions() {
        let all: [SealingError] = [
            .sodiumInitFailed, .outOfSecureMemory, .badMagic, .unsupportedVersion(2), .unsupportedKind(9),
            .truncated, .tooLarge(size: 10, limit: 5), .unknownKey(id: 0xAB), .authenticationFailed,
            .invalidNonceLength, .invalidKeyLength, .wiped, .itemTypeTooLong(length: 300, limit: 255),
            .invalidItemType,
        ]
        #expect(Set(all.map(\.description)).count == all.count)
        #expect(SealingError.unknownKey(id: 0xAB).description.contains("0x000000ab"))
        #expect(SealingError.unsupportedVersion(2).description.contains("2"))
        for error in all { #expect(error.description.count > 20) }
    }
}
