#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBrokerCrypto

/// What a transfer handed over.
public struct TransferResult: Sendable, Hashable {
    /// Whether the target got the document, with its original name and bytes (the decision
    /// allowed it); `false`: it got a dummy, an empty file with a mangled name.
    public var delivered: Bool { decision.allowed }
    /// Where the receiving app finds the file handed over (absolute; empty when nothing was
    /// written, e.g. an activity sheet under a whitelist).
    public var path: String
    /// The file name the receiving app sees: the document's, or the dummy's mangled one.
    public var name: String
    /// The decision and its rule.
    public var decision: Decision
}

/// What a platform hand-off is asked to do once the broker has decided (see
/// ``ShareBroker/openIn(documentNamed:target:via:handOff:)``).
package struct HandOffRequest: Sendable, Hashable {
    /// The name to hand over: the document's own name when ``delivers``, else a fresh mangled name.
    package var name: String
    /// Whether the document's bytes may go; when false the target gets an empty file.
    package var delivers: Bool
    /// The target app id the app asked for.
    package var target: String
    /// The channel of the hand-off.
    package var channel: TransferChannel
    /// The decision and its rule.
    package var decision: Decision
}

extension ShareBroker {
    /// Decides an Open In without handing anything over: what ``openIn(_:named:target:via:)`` will do.
    /// Costs a snapshot load and a set lookup; never allocates.
    @inlinable @inline(__always)
    public func decideOpenIn(target: String, via channel: TransferChannel) -> Decision {
        TransferRules.openIn(target: target, via: channel, in: currentSnapshot)
    }

    /// ``decideOpenIn(target:via:)`` for the NUL-terminated `target`, or `nil` when it is not
    /// valid UTF-8: the C interface's call. An ASCII target is decided on its bytes
    /// (``TransferRules/openIn(targetUTF8:via:in:)``, no String); any other is validated and
    /// decided on the String, under the same snapshot. Not inlinable, so it is
    /// compiled here once with the length, the snapshot read and the lookup in one function
    /// (the C entry point makes one call).
    package func decideOpenIn(targetCString target: UnsafePointer<CChar>, via channel: TransferChannel) -> Decision? {
        let utf8 = UnsafeRawBufferPointer(start: target, count: strlen(target))
        let snapshot = currentSnapshot
        if let decided = TransferRules.openIn(targetUTF8: utf8, via: channel, in: snapshot) { return decided }
        return Self.decideOpenIn(validating: utf8, via: channel, in: snapshot)
    }

    /// The rest of ``decideOpenIn(targetCString:via:)``: targets the bytes cannot decide (kept
    /// out of line: the common call stays small).
    @inline(never)
    private static func decideOpenIn(validating utf8: UnsafeRawBufferPointer, via channel: TransferChannel,
                                     in snapshot: PolicySnapshot) -> Decision? {
        guard let target = String(validating: utf8, as: UTF8.self) else { return nil }
        return TransferRules.openIn(target: target, via: channel, in: snapshot)
    }

    /// The one entry point for every outbound document.
    ///
    /// An allowed target receives the document; any other receives an empty dummy with a mangled
    /// name, and the app's ``ShareBrokerDelegate/openInAttemptedWhenBlocked(policy:)`` is called.
    /// Before ready and while the user is not authorized every transfer gets a dummy.
    ///
    /// - Parameters:
    ///   - bytes: the document's bytes.
    ///   - name: its file name, as the receiving app would see it.
    ///   - target: the app it is handed to.
    ///   - channel: how it is handed over.
    public func openIn(_ bytes: [UInt8], named name: String, target: String,
                       via channel: TransferChannel = .documentInteraction) throws(ShareBrokerError) -> TransferResult {
        let outbox = platform.outbox
        return try openIn(documentNamed: name, target: target, via: channel) { request throws(ShareBrokerError) in
            try outbox.handOver(name: request.name, bytes: request.delivers ? bytes : DummyFile.contents)
        }
    }

