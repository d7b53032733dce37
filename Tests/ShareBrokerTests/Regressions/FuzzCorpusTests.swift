import Foundation
import ShareBroker
import Testing
import ShareBrokerCrypto

/// The committed envelope seeds of the fuzz harness (Fuzz/corpus/FuzzEnvelope) still mean what
/// their names say, so a format change that silently turns them into garbage (and the fuzzer
/// back into a magic-byte guesser) fails here.
@Suite("Fuzz corpus: envelope seeds")
struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The harness's fixed ring (Fuzz/Sources/FuzzEnvelope/main.swift, scripts/fuzz-seeds.py).
    static func ring() throws -> KeyRing {
        let old = try KeyRing(current: GroupKey(id: 0x5342_0001, importing: (0..<32).map { UInt8(0xA0 + $0) }))
        return try old.rotated(to: GroupKey(id: 0x5342_0002, importing: (0..<32).map { UInt8($0) }))
    }

    /// A raw-mode seed's envelope (the input without its mode byte).
    static func rawSeed(_ name: String) throws -> [UInt8] {
        let bytes = Array(try Data(contentsOf: root.appendingPathComponent("Fuzz/corpus/FuzzEnvelope/\(name)")))
        try #require(bytes.first.map { $0 % 4 } == 0, "\(name) is not a raw-mode seed")
        return Array(bytes.dropFirst())
    }

    @Test("valid seeds open under the harness keys", arguments: [
        ("raw-single-current", "public.utf8-plain-text", Array("secret plan".utf8)),
        ("raw-single-empty", "", []),
        ("raw-chunked-current", "public.utf8-plain-text", Array(String(repeating: "chunked ", count: 40).utf8)),
    ] as [(String, String, [UInt8])])
    func validSeedsOpen(name: String, type: String, plaintext: [UInt8]) throws {
        let item = try Self.ring().open(try Self.rawSeed(name))
        #expect(item.itemType == type)
        #expect(item.plaintext == plaintext)
    }

    @Test("the refused seeds are refused for their own reason")
    func refusedSeeds() throws {
        let ring = try Self.ring()
        #expect(throws: SealingError.unknownKey(id: 0xDEAD_BEEF)) { try ring.open(try Self.rawSeed("raw-single-unknown-key")) }
        #expect(throws: SealingError.badMagic) { try ring.open(try Self.rawSeed("raw-not-an-envelope")) }
        // Version 1 items (no seal time) under the retired key: refused since envelope version 2
        // (docs/FORMATS.md), which is what these seeds now lead the fuzzer into.
        for name in ["raw-single-previous", "raw-chunked-empty"] {
            #expect(throws: SealingError.legacyItemUnderRetiredKey(keyID: 0x5342_0001)) { try ring.open(try Self.rawSeed(name)) }
        }
    }
}
