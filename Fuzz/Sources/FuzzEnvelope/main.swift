// libFuzzer harness: sealed pasteboard envelopes (`KeyRing.open`, `KeyRing.isSealedEnvelope`),
// single-shot and chunked. Built and run by scripts/fuzz.sh; a plain `swift build` makes it a
// do-nothing executable. Only declarations here: under libFuzzer, libFuzzer owns `main` and
// top-level code never runs.
//
// The first byte of an input chooses a mode (its value modulo 4):
//
// 0  raw: the rest of the input is opened as an envelope, from an exactly-sized heap copy and
//    as an array; the two must agree, and must agree with `isSealedEnvelope`.
// 1  forged single-shot: key choice, item type, nonce and plaintext are read from the input, a
//    valid version 1 (legacy) envelope is built with raw libsodium under the fixed keys, then
//    mutated as the rest of the input says. Unmutated, it must open to the same item (or to the
//    exact error an unknown key, the retired key or a non-UTF-8 type calls for); mutated, it
//    must not open.
// 2  forged chunked: the same with `crypto_secretstream_xchacha20poly1305`, up to four chunks,
//    with the tag of each chunk chosen by the input (a wrong tag must not open). The one change
//    that may open is a cut right after the stream's first FINAL chunk when the chunks before it
//    are full MESSAGE chunks: that is exactly a validly sealed stream (see `forgedChunked`).
// 3  round trip through the public API: `seal` (version 2) then `open` (above 1 MiB, chunked),
//    then the mutations; every change must be refused.
//
// See Fuzz/README.md for the input layout of each mode.

import CSodiumFuzz
import FuzzSupport
import ShareBroker
import ShareBrokerCrypto

enum EnvelopeFuzz {
    static let currentID: UInt32 = 0x5342_0002
    static let previousID: UInt32 = 0x5342_0001
    static let unknownID: UInt32 = 0xDEAD_BEEF
    /// The fixed keys (the seed generator, scripts/fuzz-seeds.py, uses the same bytes).
    static let currentKey: [UInt8] = (0..<32).map { UInt8($0) }
    static let previousKey: [UInt8] = (0..<32).map { UInt8(0xA0 + $0) }
    static let tagMessage: UInt8 = 0
    static let tagFinal: UInt8 = 3
    static let maxMutations = 8

    /// A ring holding both fixed keys (the current one seals).
    static let ring: KeyRing = {
        do {
            let old = try KeyRing(current: GroupKey(id: previousID, importing: previousKey))
            return try old.rotated(to: GroupKey(id: currentID, importing: currentKey))
        } catch {
            fatalError("cannot build the fuzz key ring: \(error)")
        }
    }()

    enum Outcome: Equatable, CustomStringConvertible {
        case opened(OpenedItem)
        case failed(SealingError)

        static func == (lhs: Outcome, rhs: Outcome) -> Bool {
            switch (lhs, rhs) {
            case let (.opened(a), .opened(b)): a.itemType == b.itemType && sameBytes(a.plaintext, b.plaintext)
            case let (.failed(a), .failed(b)): a == b
            default: false
            }
        }

        var description: String {
            switch self {
            case .opened(let item): "opened \(item)"
            case .failed(let error): "failed: \(error)"
            }
        }
    }

    static func open(_ envelope: [UInt8]) -> Outcome {
        let viaPointer: Outcome = withExactCopy(of: envelope) { bytes in
            do throws(SealingError) { return .opened(try ring.open(bytes)) } catch { return .failed(error) }
        }
        let viaArray: Outcome
        do { viaArray = .opened(try ring.open(envelope)) } catch { viaArray = .failed(error) }
        fuzzRequire(viaPointer == viaArray, "open(pointer) gave \(viaPointer) but open(array) gave \(viaArray)")
        if case .opened = viaPointer {
            fuzzRequire(KeyRing.isSealedEnvelope(envelope), "an envelope opened without the magic")
        }
        if !KeyRing.isSealedEnvelope(envelope), case .failed(let error) = viaPointer {
            fuzzRequire(error == .badMagic || (error == .truncated && envelope.count < 4),
                        "bytes without the magic failed with \(error), not badMagic")
        }
        return viaPointer
    }

