import ShareBroker
import Testing

/// The seed (`spec/intune-web-views.txt`): its four scenarios and its five-web-view example.
@Suite("WebView seed scenarios")
struct WebViewSeedTests {
    @Test("scenario 1: no APIs, every web view takes the current identity")
    func scenario1() throws {
        let views = WebViewHierarchy()
        try views.declare("privacy")
        try views.declare("docs", parent: "mainScreen")
        for view in ["privacy", "docs", "mainScreen"] {
            let managed = try views.resolve(views.existingHandle(for: view), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: false)
            #expect(managed.identity == .managed)
            #expect(managed.decidedBy == .default)
            #expect(managed.policy == .unset)
            #expect(managed.allowsPaste && managed.allowsFileUpload)
            #expect(try views.identity(view, .unmanaged, treatAll: false) == .unmanaged)
        }
    }

    @Test("scenario 2: TreatAllWebViewsAsUnmanaged makes every web view unmanaged, whoever the user")
    func scenario2() throws {
        let views = WebViewHierarchy()
        try views.declare("eula", parent: "about")
        try views.declare("privacy")
        for view in ["eula", "about", "privacy"] {
            for current in ManagedIdentity.allCases {
                let r = try views.resolve(views.existingHandle(for: view), currentIdentity: current, treatAllWebViewsAsUnmanaged: true)
                #expect(r.identity == .unmanaged)
                #expect(r.decidedBy == .default)
                #expect(!r.blocksUploadAndPaste)
            }
        }
    }

    @Test("scenario 3, majority unmanaged: TreatAll plus currentIdentity on the organizational views")
    func scenario3MajorityUnmanaged() throws {
        let views = WebViewHierarchy()
        try views.declare("eula")
        try views.declare("inbox", policy: .currentIdentity)
        // A view controller tagged before its web view exists.
        try views.setPolicy(.currentIdentity, for: "reportsController")
        try views.declare("reportWebView", parent: "reportsController")

        #expect(try views.identity("eula", .managed, treatAll: true) == .unmanaged)
        #expect(try views.identity("inbox", .managed, treatAll: true) == .managed)
        #expect(try views.identity("reportWebView", .managed, treatAll: true) == .managed)
        #expect(try views.decider("reportWebView", treatAll: true) == "reportsController")
        // The current identity is unmanaged: currentIdentity means unmanaged.
        #expect(try views.identity("inbox", .unmanaged, treatAll: true) == .unmanaged)
    }

    @Test("scenario 3, majority managed: unmanaged on the few public views")
    func scenario3MajorityManaged() throws {
        let views = WebViewHierarchy()
        try views.declare("inbox")
        try views.declare("privacy", policy: .unmanaged)
        #expect(try views.identity("inbox", .managed, treatAll: false) == .managed)
        #expect(try views.identity("privacy", .managed, treatAll: false) == .unmanaged)
        #expect(try views.decider("privacy") == "privacy")
        // Unmanaged overrides TreatAll too (both ways it is unmanaged).
        #expect(try views.identity("privacy", .managed, treatAll: true) == .unmanaged)
    }

    @Test("scenario 4: a managed web view that may reach arbitrary pages asks its delegate")
    func scenario4() throws {
        let views = WebViewHierarchy()
        let delegate = RecordingURLDelegate(documentURL: "https://portal.acme.com/feedback")
        try views.declare("feedback", policy: .currentIdentity, externalURLDelegate: delegate)

        let inside = try views.navigate(views.existingHandle(for: "feedback"), to: "https://portal.acme.com/feedback", currentIdentity: .managed,
                                        treatAllWebViewsAsUnmanaged: true, managedBrowserRequired: true)
        #expect(!inside.opensInManagedBrowser)
        #expect(inside.delegateConsulted && !inside.isExternal)

        let search = try views.navigate(views.existingHandle(for: "feedback"), to: "https://search.example.org/?q=x", currentIdentity: .managed,
                                        treatAllWebViewsAsUnmanaged: true, managedBrowserRequired: true)
        #expect(search.opensInManagedBrowser)
        #expect(search.delegateConsulted && search.isExternal)

        // The policy does not require the managed browser: external, but it stays.
        let relaxed = try views.navigate(views.existingHandle(for: "feedback"), to: "https://search.example.org/?q=y", currentIdentity: .managed,
                                         treatAllWebViewsAsUnmanaged: true, managedBrowserRequired: false)
        #expect(!relaxed.opensInManagedBrowser)
        #expect(relaxed.delegateConsulted && relaxed.isExternal)
        #expect(delegate.askedURLs.count == 3)
    }

