/// How the library tells the app about every change. Modelled on AppConnect's `AppConnectDelegate`.
///
/// Two callbacks are required: ``appConnectIsReady()`` and ``authStateChanged(to:message:)``.
/// The others have default implementations: an app implements only those it needs, and an
/// acknowledged callback it does not implement is acknowledged as ``Acknowledgment/unsupported``
/// on its behalf.
///
/// Callbacks run on the thread that delivered the change, while the library holds its update
/// lock: a callback may read policies and make transfers, but must not deliver another policy
/// update itself.
public protocol ShareBrokerDelegate: AnyObject, Sendable {
    /// The first policy has arrived: properties are readable from now on. Owes no acknowledgment.
    func appConnectIsReady()
    /// The authorization state or its message changed. Required; the answer may never be
    /// ``Acknowledgment/unsupported`` (the library reports such an answer to the server as an error).
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment

    /// The app-specific configuration changed.
    func configChanged(to config: [String: String]) -> Acknowledgment
    /// The effective Open In policy or whitelist changed.
    func openInPolicyChanged(to policy: OpenInPolicy, whitelist: Set<String>) -> Acknowledgment
    /// A document transfer was blocked; the target received a dummy file.
    func openInAttemptedWhenBlocked(policy: OpenInPolicy)
    /// A URL (`mailto:` or a custom scheme) was not opened because of the Open In policy.
    func openURLAttemptedWhenUnauthorized(url: String)
    /// A document or URL from another app was refused by the Open From policy; the app received
    /// nothing. `source` is the sending app's bundle id, `nil` when the platform could not tell.
    func openFromAttemptedWhenBlocked(source: String?, policy: OpenFromPolicy)
    /// A drop toward an app that does not link the library was refused.
    func dragAndDropAttemptedToNonAppConnectApp()
    /// The pasteboard policy changed.
    func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment
    /// A copy was refused because the pasteboard policy is unauthorized; nothing was written.
    func copyAttemptedWhenUnauthorized(policy: PasteboardPolicy)
    /// The print policy changed.
    func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment
    /// Secure services became available or unavailable. Owes no acknowledgment.
    func secureServicesAvailabilityChanged(to availability: SecureServicesAvailability)
    /// The secure file I/O policy changed.
    func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment
    /// The log level changed. Owes no acknowledgment.
    func logLevelChanged(to level: LogLevel)
}

extension ShareBrokerDelegate {
    /// Not implemented: acknowledged as unsupported.
    public func configChanged(to config: [String: String]) -> Acknowledgment { .unsupported }
    /// Not implemented: acknowledged as unsupported.
    public func openInPolicyChanged(to policy: OpenInPolicy, whitelist: Set<String>) -> Acknowledgment { .unsupported }
    /// Not implemented: nothing happens.
    public func openInAttemptedWhenBlocked(policy: OpenInPolicy) {}
    /// Not implemented: nothing happens.
    public func openURLAttemptedWhenUnauthorized(url: String) {}
    /// Not implemented: nothing happens.
    public func openFromAttemptedWhenBlocked(source: String?, policy: OpenFromPolicy) {}
    /// Not implemented: nothing happens.
    public func dragAndDropAttemptedToNonAppConnectApp() {}
    /// Not implemented: acknowledged as unsupported.
    public func pasteboardPolicyChanged(to policy: PasteboardPolicy) -> Acknowledgment { .unsupported }
    /// Not implemented: nothing happens.
    public func copyAttemptedWhenUnauthorized(policy: PasteboardPolicy) {}
    /// Not implemented: acknowledged as unsupported.
    public func printPolicyChanged(to policy: PrintPolicy) -> Acknowledgment { .unsupported }
    /// Not implemented: nothing happens.
    public func secureServicesAvailabilityChanged(to availability: SecureServicesAvailability) {}
    /// Not implemented: acknowledged as unsupported.
    public func secureFileIOPolicyChanged(to policy: SecureFileIOPolicy) -> Acknowledgment { .unsupported }
    /// Not implemented: nothing happens.
    public func logLevelChanged(to level: LogLevel) {}
}
