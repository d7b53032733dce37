import CSodium
import Testing
@testable import ShareBroker
import ShareBrokerCrypto

/// The envelope: layout, round trips at every size class, header binding, and readers that
/// reject every malformed input with its own error.
@Suite("Sealing: envelope")
struct SealingEnvelopeTests {
    static let threshold = EnvelopeFormat.chunkingThreshold

    @Test("round trips", arguments: [
        0, 1, 64, 1024, 65_536, threshold - 1, threshold, threshold + 1,
        threshold + EnvelopeFormat.chunkSize, 8 << 20,
    ])
    func roundTrip(size: Int) throws {
        let ring = try KeyRing.generate()
        let plaintext = SealingFixture.bytes(size)
        let envelope = try ring.seal(plaintext, itemType: SealingFixture.textType)
        #expect(KeyRing.isSealedEnvelope(envelope))
        #expect(envelope.count == EnvelopeFormat.sealedSize(plaintextCount: size, itemTypeLength: 22))
        let kind: EnvelopeFormat.Kind = size > Self.threshold ? .chunked : .singleShot
        #expect(envelope[5] == kind.rawValue)
        let opened = try ring.open(envelope)
        #expect(opened.itemType == SealingFixture.textType)
        #expect(opened.plaintext == plaintext)
        // The raw-pointer entry points agree.
        let viaPointer = try plaintext.withUnsafeBytes { try ring.seal($0, itemType: "x") }
        #expect(try viaPointer.withUnsafeBytes { try ring.open($0) }.plaintext == plaintext)
    }

    @Test("header layout, byte by byte")
    func layout() throws {
        let ring = try KeyRing.generate()
        let envelope = try ring.seal([1, 2, 3], itemType: "public.png", sealer: "com.acme.notes", sealedAt: 0x6920_0000)
        #expect(Array(envelope[0..<4]) == [0x89, 0x53, 0x42, 0x58])
        #expect(envelope[4] == 2)
        #expect(envelope[5] == 0)
        #expect(SealingFixture.keyID(of: envelope) == ring.currentKeyID)
        #expect(envelope[10] == 10)
        #expect(Array(envelope[11..<21]) == Array("public.png".utf8))
        #expect(Array(envelope[21..<29]) == [0, 0, 0, 0, 0x69, 0x20, 0, 0])
        #expect(envelope[29] == 14)
        #expect(Array(envelope[30..<44]) == Array("com.acme.notes".utf8))
        #expect(envelope.count == 11 + 10 + 9 + 14 + 24 + 3 + 16)
        #expect(envelope.count == EnvelopeFormat.sealedSize(plaintextCount: 3, itemTypeLength: 10, sealerLength: 14))
        #expect(SealingFixture.headerLength(of: envelope) == 68)
        let opened = try ring.open(envelope)
        #expect(opened.sealer == "com.acme.notes")
        #expect(opened.sealedAt == 0x6920_0000)
    }

