import ShareBrokerCrypto
import Synchronization

/// The key custodian: hands an app the group's `KeyRing` (SecureCopy) and its own `FileKeyRing`
/// (secure files) when secure services are available and the app is entitled. Platform-pluggable: `InProcessKeyCustodian` is the embedded
/// default; a client of a key daemon can implement the same protocol.
package protocol SecureServices: Sendable {
    /// Whether keys can be handed out now. When ``SecureServicesAvailability/unavailable``,
    /// SecureCopy writes fail and nothing is written.
    var availability: SecureServicesAvailability { get }

    /// The group's key ring for the app with bundle id `appID` (matched exactly).
    ///
    /// - Throws: ``ShareBrokerError/secureServicesUnavailable`` when secure services are unavailable;
    ///   ``ShareBrokerError/notEntitled(_:)`` when the app is not entitled to the group's keys.
    func keyRing(for appID: String) throws(ShareBrokerError) -> KeyRing

    /// The secure-file keys of the app with bundle id `appID` (matched exactly): that app's own
    /// generations only, newest first, never another app's. Secure files (format version 2) are
    /// sealed under the newest and open under any of them.
    ///
    /// - Throws: ``ShareBrokerError/secureServicesUnavailable`` when secure services are unavailable;
    ///   ``ShareBrokerError/notEntitled(_:)`` when the app is not entitled to keys.
    func fileKeys(for appID: String) throws(ShareBrokerError) -> FileKeyRing

    /// The app `appID` is retired: forget and zero whatever key material it holds, and make sure
    /// it never receives a key that seals new items. Items sealed before stay readable to the
    /// apps still authorized.
    func relinquishKeys(for appID: String) throws(SealingError)
}

/// A key custodian that says cheaply when the ring its `keyRing(for:)` hands out may have
/// changed, so a broker can keep the ring it was last given instead of asking for it on every
/// copy and paste (a lock and a lookup by app id in the custodian).
///
/// ``keyRingGeneration`` must be advanced, in the same critical section as the change,
/// whenever anything that `keyRing(for:)` answers from changes: the availability, an
/// entitlement (granted or revoked), the ring (rotation), a wipe or a retire. A broker that reads
/// the generation and finds the one it fetched its ring under uses that ring; any other
/// generation makes it ask the custodian again, and a refusal is never cached (fail closed).
package protocol KeyRingGenerationSource: AnyObject, Sendable {
    /// The custodian's generation counter, the same object for the custodian's lifetime (the
    /// broker keeps it: one atomic load per copy and paste, no dynamic call).
    var keyRingGeneration: KeyRingGeneration { get }
}

/// A custodian's generation counter (``KeyRingGenerationSource``).
package final class KeyRingGeneration: Sendable {
    private let value = Atomic<UInt64>(0)

    package init() {}

    /// The generation now (acquiring: what the custodian changed before advancing is visible).
    @inline(__always)
    package var current: UInt64 { value.load(ordering: .acquiring) }

    /// Records a change to what the custodian's `keyRing(for:)` answers; call with the change,
    /// inside the custodian's lock.
    package func advance() {
        value.wrappingAdd(1, ordering: .releasing)
    }
}

