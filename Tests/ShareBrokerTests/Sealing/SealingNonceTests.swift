#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import ShareBroker
import ShareBrokerCrypto

/// Nonces: unique across threads, a new prefix per epoch and in every fork child, and the cached
/// HChaCha20 subkey always matching the prefix in the envelope.
@Suite("Sealing: nonces")
struct SealingNonceTests {
    @Test("concurrent seals never repeat a nonce and all open")
    func concurrentUniqueness() async throws {
        let ring = try KeyRing.generate()
        let envelopes = await withTaskGroup(of: [[UInt8]].self) { group in
            for task in 0..<8 {
                group.addTask {
                    (0..<1000).compactMap { index in try? ring.seal([UInt8(task), UInt8(truncatingIfNeeded: index)], itemType: "t") }
                }
            }
            var all: [[UInt8]] = []
            for await part in group { all += part }
            return all
        }
        #expect(envelopes.count == 8000)
        #expect(Set(envelopes.map(SealingFixture.nonce(of:))).count == 8000)
        for envelope in envelopes.prefix(500) {
            #expect(throws: Never.self) { try ring.open(envelope) }
        }
    }

    @Test("a new prefix every itemsPerPrefix items; every item opens (subkey cache follows)")
    func epochRollover() throws {
        let source = NonceSource(itemsPerPrefix: 3)
        let ring = try KeyRing.generate(nonces: source)
        let envelopes = try (0..<10).map { try ring.seal([UInt8($0)], itemType: "t") }
        let nonces = envelopes.map(SealingFixture.nonce(of:))
        let prefixes = nonces.map { Array($0[0..<16]) }
        let counters = nonces.map { $0[16..<24].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        #expect(counters == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
        #expect(Set(prefixes).count == 4)
        for group in stride(from: 0, to: 9, by: 3) {
            #expect(prefixes[group] == prefixes[group + 1] && prefixes[group] == prefixes[group + 2])
        }
        for (index, envelope) in envelopes.enumerated() {
            #expect(try ring.open(envelope).plaintext == [UInt8(index)])
        }
    }

    @Test("a simulated fork draws a new prefix before the next nonce")
    func simulatedFork() throws {
        let source = NonceSource(itemsPerPrefix: 1 << 32)
        let ring = try KeyRing.generate(nonces: source)
        let before = SealingFixture.nonce(of: try ring.seal([1], itemType: "t"))
        source.simulateFork()
        let after = try ring.seal([2], itemType: "t")
        let afterNonce = SealingFixture.nonce(of: after)
        #expect(before[0..<16] != afterNonce[0..<16])
        #expect(afterNonce[16..<24].allSatisfy { $0 == 0 }) // counter restarts with the new prefix
        #expect(try ring.open(after).plaintext == [2])
    }

    #if SHAREBROKER_TSAN
    /// ThreadSanitizer does not support `fork` in a process with other threads running (the
    /// test process runs suites in parallel): the child can deadlock inside the sanitizer's
    /// runtime. The normal and AddressSanitizer runs cover this test.
    static let forkSupported = false
    #else
    static let forkSupported = true
    #endif

    @Test("a real fork child seals under a different nonce prefix than its parent",
          .enabled(if: forkSupported, "ThreadSanitizer builds: fork with other threads running can deadlock the sanitizer's runtime"))
    func realFork() throws {
        let ring = try KeyRing.generate()
        let parentBefore = SealingFixture.nonce(of: try ring.seal([1], itemType: "t"))
        // Child: seal once (new prefix, new cached subkey) and hand the envelope back.
        let (status, received) = SealingFixture.inForkChild { try? ring.seal([2], itemType: "t") }
        #expect(status == 0, "child exit status \(status)")
        try #require(received.count == EnvelopeFormat.sealedSize(plaintextCount: 1, itemTypeLength: 1))
        let childNonce = SealingFixture.nonce(of: received)
        let parentAfter = SealingFixture.nonce(of: try ring.seal([3], itemType: "t"))
        #expect(childNonce[0..<16] != parentBefore[0..<16], "the child reused the parent's prefix")
        #expect(parentAfter[0..<16] == parentBefore[0..<16] || parentAfter[16..<24].allSatisfy { $0 == 0 })
        #expect(childNonce != parentAfter)
        // The parent opens what the child sealed (same key, the child's own prefix).
        #expect(try ring.open(received).plaintext == [2])
    }

    @Test("the cached-subkey seal equals HChaCha20 recomputed per item")
    func cachedSubkeyMatches() throws {
        let keyBytes = SealingFixture.random(32)
        let ring = try SealingFixture.ring(keyBytes: keyBytes, id: 3, nonces: NonceSource(itemsPerPrefix: 2))
        for index in 0..<6 {
            let plaintext = SealingFixture.random(index * 11)
            let envelope = try ring.seal(plaintext, itemType: "p")
            let headerLength = SealingFixture.headerLength(of: envelope)
            let expected = try XChaCha20Poly1305.encrypt(
                key: keyBytes, nonce: SealingFixture.nonce(of: envelope),
                aad: Array(envelope[0..<headerLength]), plaintext: plaintext)
            #expect(Array(envelope[headerLength...]) == expected)
        }
    }
}
