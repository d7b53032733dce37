import ShareBroker
import ShareBrokerCrypto

/// The embedded `SecureServices`: holds the group's key ring and each app's file keys in this
/// process and decides which apps may have them.
///
/// File keys behave as the agent's do: each app gets its own ``FileKeyRing`` (made on its first
/// ``fileKeys(for:)``), never another app's; ``revoke(appID:)`` starts a new generation for that
/// app and drops none, so its secure files stay readable once it is entitled again.
///
/// ```swift
/// let custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes", "com.acme.mail"])
/// let ring = try custodian.keyRing(for: "com.acme.notes")
/// try custodian.revoke(appID: "com.acme.mail")   // new key; mail is refused from now on
/// ```
///
/// App ids are matched exactly: no prefix, no case folding (public integrations have shipped
/// prefix matches that let unrelated apps through).
public final class InProcessKeyCustodian: SecureServices, KeyRingGenerationSource {
    private struct State {
        var ring: KeyRing?
        var availability: SecureServicesAvailability
        var entitled: Set<String>
        /// Each app's file keys, made on its first request.
        var fileKeys: [String: FileKeyRing] = [:]
    }

    private let state: Mutex<State>
    /// Bumped (releasing) inside the lock by every change to what ``keyRing(for:)`` answers:
    /// availability, entitlements, rotation, wipe. Brokers reuse the ring they were handed while
    /// it stands (``KeyRingGenerationSource``).
    package let keyRingGeneration = KeyRingGeneration()
    /// How many older keys each rotation keeps for opening.
    public let keepingRecent: Int

    /// Creates a custodian holding a fresh group ring.
    ///
    /// - Parameters:
    ///   - entitledAppIDs: the bundle ids that may have the ring (more with ``entitle(appID:)``).
    ///   - availability: whether secure services start available.
    ///   - keepingRecent: how many older keys each rotation keeps for opening (default 4).
    /// - Throws: ``SealingError/sodiumInitFailed``, ``SealingError/outOfSecureMemory``.
    public init(entitledAppIDs: [String] = [], availability: SecureServicesAvailability = .available,
                keepingRecent: Int = 4) throws(SealingError) {
        let ring = try KeyRing.generate()
        self.keepingRecent = max(0, keepingRecent)
        self.state = Mutex(State(ring: ring, availability: availability, entitled: Set(entitledAppIDs)))
    }

    /// Records a change to what ``keyRing(for:)`` answers; call inside the lock, with the change.
    private func changed() {
        keyRingGeneration.advance()
    }

    /// Whether keys can be handed out now (unavailable after ``wipe()`` until a ``rotate()``
    /// and ``setAvailable(_:)``).
    public var availability: SecureServicesAvailability {
        state.withLock { $0.ring == nil ? .unavailable : $0.availability }
    }

    /// The group's current ring, if secure services are available and `appID` is entitled
    /// (exact match).
    ///
    /// - Throws: ``ShareBrokerError/secureServicesUnavailable``, ``ShareBrokerError/notEntitled(_:)``.
    public func keyRing(for appID: String) throws(ShareBrokerError) -> KeyRing {
        try state.withLock { (state) throws(ShareBrokerError) -> KeyRing in
            guard state.availability == .available, let ring = state.ring else { throw .secureServicesUnavailable }
            guard state.entitled.contains(appID) else { throw .notEntitled(appID) }
            return ring
        }
    }

    /// The secure-file keys of `appID` (its own, every generation), if secure services are
    /// available and `appID` is entitled (exact match); made on the first request.
    ///
    /// - Throws: ``ShareBrokerError/secureServicesUnavailable`` (also when the keys could not be made),
    ///   ``ShareBrokerError/notEntitled(_:)``.
    public func fileKeys(for appID: String) throws(ShareBrokerError) -> FileKeyRing {
        try state.withLock { (state) throws(ShareBrokerError) -> FileKeyRing in
            guard state.availability == .available, state.ring != nil else { throw .secureServicesUnavailable }
            guard state.entitled.contains(appID) else { throw .notEntitled(appID) }
            if let keys = state.fileKeys[appID], !keys.isWiped { return keys }
            guard let keys = try? FileKeyRing.generate() else { throw .secureServicesUnavailable }
            state.fileKeys[appID] = keys
            return keys
        }
    }

