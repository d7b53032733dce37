import ShareBroker
import Testing

@Suite("WebView hierarchy")
struct WebViewHierarchyTests {
    @Test("a policy reaches children added later, at any depth")
    func inheritanceToLaterChildren() throws {
        let views = WebViewHierarchy()
        try views.setPolicy(.unmanaged, for: "help")
        #expect(try views.identity("help", .managed, treatAll: false) == .unmanaged)
        try views.declare("topics", parent: "help")
        try views.declare("article", parent: "topics")
        #expect(try views.identity("article", .managed, treatAll: false) == .unmanaged)
        #expect(try views.decider("article") == "help")
        // A later policy on the ancestor reaches the existing descendants.
        try views.setPolicy(.currentIdentity, for: "help")
        #expect(try views.identity("article", .managed, treatAll: true) == .managed)
    }

    @Test("declaring under a parent that does not exist declares the parent as a root")
    func implicitParent() throws {
        let views = WebViewHierarchy()
        try views.declare("web", parent: "screen")
        #expect(views.count == 2)
        #expect(try views.parent(of: "web") == "screen")
        #expect(try views.parent(of: "screen") == nil)
        #expect(try views.children(of: "screen") == ["web"])
        #expect(try views.policy(of: "screen") == .unset)
    }

    @Test("the nearest node's policy wins; unset hands the decision back to the ancestors")
    func nearestOverride() throws {
        let views = WebViewHierarchy()
        try views.declare("root", policy: .unmanaged)
        try views.declare("mid", parent: "root", policy: .currentIdentity)
        try views.declare("leaf", parent: "mid")
        try views.declare("sibling", parent: "root")
        #expect(try views.identity("leaf", .managed, treatAll: false) == .managed)
        #expect(try views.decider("leaf") == "mid")
        #expect(try views.identity("sibling", .managed, treatAll: false) == .unmanaged)
        try views.setPolicy(.unmanaged, for: "leaf")
        #expect(try views.decider("leaf") == "leaf")
        try views.setPolicy(.unset, for: "leaf")
        try views.setPolicy(.unset, for: "mid")
        #expect(try views.decider("leaf") == "root")
        try views.setPolicy(.unset, for: "root")
        #expect(try views.decider("leaf") == "default")
        #expect(try views.identity("leaf", .managed, treatAll: true) == .unmanaged)
    }

    @Test("re-parenting moves the whole subtree under the new ancestors' policies")
    func reparenting() throws {
        let views = WebViewHierarchy()
        try views.declare("managedScreen", policy: .currentIdentity)
        try views.declare("publicScreen", policy: .unmanaged)
        try views.declare("panel", parent: "managedScreen")
        try views.declare("web", parent: "panel")
        #expect(try views.identity("web", .managed, treatAll: true) == .managed)

        try views.setParent(of: "panel", to: "publicScreen")
        #expect(try views.identity("web", .managed, treatAll: true) == .unmanaged)
        #expect(try views.decider("web") == "publicScreen")
        #expect(try views.children(of: "managedScreen").isEmpty)

        // Via declare, too.
        try views.declare("panel", parent: "managedScreen")
        #expect(try views.decider("web") == "managedScreen")

        try views.setParent(of: "panel", to: nil)
        #expect(try views.parent(of: "panel") == nil)
        #expect(try views.decider("web") == "default")
    }

