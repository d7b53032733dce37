import Foundation
import ShareBroker
import ShareBrokerAgentProtocol
import ShareBrokerCrypto
import ShareBrokerLinux
import Testing

/// Issue 13 item 8 with real processes: the agent, `sharebroker` apps, the host pasteboard file.
/// The "deauthorized app" is this test process holding the ring the agent wrote before the
/// rotation (what a deauthorized app keeps in its memory); it never gets the new one.
@Suite("forgery and replay with retained keys (issue 13 item 8)", .serialized,
       .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct ForgeryAttackTests {
    /// The ring in the agent's `keyring` file and its metadata JSON.
    static func storedRing(_ h: AgentHarness) throws -> (ring: KeyRing, metadata: [String: Any]) {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: h.state + "/keyring")))
        defer { Zeroize.zero(&bytes) }
        try #require(bytes.count > 6 && Array(bytes[0..<4]) == Array("SBKR".utf8) && bytes[4] == 2)
        let count = Int(bytes[5])
        let keysEnd = 6 + count * 36
        // Version 2: the apps' file keys follow the group keys, then the metadata.
        func load(_ offset: Int, _ width: Int) -> Int { bytes[offset..<(offset + width)].reduce(0) { $0 << 8 | Int($1) } }
        var offset = keysEnd + 4
        for _ in 0..<load(keysEnd, 4) {
            offset += 2 + load(offset, 2)
            offset += 2 + load(offset, 2) * 36
        }
        let metadata = try JSONSerialization.jsonObject(with: Data(bytes[(offset + 4)...])) as? [String: Any] ?? [:]
        let ring = bytes.withUnsafeBytes { raw in
            try? KeyRing(importing: (0..<count).map { index in
                let entry = 6 + index * 36
                return (UInt32(load(entry, 4)), UnsafeRawBufferPointer(rebasing: raw[(entry + 4)..<(entry + 36)]))
            })
        }
        return (try #require(ring), metadata)
    }

    @Test("a retained key seals after the rotation: the authorized app's paste refuses it; sealed before, it still pastes")
    func retainedKeyAcrossProcesses() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        #expect(try h.run(h.viewer, ["status"]).status == 0) // the viewer was served the ring
        let (retained, _) = try Self.storedRing(h)
        let beforeRotation = SealClock.now()

        try h.standardDevice(viewer: AgentHarness.retiredPolicy)
        #expect(try h.run(h.notes, ["admin", "reload"]).output.contains("rotated"))
        let (current, metadata) = try Self.storedRing(h)
        #expect(current.currentKeyID != retained.currentKeyID)
        // The rotation time is in the agent's store, for the retired key.
        let retiredAt = try #require((metadata["retiredAt"] as? [NSNumber])?.first?.uint64Value)
        #expect(retiredAt >= beforeRotation && retiredAt <= SealClock.now())

        // Forged after the rotation, naming an authorized app as the sealer: refused, audited.
        let forged = try retained.seal(Array("wire the money to account 42".utf8), itemType: PasteboardItem.textType,
                                       sealer: "com.acme.notes", sealedAt: retiredAt + KeyRing.retiredKeyGraceSeconds + 1)
        try h.pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: forged)])
        let refused = try h.run(h.notes, ["paste"])
        #expect(refused.status != 0)
        #expect(!refused.output.contains("wire the money"))
        #expect(h.wait { h.auditRecords.contains { $0["rule"] as? String == "sealedItemForged" } })

        // Sealed with the same key before the rotation: pastes (the rotation time reached the app).
        let genuine = try retained.seal(Array("sealed while entitled".utf8), itemType: PasteboardItem.textType,
                                        sealer: "com.acme.viewer", sealedAt: retiredAt - 30)
        try h.pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: genuine)])
        let pasted = try h.run(h.notes, ["paste"])
        #expect(pasted.status == 0)
        #expect(pasted.output == "sealed while entitled")
        // The app is told who sealed it (`--origin` writes it to standard error).
        let origin = try h.run(h.notes, ["paste", "--origin"])
        #expect(origin.error.contains("sealed by com.acme.viewer at \(retiredAt - 30)"))
        retained.wipe()
        current.wipe()
    }

    @Test("an item sealed more than 24 hours ago, put back on the pasteboard, is refused as a replay")
    func replayedOldItem() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let (ring, _) = try Self.storedRing(h)
        defer { ring.wipe() }
        let now = SealClock.now()
        let old = try ring.seal(Array("last year's secret".utf8), itemType: PasteboardItem.textType,
                                sealer: "com.acme.notes", sealedAt: now - SealedItemLimits.defaultMaximumAge - 60)
        try h.pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: old)])
        let refused = try h.run(h.notes, ["paste"])
        #expect(refused.status != 0)
        #expect(!refused.output.contains("last year"))
        #expect(h.wait { h.auditRecords.contains { $0["rule"] as? String == "sealedItemTooOld" } })

        let fresh = try ring.seal(Array("this morning's".utf8), itemType: PasteboardItem.textType,
                                  sealer: "com.acme.notes", sealedAt: now - 3600)
        try h.pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: fresh)])
        #expect(try h.run(h.notes, ["paste"]).output == "this morning's")
    }

    @Test("a key store written before retirement times loads; its old keys get time 0 and vouch for no version 2 item")
    func legacyKeyStore() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        let (retained, _) = try Self.storedRing(h)
        defer { retained.wipe() }
        try h.standardDevice(viewer: AgentHarness.retiredPolicy)
        #expect(try h.run(h.notes, ["admin", "reload"]).output.contains("rotated"))
        h.stopAgent()
        let (_, metadata) = try Self.storedRing(h)
        let retiredAt = try #require((metadata["retiredAt"] as? [NSNumber])?.first?.uint64Value)

        // Rewrite the store as an agent before this change wrote it: no "retiredAt" (and no file
        // keys: a version 1 store, which the agent still loads).
        let path = h.state + "/keyring"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        defer { Zeroize.zero(&bytes) }
        let keysEnd = 6 + Int(bytes[5]) * 36
        var old = metadata
        old.removeValue(forKey: "retiredAt")
        let json = [UInt8](try JSONSerialization.data(withJSONObject: old, options: [.sortedKeys]))
        let length = UInt32(json.count)
        var rewritten = Array(bytes[0..<keysEnd]) + [UInt8(length >> 24 & 0xff), UInt8(length >> 16 & 0xff),
                                                      UInt8(length >> 8 & 0xff), UInt8(length & 0xff)] + json
        defer { Zeroize.zero(&rewritten) }
        rewritten[4] = 1 // key store version 1: group keys only, as written before per-app file keys too
        try Data(rewritten).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, 0o600) == 0)

        try h.startAgent()
        defer { h.stopAgent() }
        #expect(try h.run(h.notes, ["copy"], input: "after restart").status == 0)
        #expect(try h.run(h.notes, ["paste"]).output == "after restart")
        let beforeRotation = try retained.seal(Array("sealed before the rotation".utf8), itemType: PasteboardItem.textType,
                                               sealer: "com.acme.viewer", sealedAt: retiredAt - 30)
        try h.pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: beforeRotation)])
        #expect(try h.run(h.notes, ["paste"]).status != 0)
        let (reloaded, _) = try Self.storedRing(h)
        reloaded.wipe()
    }
}
