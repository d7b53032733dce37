import Testing
@testable import ShareBroker
import ShareBrokerCrypto
import ShareBrokerTesting

/// Key rings: rotation keeps recent keys for opening, wipe zeroes everything, descriptions never
/// show key bytes; and the in-process custodian.
@Suite("Sealing: key ring and custodian")
struct SealingKeyRingTests {
    @Test("an item sealed before a rotation opens after it; once rotated out, it is an unknown key")
    func rotation() throws {
        let ring1 = try KeyRing.generate()
        let item = try ring1.seal([1, 2, 3], itemType: "t")
        let ring2 = try ring1.rotated()
        #expect(ring2.currentKeyID != ring1.currentKeyID)
        #expect(ring2.keyIDs == [ring2.currentKeyID, ring1.currentKeyID])
        #expect(try ring2.open(item).plaintext == [1, 2, 3])
        let newer = try ring2.seal([4], itemType: "t")
        #expect(SealingFixture.keyID(of: newer) == ring2.currentKeyID)
        #expect(throws: SealingError.unknownKey(id: ring2.currentKeyID)) { try ring1.open(newer) }
        let ring3 = try ring2.rotated(keepingRecent: 0)
        #expect(ring3.keyIDs == [ring3.currentKeyID])
        #expect(throws: SealingError.unknownKey(id: ring1.currentKeyID)) { try ring3.open(item) }
        // The older rings are unchanged.
        #expect(try ring1.open(item).plaintext == [1, 2, 3])
    }

    @Test("item types open exactly as sealed: the well-known ones (read without allocating), look-alikes of the same length, and others")
    func itemTypesOpenAsSealed() throws {
        let ring = try KeyRing.generate()
        let types = ["public.utf8-plain-text", "public.utf8-plain-texT", "public.utf8-plain-tex\u{e9}", "text/html",
                     "text/htmX", "image/png", "text/plain;charset=utf-8", "text/plain;charset=utf-9", "application/x-custom", "t"]
        for type in types {
            let opened = try ring.open(try ring.seal([7], itemType: type))
            #expect(opened.itemType == type)
            #expect(opened.itemType.utf8.elementsEqual(type.utf8))
        }
        let plain = Array("text/plain".utf8)
        #expect(plain.withUnsafeBytes { KeyRing.decodeWellKnownItemType($0) } == "text/plain")
        let other = Array("text/plaiN".utf8)
        #expect(other.withUnsafeBytes { KeyRing.decodeWellKnownItemType($0) } == nil)
    }

    @Test("rotation keeps at most keepingRecent older keys, newest first")
    func keepingRecent() throws {
        var ring = try KeyRing.generate()
        var history = [ring.currentKeyID]
        var items = [try ring.seal([0], itemType: "t")]
        for index in 1...6 {
            ring = try ring.rotated()
            history.insert(ring.currentKeyID, at: 0)
            items.append(try ring.seal([UInt8(index)], itemType: "t"))
        }
        #expect(ring.keyIDs == Array(history.prefix(5)))
        #expect(Set(ring.keyIDs).count == 5)
        for (index, item) in items.enumerated() {
            if index >= 2 {
                #expect(try ring.open(item).plaintext == [UInt8(index)])
            } else {
                #expect(throws: SealingError.unknownKey(id: SealingFixture.keyID(of: item))) { try ring.open(item) }
            }
        }
        #expect(try ring.rotated(keepingRecent: -3).keyIDs.count == 1)
    }

