/// A pre-interned reference to a node of one ``WebViewHierarchy``: the fast, allocation-free way
/// to ask about it.
///
/// Get one from ``WebViewHierarchy/declare(_:parent:policy:externalURLDelegate:)`` or
/// ``WebViewHierarchy/handle(for:)``. Nodes are never removed, so a handle stays valid for the
/// life of its hierarchy; another hierarchy rejects it with ``ShareBrokerError/foreignHandle``.
public struct WebViewHandle: Sendable, Hashable, CustomStringConvertible {
    /// The node's dense index in its hierarchy.
    let index: Int32
    /// Which hierarchy made it.
    let hierarchy: UInt32

    init(index: Int32, hierarchy: UInt32) {
        self.index = index
        self.hierarchy = hierarchy
    }

    public var description: String { "WebViewHandle(#\(index) of hierarchy \(hierarchy))" }
}

/// What decided a web view's effective identity.
package enum WebViewDecider: Sendable, Hashable {
    /// The nearest node (the web view itself or an ancestor) with a policy other than
    /// ``WebViewPolicy/unset``.
    case node(WebViewHandle)
    /// No node on the way to the root has a policy: `TreatAllWebViewsAsUnmanaged` decides
    /// (unmanaged when set, otherwise the current identity).
    case `default`
}

/// A web view's effective identity at the moment of the decision.
public struct WebViewResolution: Sendable, Hashable {
    /// Whose content the web view shows: cut and copy from it count as content of this identity
    /// and go through the pasteboard policy accordingly (unmanaged content is not restricted).
    public let identity: ManagedIdentity
    /// Whether file uploads and pastes into the page are blocked: the effective policy is
    /// ``WebViewPolicy/currentIdentityBlockUpload`` and the current identity is managed.
    public let blocksUploadAndPaste: Bool
    /// The effective policy: the deciding node's, or ``WebViewPolicy/unset`` when nothing decided.
    public let policy: WebViewPolicy
    /// The node whose policy decided, or ``WebViewDecider/default``.
    package let decidedBy: WebViewDecider

    /// Creates a resolution.
    package init(identity: ManagedIdentity, blocksUploadAndPaste: Bool, policy: WebViewPolicy, decidedBy: WebViewDecider) {
        self.identity = identity
        self.blocksUploadAndPaste = blocksUploadAndPaste
        self.policy = policy
        self.decidedBy = decidedBy
    }

    /// Whether the page may receive a file upload.
    public var allowsFileUpload: Bool { !blocksUploadAndPaste }
    /// Whether the user may paste into the page. Pasting into a web view is not restricted by
    /// the pasteboard policy (which governs what leaves the app), so it is allowed unless
    /// ``blocksUploadAndPaste``.
    public var allowsPaste: Bool { !blocksUploadAndPaste }
}

/// Where a web view's navigation goes, and how that was decided (``ShareBroker/navigate(_:to:)``
/// answers the first part).
package struct WebViewNavigation: Sendable, Hashable {
    /// Whether the managed browser opens the URL instead of the web view (the simulator's
    /// `"managedBrowser"`); `false`: the web view loads it (`"webView"`).
    package let opensInManagedBrowser: Bool
    /// Whether the web view's ``ExternalURLDelegate`` was asked: only for an effectively
    /// managed web view that has one.
    package let delegateConsulted: Bool
    /// Whether the URL counted as external: the delegate's answer when it was asked, otherwise
    /// `false`.
    package let isExternal: Bool
    /// The web view's effective identity when the navigation was decided.
    package let resolution: WebViewResolution

    /// Creates a navigation decision.
    package init(opensInManagedBrowser: Bool, delegateConsulted: Bool, isExternal: Bool, resolution: WebViewResolution) {
        self.opensInManagedBrowser = opensInManagedBrowser
        self.delegateConsulted = delegateConsulted
        self.isExternal = isExternal
        self.resolution = resolution
    }
}
