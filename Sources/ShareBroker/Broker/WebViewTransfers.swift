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

    /// Whether a navigation of `view` to `url` must open in the managed browser instead of the
    /// web view: an external URL of an effectively managed web view does when the policy
    /// requires the managed browser. The view's external-URL delegate is asked only when the
    /// view is managed.
    ///
    /// - Returns: `true`: open `url` in the managed browser; `false`: the web view loads it.
    /// - Throws: ``ShareBrokerError/foreignHandle`` when the handle belongs to another broker's hierarchy.
    public func navigate(_ view: WebViewHandle, to url: String) throws(ShareBrokerError) -> Bool {
        try navigation(view, to: url).opensInManagedBrowser
    }

    /// ``navigate(_:to:)`` with how it was decided (the simulator explains it).
    package func navigation(_ view: WebViewHandle, to url: String) throws(ShareBrokerError) -> WebViewNavigation {
        let snapshot = currentSnapshot
        return try webViews.navigate(view, to: url, currentIdentity: snapshot.identity,
                                     treatAllWebViewsAsUnmanaged: snapshot.manifest.treatAllWebViewsAsUnmanaged,
                                     managedBrowserRequired: snapshot.managedBrowserRequired)
    }
}
