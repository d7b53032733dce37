/// Says whether a URL a web view is about to load is external: a site where organizational data
/// must not go (Intune's `IntuneMAMWebViewPolicyDelegate`).
///
/// Set one per web view with ``WebViewHierarchy/setExternalURLDelegate(_:for:)``; it is not
/// inherited by descendants. It is asked on each navigation of an effectively managed web view,
/// and never for an unmanaged one. A web view without a delegate treats every URL as internal.
///
/// The library calls it without holding any lock, so it may call back into the hierarchy.
public protocol ExternalURLDelegate: Sendable {
    /// `true` when `url` is external (it may open in the managed browser instead of the web
    /// view), `false` when it is an internal, organizational location.
    func isExternalURL(_ url: String) -> Bool
}

/// An ``ExternalURLDelegate`` that knows the internal sites by URL prefix: a URL that starts
/// with one of ``internalPrefixes`` is internal, every other URL is external.
///
/// Prefixes are compared byte for byte (UTF-8), case-sensitively, without any normalization, so
/// anything unexpected counts as external, the safe side. End a host prefix with `/`
/// (`https://docs.acme.com/`) so that `https://docs.acme.com.evil.example/` does not match.
/// With no prefixes every URL is external; an empty prefix makes every URL internal.
package struct PrefixExternalURLDelegate: ExternalURLDelegate, Hashable {
    /// The prefixes of internal URLs.
    package let internalPrefixes: [String]

    /// Creates a delegate for which URLs starting with one of `internalPrefixes` are internal.
    package init(internalPrefixes: [String]) {
        self.internalPrefixes = internalPrefixes
    }

    package func isExternalURL(_ url: String) -> Bool {
        !internalPrefixes.contains { url.utf8.starts(with: $0.utf8) }
    }
}