    /// The same decision, report and callback as ``openIn(_:named:target:via:)``, with the hand-off done
    /// by `handOff`: for platform adapters that copy a document from a file and start the target
    /// themselves (the Linux desktop adapter). `handOff` gets the name to hand over (the original,
    /// or a fresh mangled dummy name) and whether the document itself may go; it is called once.
    package func openIn(documentNamed name: String, target: String, via channel: TransferChannel,
                       handOff: (HandOffRequest) throws(ShareBrokerError) -> String) throws(ShareBrokerError) -> TransferResult {
        try HandOverName.validate(name)
        let snapshot = currentSnapshot
        let decision = TransferRules.openIn(target: target, via: channel, in: snapshot)
        if decision.allowed {
            let path = try handOff(HandOffRequest(name: name, delivers: true, target: target, channel: channel,
                                                  decision: decision))
            return TransferResult(path: path, name: name, decision: decision)
        }
        let dummyName = DummyFile.mangledName()
        let path = try handOff(HandOffRequest(name: dummyName, delivers: false, target: target,
                                              channel: channel, decision: decision))
        blocked(.openIn, target: target, decision: decision, snapshot: snapshot)
        if snapshot.isReady { delegate?.openInAttemptedWhenBlocked(policy: snapshot.openInPolicy) }
        return TransferResult(path: path, name: dummyName, decision: decision)
    }

    /// Opens a URL in another app, if the policy allows: custom schemes follow the Open In policy
    /// toward the scheme's handler; `mailto:` follows the mail rules (see `URLRules`).
    public func openURL(_ url: String) throws(ShareBrokerError) -> URLDecision {
        let snapshot = currentSnapshot
        let result: URLDecision
        do throws(URLRequestError) {
            let scheme = try URLRules.scheme(of: url)
            if scheme == "http" || scheme == "https" { throw .webScheme(scheme) }
            result = try URLRules.decide(url: url, in: snapshot,
                                         association: (platform.urlOpener as? any SchemeAssociating)?.association(forScheme: scheme) ?? .deviceTable)
        } catch {
            switch error {
            case .missingScheme: throw .missingScheme
            case .webScheme(let scheme): throw .webScheme(scheme)
            }
        }
        switch result.outcome {
        case .opened:
            if let handler = result.handler { platform.urlOpener.open(url, in: handler) }
        case .blocked:
            blocked(.openURL, target: result.intendedHandler, decision: result.decision, snapshot: snapshot)
            if result.notifiesApp { delegate?.openURLAttemptedWhenUnauthorized(url: url) }
        case .unhandled:
            break
        }
        return result
    }

    /// Whether the app may show the in-app mail composer (or hand a `mailto:` tapped in a web or
    /// text view to it). Native mail is whitelisted only when the whitelist holds every native mail
    /// id of the device.
    public func composeMail() -> Decision {
        let snapshot = currentSnapshot
        let decision = TransferRules.nativeMail(in: snapshot)
        if !decision.allowed {
            blocked(.composeMail, target: snapshot.device.nativeMail.launchID, decision: decision, snapshot: snapshot)
            if snapshot.isReady { delegate?.openInAttemptedWhenBlocked(policy: snapshot.openInPolicy) }
        }
        return decision
    }

    /// Whether the app may print.
    public func print() -> Decision {
        let snapshot = currentSnapshot
        let decision = TransferRules.print(in: snapshot)
        if !decision.allowed { blocked(.print, target: nil, decision: decision, snapshot: snapshot) }
        return decision
    }

    /// Whether content may be dropped onto `target`. A drop refused to an app that does not link
    /// the library calls ``ShareBrokerDelegate/dragAndDropAttemptedToNonAppConnectApp()``.
    public func dragAndDrop(to target: String) -> Decision {
        let snapshot = currentSnapshot
        let decision = TransferRules.dragAndDrop(target: target, in: snapshot)
        if !decision.allowed {
            blocked(.dragAndDrop, target: target, decision: decision, snapshot: snapshot)
            if snapshot.isReady && snapshot.device[target]?.isAppConnect != true {
                delegate?.dragAndDropAttemptedToNonAppConnectApp()
            }
        }
        return decision
    }

    private func blocked(_ action: TransferAction, target: String?, decision: Decision, snapshot: PolicySnapshot) {
        reportBlocked(action, target: target, rule: decision.rule.rawValue, generation: snapshot.generation)
    }

    /// Reports a refused transfer to the server's audit sink and the log: the action, the target
    /// and the rule, never the content.
    func reportBlocked(_ action: TransferAction, target: String?, rule: String, generation: UInt64) {
        platform.reportSink.blockedAttempt(BlockedAttemptRecord(
            action: action, target: target, rule: rule, generation: generation))
        logger.info("blocked \(action.rawValue)", metadata: [
            "target": .string(target ?? "-"), "rule": .string(rule), "generation": .stringConvertible(generation)])
    }
}
