// Sealing and opening through KeyRing, with raw libsodium measured the same way in the same run.
//
// Output memory, said once for every benchmark here:
// * `KeyRing.seal` / `KeyRing.open` return a fresh `[UInt8]` per call (the API's contract).
// * "(fresh output)" raw baselines allocate a fresh `[UInt8]` per call too, the cheapest way the
//   library knows (a stack buffer and one copy up to 1 KiB, `unsafeUninitializedCapacity` above),
//   and let it go after the call: the like-for-like comparison.
// * Raw baselines without "(fresh output)" write into one buffer allocated and touched in setup
//   (recycled memory, no allocation, no page fault): the floor, as issue 3 phrases its goals.
// * Raw baselines use no AAD and a fixed nonce; KeyRing authenticates its 57-byte header (type
//   `public.utf8-plain-text`) and draws a fresh nonce every call. Both are part of its cost.

import Benchmark
import BenchmarkSupport
import CSodiumBench
import ShareBroker
import ShareBrokerCrypto

/// The item type every sealing benchmark uses (22 bytes: a 57-byte envelope header).
let benchItemType = PasteboardItem.textType

/// A key ring whose key the benchmark knows, a plaintext, and envelopes of it.
final class SealFixture: @unchecked Sendable {
    let ring: KeyRing
    let plaintext: [UInt8]
    /// Sealed as another process would have sealed it: a nonce prefix this process never used,
    /// so `open` cannot take the cached subkey (the paste-from-another-app case).
    let sealedElsewhere: [UInt8]
    /// Sealed by `ring` in this process (same nonce prefix: `open` reuses the cached subkey).
    let sealedHere: [UInt8]
    /// `newSealers` envelopes of the plaintext, each under a prefix of its own (as if each came
    /// from another process): more prefixes than the ring's peer table holds, so opening them in
    /// turn derives the subkey every time.
    let sealedByNewSealers: [[UInt8]]

    init(size: Int, newSealers: Int = 0) {
        precondition(sodium_init() >= 0, "sodium_init failed")
        let keyID: UInt32 = 0x5EA1_0001
        var keyBytes = randomBytes(32)
        do {
            ring = try KeyRing(current: GroupKey(id: keyID, importing: keyBytes))
        } catch {
            fatalError("benchmark fixture: \(error)")
        }
        plaintext = randomBytes(size)
        sealedHere = try! ring.seal(plaintext, itemType: benchItemType)
        if size > EnvelopeFormat.chunkingThreshold {
            // Chunked envelopes carry a fresh secretstream header every time and never use the
            // subkey cache: one sealed here is no different from one sealed elsewhere.
            sealedElsewhere = sealedHere
        } else {
            sealedElsewhere = Self.forgeSingleShot(plaintext: plaintext, type: benchItemType, keyID: keyID, key: keyBytes)
        }
        var pool: [[UInt8]] = []
        for _ in 0..<newSealers {
            pool.append(Self.forgeSingleShot(plaintext: plaintext, type: benchItemType, keyID: keyID, key: keyBytes))
        }
        sealedByNewSealers = pool
        keyBytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
        // Both envelopes must open to the plaintext, or the benchmark would time a failure.
        precondition(try! ring.open(sealedElsewhere).plaintext == plaintext)
        precondition(try! ring.open(sealedHere).plaintext == plaintext)
    }

    /// A version-2 single-shot envelope (docs/FORMATS.md) written with raw libsodium and a random
    /// 24-byte nonce, sealed now by `com.acme.bench`.
    static func forgeSingleShot(plaintext: [UInt8], type: String, keyID: UInt32, key: [UInt8]) -> [UInt8] {
        var header: [UInt8] = EnvelopeFormat.magic + [EnvelopeFormat.version, EnvelopeFormat.Kind.singleShot.rawValue]
        header += [UInt8(truncatingIfNeeded: keyID >> 24), UInt8(truncatingIfNeeded: keyID >> 16),
                   UInt8(truncatingIfNeeded: keyID >> 8), UInt8(truncatingIfNeeded: keyID)]
        header.append(UInt8(type.utf8.count))
        header += Array(type.utf8)
        let now = SealClock.now()
        header += (0..<8).map { UInt8(truncatingIfNeeded: now >> UInt64(56 - 8 * $0)) }
        let sealer = Array("com.acme.bench".utf8)
        header.append(UInt8(sealer.count))
        header += sealer
        header += randomBytes(EnvelopeFormat.nonceLength)
        var body = [UInt8](repeating: 0, count: plaintext.count + EnvelopeFormat.tagLength)
        let nonceOffset = header.count - EnvelopeFormat.nonceLength
        header.withUnsafeBufferPointer { ad in
            plaintext.withUnsafeBufferPointer { message in
                key.withUnsafeBufferPointer { key in
                    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                        &body, nil, message.baseAddress, UInt64(message.count), ad.baseAddress, UInt64(ad.count),
                        nil, ad.baseAddress! + nonceOffset, key.baseAddress!)
                }
            }
        }
        return header + body
    }
}

