import Synchronization

/// The app's viewers (containers and web views) as a tree of nodes with string ids, each with an
/// optional parent, a ``WebViewPolicy`` and an optional ``ExternalURLDelegate``; it answers what
/// identity a web view's content has, whether its page may receive uploads and pastes, and where
/// a navigation goes.
///
/// ```swift
/// let views = WebViewHierarchy()
/// try views.declare("settingsScreen", policy: .currentIdentity)
/// let d = try views.declare("D", parent: "settingsScreen")
/// let r = try views.resolve(d, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: true)
/// // r.identity == .managed: the policy of "settingsScreen" decides
/// ```
///
/// A policy set on a node applies to it and to every descendant, present and future, unless a
/// nearer node sets its own; with none on the way to the root, `TreatAllWebViewsAsUnmanaged`
/// decides. Mentioning an id that does not exist (as a node or as a parent) declares it, as a
/// root. Nodes are never removed.
///
/// Reads are the hot path and writes are rare: every node caches the index of its deciding node,
/// recomputed for the node's subtree whenever a policy or a parent changes, so resolving a
/// ``WebViewHandle`` is two array loads under an uncontended lock, with no allocation, however
/// deep the tree. All methods are safe to call from any thread.
public final class WebViewHierarchy: Sendable {
    private static let nextTag = Atomic<UInt32>(1)

    /// Tells this hierarchy's handles apart from other hierarchies'.
    private let tag: UInt32
    private let storage = Mutex(Storage())