    /// Makes secure services available (`true`) or unavailable (`false`), as the management
    /// client's key delivery comes and goes.
    public func setAvailable(_ available: Bool) {
        setAvailability(available ? .available : .unavailable)
    }

    /// Sets the availability of secure services.
    public func setAvailability(_ availability: SecureServicesAvailability) {
        state.withLock {
            $0.availability = availability
            changed()
        }
    }

    /// Lets the app with bundle id `appID` (exactly) have the group's ring, including an app
    /// revoked earlier.
    public func entitle(appID: String) {
        state.withLock {
            $0.entitled.insert(appID)
            changed()
        }
    }

    /// Whether the app with bundle id `appID` (exactly) is entitled.
    public func isEntitled(appID: String) -> Bool {
        state.withLock { $0.entitled.contains(appID) }
    }

    /// Replaces the group's current key with a fresh one, keeping ``keepingRecent`` older keys
    /// for opening. After ``wipe()``, starts a brand-new ring instead.
    ///
    /// Rings handed out earlier keep working with the keys they hold; apps get the new ring
    /// with their next ``keyRing(for:)``.
    /// - Throws: ``SealingError/outOfSecureMemory``.
    public func rotate() throws(SealingError) {
        try state.withLock { (state) throws(SealingError) in
            // Changed even if making the new key throws (the next fetch asks again).
            defer { changed() }
            if let ring = state.ring, !ring.isWiped {
                state.ring = try ring.rotated(keepingRecent: keepingRecent)
            } else {
                state.ring = try KeyRing.generate()
            }
        }
    }

    /// Refuses the app with bundle id `appID` from now on (until ``entitle(appID:)``) and
    /// rotates, so that items sealed from now on are under a key that app was never given; starts
    /// a new generation of that app's file keys (the older ones stay, for its files).
    ///
    /// The entitlement is removed even if the rotation throws (fail closed).
    /// - Throws: ``SealingError/outOfSecureMemory`` if the new key could not be made.
    public func revoke(appID: String) throws(SealingError) {
        state.withLock {
            $0.entitled.remove(appID)
            changed()
        }
        try rotate()
        try state.withLock { (state) throws(SealingError) in
            if let keys = state.fileKeys[appID], !keys.isWiped {
                state.fileKeys[appID] = try keys.advanced()
            }
        }
    }

    /// The in-process custodian shares one ring among the apps of this process, so it cannot zero
    /// the ring for one app alone: it revokes the app (see ``revoke(appID:)``), which removes its
    /// entitlement and rotates the group key. The app's file keys are its own: they are zeroed and
    /// forgotten, as the agent drops a retired app's file keys (the retire erases the files they
    /// protect, and any copy left behind stays unreadable).
    public func relinquishKeys(for appID: String) throws(SealingError) {
        try revoke(appID: appID)
        let keys = state.withLock { $0.fileKeys.removeValue(forKey: appID) }
        keys?.wipe()
    }

    /// Zeroes every key of the group ring and every app's file keys now (retire) and makes
    /// secure services unavailable. Rings handed out earlier that share those keys stop sealing
    /// and opening; the file keys are forgotten (a retire erases the files they protect).
    public func wipe() {
        let (ring, fileKeys): (KeyRing?, [FileKeyRing]) = state.withLock { state in
            defer {
                state.ring = nil
                state.fileKeys = [:]
                state.availability = .unavailable
                changed()
            }
            return (state.ring, Array(state.fileKeys.values))
        }
        ring?.wipe()
        for keys in fileKeys { keys.wipe() }
    }
}