/// The raw secretstream baseline: what `KeyRing` does for items over 1 MiB (64 KiB chunks, the
/// first with the header as AAD), without the envelope.
final class SecretStreamFixture: @unchecked Sendable {
    let key = randomBytes(Int(crypto_secretstream_xchacha20poly1305_KEYBYTES))
    let plaintext: [UInt8]
    let chunk = 64 << 10

    init(size: Int) {
        plaintext = randomBytes(size)
    }

    var sealedCount: Int {
        let chunks = max(1, (plaintext.count + chunk - 1) / chunk)
        return Int(crypto_secretstream_xchacha20poly1305_HEADERBYTES) + plaintext.count
            + chunks * Int(crypto_secretstream_xchacha20poly1305_ABYTES)
    }

    @inline(__always)
    func seal(into out: UnsafeMutablePointer<UInt8>) {
        var state = crypto_secretstream_xchacha20poly1305_state()
        key.withUnsafeBufferPointer { key in
            _ = crypto_secretstream_xchacha20poly1305_init_push(&state, out, key.baseAddress!)
        }
        let chunks = max(1, (plaintext.count + chunk - 1) / chunk)
        var output = out + Int(crypto_secretstream_xchacha20poly1305_HEADERBYTES)
        plaintext.withUnsafeBufferPointer { input in
            var offset = 0
            for index in 0 ..< chunks {
                let length = min(chunk, plaintext.count - offset)
                var written: UInt64 = 0
                let tag = index == chunks - 1
                    ? crypto_secretstream_xchacha20poly1305_tag_final() : crypto_secretstream_xchacha20poly1305_tag_message()
                _ = crypto_secretstream_xchacha20poly1305_push(
                    &state, output, &written, input.baseAddress! + offset, UInt64(length), nil, 0, tag)
                output += Int(written)
                offset += length
            }
        }
    }
}

