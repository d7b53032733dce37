import CSodium
@testable import ShareBroker
import ShareBrokerCrypto
import ShareBrokerTesting
import Testing

/// Issue 13, item 8: forgery with a retained key, and replay of an old sealed item. Real
/// libsodium throughout; the "deauthorized app" is a ring handed out before the rotation, which
/// it keeps (nothing can take bytes back from a process).
@Suite("SecureCopy: forgery with retained keys and replay (issue 13 item 8)")
struct SealingForgeryTests {
    static let secret = "Q3 numbers: do not forward"

    /// A version 1 envelope, as the previous library wrote it: raw libsodium, header as AAD.
    static func legacyEnvelope(_ plaintext: [UInt8], itemType: String, keyBytes: [UInt8], keyID: UInt32) -> [UInt8] {
        let type = Array(itemType.utf8)
        var header: [UInt8] = EnvelopeFormat.magic + [EnvelopeFormat.legacyVersion, EnvelopeFormat.Kind.singleShot.rawValue]
        header += [UInt8(truncatingIfNeeded: keyID >> 24), UInt8(truncatingIfNeeded: keyID >> 16),
                   UInt8(truncatingIfNeeded: keyID >> 8), UInt8(truncatingIfNeeded: keyID), UInt8(type.count)] + type
        let nonce = SealingFixture.random(24)
        header += nonce
        var body = [UInt8](repeating: 0, count: plaintext.count + 16)
        var length: UInt64 = 0
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
            &body, &length, plaintext, UInt64(plaintext.count), header, UInt64(header.count), nil, nonce, keyBytes)
        return header + body
    }

    // MARK: The key ring's rule

    @Test("a retained key seals after its rotation: every holder of the new ring refuses it as forged")
    func retainedKeyForgery() throws {
        let old = try KeyRing.generate()
        let rotatedAt: UInt64 = 1_800_000_000
        let ring = try old.rotated(at: rotatedAt)
        #expect(ring.retiredAt == [rotatedAt])
        let forged = try old.seal(Array(Self.secret.utf8), itemType: "public.text", sealer: "com.acme.gone",
                                  sealedAt: rotatedAt + KeyRing.retiredKeyGraceSeconds + 1)
        #expect(throws: SealingError.sealedAfterKeyRetired(keyID: old.currentKeyID,
                                                            sealedAt: rotatedAt + KeyRing.retiredKeyGraceSeconds + 1,
                                                            retiredAt: rotatedAt)) { try ring.open(forged) }
        // Lying about the time by editing the header breaks authentication.
        var backdated = forged
        let timeOffset = EnvelopeFormat.fixedHeaderLength + Int(backdated[10])
        backdated[timeOffset + 7] = 0
        #expect(throws: SealingError.authenticationFailed) { try ring.open(backdated) }
        // The ring it kept still opens its own forgery: the refusal is the receivers' rule.
        #expect(try old.open(forged).sealer == "com.acme.gone")
    }

    @Test("an item sealed before the rotation (or within the grace) still opens under the retired key")
    func sealedBeforeRotationOpens() throws {
        let old = try KeyRing.generate()
        let rotatedAt: UInt64 = 1_800_000_000
        let ring = try old.rotated(at: rotatedAt).rotated(at: rotatedAt + 100)
        for sealedAt in [rotatedAt - 3600, rotatedAt, rotatedAt + KeyRing.retiredKeyGraceSeconds] {
            let item = try old.seal([1, 2, 3], itemType: "t", sealer: "com.acme.notes", sealedAt: sealedAt)
            let opened = try ring.open(item)
            #expect(opened.plaintext == [1, 2, 3])
            #expect(opened.sealer == "com.acme.notes")
            #expect(opened.sealedAt == sealedAt)
        }
    }

    @Test("legacy (version 1) items: open under the current key, refused under a retired key")
    func legacyItems() throws {
        let keyBytes = SealingFixture.random(32)
        let ring = try SealingFixture.ring(keyBytes: keyBytes, id: 0x0BAD_CAFE)
        let legacy = Self.legacyEnvelope([9, 8, 7], itemType: "public.text", keyBytes: keyBytes, keyID: 0x0BAD_CAFE)
        let opened = try ring.open(legacy)
        #expect(opened.plaintext == [9, 8, 7])
        #expect(opened.sealer == nil)
        #expect(opened.sealedAt == nil)
        let rotated = try ring.rotated()
        #expect(throws: SealingError.legacyItemUnderRetiredKey(keyID: 0x0BAD_CAFE)) { try rotated.open(legacy) }
        // A key imported without a retirement time (an older custodian) opens no version 2 item.
        let v2 = try ring.seal([1], itemType: "t", sealedAt: 1_800_000_000)
        let imported = try rotated.exportKeys { try? KeyRing(importing: $0) }
        let importedRing = try #require(imported)
        #expect(importedRing.retiredAt == [0])
        #expect(throws: SealingError.sealedAfterKeyRetired(keyID: 0x0BAD_CAFE, sealedAt: 1_800_000_000, retiredAt: 0)) {
            try importedRing.open(v2)
        }
    }

    @Test("retirement times follow the ring through rotations, export and import")
    func retirementTimesTravel() throws {
        let first = try KeyRing.generate()
        let ring = try first.rotated(keepingRecent: 2, at: 100).rotated(keepingRecent: 2, at: 200).rotated(keepingRecent: 2, at: 300)
        #expect(ring.retiredAt == [300, 200])
        #expect(!ring.keyIDs.contains(first.currentKeyID))
        let copy = try ring.exportKeys { try? KeyRing(importing: $0, retiredAt: ring.retiredAt) }
        let imported = try #require(copy)
        #expect(imported.keyIDs == ring.keyIDs)
        #expect(imported.retiredAt == [300, 200])
    }

    @Test("issue 29 item 5: a holder of the ring back-dates an item to before the rotation, naming another app as sealer: refused as forged, under the current key and once that key is retired; the key's own window (and 5 s of skew) still opens")
    func backDatedForgery() throws {
        let rotatedAt: UInt64 = 1_800_000_000
        let ring = try KeyRing.generate().rotated(at: rotatedAt)
        #expect(ring.activatedAt == [rotatedAt, nil])
        let skew = KeyRing.retiredKeyGraceSeconds
        // Sealed with the current key, claiming an hour before that key existed.
        let backDated = try ring.seal(Array(Self.secret.utf8), itemType: "public.utf8-plain-text",
                                      sealer: "com.acme.gone", sealedAt: rotatedAt - 3600)
        #expect(throws: SealingError.sealedBeforeKeyActivated(keyID: ring.currentKeyID, sealedAt: rotatedAt - 3600,
                                                               activatedAt: rotatedAt)) { try ring.open(backDated) }
        let justBefore = try ring.seal([1], itemType: "t", sealer: "com.acme.gone", sealedAt: rotatedAt - skew - 1)
        #expect(throws: SealingError.sealedBeforeKeyActivated(keyID: ring.currentKeyID, sealedAt: rotatedAt - skew - 1,
                                                               activatedAt: rotatedAt)) { try ring.open(justBefore) }
        // Within the skew, and after the activation: genuine times open.
        for sealedAt in [rotatedAt - skew, rotatedAt, rotatedAt + 3600] {
            let item = try ring.seal([2], itemType: "t", sealer: "com.acme.notes", sealedAt: sealedAt)
            #expect(try ring.open(item).sealedAt == sealedAt)
        }
        // The key retires: its items are bound to its whole window, both ends.
        let later = try ring.rotated(at: rotatedAt + 7200)
        #expect(later.activatedAt == [rotatedAt + 7200, rotatedAt, nil])
        #expect(throws: SealingError.sealedBeforeKeyActivated(keyID: ring.currentKeyID, sealedAt: rotatedAt - 3600,
                                                               activatedAt: rotatedAt)) { try later.open(backDated) }
        let inWindow = try ring.seal([3], itemType: "t", sealer: "com.acme.notes", sealedAt: rotatedAt + 60)
        #expect(try later.open(inWindow).plaintext == [3])
        // The times travel with the ring (the agent sends retirement times with the keys).
        let copy = try later.exportKeys { try? KeyRing(importing: $0, retiredAt: later.retiredAt) }
        let imported = try #require(copy)
        #expect(throws: SealingError.sealedBeforeKeyActivated(keyID: ring.currentKeyID, sealedAt: rotatedAt - 3600,
                                                               activatedAt: rotatedAt)) { try imported.open(backDated) }
    }

    @Test("issue 29 item 5: paste refuses an item back-dated to before the rotation under the new key, and reports it as forged")
    func pasteRefusesBackDatedForgery() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        fixture.custodian.entitle(appID: "com.acme.gone")
        try fixture.custodian.revoke(appID: "com.acme.gone")
        let rotated = SealClock.now()
        // A holder of the new ring (the custodian's, as every entitled app has it) names the
        // revoked app as sealer, at a time before the rotation.
        let ring = try fixture.custodian.keyRing(for: "com.acme.notes")
        let forged = try ring.seal(Array(Self.secret.utf8), itemType: "public.utf8-plain-text",
                                   sealer: "com.acme.gone", sealedAt: rotated - 600)
        fixture.broker.setWallClock(to: rotated + 1)
        fixture.pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: forged)])
        #expect(fixture.broker.paste() == nil)
        #expect(fixture.sink.blockedAttempts.last?.rule == "sealedItemForged")
    }

    // MARK: Paste, two apps on one pasteboard

    @Test("a deauthorized app's retained key seals after rotation: the authorized app's paste refuses it and reports it")
    func pasteRefusesForgery() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        fixture.custodian.entitle(appID: "com.acme.gone")
        let retained = try fixture.custodian.keyRing(for: "com.acme.gone")
        let beforeRevoke = SealClock.now()
        let early = try retained.seal(Array("sealed while entitled".utf8), itemType: "public.utf8-plain-text",
                                      sealer: "com.acme.gone", sealedAt: beforeRevoke - 60)
        try fixture.custodian.revoke(appID: "com.acme.gone")
        let later = SealClock.now() + 120
        fixture.broker.setWallClock(to: later)
        let forged = try retained.seal(Array(Self.secret.utf8), itemType: "public.utf8-plain-text",
                                       sealer: "com.acme.notes", sealedAt: later)
        fixture.pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: forged)])
        #expect(fixture.broker.paste() == nil)
        #expect(fixture.sink.blockedAttempts.last?.action == .paste)
        #expect(fixture.sink.blockedAttempts.last?.rule == "sealedItemForged")

        // Sealed before the rotation: still pastes, and names the app that sealed it.
        fixture.pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: early)])
        let pasted = try #require(fixture.broker.pasteWithOrigin())
        #expect(pasted.item == .text("sealed while entitled"))
        #expect(pasted.wasSealed)
        #expect(pasted.sealer == "com.acme.gone")
        #expect(pasted.sealedAt == beforeRevoke - 60)
    }

    @Test("paste reports which app sealed the item; copy binds this app's id")
    func pasteNamesSealer() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        fixture.broker.setWallClock(to: 1_900_000_000)
        try fixture.broker.copyResult(.text(Self.secret))
        let pasted = try #require(fixture.broker.pasteWithOrigin())
        #expect(pasted.item == .text(Self.secret))
        #expect(pasted.sealer == "com.acme.notes")
        #expect(pasted.sealedAt == 1_900_000_000)
        fixture.pasteboard.write([.text("clear")])
        let clear = try #require(fixture.broker.pasteWithOrigin())
        #expect(!clear.wasSealed)
        #expect(clear.sealer == nil)
    }

    @Test("an old sealed item put back on the pasteboard is refused as a replay past the age bound")
    func replayPastAgeBound() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        let sealedAt: UInt64 = 1_900_000_000
        fixture.broker.setWallClock(to: sealedAt)
        try fixture.broker.copyResult(.text(Self.secret))
        let captured = fixture.pasteboard.read().items
        #expect(fixture.broker.sealedItemLimits.maximumAge == 86_400)

        fixture.pasteboard.write([.text("something newer")])
        fixture.pasteboard.write(captured) // an attacker puts the old item back
        fixture.broker.setWallClock(to: sealedAt + 86_400)
        #expect(fixture.broker.paste() == .text(Self.secret)) // exactly at the bound: still fresh
        fixture.broker.setWallClock(to: sealedAt + 86_401)
        #expect(fixture.broker.paste() == nil)
        #expect(fixture.sink.blockedAttempts.last?.rule == "sealedItemTooOld")

        // Dated in the future beyond the tolerance (a key holder trying to outlive the bound).
        fixture.broker.setWallClock(to: sealedAt - SealedItemLimits.defaultFutureTolerance - 1)
        #expect(fixture.broker.paste() == nil)
        #expect(fixture.sink.blockedAttempts.last?.rule == "sealedItemFromTheFuture")
    }

    @Test("the configuration's sealed item maximum age: a stricter bound refuses sooner, the future tolerance unchanged")
    func configuredMaximumAge() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy),
                                  configuration: ShareBroker.Configuration(sealedItemMaximumAge: 60))
        #expect(fixture.broker.sealedItemLimits == SealedItemLimits(maximumAge: 60))
        let sealedAt: UInt64 = 1_900_000_000
        fixture.broker.setWallClock(to: sealedAt)
        try fixture.broker.copyResult(.text(Self.secret))
        fixture.broker.setWallClock(to: sealedAt + 61)
        #expect(fixture.broker.paste() == nil)
        #expect(fixture.sink.blockedAttempts.last?.rule == "sealedItemTooOld")
        fixture.broker.setWallClock(to: sealedAt + 59)
        #expect(fixture.broker.paste() == .text(Self.secret))
        fixture.broker.setWallClock(to: sealedAt - SealedItemLimits.defaultFutureTolerance)
        #expect(fixture.broker.paste() == .text(Self.secret))
    }
}