    // MARK: Building envelopes with raw libsodium

    /// Key choice: 0 the current key, 1 the previous (retired) one, 2 an id the ring does not hold.
    static func key(_ choice: UInt8) -> (id: UInt32, bytes: [UInt8], known: Bool, retired: Bool) {
        switch choice % 3 {
        case 0: (currentID, currentKey, true, false)
        case 1: (previousID, previousKey, true, true)
        default: (unknownID, currentKey, false, false)
        }
    }

    /// A legacy (version 1) header up to the nonce: the forged modes build version 1 envelopes
    /// (the seeds' layout), which open under the current key and are refused under the retired
    /// one; version 2 envelopes come from the round-trip mode.
    static func header(kind: UInt8, keyID: UInt32, type: [UInt8]) -> [UInt8] {
        EnvelopeFormat.magic + [EnvelopeFormat.legacyVersion, kind,
                                UInt8(truncatingIfNeeded: keyID >> 24), UInt8(truncatingIfNeeded: keyID >> 16),
                                UInt8(truncatingIfNeeded: keyID >> 8), UInt8(truncatingIfNeeded: keyID),
                                UInt8(type.count)] + type
    }

    static func sealSingleShot(key: [UInt8], header: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        let nonce = Array(header.suffix(EnvelopeFormat.nonceLength))
        var body = [UInt8](repeating: 0, count: plaintext.count + EnvelopeFormat.tagLength)
        var written: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_encrypt(
            &body, &written, plaintext, UInt64(plaintext.count), header, UInt64(header.count), nil, nonce, key)
        fuzzRequire(status == 0 && Int(written) == body.count, "libsodium refused to seal")
        return header + body
    }

    static func sealChunked(key: [UInt8], headerBeforeNonce: [UInt8], plaintext: [UInt8], tags: [UInt8]) -> [UInt8] {
        var streamKey = [UInt8](repeating: 0, count: 32)
        _ = crypto_kdf_derive_from_key(&streamKey, 32, 1, "SBX1strm", key)
        var state = crypto_secretstream_xchacha20poly1305_state()
        var streamHeader = [UInt8](repeating: 0, count: EnvelopeFormat.nonceLength)
        _ = crypto_secretstream_xchacha20poly1305_init_push(&state, &streamHeader, streamKey)
        let header = headerBeforeNonce + streamHeader
        var out = header
        let size = EnvelopeFormat.chunkSize
        for (index, tag) in tags.enumerated() {
            let chunk = Array(plaintext[min(plaintext.count, index * size)..<min(plaintext.count, (index + 1) * size)])
            var cipher = [UInt8](repeating: 0, count: chunk.count + EnvelopeFormat.chunkOverhead)
            var written: UInt64 = 0
            let ad = index == 0 ? header : []
            _ = crypto_secretstream_xchacha20poly1305_push(
                &state, &cipher, &written, chunk, UInt64(chunk.count), ad, UInt64(ad.count), tag)
            out += cipher[0..<Int(written)]
        }
        return out
    }

    /// Applies up to ``maxMutations`` mutations of four bytes each (op, position, value).
    static func mutate(_ envelope: [UInt8], _ input: inout FuzzInput) -> [UInt8] {
        var bytes = envelope
        for _ in 0..<maxMutations where !input.isAtEnd {
            let op = input.byte()
            let position = Int(input.uint16())
            let value = input.byte()
            switch op % 4 {
            case 0 where !bytes.isEmpty: bytes[position % bytes.count] ^= max(value, 1)
            case 1: bytes.removeLast(bytes.count - position % (bytes.count + 1))
            case 2: bytes.insert(value, at: position % (bytes.count + 1))
            case 3 where !bytes.isEmpty: bytes.remove(at: position % bytes.count)
            default: break
            }
        }
        return bytes
    }

