extension ShareBroker {
    /// The effective identity of a web view's content under the identity current now.
    ///
    /// - Parameter view: the web view's handle, from ``WebViewHierarchy/declare(_:parent:policy:externalURLDelegate:)``
    ///   on ``webViews`` (or ``WebViewHierarchy/handle(for:)``).
    /// - Throws: ``ShareBrokerError/foreignHandle`` when the handle belongs to another broker's hierarchy.
    public func resolveWebView(_ view: WebViewHandle) throws(ShareBrokerError) -> WebViewResolution {
        let snapshot = currentSnapshot
        return try webViews.resolve(view, currentIdentity: snapshot.identity,
                                    treatAllWebViewsAsUnmanaged: snapshot.manifest.treatAllWebViewsAsUnmanaged)
    }

    /// Where a navigation of `view` to `url` goes: an external URL of an effectively managed web
    /// view opens in the managed browser when the policy requires it. The view's external-URL
    /// delegate is asked only when the view is managed.
    ///
    /// - Throws: ``ShareBrokerError/foreignHandle`` when the handle belongs to another broker's hierarchy.
    public func navigate(_ view: WebViewHandle, to url: String) throws(ShareBrokerError) -> WebViewNavigation {
        let snapshot = currentSnapshot
        return try webViews.navigate(view, to: url, currentIdentity: snapshot.identity,
                                     treatAllWebViewsAsUnmanaged: snapshot.manifest.treatAllWebViewsAsUnmanaged,
                                     managedBrowserRequired: snapshot.managedBrowserRequired)
    }
}
