/// What went wrong with a web-view hierarchy request, and what to do about it.
public enum WebViewError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No node has this id. Declare it first (``WebViewHierarchy/declare(_:parent:policy:externalURLDelegate:)``).
    case unknownNode(String)
    /// The handle was made by another ``WebViewHierarchy``. Use handles only with the hierarchy
    /// that returned them.
    case foreignHandle
    /// Putting `node` under `parent` would make a cycle: `parent` is `node` itself or lies in
    /// its subtree. The hierarchy is unchanged.
    case cycle(node: String, parent: String)
    /// The hierarchy already holds the most nodes it can index (`Int32.max`). Nothing was added.
    case capacityExceeded

    public var description: String {
        switch self {
        case .unknownNode(let id):
            "no web view or container has the id '\(id)'; declare it before asking about it"
        case .foreignHandle:
            "the web-view handle belongs to another hierarchy; use handles only with the hierarchy that returned them"
        case .cycle(let node, let parent):
            "putting '\(node)' under '\(parent)' would make a cycle ('\(parent)' is '\(node)' or lies under it); "
                + "the hierarchy is unchanged: move '\(parent)' out of the subtree first or choose another parent"
        case .capacityExceeded:
            "the web-view hierarchy is full (\(Int32.max) nodes); nothing was added"
        }
    }
}