    @Test("a cycle is rejected and leaves the tree unchanged")
    func cycleRejected() throws {
        let views = WebViewHierarchy()
        try views.declare("a", policy: .currentIdentity)
        try views.declare("b", parent: "a")
        try views.declare("c", parent: "b", policy: .unmanaged)
        try views.declare("other", policy: .unmanaged)

        #expect(throws: ShareBrokerError.cycle(node: "a", parent: "c")) { try views.setParent(of: "a", to: "c") }
        #expect(throws: ShareBrokerError.cycle(node: "b", parent: "b")) { try views.setParent(of: "b", to: "b") }
        #expect(throws: ShareBrokerError.cycle(node: "a", parent: "b")) {
            try views.declare("a", parent: "b", policy: .unmanaged, externalURLDelegate: PrefixExternalURLDelegate(internalPrefixes: []))
        }
        #expect(try views.parent(of: "a") == nil)
        #expect(try views.parent(of: "b") == "a")
        #expect(try views.parent(of: "c") == "b")
        #expect(try views.policy(of: "a") == .currentIdentity)
        #expect(try views.decider("b") == "a")
        // The rejected declare did not set a delegate either: no delegate is asked.
        let n = try views.navigate(views.existingHandle(for: "a"), to: "https://x.example/", currentIdentity: .managed,
                                   treatAllWebViewsAsUnmanaged: false, managedBrowserRequired: true)
        #expect(!n.delegateConsulted)

