extension TransferRules {
    /// Whether a document or URL may come into the app from `source` (Open From).
    /// - Parameter source: the sending app's bundle id, or `nil` when the platform cannot tell.
    @inlinable
    package static func openFrom(source: String?, in policy: PolicySnapshot) -> Decision {
        if let closed = failClosed(policy) { return closed }
        switch policy.openFromPolicy {
        case .authorized: return Decision(allowed: true, rule: .openFromAuthorized, generation: policy.generation)
        case .unauthorized: return Decision(allowed: false, rule: .openFromUnauthorized, generation: policy.generation)
        case .whitelist:
            guard let source else {
                return Decision(allowed: false, rule: .unknownSourceUnderWhitelist, generation: policy.generation)
            }
            // Native mail follows the Open In rule: whitelisted only with every mail id listed.
            if policy.device.nativeMail.contains(source) {
                return policy.device.nativeMail.isWhitelisted(in: policy.openFromWhitelist)
                    ? Decision(allowed: true, rule: .nativeMailWhitelisted, generation: policy.generation)
                    : Decision(allowed: false, rule: .nativeMailNotWhitelisted, generation: policy.generation)
            }
            return policy.openFromWhitelist.contains(source)
                ? Decision(allowed: true, rule: .sourceInOpenFromWhitelist, generation: policy.generation)
                : Decision(allowed: false, rule: .sourceNotInOpenFromWhitelist, generation: policy.generation)
        }
    }
}

extension ShareBroker {
    /// Decides an inbound transfer without receiving anything: what ``openFrom(_:source:)`` will
    /// do. Costs a snapshot load and a set lookup; never allocates.
    @inlinable
    public func decideOpenFrom(source: String?) -> Decision {
        TransferRules.openFrom(source: source, in: currentSnapshot)
    }

    /// The one entry point for every inbound document or URL (AppConnect's Open From): call it
    /// with what another app sent before the app opens, stores or shows any of it.
    ///
    /// Allowed, the content comes back unchanged. Blocked (Open From unauthorized, a source not in
    /// the whitelist, an unknown source under a whitelist, before the first policy or while the
    /// user is not authorized), the result holds no content, the attempt is reported to the server
    /// with the source app, and the delegate's
    /// ``ShareBrokerDelegate/openFromAttemptedWhenBlocked(source:policy:)`` names the source.
    ///
    /// - Parameters:
    ///   - content: what arrived (a document, its bytes, a URL).
    ///   - source: the bundle id of the sending app, or `nil` when the platform cannot tell.
    /// - Returns: `content` when the policy lets it in; `nil` when it does not, and the app must
    ///   act as if nothing arrived (``decideOpenFrom(source:)`` tells why).
    public func openFrom<Content>(_ content: Content, source: String?) -> Content? {
        openFromDeciding(content, source: source).content
    }

    /// As ``openFrom(_:source:)``, with the decision (the simulator explains it).
    package func openFromDeciding<Content>(_ content: Content, source: String?) -> (content: Content?, decision: Decision) {
        let snapshot = currentSnapshot
        let decision = TransferRules.openFrom(source: source, in: snapshot)
        guard decision.allowed else {
            reportBlocked(.openFrom, target: source, rule: decision.rule.rawValue, generation: decision.generation)
            if snapshot.isReady { delegate?.openFromAttemptedWhenBlocked(source: source, policy: snapshot.openFromPolicy) }
            return (nil, decision)
        }
        return (content, decision)
    }
}
