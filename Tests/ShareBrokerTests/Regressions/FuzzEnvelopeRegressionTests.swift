import CSodium
import ShareBroker
import ShareBrokerCrypto
import Testing

/// Found by FuzzEnvelope (mode 2, a forged chunked version 1 envelope) after ~20k executions:
/// "a mutated envelope opened". Input (Fuzz/regressions/FuzzEnvelope/chunked-cut-after-early-final):
///
///     02 00 00 e9 00 01 00 ff 00 85 00 00 ee 00 03 61 62 63
///
/// It seals, under the harness's current key (0x53420002), an item of type "" whose stream has
/// two chunks: 0x00 tagged FINAL, then an empty chunk tagged MESSAGE (70 bytes: a 35-byte
/// header, 18 and 17). Refused whole, rightly: FINAL comes before the last chunk. Its one
/// mutation (op 0x61: cut at 0x6263 % 71 = 53) drops the empty chunk, which leaves a
/// one-chunk stream tagged FINAL: byte for byte what a sealer holding the key writes for that
/// item. It opens, rightly: the harness sealed it (it holds the key), and nothing was forged.
/// The harness's expectation was wrong, not the library (fixed in
/// Fuzz/Sources/FuzzEnvelope/main.swift); these tests pin the library's behaviour either way.
@Suite("Fuzz regressions: envelopes")
struct FuzzEnvelopeRegressionTests {
    /// The envelope that input builds. The secretstream header is random; this is one such
    /// envelope, sealed with raw libsodium exactly as the harness does.
    static let sealed = hexBytes(
        "895342580101534200020063b4af4c4d89690d873f1590949414bec6badbe7d724e693fe7634929264aa"
            + "ccb893cbef98b87b2f07a9d64c45e07b95470a716474144d582ab8c1")
    /// Where the fuzzer's mutation cut it: after the FINAL chunk.
    static let cut = 53
    static let headerLength = 35

    static func hexBytes(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            out.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    @Test("the envelope the input seals (FINAL, then another chunk) is refused, and so is every cut but one")
    func sealedStreamIsRefused() throws {
        let ring = try FuzzCorpusTests.ring()
        #expect(Self.sealed.count == 70)
        #expect(throws: SealingError.authenticationFailed) { try ring.open(Self.sealed) }
        for length in 0..<Self.sealed.count where length != Self.cut {
            #expect(throws: SealingError.self, "cut to \(length) bytes") { try ring.open(Array(Self.sealed.prefix(length))) }
        }
    }

    @Test("cut after its FINAL chunk, it is a valid item and opens to exactly that chunk")
    func cutAfterFinalOpens() throws {
        let ring = try FuzzCorpusTests.ring()
        let item = try ring.open(Array(Self.sealed.prefix(Self.cut)))
        #expect(item.itemType == "")
        #expect(item.plaintext == [0x00])
        #expect(item.sealedAt == nil)
        #expect(item.sealer == nil)
        // Version 1 under the current key opens; one flipped bit anywhere does not.
        for index in 0..<Self.cut {
            var flipped = Array(Self.sealed.prefix(Self.cut))
            flipped[index] ^= 0x01
            #expect(throws: SealingError.self, "bit 0 of byte \(index) flipped") { try ring.open(flipped) }
        }
    }

    /// Why opening it is right: the cut envelope is exactly what a sealer holding the key writes
    /// for a one-chunk stream under that secretstream header (the push state is the pull state
    /// of the same key and header), so no one without the key produced it.
    @Test("the cut envelope is byte for byte an honest one-chunk seal")
    func cutIsAnHonestSeal() throws {
        let envelope = Self.sealed
        let header = Array(envelope.prefix(Self.headerLength))
        let groupKey = (0..<32).map { UInt8($0) }
        var streamKey = [UInt8](repeating: 0, count: 32)
        #expect(crypto_kdf_derive_from_key(&streamKey, 32, 1, "SBX1strm", groupKey) == 0)
        var state = crypto_secretstream_xchacha20poly1305_state()
        let streamHeader = Array(header.suffix(EnvelopeFormat.nonceLength))
        #expect(crypto_secretstream_xchacha20poly1305_init_pull(&state, streamHeader, streamKey) == 0)
        var chunk = [UInt8](repeating: 0, count: 1 + EnvelopeFormat.chunkOverhead)
        var written: UInt64 = 0
        let plaintext: [UInt8] = [0x00]
        #expect(crypto_secretstream_xchacha20poly1305_push(
            &state, &chunk, &written, plaintext, 1, header, UInt64(header.count),
            crypto_secretstream_xchacha20poly1305_tag_final()) == 0)
        #expect(header + chunk == Array(envelope.prefix(Self.cut)))
    }
}
