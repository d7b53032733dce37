// A web view's effective identity (issue 5): a hierarchy 10 levels deep with 10,000 nodes, a leaf
// resolved by handle (the one way to ask) and by id (the id looked up with handle(for:), then
// resolved by handle: what a caller that holds only ids, like the simulator or the C interface,
// pays).

import Benchmark
import BenchmarkSupport
import ShareBroker

/// 10,000 nodes in 10 levels: one root (policy currentIdentity), then 1,111 nodes on each of
/// levels 2 to 10 (the last level gets the remainder), each under a node of the level above
/// (spread round-robin). Every 7th node of level 5 sets `unmanaged` and every 13th of level 8
/// sets `currentIdentityBlockUpload`, so nearest-node overrides exist. The resolved leaf is a
/// level-10 node whose nearest policy is the root's, nine levels up.
final class WebViewTreeFixture: @unchecked Sendable {
    static let nodeCount = 10_000
    static let depth = 10

    let views: WebViewHierarchy
    let leaf: WebViewHandle
    let leafID: String

    init() {
        let views = WebViewHierarchy()
        self.views = views
        var levels: [[String]] = [["root"]]
        var declared = 1
        do {
            try views.declare("root", policy: .currentIdentity)
            let perLevel = (Self.nodeCount - 1) / (Self.depth - 1)
            for level in 2 ... Self.depth {
                let count = level == Self.depth ? Self.nodeCount - declared : perLevel
                let parents = levels[level - 2]
                var ids: [String] = []
                ids.reserveCapacity(count)
                for i in 0 ..< count {
                    let id = "webview.level\(level).node\(i)"
                    var policy: WebViewPolicy? = nil
                    if level == 5 && i % 7 == 3 { policy = .unmanaged }
                    if level == 8 && i % 13 == 5 { policy = .currentIdentityBlockUpload }
                    try views.declare(id, parent: parents[i % parents.count], policy: policy)
                    ids.append(id)
                }
                declared += count
                levels.append(ids)
            }
        } catch {
            fatalError("benchmark fixture: \(error)")
        }
        precondition(views.count == Self.nodeCount && levels.count == Self.depth)
        // A leaf whose every ancestor but the root is unset: walk up and check.
        let candidate = levels[Self.depth - 1].first { id in
            var node: String? = id
            while let current = node, current != "root" {
                if (try? views.policy(of: current)) != .unset { return false }
                node = try? views.parent(of: current)
            }
            return node == "root"
        }
        guard let candidate, let handle = views.handle(for: candidate) else { fatalError("no unset leaf") }
        leafID = candidate
        leaf = handle
        let resolved = try! views.resolve(handle, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: true)
        precondition(resolved.identity == .managed && resolved.policy == .currentIdentity)
    }
}

func webViewBenchmarks() {
    let configuration = BenchmarkMode.configuration(scaling: .kilo)

    Benchmark("WebView effective identity by handle (10k nodes, depth 10)",
              configuration: configuration) { benchmark, fixture in
        let views = fixture.views
        let leaf = fixture.leaf
        BenchmarkMode.measure(benchmark) {
            blackHole(try! views.resolve(leaf, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: true))
        }
    } setup: {
        WebViewTreeFixture()
    }

    // The id is built at run time so it never shares storage with the hierarchy's own copy.
    Benchmark("WebView effective identity by id (10k nodes, depth 10)",
              configuration: configuration) { benchmark, fixture in
        let views = fixture.views
        let id = String(decoding: Array(fixture.leafID.utf8), as: UTF8.self)
        BenchmarkMode.measure(benchmark) {
            guard let handle = views.handle(for: id) else { fatalError("the leaf has no handle") }
            blackHole(try! views.resolve(handle, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: true))
        }
    } setup: {
        WebViewTreeFixture()
    }
}