    /// The seed's example. A, B and C show no organizational data; D shows an organization page;
    /// E shows the user's documents, which may link anywhere. TreatAllWebViewsAsUnmanaged is set,
    /// D and E are tagged currentIdentity, and E has a delegate for which only the document's URL
    /// is internal.
    static func example() throws -> (WebViewHierarchy, RecordingURLDelegate) {
        let views = WebViewHierarchy()
        let delegate = RecordingURLDelegate(documentURL: "https://docs.acme.com/u/42/report")
        for view in ["A", "B", "C"] { try views.declare(view) }
        try views.declare("D", policy: .currentIdentity)
        try views.declare("E", policy: .currentIdentity, externalURLDelegate: delegate)
        return (views, delegate)
    }

    static let documentURL = "https://docs.acme.com/u/42/report"
    static let searchURL = "https://search.example.org/?q=quarterly"

    @Test("example A-E, managed user: A, B, C unmanaged; D, E managed")
    func exampleIdentities() throws {
        let (views, _) = try Self.example()
        for view in ["A", "B", "C"] {
            let r = try views.resolve(views.existingHandle(for: view), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: true)
            #expect(r.identity == .unmanaged, "\(view): managed content must not leak into it")
            #expect(r.decidedBy == .default)
        }
        for view in ["D", "E"] {
            let r = try views.resolve(views.existingHandle(for: view), currentIdentity: .managed, treatAllWebViewsAsUnmanaged: true)
            #expect(r.identity == .managed, "\(view): its content is protected from leaving the app")
            #expect(r.decidedBy == .node(try #require(views.handle(for: view))))
            #expect(r.policy == .currentIdentity)
            #expect(r.allowsPaste && r.allowsFileUpload)
        }
    }

    @Test("example A-E, managed user: E's links to other sites open in the managed browser")
    func exampleNavigation() throws {
        let (views, delegate) = try Self.example()
        func go(_ view: String, _ url: String) throws -> WebViewNavigation {
            try views.navigate(views.existingHandle(for: view), to: url, currentIdentity: .managed, treatAllWebViewsAsUnmanaged: true,
                               managedBrowserRequired: true)
        }
        // E: the document itself stays; a link elsewhere goes to the managed browser.
        #expect(try !go("E", Self.documentURL).opensInManagedBrowser)
        #expect(try go("E", Self.searchURL).opensInManagedBrowser)
        // D has no delegate: every URL is internal.
        let d = try go("D", Self.searchURL)
        #expect(!d.opensInManagedBrowser && !d.delegateConsulted)
        // A is unmanaged: it navigates anywhere, with no delegate asked.
        let a = try go("A", Self.searchURL)
        #expect(!a.opensInManagedBrowser && !a.delegateConsulted)
        #expect(delegate.askedURLs == [Self.documentURL, Self.searchURL])
    }

    @Test("example A-E, unmanaged user: every view unmanaged and E's delegate is never asked")
    func exampleUnmanagedUser() throws {
        let (views, delegate) = try Self.example()
        for view in ["A", "B", "C", "D", "E"] {
            #expect(try views.identity(view, .unmanaged, treatAll: true) == .unmanaged)
        }
        let e = try views.navigate(views.existingHandle(for: "E"), to: Self.searchURL, currentIdentity: .unmanaged,
                                   treatAllWebViewsAsUnmanaged: true, managedBrowserRequired: true)
        #expect(!e.opensInManagedBrowser && !e.delegateConsulted)
        #expect(delegate.askedURLs.isEmpty)
    }
}