    /// Creates an empty hierarchy.
    public init() {
        tag = Self.nextTag.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    // MARK: - Declaring and updating nodes

    /// Declares the node `id`, or updates it, in one atomic step: either everything given is
    /// applied or, on error, nothing is.
    ///
    /// - Parameters:
    ///   - id: the node's id (a web view or a container).
    ///   - parent: the node to put `id` under (declared as a root when new); `nil` leaves the
    ///     parent as it is (a new node is a root). Use ``setParent(of:to:)`` to detach.
    ///   - policy: the node's own policy; `nil` leaves it as it is (a new node has
    ///     ``WebViewPolicy/unset``).
    ///   - externalURLDelegate: the node's delegate; `nil` leaves it as it is. Use
    ///     ``setExternalURLDelegate(_:for:)`` to remove one.
    /// - Returns: the node's handle.
    /// - Throws: ``ShareBrokerError/cycle(node:parent:)`` when `parent` is `id` or lies under it;
    ///   ``ShareBrokerError/capacityExceeded`` when the hierarchy is full.
    @discardableResult
    public func declare(
        _ id: String, parent: String? = nil, policy: WebViewPolicy? = nil,
        externalURLDelegate: (any ExternalURLDelegate)? = nil
    ) throws(ShareBrokerError) -> WebViewHandle {
        let index = try storage.withLock { s throws(ShareBrokerError) -> Int32 in
            if let parent, parent == id { throw .cycle(node: id, parent: parent) }
            let node = try s.intern(id, and: parent)
            if let parent { try s.attach(node, toParent: parent) }
            if let policy { s.setPolicy(policy, of: node) }
            if let externalURLDelegate { s.delegates[Int(node)] = externalURLDelegate }
            return node
        }
        return WebViewHandle(index: index, hierarchy: tag)
    }

    /// Sets `node`'s own policy (declaring the node when new). It applies to the node and to
    /// every descendant, present and future, unless a nearer node sets its own;
    /// ``WebViewPolicy/unset`` removes the node's own policy.
    ///
    /// - Throws: ``ShareBrokerError/capacityExceeded`` when `node` is new and the hierarchy is full.
    @discardableResult
    public func setPolicy(_ policy: WebViewPolicy, for node: String) throws(ShareBrokerError) -> WebViewHandle {
        try declare(node, policy: policy)
    }

    /// Puts `node` under `parent` (declaring either when new), or makes it a root when `parent`
    /// is `nil`. The node's whole subtree moves with it and takes on its new ancestors' policies.
    ///
    /// - Throws: ``ShareBrokerError/cycle(node:parent:)`` when `parent` is `node` or lies under it
    ///   (the hierarchy is unchanged); ``ShareBrokerError/capacityExceeded`` when the hierarchy is full.
    @discardableResult
    public func setParent(of node: String, to parent: String?) throws(ShareBrokerError) -> WebViewHandle {
        let index = try storage.withLock { s throws(ShareBrokerError) -> Int32 in
            if let parent, parent == node { throw .cycle(node: node, parent: parent) }
            let index = try s.intern(node, and: parent)
            if let parent {
                try s.attach(index, toParent: parent)
            } else if s.detach(index) {
                s.refresh(from: index)
            }
            return index
        }
        return WebViewHandle(index: index, hierarchy: tag)
    }

    /// Sets or, with `nil`, removes the ``ExternalURLDelegate`` of the web view `node`
    /// (declaring it when new). A delegate applies to its own node only.
    ///
    /// - Throws: ``ShareBrokerError/capacityExceeded`` when `node` is new and the hierarchy is full.
    @discardableResult
    public func setExternalURLDelegate(_ delegate: (any ExternalURLDelegate)?, for node: String) throws(ShareBrokerError) -> WebViewHandle {
        let index = try storage.withLock { s throws(ShareBrokerError) -> Int32 in
            let index = try s.intern(node, and: nil)
            s.delegates[Int(index)] = delegate
            return index
        }
        return WebViewHandle(index: index, hierarchy: tag)
    }

    // MARK: - Looking nodes up

    /// The handle of the node `id`, or `nil` when no node has that id.
    public func handle(for id: String) -> WebViewHandle? {
        storage.withLock { s in s.indexes[id] }.map { WebViewHandle(index: $0, hierarchy: tag) }
    }

    /// The handle of the node `id`, for callers that get ids from outside (the simulator, the C
    /// interface).
    ///
    /// - Throws: ``ShareBrokerError/unknownNode(_:)`` when no node has the id `id`.
    package func existingHandle(for id: String) throws(ShareBrokerError) -> WebViewHandle {
        guard let handle = handle(for: id) else { throw .unknownNode(id) }
        return handle
    }

    /// The id of the node `handle` refers to.
    ///
    /// - Throws: ``ShareBrokerError/foreignHandle`` when the handle belongs to another hierarchy.
    public func id(of handle: WebViewHandle) throws(ShareBrokerError) -> String {
        let index = try checked(handle)
        guard let id = storage.withLock({ s in index < s.ids.count ? s.ids[index] : nil }) else { throw .foreignHandle }
        return id
    }

    /// The id of `node`'s parent, or `nil` for a root.
    ///
    /// - Throws: ``ShareBrokerError/unknownNode(_:)`` when no node has the id `node`.
    public func parent(of node: String) throws(ShareBrokerError) -> String? {
        try storage.withLock { s throws(ShareBrokerError) -> String? in
            guard let index = s.indexes[node] else { throw .unknownNode(node) }
            let parent = s.parents[Int(index)]
            return parent >= 0 ? s.ids[Int(parent)] : nil
        }
    }

    /// `node`'s own policy (``WebViewPolicy/unset`` when it has none; see ``resolve(_:currentIdentity:treatAllWebViewsAsUnmanaged:)``
    /// for the policy that applies to it).
    ///
    /// - Throws: ``ShareBrokerError/unknownNode(_:)`` when no node has the id `node`.
    public func policy(of node: String) throws(ShareBrokerError) -> WebViewPolicy {
        try storage.withLock { s throws(ShareBrokerError) -> WebViewPolicy in
            guard let index = s.indexes[node] else { throw .unknownNode(node) }
            return s.policies[Int(index)]
        }
    }

    /// The ids of `node`'s children, in no particular order.
    ///
    /// - Throws: ``ShareBrokerError/unknownNode(_:)`` when no node has the id `node`.
    public func children(of node: String) throws(ShareBrokerError) -> [String] {
        try storage.withLock { s throws(ShareBrokerError) -> [String] in
            guard let index = s.indexes[node] else { throw .unknownNode(node) }
            return s.children[Int(index)].map { s.ids[Int($0)] }
        }
    }

    /// How many nodes (containers and web views) the hierarchy holds.
    public var count: Int { storage.withLock { $0.ids.count } }

    // MARK: - Decisions

    /// The effective identity of the node `view`: allocation-free, the hot path.
    ///
    /// The nearest node from `view` up to the root with a policy other than
    /// ``WebViewPolicy/unset`` decides: ``WebViewPolicy/unmanaged`` gives an unmanaged identity,
    /// ``WebViewPolicy/currentIdentity`` and ``WebViewPolicy/currentIdentityBlockUpload`` the
    /// current identity. With no such node, the web view is unmanaged when
    /// `treatAllWebViewsAsUnmanaged` is set and otherwise takes the current identity.
    ///
    /// - Parameters:
    ///   - view: the node's handle.
    ///   - currentIdentity: the app's identity at the moment of the decision.
    ///   - treatAllWebViewsAsUnmanaged: the manifest's `TreatAllWebViewsAsUnmanaged`.
    /// - Throws: ``ShareBrokerError/foreignHandle`` when the handle belongs to another hierarchy.
    public func resolve(
        _ view: WebViewHandle, currentIdentity: ManagedIdentity, treatAllWebViewsAsUnmanaged: Bool
    ) throws(ShareBrokerError) -> WebViewResolution {
        let index = try checked(view)
        guard let decider = storage.withLock({ s in s.decider(of: index) }) else { throw .foreignHandle }
        return resolution(decider, currentIdentity: currentIdentity, treatAllWebViewsAsUnmanaged: treatAllWebViewsAsUnmanaged)
    }

    /// Whether the page in `view` may receive a file upload: not when its effective policy is
    /// ``WebViewPolicy/currentIdentityBlockUpload`` and the current identity is managed.
    ///
    /// - Throws: ``ShareBrokerError/foreignHandle`` when the handle belongs to another hierarchy.
    public func allowsFileUpload(
        into view: WebViewHandle, currentIdentity: ManagedIdentity, treatAllWebViewsAsUnmanaged: Bool
    ) throws(ShareBrokerError) -> Bool {
        try resolve(view, currentIdentity: currentIdentity, treatAllWebViewsAsUnmanaged: treatAllWebViewsAsUnmanaged).allowsFileUpload
    }

    /// Whether the user may paste into the page in `view`.
    ///
    /// Pasting into a web view is not restricted by the pasteboard policy (which governs what
    /// leaves the app): it is allowed, except when the effective policy is
    /// ``WebViewPolicy/currentIdentityBlockUpload`` and the current identity is managed.
    ///
    /// - Throws: ``ShareBrokerError/foreignHandle`` when the handle belongs to another hierarchy.
    public func allowsPaste(
        into view: WebViewHandle, currentIdentity: ManagedIdentity, treatAllWebViewsAsUnmanaged: Bool
    ) throws(ShareBrokerError) -> Bool {
        try resolve(view, currentIdentity: currentIdentity, treatAllWebViewsAsUnmanaged: treatAllWebViewsAsUnmanaged).allowsPaste
    }

    /// Decides where the web view `view` loads `url`.
    ///
    /// Only for an effectively managed web view is its ``ExternalURLDelegate`` asked (once per
    /// navigation, without any lock held); no delegate means the URL is internal. The URL opens
    /// in the managed browser when the web view is effectively managed, the delegate reports it
    /// external and `managedBrowserRequired` is set; otherwise it stays in the web view.
    ///
    /// - Parameters:
    ///   - view: the web view's handle.
    ///   - url: the URL it is about to load.
    ///   - currentIdentity: the app's identity at the moment of the decision.
    ///   - treatAllWebViewsAsUnmanaged: the manifest's `TreatAllWebViewsAsUnmanaged`.
    ///   - managedBrowserRequired: the policy's ``PolicySnapshot/managedBrowserRequired``.
    /// - Throws: ``ShareBrokerError/foreignHandle`` when the handle belongs to another hierarchy.
    package func navigate(
        _ view: WebViewHandle, to url: String, currentIdentity: ManagedIdentity,
        treatAllWebViewsAsUnmanaged: Bool, managedBrowserRequired: Bool
    ) throws(ShareBrokerError) -> WebViewNavigation {
        let index = try checked(view)
        let found = storage.withLock { s -> (Decider, (any ExternalURLDelegate)?)? in
            guard let decider = s.decider(of: index) else { return nil }
            return (decider, s.delegates[index])
        }
        guard let (decider, delegate) = found else { throw .foreignHandle }
        return navigation(decider, delegate, url: url, currentIdentity: currentIdentity,
                          treatAllWebViewsAsUnmanaged: treatAllWebViewsAsUnmanaged,
                          managedBrowserRequired: managedBrowserRequired)
    }

    // MARK: - Internals

    /// The deciding node's index (negative for none) and its policy.
    typealias Decider = (index: Int32, policy: WebViewPolicy)

    /// The handle's index, when the handle is this hierarchy's.
    @inline(__always)
    private func checked(_ handle: WebViewHandle) throws(ShareBrokerError) -> Int {
        guard handle.hierarchy == tag, handle.index >= 0 else { throw .foreignHandle }
        return Int(handle.index)
    }

    @inline(__always)
    private func resolution(
        _ decider: Decider, currentIdentity: ManagedIdentity, treatAllWebViewsAsUnmanaged: Bool
    ) -> WebViewResolution {
        let (identity, blocks) = decider.policy.effectiveIdentity(
            currentIdentity: currentIdentity, treatAllWebViewsAsUnmanaged: treatAllWebViewsAsUnmanaged)
        return WebViewResolution(
            identity: identity, blocksUploadAndPaste: blocks, policy: decider.policy,
            decidedBy: decider.index >= 0 ? .node(WebViewHandle(index: decider.index, hierarchy: tag)) : .default)
    }

    private func navigation(
        _ decider: Decider, _ delegate: (any ExternalURLDelegate)?, url: String, currentIdentity: ManagedIdentity,
        treatAllWebViewsAsUnmanaged: Bool, managedBrowserRequired: Bool
    ) -> WebViewNavigation {
        let resolved = resolution(decider, currentIdentity: currentIdentity, treatAllWebViewsAsUnmanaged: treatAllWebViewsAsUnmanaged)
        guard resolved.identity == .managed, let delegate else {
            return WebViewNavigation(opensInManagedBrowser: false, delegateConsulted: false, isExternal: false, resolution: resolved)
        }
        let external = delegate.isExternalURL(url)
        return WebViewNavigation(
            opensInManagedBrowser: external && managedBrowserRequired,
            delegateConsulted: true, isExternal: external, resolution: resolved)
    }
}

/// The hierarchy's data: ids interned to dense `Int32` indexes, everything else in arrays
/// indexed by them.
private struct Storage: Sendable {
    /// Id to index.
    var indexes: [String: Int32] = [:]
    /// Index to id.
    var ids: [String] = []
    /// Each node's parent index, or -1 for a root.
    var parents: [Int32] = []
    /// Each node's own policy.
    var policies: [WebViewPolicy] = []
    /// Each node's deciding node: the nearest node, itself included, on the way to the root
    /// whose own policy is not `unset`, or -1 for none. Kept current by ``refresh(from:)``.
    var deciders: [Int32] = []
    /// Each node's children (order does not matter).
    var children: [[Int32]] = []
    /// Each node's external-URL delegate.
    var delegates: [(any ExternalURLDelegate)?] = []