func sealingBenchmarks() {
    for size in PayloadSize.all {
        let configuration = BenchmarkMode.configuration(scaling: size.scaling)

        // MARK: ShareBroker

        // Paired with raw encrypt / decrypt of the same size (BenchmarkMode.measurePaired).
        Benchmark("KeyRing seal \(size.label)", configuration: BenchmarkMode.pairedConfiguration(size)) { benchmark, pair in
            let (fixture, raw) = pair
            let plaintext = fixture.plaintext
            let count = raw.ciphertextCount
            BenchmarkMode.measurePaired(
                benchmark,
                ours: { blackHole(try! fixture.ring.seal(plaintext, itemType: benchItemType)) },
                rawFresh: { blackHole(freshBytes(count: count) { out in _ = raw.encrypt(into: out) }) },
                rawRecycled: { blackHole(raw.encrypt()) })
        } setup: {
            (SealFixture(size: size.bytes), SodiumBuffers(size: size.bytes))
        }

        Benchmark("KeyRing open \(size.label)", configuration: BenchmarkMode.pairedConfiguration(size)) { benchmark, pair in
            let (fixture, raw) = pair
            let envelope = fixture.sealedElsewhere
            let count = raw.size
            let out = raw.plaintextOutput
            BenchmarkMode.measurePaired(
                benchmark,
                ours: { blackHole(try! fixture.ring.open(envelope)) },
                rawFresh: { blackHole(freshBytes(count: count) { out in raw.decrypt(into: out) }) },
                rawRecycled: { raw.decrypt(into: out) })
        } setup: {
            (SealFixture(size: size.bytes), SodiumBuffers(size: size.bytes))
        }

        // MARK: Raw libsodium, fresh output (like for like with the API)

        Benchmark("libsodium xchacha20poly1305 encrypt \(size.label) (fresh output)",
                  configuration: configuration) { benchmark, buffers in
            let count = buffers.ciphertextCount
            BenchmarkMode.measure(benchmark) {
                blackHole(freshBytes(count: count) { out in _ = buffers.encrypt(into: out) })
            }
        } setup: {
            SodiumBuffers(size: size.bytes)
        }

        Benchmark("libsodium xchacha20poly1305 decrypt \(size.label) (fresh output)",
                  configuration: configuration) { benchmark, buffers in
            let count = buffers.size
            BenchmarkMode.measure(benchmark) {
                blackHole(freshBytes(count: count) { out in buffers.decrypt(into: out) })
            }
        } setup: {
            SodiumBuffers(size: size.bytes)
        }

        // MARK: Raw libsodium, recycled output (the floor; issue 3's "preallocated buffers")

        Benchmark("libsodium xchacha20poly1305 decrypt \(size.label)", configuration: configuration) { benchmark, buffers in
            let out = buffers.plaintextOutput
            BenchmarkMode.measure(benchmark) {
                buffers.decrypt(into: out)
            }
            blackHole(out.pointee)
        } setup: {
            SodiumBuffers(size: size.bytes)
        }
    }

    // The same page from 64 B: an item this process sealed itself opens with the cached subkey
    // (one HChaCha20 less than an item from another process).
    Benchmark("KeyRing open 64 B (sealed by this process)",
              configuration: BenchmarkMode.pairedConfiguration(PayloadSize.all[0])) { benchmark, pair in
        let (fixture, raw) = pair
        let envelope = fixture.sealedHere
        let count = raw.size
        let out = raw.plaintextOutput
        BenchmarkMode.measurePaired(
            benchmark,
            ours: { blackHole(try! fixture.ring.open(envelope)) },
            rawFresh: { blackHole(freshBytes(count: count) { out in raw.decrypt(into: out) }) },
            rawRecycled: { raw.decrypt(into: out) })
    } setup: {
        (SealFixture(size: 64), SodiumBuffers(size: 64))
    }

    // "KeyRing open 64 B" opens one item from another process again and again: after the first,
    // the ring's peer table holds that process's subkey, as it does for the next items a peer app
    // seals under the same prefix. This row opens items of 64 different sealers in turn (the
    // table holds 4), so every open derives the subkey: the first paste from a new peer.
    Benchmark("KeyRing open 64 B (each item from a new sealer)",
              configuration: BenchmarkMode.pairedConfiguration(PayloadSize.all[0])) { benchmark, pair in
        let (fixture, raw) = pair
        let pool = fixture.sealedByNewSealers
        let next = Counter()
        let count = raw.size
        let out = raw.plaintextOutput
        BenchmarkMode.measurePaired(
            benchmark,
            ours: { blackHole(try! fixture.ring.open(pool[next.advance(modulo: pool.count)])) },
            rawFresh: { blackHole(freshBytes(count: count) { out in raw.decrypt(into: out) }) },
            rawRecycled: { raw.decrypt(into: out) })
    } setup: {
        (SealFixture(size: 64, newSealers: 64), SodiumBuffers(size: 64))
    }

    // KeyRing seals items over 1 MiB in 64 KiB secretstream chunks: this is that construction
    // in raw libsodium, fresh output, for the 16 MiB row.
    Benchmark("libsodium secretstream push 16 MiB (fresh output)",
              configuration: BenchmarkMode.configuration(scaling: .one)) { benchmark, fixture in
        let count = fixture.sealedCount
        BenchmarkMode.measure(benchmark) {
            blackHole(freshBytes(count: count) { out in fixture.seal(into: out) })
        }
    } setup: {
        SecretStreamFixture(size: 16 << 20)
    }
}

/// A position in a pool of inputs, advanced by every call (one benchmark thread).
final class Counter: @unchecked Sendable {
    private var value = 0

    /// The current position, then moves on.
    @inline(__always)
    func advance(modulo count: Int) -> Int {
        let current = value
        value = current + 1 == count ? 0 : current + 1
        return current
    }
}