    /// Checks the outcome of a forged envelope against what its construction calls for.
    static func expect(_ outcome: Outcome, mutated: Bool, known: Bool, retired: Bool = false, validTags: Bool,
                       type: [UInt8], plaintext: [UInt8]) {
        if mutated {
            if case .opened = outcome { fuzzRequire(false, "a mutated envelope opened") }
            return
        }
        guard known else {
            fuzzRequire(outcome == .failed(.unknownKey(id: unknownID)), "unknown key: got \(outcome)")
            return
        }
        guard validTags else {
            if case .opened(let item) = outcome {
                fuzzRequire(false, "a chunked envelope with a wrong tag opened (\(item.plaintext.count) bytes)")
            }
            return
        }
        guard !retired else {
            fuzzRequire(outcome == .failed(.legacyItemUnderRetiredKey(keyID: previousID)),
                        "a version 1 item under the retired key gave \(outcome)")
            return
        }
        guard let text = String(validating: type, as: UTF8.self) else {
            fuzzRequire(outcome == .failed(.invalidItemType), "a non-UTF-8 type gave \(outcome)")
            return
        }
        fuzzRequire(outcome == .opened(OpenedItem(itemType: text, plaintext: plaintext)),
                    "a valid envelope gave \(outcome)")
    }

    // MARK: Modes

    static func raw(_ input: inout FuzzInput) {
        _ = open(input.rest())
    }

    static func forgedSingleShot(_ input: inout FuzzInput) {
        let key = key(input.byte())
        let type = input.bytes(Int(input.byte()))
        var nonce = input.bytes(EnvelopeFormat.nonceLength)
        nonce += [UInt8](repeating: 0, count: EnvelopeFormat.nonceLength - nonce.count)
        let plaintext = input.bytes(input.int(upTo: 4096))
        let header = header(kind: 0, keyID: key.id, type: type) + nonce
        let envelope = sealSingleShot(key: key.bytes, header: header, plaintext: plaintext)
        let mutated = mutate(envelope, &input)
        expect(open(mutated), mutated: !sameBytes(mutated, envelope), known: key.known, retired: key.retired,
               validTags: true, type: type, plaintext: plaintext)
    }

