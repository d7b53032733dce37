import ShareBrokerCrypto

/// The key custodian: hands an app the group's `KeyRing` (SecureCopy) and its own `FileKeyRing`
/// (secure files) when secure services are available and the app is entitled. Platform-pluggable: `InProcessKeyCustodian` is the embedded
/// default; a client of a key daemon can implement the same protocol.
public protocol SecureServices: Sendable {
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
