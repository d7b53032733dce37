#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import ShareBroker
import ShareBrokerCrypto
import ShareBrokerTesting
import Synchronization
import Testing

/// The broker keeps the group ring the custodian last handed it while the custodian's
/// `keyRingGeneration` stands; every change to what the custodian would answer must reach the
/// next copy and paste (fail closed), and a refusal is never kept.
@Suite("SecureCopy: the broker's cached key ring")
struct KeyRingCacheTests {
    static let secret = "the secret merger plan, Q3"

    /// Forwards to an `InProcessKeyCustodian` and counts `keyRing(for:)` calls; tells its
    /// generation only when `generations` is set.
    final class CountingCustodian: SecureServices, KeyRingGenerationSource {
        let inner: InProcessKeyCustodian
        let calls = Atomic<Int>(0)

        init(_ inner: InProcessKeyCustodian) { self.inner = inner }

        var availability: SecureServicesAvailability { inner.availability }
        var keyRingGeneration: KeyRingGeneration { inner.keyRingGeneration }
        func keyRing(for appID: String) throws(ShareBrokerError) -> KeyRing {
            calls.wrappingAdd(1, ordering: .relaxed)
            return try inner.keyRing(for: appID)
        }
        func fileKeys(for appID: String) throws(ShareBrokerError) -> FileKeyRing { try inner.fileKeys(for: appID) }
        func relinquishKeys(for appID: String) throws(SealingError) { try inner.relinquishKeys(for: appID) }
    }

    /// The same without a generation: the broker must ask it every time.
    struct UncachedCustodian: SecureServices {
        let inner: CountingCustodian
        var availability: SecureServicesAvailability { inner.availability }
        func keyRing(for appID: String) throws(ShareBrokerError) -> KeyRing { try inner.keyRing(for: appID) }
        func fileKeys(for appID: String) throws(ShareBrokerError) -> FileKeyRing { try inner.fileKeys(for: appID) }
        func relinquishKeys(for appID: String) throws(SealingError) { try inner.relinquishKeys(for: appID) }
    }

