/// The app's own static settings: what AppConnect reads from the `MI_APP_CONNECT` dictionary of
/// the Info.plist and Intune from its `IntuneMAMSettings`. They are fixed for the life of the
/// process; apps give them in ``ShareBroker/Configuration``.
package struct AppManifest: Sendable, Hashable {
    /// `MI_AC_DISABLE_SCHEME_BLOCKING`: a `mailto:` URL opens native mail even when Open In blocks it.
    package var disableSchemeBlocking: Bool
    /// `TreatAllWebViewsAsUnmanaged`: a web view with no policy of its own counts as unmanaged.
    package var treatAllWebViewsAsUnmanaged: Bool

    /// Creates a manifest. Both settings default to `false`, the managed, blocking behaviour.
    package init(disableSchemeBlocking: Bool = false, treatAllWebViewsAsUnmanaged: Bool = false) {
        self.disableSchemeBlocking = disableSchemeBlocking
        self.treatAllWebViewsAsUnmanaged = treatAllWebViewsAsUnmanaged
    }
}
