import ShareBroker
import Synchronization

/// An ``ExternalURLDelegate`` that records every URL it is asked about; `internal` decides.
final class RecordingURLDelegate: ExternalURLDelegate {
    private let asked = Mutex<[String]>([])
    private let isInternal: @Sendable (String) -> Bool

    init(internal isInternal: @escaping @Sendable (String) -> Bool) {
        self.isInternal = isInternal
    }

    /// The seed's example: only the document's own URL is internal.
    convenience init(documentURL: String) {
        self.init(internal: { $0 == documentURL })
    }

    func isExternalURL(_ url: String) -> Bool {
        asked.withLock { $0.append(url) }
        return !isInternal(url)
    }

    /// Every URL asked about so far, in order.
    var askedURLs: [String] { asked.withLock { $0 } }
}

extension WebViewHierarchy {
    /// The effective identity of `view` (test shorthand).
    func identity(_ view: String, _ current: ManagedIdentity, treatAll: Bool) throws(ShareBrokerError) -> ManagedIdentity {
        try resolve(existingHandle(for: view), currentIdentity: current, treatAllWebViewsAsUnmanaged: treatAll).identity
    }

    /// The deciding node's id, or "default" (test shorthand).
    func decider(_ view: String, _ current: ManagedIdentity = .managed, treatAll: Bool = false) throws(ShareBrokerError) -> String {
        switch try resolve(existingHandle(for: view), currentIdentity: current, treatAllWebViewsAsUnmanaged: treatAll).decidedBy {
        case .default: "default"
        case .node(let handle): try id(of: handle)
        }
    }
}