        // A new node made its own parent is not added.
        #expect(throws: ShareBrokerError.cycle(node: "new", parent: "new")) { try views.declare("new", parent: "new") }
        #expect(views.handle(for: "new") == nil)
        #expect(views.count == 4)
        #expect(try #require(ShareBrokerError.cycle(node: "a", parent: "c") as ShareBrokerError?).description.contains("unchanged"))
    }

    @Test("decisions use the identity current when they are made")
    func identitySwitches() throws {
        let views = WebViewHierarchy()
        let delegate = RecordingURLDelegate(internal: { _ in false })
        let web = try views.declare("web", policy: .currentIdentityBlockUpload, externalURLDelegate: delegate)
        var current = ManagedIdentity.initial
        #expect(current == .managed)
        func navigate() throws -> WebViewNavigation {
            try views.navigate(web, to: "https://elsewhere.example/", currentIdentity: current,
                               treatAllWebViewsAsUnmanaged: false, managedBrowserRequired: true)
        }
        #expect(try navigate().opensInManagedBrowser)
        #expect(try !views.allowsPaste(into: web, currentIdentity: current, treatAllWebViewsAsUnmanaged: false))

        current = .unmanaged
        #expect(try !navigate().opensInManagedBrowser)
        #expect(try views.allowsPaste(into: web, currentIdentity: current, treatAllWebViewsAsUnmanaged: false))
        #expect(try views.resolve(web, currentIdentity: current, treatAllWebViewsAsUnmanaged: false).identity == .unmanaged)

        current = .managed
        #expect(try navigate().opensInManagedBrowser)
        #expect(delegate.askedURLs.count == 2)
    }

    @Test("block upload: managed pages refuse uploads and pastes; unmanaged ones and overrides do not")
    func blockUpload() throws {
        let views = WebViewHierarchy()
        try views.declare("uploads", policy: .currentIdentityBlockUpload)
        let form = try views.declare("form", parent: "uploads")
        let exempt = try views.declare("exempt", parent: "uploads", policy: .currentIdentity)
        try views.declare("plain")

        for treatAll in [false, true] {
            let r = try views.resolve(form, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: treatAll)
            #expect(r.identity == .managed && r.blocksUploadAndPaste && r.policy == .currentIdentityBlockUpload)
            #expect(try !views.allowsFileUpload(into: form, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: treatAll))
            #expect(try !views.allowsPaste(into: views.existingHandle(for: "form"), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: treatAll))
            #expect(try views.allowsFileUpload(into: exempt, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: treatAll))
            #expect(try views.allowsPaste(into: exempt, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: treatAll))
            // Unmanaged identity: unmanaged content is not restricted.
            #expect(try views.allowsFileUpload(into: views.existingHandle(for: "form"), currentIdentity: .unmanaged, treatAllWebViewsAsUnmanaged: treatAll))
            #expect(try views.allowsPaste(into: form, currentIdentity: .unmanaged, treatAllWebViewsAsUnmanaged: treatAll))
            // Paste into a managed page without block-upload is allowed.
            #expect(try views.allowsPaste(into: views.existingHandle(for: "plain"), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: treatAll))
        }
    }

    @Test("the delegate is asked only for managed views, once per navigation, and is not inherited")
    func delegateRules() throws {
        let views = WebViewHierarchy()
        let delegate = RecordingURLDelegate(internal: { $0.hasPrefix("https://intra.acme.com/") })
        try views.declare("web", parent: "screen", externalURLDelegate: delegate)
        try views.declare("child", parent: "web")
        func go(_ view: String, _ url: String, _ current: ManagedIdentity, treatAll: Bool,
                required: Bool = true) throws -> WebViewNavigation {
            try views.navigate(views.existingHandle(for: view), to: url, currentIdentity: current, treatAllWebViewsAsUnmanaged: treatAll,
                               managedBrowserRequired: required)
        }
        // Unmanaged through TreatAll, through the policy, or through the identity: never asked.
        #expect(try !go("web", "https://a.example/", .managed, treatAll: true).delegateConsulted)
        try views.setPolicy(.unmanaged, for: "screen")
        #expect(try !go("web", "https://b.example/", .managed, treatAll: false).delegateConsulted)
        try views.setPolicy(.currentIdentity, for: "screen")
        #expect(try !go("web", "https://c.example/", .unmanaged, treatAll: false).delegateConsulted)
        #expect(delegate.askedURLs.isEmpty)

        // Managed: asked each time.
        #expect(try !go("web", "https://intra.acme.com/x", .managed, treatAll: true).opensInManagedBrowser)
        #expect(try go("web", "https://d.example/", .managed, treatAll: true).opensInManagedBrowser)
        #expect(try go("web", "https://d.example/", .managed, treatAll: true).opensInManagedBrowser)
        #expect(delegate.askedURLs == ["https://intra.acme.com/x", "https://d.example/", "https://d.example/"])

        // The child has no delegate of its own: every URL is internal.
        let child = try go("child", "https://e.example/", .managed, treatAll: true)
        #expect(!child.opensInManagedBrowser && !child.delegateConsulted && !child.isExternal)

        // Removing the delegate makes every URL internal again.
        try views.setExternalURLDelegate(nil, for: "web")
        #expect(try !go("web", "https://f.example/", .managed, treatAll: true).opensInManagedBrowser)
        #expect(delegate.askedURLs.count == 3)
    }

    @Test("a delegate may call back into the hierarchy without deadlocking")
    func reentrantDelegate() throws {
        struct Reentrant: ExternalURLDelegate {
            unowned let views: WebViewHierarchy // the hierarchy holds its delegates: no cycle
            func isExternalURL(_ url: String) -> Bool {
                (try? views.resolve(views.existingHandle(for: "other"), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: false).identity) == .managed
            }
        }
        let views = WebViewHierarchy()
        try views.declare("other")
        try views.declare("web", externalURLDelegate: Reentrant(views: views))
        let n = try views.navigate(views.existingHandle(for: "web"), to: "https://x.example/", currentIdentity: .managed,
                                   treatAllWebViewsAsUnmanaged: false, managedBrowserRequired: true)
        #expect(n.opensInManagedBrowser)
    }

    @Test("the prefix delegate: internal prefixes match byte for byte, everything else is external")
    func prefixDelegate() {
        let delegate = PrefixExternalURLDelegate(internalPrefixes: ["https://docs.acme.com/", "https://intra.acme.com/"])
        #expect(!delegate.isExternalURL("https://docs.acme.com/"))
        #expect(!delegate.isExternalURL("https://intra.acme.com/wiki?page=1"))
        #expect(delegate.isExternalURL("https://docs.acme.com.evil.example/"))
        #expect(delegate.isExternalURL("HTTPS://DOCS.ACME.COM/"))
        #expect(delegate.isExternalURL("https://docs.acme.com"))
        #expect(delegate.isExternalURL("https://search.example.org/?q=x"))
        // A decomposed é does not match a precomposed one: no normalization.
        #expect(!PrefixExternalURLDelegate(internalPrefixes: ["https://caf\u{E9}/"]).isExternalURL("https://caf\u{E9}/x"))
        #expect(PrefixExternalURLDelegate(internalPrefixes: ["https://caf\u{E9}/"]).isExternalURL("https://cafe\u{301}/x"))
        #expect(PrefixExternalURLDelegate(internalPrefixes: []).isExternalURL("https://docs.acme.com/"))
    }

    @Test("unknown nodes and foreign handles are typed errors")
    func unknownNodes() throws {
        let views = WebViewHierarchy()
        try views.declare("known")
        #expect(throws: ShareBrokerError.unknownNode("nope")) {
            try views.resolve(views.existingHandle(for: "nope"), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: false)
        }
        #expect(throws: ShareBrokerError.unknownNode("nope")) {
            try views.navigate(views.existingHandle(for: "nope"), to: "https://x.example/", currentIdentity: .managed,
                               treatAllWebViewsAsUnmanaged: false, managedBrowserRequired: true)
        }
        #expect(throws: ShareBrokerError.unknownNode("nope")) {
            try views.allowsPaste(into: views.existingHandle(for: "nope"), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: false)
        }
        #expect(throws: ShareBrokerError.unknownNode("nope")) {
            try views.allowsFileUpload(into: views.existingHandle(for: "nope"), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: false)
        }
        #expect(throws: ShareBrokerError.unknownNode("nope")) { try views.parent(of: "nope") }
        #expect(throws: ShareBrokerError.unknownNode("nope")) { try views.policy(of: "nope") }
        #expect(throws: ShareBrokerError.unknownNode("nope")) { try views.children(of: "nope") }
        #expect(views.handle(for: "nope") == nil)
        #expect(views.count == 1)
        #expect(ShareBrokerError.unknownNode("nope").description.contains("'nope'"))

        let other = WebViewHierarchy()
        let foreign = try other.declare("known")
        #expect(throws: ShareBrokerError.foreignHandle) {
            try views.resolve(foreign, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: false)
        }
        #expect(throws: ShareBrokerError.foreignHandle) { try views.id(of: foreign) }
        #expect(try other.id(of: foreign) == "known")
        #expect(views.handle(for: "known") != foreign)
    }

    @Test("the policy and identity enums keep Intune's raw values and the contract's names")
    func rawValues() {
        #expect(WebViewPolicy.allCases.map(\.rawValue) == [0, 1, 2, 3])
        #expect(WebViewPolicy.allCases.map(\.name) == ["unset", "unmanaged", "currentIdentity", "currentIdentityBlockUpload"])
        #expect(WebViewPolicy.allCases.allSatisfy { WebViewPolicy(name: $0.name) == $0 })
        #expect(WebViewPolicy(name: "CurrentIdentity") == nil)
        #expect(ManagedIdentity(rawValue: "managed") == .managed)
        #expect(ManagedIdentity(rawValue: "unmanaged") == .unmanaged)
    }

    @Test("concurrent readers and writers see consistent decisions")
    func concurrency() async throws {
        let views = WebViewHierarchy()
        try views.declare("screen", policy: .currentIdentity)
        let leaf = try views.declare("leaf", parent: "panel")
        try views.declare("panel", parent: "screen")
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    for i in 0..<500 {
                        _ = try? views.setPolicy(i % 2 == writer ? .unmanaged : .unset, for: "panel")
                    }
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<2_000 {
                        guard let r = try? views.resolve(leaf, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: true) else {
                            Issue.record("resolve failed")
                            return
                        }
                        // Either the panel's unmanaged or the screen's currentIdentity decides.
                        #expect((r.policy == .unmanaged && r.identity == .unmanaged)
                                || (r.policy == .currentIdentity && r.identity == .managed))
                    }
                }
            }
        }
    }
}