    /// A ready SecureCopy broker for `com.acme.notes` over `services`.
    static func broker(_ services: any SecureServices, pasteboard: InMemoryPasteboard) throws -> ShareBroker {
        let broker = ShareBroker(appID: "com.acme.notes",
                                 platform: Platform(outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(),
                                                    reportSink: RecordingReportSink(), pasteboard: pasteboard,
                                                    secureServices: services))
        try broker.start(delegate: RecordingDelegate(implementing: []))
        try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: .secureCopy))
        return broker
    }

    /// The key id in a version 2 envelope's header (after the magic, the version and the kind).
    static func keyID(of envelope: [UInt8]) -> UInt32 {
        let at = EnvelopeFormat.magic.count + 2
        return envelope[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    @Test("the ring is fetched once while the generation stands, again after any change")
    func fetchedOncePerGeneration() throws {
        let custodian = CountingCustodian(try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes"]))
        let pasteboard = InMemoryPasteboard()
        let broker = try Self.broker(custodian, pasteboard: pasteboard)
        for _ in 0..<3 {
            #expect(try broker.copy(.text(Self.secret)) == .writeSealed)
            #expect(broker.paste() == .text(Self.secret))
        }
        #expect(custodian.calls.load(ordering: .relaxed) == 1)
        custodian.inner.entitle(appID: "com.acme.viewer")
        #expect(try broker.copy(.text(Self.secret)) == .writeSealed)
        #expect(custodian.calls.load(ordering: .relaxed) == 2)
    }

    @Test("a custodian that tells no generation is asked on every copy and paste")
    func uncachedCustodian() throws {
        let counting = CountingCustodian(try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes"]))
        let broker = try Self.broker(UncachedCustodian(inner: counting), pasteboard: InMemoryPasteboard())
        for _ in 0..<3 {
            #expect(try broker.copy(.text(Self.secret)) == .writeSealed)
            #expect(broker.paste() == .text(Self.secret))
        }
        #expect(counting.calls.load(ordering: .relaxed) == 6)
    }

    @Test("after a rotation the next copy seals under the new key")
    func rotation() throws {
        let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes"])
        let pasteboard = InMemoryPasteboard()
        let broker = try Self.broker(custodian, pasteboard: pasteboard)
        try broker.copy(.text(Self.secret))
        let before = try custodian.keyRing(for: "com.acme.notes").currentKeyID
        #expect(Self.keyID(of: pasteboard.read().items[0].bytes) == before)
        try custodian.rotate()
        let after = try custodian.keyRing(for: "com.acme.notes").currentKeyID
        #expect(after != before)
        #expect(try broker.copy(.text(Self.secret)) == .writeSealed)
        #expect(Self.keyID(of: pasteboard.read().items[0].bytes) == after)
        #expect(broker.paste() == .text(Self.secret))
    }

    @Test("revoking the app fails its next copy closed and its paste reads nothing, though it copied a moment ago")
    func revoked() throws {
        let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes"])
        let pasteboard = InMemoryPasteboard()
        let broker = try Self.broker(custodian, pasteboard: pasteboard)
        #expect(try broker.copy(.text(Self.secret)) == .writeSealed)
        #expect(broker.paste() == .text(Self.secret))
        try custodian.revoke(appID: "com.acme.notes")
        let sealed = pasteboard.read()
        let result = try broker.copyResult(.text("after the revocation"))
        #expect(result.action == .blocked)
        #expect(result.decision.rule == .noKeys)
        #expect(pasteboard.read() == sealed, "nothing may be written")
        #expect(broker.paste() == nil, "the cached ring must not open the item")
        // Entitled again: the refusal was not cached either.
        custodian.entitle(appID: "com.acme.notes")
        #expect(try broker.copy(.text(Self.secret)) == .writeSealed)
        #expect(broker.paste() == .text(Self.secret))
    }

    @Test("secure services going down (snapshot still 'available') and a wipe fail the next copy and paste closed")
    func servicesDownAndWipe() throws {
        let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes"])
        let pasteboard = InMemoryPasteboard()
        let broker = try Self.broker(custodian, pasteboard: pasteboard)
        #expect(try broker.copy(.text(Self.secret)) == .writeSealed)
        custodian.setAvailability(.unavailable)
        let sealed = pasteboard.read()
        #expect(try broker.copy(.text("while down")) == .blocked)
        #expect(pasteboard.read() == sealed)
        #expect(broker.paste() == nil)
        custodian.setAvailability(.available)
        #expect(broker.paste() == .text(Self.secret))
        #expect(try broker.copy(.text(Self.secret)) == .writeSealed)

        custodian.wipe()
        let kept = pasteboard.read()
        #expect(try broker.copy(.text("after the wipe")) == .blocked)
        #expect(pasteboard.read() == kept)
        #expect(broker.paste() == nil)
    }

    @Test("copies racing a revocation: no copy that starts after the revocation returned seals")
    func racingRevocation() throws {
        let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes"])
        let broker = try Self.broker(custodian, pasteboard: InMemoryPasteboard())
        let revoked = Atomic<Bool>(false)
        let sealedAfter = Atomic<Int>(0)
        let sealedBefore = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            if worker == 0 {
                // Let the copiers warm the cache first (bounded: on one core they run after this).
                var spins = 0
                while sealedBefore.load(ordering: .relaxed) < 50 && spins < 100_000 {
                    _ = sched_yield()
                    spins += 1
                }
                do { try custodian.revoke(appID: "com.acme.notes") } catch { Issue.record("revoke: \(error)") }
                revoked.store(true, ordering: .releasing)
                return
            }
            for _ in 0..<3_000 {
                let after = revoked.load(ordering: .acquiring)
                guard let result = try? broker.copy(.text(Self.secret)) else { continue }
                if result == .writeSealed {
                    if after { sealedAfter.wrappingAdd(1, ordering: .relaxed) }
                    else { sealedBefore.wrappingAdd(1, ordering: .relaxed) }
                }
            }
        }
        #expect(sealedAfter.load(ordering: .relaxed) == 0, "a copy after the revocation sealed with the cached ring")
        #expect(try broker.copy(.text(Self.secret)) == .blocked)
    }

    @Test("a retire drops the cached ring: the retired broker neither seals nor opens")
    func retire() throws {
        let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes", "com.acme.mail"])
        let pasteboard = InMemoryPasteboard()
        let broker = try Self.broker(custodian, pasteboard: pasteboard)
        #expect(try broker.copy(.text(Self.secret)) == .writeSealed)
        try broker.apply(PolicyUpdate(auth: .retired))
        // Another app seals an item under the rotated key; the retired app cannot read it.
        let ring = try custodian.keyRing(for: "com.acme.mail")
        let envelope = try ring.seal(Array("mail's secret".utf8), itemType: PasteboardItem.textType, sealer: "com.acme.mail")
        pasteboard.write([PasteboardItem(type: PasteboardItem.sealedType, bytes: envelope)])
        #expect(broker.paste() == nil)
        #expect(try broker.copy(.text(Self.secret)) == .blocked)
    }
}