    @Test("a single-shot envelope is exactly libsodium's XChaCha20-Poly1305 with the header as AAD")
    func matchesLibsodium() throws {
        let keyBytes = SealingFixture.random(32)
        let ring = try SealingFixture.ring(keyBytes: keyBytes, id: 0xA1B2_C3D4)
        for size in [0, 1, 64, 1000] {
            let plaintext = SealingFixture.random(size)
            let envelope = try ring.seal(plaintext, itemType: "public.html")
            let headerLength = SealingFixture.headerLength(of: envelope)
            let header = Array(envelope[0..<headerLength])
            let nonce = SealingFixture.nonce(of: envelope)
            var direct = [UInt8](repeating: 0, count: size + 16)
            var directLength: UInt64 = 0
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &direct, &directLength, plaintext, UInt64(size), header, UInt64(header.count), nil, nonce, keyBytes)
            #expect(Array(envelope[headerLength...]) == direct)
            var decrypted = [UInt8](repeating: 0, count: size)
            var decryptedLength: UInt64 = 0
            let body = Array(envelope[headerLength...])
            #expect(crypto_aead_xchacha20poly1305_ietf_decrypt(
                &decrypted, &decryptedLength, nil, body, UInt64(body.count), header, UInt64(header.count),
                nonce, keyBytes) == 0)
            #expect(decrypted == plaintext)
        }
    }

    @Test("item types of 0 and 255 bytes, and non-ASCII types, round trip")
    func itemTypes() throws {
        let ring = try KeyRing.generate()
        for type in ["", String(repeating: "t", count: 255), "com.acme.日本語", "public.utf8-plain-text"] {
            let opened = try ring.open(ring.seal([9, 9], itemType: type))
            #expect(opened.itemType == type)
            #expect(opened.plaintext == [9, 9])
        }
    }

    @Test("changing the item type in the header fails authentication")
    func typeIsBound() throws {
        let ring = try KeyRing.generate()
        for size in [5, Self.threshold + 10] {
            var envelope = try ring.seal(SealingFixture.bytes(size), itemType: "public.text")
            envelope[11 + 7] = UInt8(ascii: "T") // "public.Text", same length
            #expect(throws: SealingError.authenticationFailed) { try ring.open(envelope) }
        }
        // A different length: re-built header with a longer type, same nonce and body.
        let envelope = try ring.seal([1, 2, 3], itemType: "public.text")
        let relabelled = Array(envelope[0..<10]) + [12] + Array("public.texts".utf8) + Array(envelope[22...])
        #expect(throws: SealingError.authenticationFailed) { try ring.open(relabelled) }
    }

    @Test("changing the key id to another key of the ring fails authentication")
    func keyIDIsBound() throws {
        let first = try KeyRing.generate()
        let ring = try first.rotated()
        for size in [5, Self.threshold + 10] {
            let sealedWithNew = try ring.seal(SealingFixture.bytes(size), itemType: "t")
            let relabelled = SealingFixture.relabel(sealedWithNew, keyID: first.currentKeyID)
            #expect(throws: SealingError.authenticationFailed) { try ring.open(relabelled) }
            let sealedWithOld = try first.seal(SealingFixture.bytes(size), itemType: "t")
            #expect(throws: SealingError.authenticationFailed) {
                try ring.open(SealingFixture.relabel(sealedWithOld, keyID: ring.currentKeyID))
            }
        }
    }

    @Test("changing the kind byte is rejected")
    func kindIsBound() throws {
        let ring = try KeyRing.generate()
        var single = try ring.seal([1, 2, 3], itemType: "t")
        single[5] = EnvelopeFormat.Kind.chunked.rawValue
        #expect(throws: SealingError.authenticationFailed) { try ring.open(single) }
        var chunked = try ring.seal(SealingFixture.bytes(Self.threshold + 1), itemType: "t")
        chunked[5] = EnvelopeFormat.Kind.singleShot.rawValue
        #expect(throws: SealingError.authenticationFailed) { try ring.open(chunked) }
    }

    @Test("every strict prefix of a single-shot envelope is rejected; header prefixes as truncated")
    func everyTruncation() throws {
        let ring = try KeyRing.generate()
        let envelope = try ring.seal(SealingFixture.bytes(40), itemType: "public.text")
        let headerLength = SealingFixture.headerLength(of: envelope)
        for length in 0..<envelope.count {
            let error = SealingFixture.sealingError { () throws(SealingError) in try ring.open(Array(envelope[0..<length])) }
            if length < headerLength + EnvelopeFormat.tagLength {
                #expect(error == .truncated, "length \(length)")
            } else {
                #expect(error == .authenticationFailed, "length \(length)")
            }
        }
    }

    @Test("chunked items: cut at a chunk boundary is truncated; cut inside, reordered or duplicated chunks fail")
    func chunkedDamage() throws {
        let ring = try KeyRing.generate()
        let chunk = EnvelopeFormat.chunkSize, frame = chunk + EnvelopeFormat.chunkOverhead
        let plaintext = SealingFixture.bytes(Self.threshold + chunk / 2) // 17 chunks, the last half full
        let envelope = try ring.seal(plaintext, itemType: "public.data")
        let headerLength = SealingFixture.headerLength(of: envelope)
        let chunks = EnvelopeFormat.chunkCount(plaintextCount: plaintext.count)
        #expect(chunks == 17)
        #expect(envelope.count == headerLength + plaintext.count + chunks * 17)

        // Missing FINAL chunk: every cut at a chunk boundary.
        for kept in [1, 2, chunks - 1] {
            let cut = Array(envelope[0..<(headerLength + kept * frame)])
            #expect(throws: SealingError.truncated) { try ring.open(cut) }
        }
        // Cut inside a chunk.
        #expect(throws: SealingError.truncated) { try ring.open(Array(envelope[0..<(headerLength + 16)])) }
        for cut in [headerLength + 20, headerLength + frame + 100, envelope.count - 1, envelope.count - 17] {
            #expect(throws: SealingError.authenticationFailed) { try ring.open(Array(envelope[0..<cut])) }
        }
        // Only the header.
        #expect(throws: SealingError.truncated) { try ring.open(Array(envelope[0..<headerLength])) }
        // Reorder chunks 1 and 2.
        var swapped = envelope
        let first = headerLength + frame, second = headerLength + 2 * frame
        swapped.replaceSubrange(first..<(first + frame), with: envelope[second..<(second + frame)])
        swapped.replaceSubrange(second..<(second + frame), with: envelope[first..<(first + frame)])
        #expect(throws: SealingError.authenticationFailed) { try ring.open(swapped) }
        // Duplicate chunk 1 in place of chunk 2.
        var duplicated = envelope
        duplicated.replaceSubrange(second..<(second + frame), with: envelope[first..<(first + frame)])
        #expect(throws: SealingError.authenticationFailed) { try ring.open(duplicated) }
        // Drop chunk 1.
        let dropped = Array(envelope[0..<first]) + Array(envelope[second...])
        #expect(throws: SealingError.authenticationFailed) { try ring.open(dropped) }
        // Intact still opens.
        #expect(try ring.open(envelope).plaintext == plaintext)
    }

    @Test("a chunked item whose plaintext is a whole number of chunks round trips")
    func chunkedExactMultiple() throws {
        let ring = try KeyRing.generate()
        let plaintext = SealingFixture.bytes(Self.threshold + EnvelopeFormat.chunkSize * 3)
        let envelope = try ring.seal(plaintext, itemType: "t")
        #expect(try ring.open(envelope).plaintext == plaintext)
        // Cut exactly the last (full) chunk: the previous one is tagged MESSAGE.
        let frame = EnvelopeFormat.chunkSize + EnvelopeFormat.chunkOverhead
        #expect(throws: SealingError.truncated) { try ring.open(Array(envelope[0..<(envelope.count - frame)])) }
    }

    @Test("consecutive envelopes share the process prefix and count up (what the counter reveals)")
    func nonceCounts() throws {
        let ring = try KeyRing.generate(nonces: NonceSource(itemsPerPrefix: 1 << 32))
        let nonces = try (0..<5).map { _ in SealingFixture.nonce(of: try ring.seal([0], itemType: "t")) }
        #expect(Set(nonces.map { Array($0[0..<16]) }).count == 1)
        let counters = nonces.map { $0[16..<24].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        #expect(counters == [0, 1, 2, 3, 4])
    }

    @Test("isSealedEnvelope checks the magic only")
    func magicCheck() throws {
        #expect(!KeyRing.isSealedEnvelope([]))
        #expect(!KeyRing.isSealedEnvelope([0x89, 0x53, 0x42]))
        #expect(KeyRing.isSealedEnvelope([0x89, 0x53, 0x42, 0x58]))
        #expect(!KeyRing.isSealedEnvelope(Array("SBX1 hello".utf8)))
        #expect(!KeyRing.isSealedEnvelope(Array("hello, world".utf8)))
        let sealed = try KeyRing.generate().seal([1], itemType: "t")
        #expect(sealed.withUnsafeBytes { KeyRing.isSealedEnvelope($0) })
        #expect(!Array("plain".utf8).withUnsafeBytes { KeyRing.isSealedEnvelope($0) })
    }

    @Test("opened items never print their plaintext")
    func openedItemDescription() throws {
        var item = OpenedItem(itemType: "public.text", plaintext: Array("secret words".utf8))
        #expect(!item.description.contains("secret"))
        #expect(!String(reflecting: item).contains("115")) // no byte values either
        #expect(item.description.contains("12 bytes"))
        item.zeroPlaintext()
        #expect(item.plaintext.isEmpty)
    }
}