    static func forgedChunked(_ input: inout FuzzInput) {
        let key = key(input.byte())
        let type = input.bytes(Int(input.byte()))
        // Mostly one short chunk (fast); one time in sixteen up to four chunks.
        let count = input.byte() < 0xF0
            ? input.int(upTo: 2048)
            : Int(input.uint32() % UInt32(3 * EnvelopeFormat.chunkSize + 64))
        let chunks = EnvelopeFormat.chunkCount(plaintextCount: count)
        var tags: [UInt8] = []
        for index in 0..<chunks {
            let correct = index == chunks - 1 ? tagFinal : tagMessage
            let choice = input.byte()
            tags.append(choice < 0xE0 ? correct : choice & 3)
        }
        if input.byte() >= 0xF0 { // sometimes drop the last chunk, or add an empty one
            if tags.count > 1 && input.byte() & 1 == 0 { tags.removeLast() } else { tags.append(input.byte() & 3) }
        }
        let plaintext = repeated(input.bytes(Int(input.byte() % 64)), count: count)
        let envelope = sealChunked(key: key.bytes, headerBeforeNonce: header(kind: 1, keyID: key.id, type: type),
                                   plaintext: plaintext, tags: tags)
        // A stream is valid when every chunk but the last is full and tagged MESSAGE and the last
        // is tagged FINAL; it then holds the plaintext its chunks hold (dropping the last chunk of
        // a valid stream, or adding an empty FINAL one after a full chunk, can leave it valid).
        //
        // So the stream sealed here has at most one valid end: right after its first FINAL chunk,
        // if every chunk before that one is full and tagged MESSAGE. Cut there, the envelope is
        // byte for byte the one a sealer holding the key writes for those chunks alone, and it
        // must open to exactly their plaintext: this harness holds the key, it is the sealer, not
        // a forger. A mutation can reach that end from a stream that is not valid as sealed (a
        // FINAL chunk followed by more chunks, refused whole): cutting off the chunks after the
        // FINAL one is not a forgery. Counting that cut as "a mutated envelope opened" was this
        // harness's mistake, not the library's (Fuzz/regressions/FuzzEnvelope/
        // chunked-cut-after-early-final: chunks [FINAL 0x00, MESSAGE empty], cut after the
        // first). Any other change to the bytes must still be refused.
        let size = EnvelopeFormat.chunkSize
        let headerLength = EnvelopeFormat.legacyHeaderLength(itemTypeLength: type.count)
        var validEnd: (length: Int, plaintextCount: Int)?
        var end = headerLength
        for (index, tag) in tags.enumerated() {
            let chunkStart = min(count, index * size), chunkEnd = min(count, (index + 1) * size)
            end += chunkEnd - chunkStart + EnvelopeFormat.chunkOverhead
            if tag == tagFinal { validEnd = (end, chunkEnd) }
            if tag != tagMessage || chunkEnd - chunkStart != size { break }
        }
        let mutated = mutate(envelope, &input)
        if let validEnd, mutated.count == validEnd.length, sameBytes(mutated, Array(envelope.prefix(validEnd.length))) {
            expect(open(mutated), mutated: false, known: key.known, retired: key.retired, validTags: true,
                   type: type, plaintext: Array(plaintext.prefix(validEnd.plaintextCount)))
        } else {
            // Unmutated here means the stream's tags are wrong (a valid stream ends at validEnd).
            expect(open(mutated), mutated: !sameBytes(mutated, envelope), known: key.known, retired: key.retired,
                   validTags: false, type: type, plaintext: [])
        }
    }

    static func roundTrip(_ input: inout FuzzInput) {
        let type = String(decoding: input.bytes(Int(input.byte())), as: UTF8.self)
        let flags = input.byte()
        let seed = input.bytes(input.int(upTo: 2048))
        let plaintext = flags == 0xFF // rarely: over the chunking threshold (slow)
            ? repeated(seed, count: EnvelopeFormat.chunkingThreshold + 1 + input.int(upTo: 2 * EnvelopeFormat.chunkSize))
            : seed
        let sealed: [UInt8]
        do {
            sealed = try ring.seal(plaintext, itemType: type)
        } catch {
            fuzzRequire(error == .itemTypeTooLong(length: type.utf8.count, limit: EnvelopeFormat.maxItemTypeLength),
                        "seal failed with \(error)")
            return
        }
        fuzzRequire(type.utf8.count <= EnvelopeFormat.maxItemTypeLength, "sealed an over-long type")
        fuzzRequire(sealed.count == EnvelopeFormat.sealedSize(plaintextCount: plaintext.count,
                                                              itemTypeLength: type.utf8.count),
                    "sealedSize disagrees with the envelope")
        fuzzRequire(sealed[5] == (plaintext.count > EnvelopeFormat.chunkingThreshold ? 1 : 0), "wrong kind byte")
        fuzzRequire(open(sealed) == .opened(OpenedItem(itemType: type, plaintext: plaintext)),
                    "a sealed item did not open to itself")
        let mutated = mutate(sealed, &input)
        if !sameBytes(mutated, sealed), case .opened = open(mutated) {
            fuzzRequire(false, "a mutated envelope opened")
        }
    }

    static func run(_ input: inout FuzzInput) {
        switch input.byte() % 4 {
        case 0: raw(&input)
        case 1: forgedSingleShot(&input)
        case 2: forgedChunked(&input)
        default: roundTrip(&input)
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    EnvelopeFuzz.run(&input)
    return 0
}