    /// The deciding node of the node at `index`, or `nil` when there is no such node.
    @inline(__always)
    func decider(of index: Int) -> WebViewHierarchy.Decider? {
        guard index < deciders.count else { return nil }
        let decider = deciders[index]
        return (decider, decider >= 0 ? policies[Int(decider)] : .unset)
    }

    /// Interns `id` and, when given, `other` (both as roots when new), after checking that both
    /// fit: either both are interned or, on error, neither. Returns `id`'s index.
    mutating func intern(_ id: String, and other: String?) throws(ShareBrokerError) -> Int32 {
        var needed = indexes[id] == nil ? 1 : 0
        if let other, other != id, indexes[other] == nil { needed += 1 }
        guard ids.count + needed <= Int(Int32.max) else { throw .capacityExceeded }
        if let other { _ = add(other) }
        return add(id)
    }

    /// `id`'s index, adding it as a root with no policy when new. The caller checked capacity.
    private mutating func add(_ id: String) -> Int32 {
        if let index = indexes[id] { return index }
        let index = Int32(truncatingIfNeeded: ids.count)
        indexes[id] = index
        ids.append(id)
        parents.append(-1)
        policies.append(.unset)
        deciders.append(-1)
        children.append([])
        delegates.append(nil)
        return index
    }

