#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import ShareBrokerCrypto

/// The peer subkey table (`PeerSubkeys`): the subkeys of nonce prefixes other processes sealed
/// under, kept so the next item from the same peer skips HChaCha20. It must give the right
/// subkey, remember only prefixes whose item authenticated, stay bounded, and be gone after a wipe.
@Suite("Sealing: peer subkey table")
struct SealingPeerSubkeyTests {
    static let keyBytes = SealingFixture.random(32)

    /// A ring of the shared test key with a nonce source of its own: a "process" of its own.
    static func process(id: UInt32 = 0x0A0B_0C0D) throws -> KeyRing {
        try SealingFixture.ring(keyBytes: keyBytes, id: id, nonces: NonceSource(itemsPerPrefix: 1 << 32))
    }

    /// The 16-byte nonce prefix of an envelope.
    static func prefix(of envelope: [UInt8]) -> [UInt8] { Array(SealingFixture.nonce(of: envelope)[0..<16]) }

    /// Whether `ring`'s key remembers `prefix`, and the subkey it gives.
    static func remembered(_ ring: KeyRing, prefix: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 32)
        let hit = prefix.withUnsafeBytes { prefix in
            out.withUnsafeMutableBytes { ring.current.peerSubkeys.lookup(prefix: prefix.baseAddress!, into: $0.baseAddress!) }
        }
        return hit ? out : nil
    }

    static func hchacha(_ prefix: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        keyBytes.withUnsafeBytes { key in
            prefix.withUnsafeBytes { prefix in
                out.withUnsafeMutableBytes {
                    XChaCha20Poly1305.hchacha20(key: key.baseAddress!, input: prefix.baseAddress!, into: $0.baseAddress!)
                }
            }
        }
        return out
    }

    @Test("an item from a peer is remembered after it authenticates, with the right subkey; later items of that peer open")
    func remembersAuthenticPeers() throws {
        let reader = try Self.process(), peer = try Self.process()
        let first = try peer.seal([1, 2, 3], itemType: "public.utf8-plain-text")
        #expect(Self.remembered(reader, prefix: Self.prefix(of: first)) == nil)
        #expect(try reader.open(first).plaintext == [1, 2, 3])
        #expect(Self.remembered(reader, prefix: Self.prefix(of: first)) == Self.hchacha(Self.prefix(of: first)))
        // The peer's next items share the prefix and open through the remembered subkey.
        for index in 0..<20 {
            let item = SealingFixture.random(64 + index)
            let envelope = try peer.seal(item, itemType: "public.utf8-plain-text")
            #expect(Self.prefix(of: envelope) == Self.prefix(of: first))
            #expect(try reader.open(envelope).plaintext == item)
        }
    }

    @Test("a remembered prefix does not skip authentication: a tampered item of a known peer is refused")
    func rememberedPrefixStillAuthenticates() throws {
        let reader = try Self.process(), peer = try Self.process()
        _ = try reader.open(try peer.seal([9], itemType: "t"))
        var envelope = try peer.seal(Array(repeating: 0x41, count: 64), itemType: "t")
        envelope[envelope.count - 20] ^= 1
        #expect(throws: SealingError.authenticationFailed) { _ = try reader.open(envelope) }
    }

    @Test("a forged item under a new prefix is not remembered: forgeries cannot fill the table")
    func forgeriesAreNotRemembered() throws {
        let reader = try Self.process()
        // Sealed under another key with the same id: the prefix is new, the tag cannot verify.
        let stranger = try SealingFixture.ring(keyBytes: SealingFixture.random(32), id: 0x0A0B_0C0D,
                                               nonces: NonceSource(itemsPerPrefix: 1 << 32))
        let forged = try stranger.seal([1, 2, 3], itemType: "t")
        #expect(throws: SealingError.authenticationFailed) { _ = try reader.open(forged) }
        #expect(Self.remembered(reader, prefix: Self.prefix(of: forged)) == nil)
    }

    @Test("bounded: a fifth peer replaces the oldest, and every peer's items still open")
    func bounded() throws {
        let reader = try Self.process()
        let peers = try (0..<(PeerSubkeys.slotCount + 2)).map { _ in try Self.process() }
        var prefixes: [[UInt8]] = []
        for (index, peer) in peers.enumerated() {
            let envelope = try peer.seal([UInt8(index)], itemType: "t")
            prefixes.append(Self.prefix(of: envelope))
            #expect(try reader.open(envelope).plaintext == [UInt8(index)])
        }
        let held = prefixes.filter { Self.remembered(reader, prefix: $0) != nil }
        #expect(held.count == PeerSubkeys.slotCount)
        #expect(held == Array(prefixes.suffix(PeerSubkeys.slotCount)), "the oldest peers are replaced first")
        // The evicted ones derive again and open.
        for (index, peer) in peers.enumerated() {
            #expect(try reader.open(try peer.seal([UInt8(index), 1], itemType: "t")).plaintext == [UInt8(index), 1])
        }
    }

    @Test("a wipe forgets every peer subkey, and nothing is remembered after it")
    func wipeForgets() throws {
        let reader = try Self.process(), peer = try Self.process()
        let envelope = try peer.seal([5, 6], itemType: "t")
        _ = try reader.open(envelope)
        #expect(Self.remembered(reader, prefix: Self.prefix(of: envelope)) != nil)
        reader.wipe()
        #expect(Self.remembered(reader, prefix: Self.prefix(of: envelope)) == nil)
        #expect(throws: SealingError.wiped) { _ = try reader.open(envelope) }
        // A table that was never used is wiped as well (no allocation, no fault).
        let unused = try Self.process()
        unused.wipe()
        #expect(Self.remembered(unused, prefix: Self.prefix(of: envelope)) == nil)
    }

    @Test("a fork child opens a known peer's next item and seals a large item (OpenSSL) under its own prefix",
          .enabled(if: SealingNonceTests.forkSupported,
                   "ThreadSanitizer builds: fork with other threads running can deadlock the sanitizer's runtime"))
    func forkChild() throws {
        let reader = try Self.process(), peer = try Self.process()
        _ = try reader.open(try peer.seal([1], itemType: "t"))            // the peer is remembered
        let large = SealingFixture.random(XChaCha20Poly1305.bulkThreshold * 16)
        let parentLarge = try reader.seal(large, itemType: "t")         // a pooled OpenSSL context is used
        #expect(try reader.open(parentLarge).plaintext == large)
        let peerNext = try peer.seal([2, 3], itemType: "t")
        // Child: the inherited table and pool must still work.
        let (status, received) = SealingFixture.inForkChild {
            guard (try? reader.open(peerNext).plaintext) == [2, 3] else { return nil }
            return try? reader.seal(large, itemType: "t")
        }
        #expect(status == 0, "child exit status \(status)")
        try #require(!received.isEmpty)
        // The child sealed under a prefix of its own (never the parent's), and the parent opens it.
        #expect(Self.prefix(of: received) != Self.prefix(of: parentLarge), "the child reused the parent's nonce prefix")
        #expect(try reader.open(received).plaintext == large)
    }

    @Test("opening a known peer's items on many threads gives every item back")
    func concurrentOpens() async throws {
        let reader = try Self.process()
        let peers = try (0..<6).map { _ in try Self.process() }
        let envelopes = try peers.enumerated().flatMap { index, peer in
            try (0..<8).map { item in (try peer.seal([UInt8(index), UInt8(item)], itemType: "t"), [UInt8(index), UInt8(item)]) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask { () throws -> Void in
                    for round in 0..<50 {
                        let (envelope, expected) = envelopes[(worker * 7 + round * 5) % envelopes.count]
                        #expect(try reader.open(envelope).plaintext == expected)
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
