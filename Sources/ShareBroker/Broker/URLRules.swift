/// Why a URL could not be considered at all.
package enum URLRequestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The URL has no valid scheme (RFC 3986: a letter, then letters, digits, `+`, `-` or `.`, then `:`).
    case missingScheme
    /// `http` and `https` are navigation, not transfers; web views decide them.
    case webScheme(String)

    package var description: String {
        switch self {
        case .missingScheme:
            "the URL has no valid scheme (expected something like 'mailto:' or 'sheets:')"
        case .webScheme(let scheme):
            "\(scheme): URLs are web navigation, not transfers; they are not covered by the URL rules"
        }
    }
}

/// The result of deciding a URL: where it goes, and the rule. The URL was opened when
/// ``handler`` names the app that opened it; otherwise ``decision`` says why not (its rule is
/// ``DecisionRule/noHandler`` when no app on the device opens the scheme).
public struct URLDecision: Sendable, Hashable {
    /// What happens to the URL (the simulator's and the C interface's three outcomes).
    package enum Outcome: String, Sendable, Hashable {
        /// The handler opens it.
        case opened
        /// The Open In policy blocks it.
        case blocked
        /// No app on the device opens the scheme.
        case unhandled
    }

    /// What happens to the URL.
    package var outcome: Outcome
    /// The app that opens it (`nil` when blocked or unhandled).
    public var handler: String?
    /// The app the URL was headed to, even when blocked (`nil` when no app handles the scheme).
    public var intendedHandler: String?
    /// The rule that decided.
    public var decision: Decision
    /// Whether the app's `openURLAttemptedWhenUnauthorized` callback is owed.
    public var notifiesApp: Bool
}

/// Decisions for URLs handed to other apps: documents encoded in custom URLs are transfers too.
package enum URLRules {
    /// The URL's scheme, lower-cased, or an error when it has none.
    package static func scheme(of url: String) throws(URLRequestError) -> String {
        guard let colon = url.utf8.firstIndex(of: UInt8(ascii: ":")) else { throw .missingScheme }
        let scheme = url.utf8[url.utf8.startIndex..<colon]
        guard let first = scheme.first, isAlpha(first) else { throw .missingScheme }
        for byte in scheme where !(isAlpha(byte) || (byte >= 0x30 && byte <= 0x39)
                                   || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")) {
            throw .missingScheme
        }
        return String(decoding: scheme, as: UTF8.self).lowercased()
    }

    private static func isAlpha(_ b: UInt8) -> Bool { (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) }

    /// Decides `url` under `policy`.
    ///
    /// * `mailto:` goes to native mail when the Open In policy allows native mail (authorized, or
    ///   a whitelist holding every native mail id of the device) or `MI_AC_DISABLE_SCHEME_BLOCKING`
    ///   is set; otherwise an installed, authorized AppConnect app that handles `mailto` takes it
    ///   without a callback; otherwise it is blocked and the app is told. When the platform names
    ///   the `mailto` handler (`association`), that app opens the URL: it counts as native mail
    ///   only if it is one of the native mail ids, and is otherwise an ordinary Open In target
    ///   (which `MI_AC_DISABLE_SCHEME_BLOCKING` does not cover).
    /// * Any other scheme is a transfer to the app that handles it (the platform's association,
    ///   else the device table), under the Open In policy.
    /// * Before ready, or while the user is not authorized, everything is blocked.
    package static func decide(url: String, in policy: PolicySnapshot,
                              association: SchemeAssociation = .deviceTable) throws(URLRequestError) -> URLDecision {
        let scheme = try scheme(of: url)
        if scheme == "http" || scheme == "https" { throw .webScheme(scheme) }
        guard policy.isOperational else {
            let d = Decision(allowed: false, rule: policy.isReady ? .notAuthorized : .notReady, generation: policy.generation)
            return URLDecision(outcome: .blocked, handler: nil, intendedHandler: nil, decision: d,
                               notifiesApp: policy.isReady)
        }
        if scheme == "mailto" {
            let mailApp: String?
            switch association {
            case .deviceTable: mailApp = policy.device.nativeMail.launchID
            case .app(let id): mailApp = id
            case .none: mailApp = nil
            }
            var refusal: Decision?
            if let mailApp {
                let isNative = policy.device.nativeMail.contains(mailApp)
                let mail = isNative
                    ? TransferRules.nativeMail(in: policy)
                    : TransferRules.openIn(target: mailApp, via: .documentInteraction, in: policy)
                if mail.allowed {
                    return URLDecision(outcome: .opened, handler: mailApp, intendedHandler: mailApp,
                                       decision: mail, notifiesApp: false)
                }
                if isNative && policy.schemeBlockingDisabled {
                    return URLDecision(outcome: .opened, handler: mailApp, intendedHandler: mailApp,
                                       decision: Decision(allowed: true, rule: .schemeBlockingDisabled, generation: policy.generation), notifiesApp: false)
                }
                refusal = mail
            }
            if let app = policy.device.authorizedAppConnectHandler(forScheme: scheme) {
                return URLDecision(outcome: .opened, handler: app.id, intendedHandler: app.id,
                                   decision: Decision(allowed: true, rule: .appConnectMailApp, generation: policy.generation), notifiesApp: false)
            }
            guard let mailApp, let refusal else { return unhandled(policy) }
            return URLDecision(outcome: .blocked, handler: nil, intendedHandler: mailApp, decision: refusal,
                               notifiesApp: true)
        }
        let handlerID: String
        switch association {
        case .app(let id): handlerID = id
        case .deviceTable:
            guard let handler = policy.device.handler(forScheme: scheme) else { return unhandled(policy) }
            handlerID = handler.id
        case .none:
            return unhandled(policy)
        }
        let decision = TransferRules.openIn(target: handlerID, via: .documentInteraction, in: policy)
        return decision.allowed
            ? URLDecision(outcome: .opened, handler: handlerID, intendedHandler: handlerID, decision: decision,
                          notifiesApp: false)
            : URLDecision(outcome: .blocked, handler: nil, intendedHandler: handlerID, decision: decision,
                          notifiesApp: true)
    }

    private static func unhandled(_ policy: PolicySnapshot) -> URLDecision {
        URLDecision(outcome: .unhandled, handler: nil, intendedHandler: nil,
                    decision: Decision(allowed: false, rule: .noHandler, generation: policy.generation), notifiesApp: false)
    }
}
