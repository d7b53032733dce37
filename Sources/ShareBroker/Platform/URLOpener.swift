/// Which app the platform says opens a URL scheme (``SchemeAssociating``).
package enum SchemeAssociation: Sendable, Hashable {
    /// The platform has no association of its own: the device table (the device's apps, as the agent knows them) decides.
    case deviceTable
    /// The platform's association names this app id (a Linux desktop's
    /// `x-scheme-handler/<scheme>` default, for example).
    case app(String)
    /// The platform knows that no app opens the scheme.
    case none
}

/// How the platform opens a URL in another app, once the broker has allowed it. Which app
/// that is comes from the device table, unless the opener also knows the platform's own
/// associations (the desktop's, package access: `SchemeAssociating`).
package protocol URLOpener: Sendable {
    /// Opens `url` in the app `handler`.
    func open(_ url: String, in handler: String)
}

/// A ``URLOpener`` that knows the platform's scheme associations (the Linux desktop's
/// `x-scheme-handler/<scheme>` defaults); the broker asks it before the device table.
package protocol SchemeAssociating: URLOpener {
    /// Which app opens `scheme` (lower-case) on this platform.
    func association(forScheme scheme: String) -> SchemeAssociation
}
