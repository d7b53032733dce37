import PropertyBased
import Testing
@testable import ShareBroker
import ShareBrokerCrypto

/// Properties over random inputs: every sealed item round-trips; every single-bit flip and
/// every truncation is rejected.
@Suite("Sealing: properties")
struct SealingPropertyTests {
    static let ring: KeyRing = {
        do { return try KeyRing.generate() } catch { preconditionFailure("\(error)") }
    }()

    static let plaintexts = Gen.uint8().array(of: 0...600)
    static let types = Gen.letterOrNumber.string(of: 0...40)

    @Test("random plaintexts and types round trip")
    func roundTrip() async {
        await propertyCheck(count: 300, input: Self.plaintexts, Self.types) { plaintext, type in
            let ring = Self.ring
            let opened = try ring.open(ring.seal(plaintext, itemType: type))
            #expect(opened.plaintext == plaintext)
            #expect(opened.itemType == type)
        }
    }

    @Test("any single-bit flip anywhere in a sealed item is rejected")
    func bitFlips() async {
        await propertyCheck(count: 300, input: Self.plaintexts, Self.types, Gen.int(in: 0...Int.max)) { plaintext, type, position in
            let ring = Self.ring
            var envelope = try ring.seal(plaintext, itemType: type)
            let bit = position % (envelope.count * 8)
            envelope[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
            #expect(throws: SealingError.self, "bit \(bit) of \(envelope.count * 8)") { try ring.open(envelope) }
        }
    }

    @Test("every single-bit flip of one small item is rejected (exhaustive)")
    func everyBitFlip() throws {
        let ring = Self.ring
        let envelope = try ring.seal(Array("a short secret".utf8), itemType: "public.utf8-plain-text")
        var rejected = 0
        for bit in 0..<(envelope.count * 8) {
            var flipped = envelope
            flipped[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
            if SealingFixture.sealingError({ () throws(SealingError) in try ring.open(flipped) }) != nil { rejected += 1 }
        }
        #expect(rejected == envelope.count * 8)
    }

    @Test("bit flips in a chunked item are rejected")
    func chunkedBitFlips() async throws {
        let ring = Self.ring
        let plaintext = SealingFixture.bytes(EnvelopeFormat.chunkingThreshold + 3 * EnvelopeFormat.chunkSize / 2)
        let envelope = try ring.seal(plaintext, itemType: "public.data")
        await propertyCheck(count: 40, input: Gen.int(in: 0..<(envelope.count * 8))) { bit in
            var flipped = envelope
            flipped[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
            #expect(throws: SealingError.self, "bit \(bit)") { try ring.open(flipped) }
        }
    }

    @Test("any truncation is rejected")
    func truncations() async {
        await propertyCheck(count: 300, input: Self.plaintexts, Self.types, Gen.int(in: 0...Int.max)) { plaintext, type, cut in
            let ring = Self.ring
            let envelope = try ring.seal(plaintext, itemType: type)
            let length = cut % envelope.count
            #expect(throws: SealingError.self, "length \(length) of \(envelope.count)") {
                try ring.open(Array(envelope[0..<length]))
            }
        }
    }

    @Test("random bytes are never opened, and never crash the reader")
    func garbage() async {
        await propertyCheck(count: 500, input: Gen.uint8().array(of: 0...200), Gen.bool()) { bytes, withMagic in
            let ring = Self.ring
            var input = bytes
            if withMagic {
                input = EnvelopeFormat.magic + [EnvelopeFormat.version, UInt8(bytes.count % 2)]
                    + withUnsafeBytes(of: ring.currentKeyID.bigEndian, Array.init) + bytes
            }
            #expect(throws: SealingError.self) { try ring.open(input) }
        }
    }
}
