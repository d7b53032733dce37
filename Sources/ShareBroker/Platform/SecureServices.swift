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
    /// - Throws: ``SecureServicesError/unavailable`` when secure services are unavailable;
    ///   ``SecureServicesError/notEntitled(_:)`` when the app is not entitled to the group's keys.
    func keyRing(for appID: String) throws(SecureServicesError) -> KeyRing

    /// The secure-file keys of the app with bundle id `appID` (matched exactly): that app's own
    /// generations only, newest first, never another app's. Secure files (format version 2) are
    /// sealed under the newest and open under any of them.
    ///
    /// - Throws: ``SecureServicesError/unavailable`` when secure services are unavailable;
    ///   ``SecureServicesError/notEntitled(_:)`` when the app is not entitled to keys.
    func fileKeys(for appID: String) throws(SecureServicesError) -> FileKeyRing

    /// The app `appID` is retired: forget and zero whatever key material it holds, and make sure
    /// it never receives a key that seals new items. Items sealed before stay readable to the
    /// apps still authorized.
    func relinquishKeys(for appID: String) throws(SealingError)
}

/// Why the key custodian did not hand out a key ring.
public enum SecureServicesError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Secure services are unavailable (no keys delivered, passcode not entered, or the keys
    /// were wiped). SecureCopy writes must fail and nothing may be written; pastes read
    /// unsecured content only.
    case unavailable
    /// The app with this bundle id is not entitled to the group's keys (never entitled, or
    /// revoked). Ids are matched exactly, never by prefix or case-insensitively.
    case notEntitled(String)

    /// What went wrong and what to do, in one line.
    public var description: String {
        switch self {
        case .unavailable:
            "secure services are unavailable; SecureCopy writes fail until keys are delivered"
        case .notEntitled(let appID):
            "the app '\(appID)' is not entitled to the group's keys; entitle it with the key custodian"
        }
    }
}