    /// Puts `node` under the existing node `parentID`, refreshing the moved subtree. Throws,
    /// changing nothing, when that would make a cycle.
    mutating func attach(_ node: Int32, toParent parentID: String) throws(ShareBrokerError) {
        guard let parent = indexes[parentID] else { throw .unknownNode(parentID) }
        var ancestor = parent
        while ancestor >= 0 {
            if ancestor == node { throw .cycle(node: ids[Int(node)], parent: parentID) }
            ancestor = parents[Int(ancestor)]
        }
        if parents[Int(node)] != parent {
            detach(node)
            parents[Int(node)] = parent
            children[Int(parent)].append(node)
            refresh(from: node)
        }
    }

    /// Makes `node` a root; `false` when it already was one. The caller refreshes its subtree.
    @discardableResult
    mutating func detach(_ node: Int32) -> Bool {
        let parent = parents[Int(node)]
        guard parent >= 0 else { return false }
        if let position = children[Int(parent)].firstIndex(of: node) {
            children[Int(parent)].swapAt(position, children[Int(parent)].count - 1)
            children[Int(parent)].removeLast()
        }
        parents[Int(node)] = -1
        return true
    }

    /// Sets `node`'s own policy and refreshes its subtree.
    mutating func setPolicy(_ policy: WebViewPolicy, of node: Int32) {
        guard policies[Int(node)] != policy else { return }
        policies[Int(node)] = policy
        refresh(from: node)
    }

    /// Recomputes the deciding node of `root` and of every node under it, parents before
    /// children.
    mutating func refresh(from root: Int32) {
        var pending: [Int32] = [root]
        while let node = pending.popLast() {
            let i = Int(node)
            if policies[i] != .unset {
                deciders[i] = node
            } else {
                let parent = parents[i]
                deciders[i] = parent >= 0 ? deciders[Int(parent)] : -1
            }
            pending.append(contentsOf: children[i])
        }
    }
}
