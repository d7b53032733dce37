import PropertyBased
import ShareBroker
import Testing

/// The fast resolution (cached deciders) against a naive walk over a plain model.
@Suite("WebView resolution properties")
struct WebViewPropertyTests {
    /// A plain model of the hierarchy: dictionaries and a walk to the root on every question.
    struct Model {
        var parent: [String: String] = [:]
        var policy: [String: WebViewPolicy] = [:]
        var nodes: Set<String> = []

        mutating func add(_ id: String) {
            if nodes.insert(id).inserted { policy[id] = .unset }
        }

        func isAncestorOrSelf(_ candidate: String, of node: String) -> Bool {
            var cursor: String? = node
            while let current = cursor {
                if current == candidate { return true }
                cursor = parent[current]
            }
            return false
        }

        /// The nearest node with a policy, walking up.
        func decider(of node: String) -> String? {
            var cursor: String? = node
            while let current = cursor {
                if policy[current, default: .unset] != .unset { return current }
                cursor = parent[current]
            }
            return nil
        }

        /// The seed's rules, written out independently of the library.
        func identity(of node: String, current: ManagedIdentity, treatAll: Bool) -> (ManagedIdentity, Bool) {
            guard let decider = decider(of: node) else { return (treatAll ? .unmanaged : current, false) }
            switch policy[decider, default: .unset] {
            case .unmanaged: return (.unmanaged, false)
            case .currentIdentity: return (current, false)
            case .currentIdentityBlockUpload: return (current, current == .managed)
            case .unset: return (treatAll ? .unmanaged : current, false)
            }
        }
    }

    static let ids = (0..<12).map { "n\($0)" }

    @Test("random trees and policies: the cached resolution equals a naive walk")
    func matchesNaiveWalk() async {
        await propertyCheck(count: 300, input: Gen.uint32().array(of: 0...80)) { program in
            let views = WebViewHierarchy()
            var model = Model()
            for word in program {
                let a = Self.ids[Int((word >> 2) % 12)]
                let b = Self.ids[Int((word >> 6) % 12)]
                let policy = WebViewPolicy.allCases[Int((word >> 10) % 4)]
                switch word % 4 {
                case 0, 3:  // re-parent (declare with a policy in case 3)
                    let cycle = model.nodes.contains(a) && model.nodes.contains(b) ? model.isAncestorOrSelf(a, of: b) : a == b
                    do throws(ShareBrokerError) {
                        if word % 4 == 0 {
                            try views.setParent(of: a, to: b)
                        } else {
                            try views.declare(a, parent: b, policy: policy)
                        }
                        #expect(!cycle, "\(a) under \(b) should have been rejected")
                        model.add(b)
                        model.add(a)
                        model.parent[a] = b
                        if word % 4 == 3 { model.policy[a] = policy }
                    } catch {
                        #expect(cycle && error == .cycle(node: a, parent: b), "unexpected \(error)")
                    }
                case 1:
                    _ = try? views.setParent(of: a, to: nil)
                    model.add(a)
                    model.parent[a] = nil
                default:
                    _ = try? views.setPolicy(policy, for: a)
                    model.add(a)
                    model.policy[a] = policy
                }
            }

            #expect(views.count == model.nodes.count)
            for id in Self.ids {
                guard model.nodes.contains(id) else {
                    #expect(views.handle(for: id) == nil)
                    continue
                }
                guard let handle = views.handle(for: id) else {
                    Issue.record("\(id) missing")
                    continue
                }
                #expect(try views.parent(of: id) == model.parent[id])
                for current in ManagedIdentity.allCases {
                    for treatAll in [false, true] {
                        let fast = try views.resolve(handle, currentIdentity: current, treatAllWebViewsAsUnmanaged: treatAll)
                        let byID = try views.resolve(views.existingHandle(for: id), currentIdentity: current, treatAllWebViewsAsUnmanaged: treatAll)
                        let (identity, blocks) = model.identity(of: id, current: current, treatAll: treatAll)
                        #expect(fast == byID)
                        #expect(fast.identity == identity)
                        #expect(fast.blocksUploadAndPaste == blocks)
                        let expectedDecider: WebViewDecider = model.decider(of: id).flatMap { views.handle(for: $0) }.map { .node($0) } ?? .default
                        #expect(fast.decidedBy == expectedDecider)
                    }
                }
            }
        }
    }

    @Test("a benchmark-shaped tree (10 levels, 10,000 nodes) resolves like the naive walk")
    func largeTree() throws {
        let views = WebViewHierarchy()
        var model = Model()
        // Ten levels: 1 root, then each level fans out until 10,000 nodes exist.
        var level = ["root"]
        model.add("root")
        try views.declare("root")
        var made = 1
        var depth = 1
        while made < 10_000 && depth < 10 {
            var next: [String] = []
            for (i, parent) in level.enumerated() {
                for j in 0..<3 where made < 10_000 {
                    let id = "\(parent).\(j)"
                    let policy = WebViewPolicy.allCases[(i * 7 + j * 3 + depth) % 4]
                    // Leave most nodes unset so deciders come from far up.
                    let own: WebViewPolicy = (i + j + depth) % 5 == 0 ? policy : .unset
                    try views.declare(id, parent: parent, policy: own)
                    model.add(id)
                    model.parent[id] = parent
                    model.policy[id] = own
                    next.append(id)
                    made += 1
                }
            }
            level = next
            depth += 1
        }
        // Fill up to 10,000 under the deepest level.
        var k = 0
        while made < 10_000 {
            let parent = level[k % level.count]
            let id = "\(parent).x\(k)"
            try views.declare(id, parent: parent)
            model.add(id)
            model.parent[id] = parent
            made += 1
            k += 1
        }
        #expect(views.count == 10_000)
        // A policy change near the root reaches the whole tree.
        try views.setPolicy(.currentIdentityBlockUpload, for: "root.1")
        model.policy["root.1"] = .currentIdentityBlockUpload
        for id in model.nodes {
            let r = try views.resolve(views.existingHandle(for: id), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: true)
            let (identity, blocks) = model.identity(of: id, current: .managed, treatAll: true)
            #expect(r.identity == identity && r.blocksUploadAndPaste == blocks)
        }
    }
}
