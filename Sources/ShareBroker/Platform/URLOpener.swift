/// Which app the platform says opens a URL scheme.
public enum SchemeAssociation: Sendable, Hashable {
    /// The platform has no association of its own: the device table (the device's apps, as the agent knows them) decides.
    case deviceTable
    /// The platform's association names this app id (a Linux desktop's
    /// `x-scheme-handler/<scheme>` default, for example).
    case app(String)
    /// The platform knows that no app opens the scheme.
    case none
}

/// How the platform opens a URL in another app, once the broker has allowed it.
public protocol URLOpener: Sendable {
    /// Opens `url` in the app `handler`.
    func open(_ url: String, in handler: String)

    /// Which app opens `scheme` (lower-case) on this platform. The default answers
    /// ``SchemeAssociation/deviceTable``.
    func association(forScheme scheme: String) -> SchemeAssociation
}

extension URLOpener {
    /// The device table decides (the embedded default).
    public func association(forScheme scheme: String) -> SchemeAssociation { .deviceTable }
}