    @Test("an imported key becomes current and replaces a key with the same id")
    func importedKey() throws {
        let keyBytes = SealingFixture.random(32)
        let ring = try KeyRing(current: GroupKey(id: 7, importing: keyBytes))
        let item = try ring.seal([5], itemType: "t")
        let twin = try keyBytes.withUnsafeBytes { bytes in try KeyRing(current: GroupKey(id: 7, importing: bytes)) }
        #expect(try twin.open(item).plaintext == [5]) // same key, another process's view
        let next = try ring.rotated(to: GroupKey(id: 9, importing: SealingFixture.random(32)))
        #expect(next.keyIDs == [9, 7])
        let replaced = try next.rotated(to: GroupKey(id: 7, importing: SealingFixture.random(32)))
        #expect(replaced.keyIDs == [7, 9])
        #expect(throws: SealingError.authenticationFailed) { try replaced.open(item) }
        #expect(throws: SealingError.invalidKeyLength) { _ = try GroupKey(id: 1, importing: SealingFixture.random(31)) }
        #expect(throws: SealingError.invalidKeyLength) {
            try SealingFixture.random(33).withUnsafeBytes { bytes in _ = try GroupKey(id: 1, importing: bytes) }
        }
    }

    @Test("after wipe nothing seals or opens, including rings that share the keys")
    func wipe() throws {
        let ring1 = try KeyRing.generate()
        let item = try ring1.seal([1], itemType: "t")
        let big = try ring1.seal(SealingFixture.bytes(EnvelopeFormat.chunkingThreshold + 1), itemType: "t")
        let ring2 = try ring1.rotated()
        let newer = try ring2.seal([2], itemType: "t")
        ring1.wipe()
        #expect(ring1.isWiped)
        #expect(throws: SealingError.wiped) { try ring1.seal([1], itemType: "t") }
        #expect(throws: SealingError.wiped) { try ring1.open(item) }
        #expect(throws: SealingError.wiped) { try ring1.open(big) }
        #expect(throws: SealingError.wiped) { try ring1.rotated() }
        // ring2 shares ring1's key: that one is gone; its own key still works.
        #expect(!ring2.isWiped)
        #expect(throws: SealingError.wiped) { try ring2.open(item) }
        #expect(try ring2.open(newer).plaintext == [2])
        ring2.wipe()
        ring2.wipe() // idempotent
        #expect(throws: SealingError.wiped) { try ring2.open(newer) }
        #expect(throws: SealingError.wiped) { try ring2.seal([], itemType: "t") }
        #expect(ring2.keyIDs.count == 2) // ids stay readable
    }

    @Test("wipe waits for seals in progress; every seal that succeeded used the intact key")
    func wipeWhileSealing() async throws {
        for _ in 0..<5 {
            let keyBytes = SealingFixture.random(32)
            let ring = try SealingFixture.ring(keyBytes: keyBytes, id: 1)
            let plaintext = SealingFixture.bytes(3000)
            let results = await withTaskGroup(of: [Result<[UInt8], SealingError>].self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        (0..<300).map { _ in Result { () throws(SealingError) in try ring.seal(plaintext, itemType: "t") } }
                    }
                }
                group.addTask {
                    ring.wipe()
                    return []
                }
                var all: [Result<[UInt8], SealingError>] = []
                for await part in group { all += part }
                return all
            }
            #expect(results.count == 600)
            for result in results {
                switch result {
                case .success(let envelope):
                    // Decrypt with the original key bytes: a seal that raced the wipe and used a
                    // half-zeroed key would fail here.
                    let headerLength = SealingFixture.headerLength(of: envelope)
                    let opened = try XChaCha20Poly1305.decrypt(
                        key: keyBytes, nonce: SealingFixture.nonce(of: envelope),
                        aad: Array(envelope[0..<headerLength]), ciphertext: Array(envelope[headerLength...]))
                    #expect(opened == plaintext)
                case .failure(let error):
                    #expect(error == .wiped)
                }
            }
        }
    }

    @Test("descriptions and mirrors show key ids, never key bytes")
    func noKeyBytesInDescriptions() throws {
        let keyBytes = SealingFixture.random(32)
        let ring = try KeyRing(current: GroupKey(id: 0xDEAD_BEEF, importing: keyBytes))
        var dumped = ""
        dump(ring, to: &dumped)
        for text in [ring.description, String(reflecting: ring), dumped] {
            #expect(text.contains("deadbeef"))
            let hexKey = keyBytes.map { String($0, radix: 16) }.joined()
            #expect(!text.contains(hexKey))
            #expect(!text.contains("\(keyBytes)"))
        }
    }

    @Test("custodian: availability, exact entitlement, rotation, revocation and wipe")
    func custodian() throws {
        let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes", "com.acme.mail"])
        #expect(custodian.availability == .available)
        let notes = try custodian.keyRing(for: "com.acme.notes")
        let mail = try custodian.keyRing(for: "com.acme.mail")
        #expect(notes === mail)
        let item = try notes.seal(Array("memo".utf8), itemType: "public.utf8-plain-text")
        #expect(try mail.open(item).plaintext == Array("memo".utf8))

        // Exact matching only: no prefix, no case folding.
        for impostor in ["com.acme.notes2", "com.acme", "COM.ACME.NOTES", "com.acme.notes ", ""] {
            #expect(throws: ShareBrokerError.notEntitled(impostor)) { try custodian.keyRing(for: impostor) }
        }

        custodian.setAvailable(false)
        #expect(custodian.availability == .unavailable)
        #expect(throws: ShareBrokerError.secureServicesUnavailable) { try custodian.keyRing(for: "com.acme.notes") }
        custodian.setAvailable(true)

        try custodian.rotate()
        let rotated = try custodian.keyRing(for: "com.acme.notes")
        #expect(rotated.currentKeyID != notes.currentKeyID)
        #expect(try rotated.open(item).plaintext == Array("memo".utf8))

        try custodian.revoke(appID: "com.acme.mail")
        #expect(!custodian.isEntitled(appID: "com.acme.mail"))
        #expect(throws: ShareBrokerError.notEntitled("com.acme.mail")) { try custodian.keyRing(for: "com.acme.mail") }
        let afterRevoke = try custodian.keyRing(for: "com.acme.notes")
        let secret = try afterRevoke.seal([42], itemType: "t")
        // The revoked app's old ring cannot open what is sealed from now on.
        #expect(throws: SealingError.unknownKey(id: afterRevoke.currentKeyID)) { try mail.open(secret) }
        custodian.entitle(appID: "com.acme.mail")
        #expect(try custodian.keyRing(for: "com.acme.mail").open(secret).plaintext == [42])

        custodian.wipe()
        #expect(custodian.availability == .unavailable)
        #expect(throws: ShareBrokerError.secureServicesUnavailable) { try custodian.keyRing(for: "com.acme.notes") }
        #expect(throws: SealingError.wiped) { try afterRevoke.open(secret) }
        try custodian.rotate()
        #expect(custodian.availability == .unavailable)
        custodian.setAvailable(true)
        let fresh = try custodian.keyRing(for: "com.acme.notes")
        #expect(!fresh.isWiped)
        #expect(throws: SealingError.unknownKey(id: afterRevoke.currentKeyID)) { try fresh.open(secret) }
    }

    @Test("a custodian can be used through the protocol")
    func protocolUse() throws {
        let services: any SecureServices = try InProcessKeyCustodian(entitledAppIDs: ["a"], availability: .unavailable)
        #expect(services.availability == .unavailable)
        #expect(throws: ShareBrokerError.secureServicesUnavailable) { try services.keyRing(for: "a") }
        #expect(ShareBrokerError.secureServicesUnavailable.description.contains("unavailable"))
        #expect(ShareBrokerError.notEntitled("x").description.contains("'x'"))
    }
}
