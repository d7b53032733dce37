extension ShareBroker {
    /// The effective identity of a web view's content under the identity current now.
    public func resolveWebView(_ view: String) throws(WebViewError) -> WebViewResolution {
        let snapshot = currentSnapshot
        return try webViews.resolve(view, currentIdentity: snapshot.identity,
                                    treatAllWebViewsAsUnmanaged: snapshot.manifest.treatAllWebViewsAsUnmanaged)
    }

    /// Where a navigation of `view` to `url` goes: an external URL of an effectively managed web
    /// view opens in the managed browser when the policy requires it. The view's external-URL
    /// delegate is asked only when the view is managed.
    public func navigate(_ view: String, to url: String) throws(WebViewError) -> WebViewNavigation {
        let snapshot = currentSnapshot
        return try webViews.navigate(view, to: url, currentIdentity: snapshot.identity,
                                     treatAllWebViewsAsUnmanaged: snapshot.manifest.treatAllWebViewsAsUnmanaged,
                                     managedBrowserRequired: snapshot.managedBrowserRequired)
    }
}
