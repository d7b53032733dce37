import ShareBroker

/// The web-view ops of the contract: `identity`, `webView`, `navigate`.
extension PolicySimulator {
    func identity(_ f: Fields, _ broker: ShareBroker) throws(SimulatorError) -> [(String, JSON)] {
        guard let user = try f.choice("user", ["managed": ManagedIdentity.managed, "unmanaged": .unmanaged]) else {
            throw SimulatorError("missing required field 'user' (managed or unmanaged)")
        }
        do {
            try broker.setIdentity(user)
        } catch {
            throw SimulatorError("the library refused the identity change: \(error)")
        }
        return [("identity", .string(user.rawValue))]
    }

    func webView(_ f: Fields, _ broker: ShareBroker) throws(SimulatorError) -> [(String, JSON)] {
        let id = try f.requiredString("id")
        let parent = try f.string("parent")
        let policy = try f.choice("policy", ["unset": WebViewPolicy.unset, "unmanaged": .unmanaged,
                                             "currentIdentity": .currentIdentity,
                                             "currentIdentityBlockUpload": .currentIdentityBlockUpload])
        var delegate: PrefixExternalURLDelegate?
        if let d = try f.object("externalURLDelegate") {
            delegate = PrefixExternalURLDelegate(internalPrefixes: try d.strings("internal") ?? [])
        }
        do {
            let handle = try broker.webViews.declare(id, parent: parent, policy: policy, externalURLDelegate: delegate)
            let resolution = try broker.resolveWebView(handle)
            let decider: String
            switch resolution.decidedBy {
            case .default:
                decider = broker.currentSnapshot.manifest.treatAllWebViewsAsUnmanaged
                    ? "no policy on the node or its ancestors, and TreatAllWebViewsAsUnmanaged is set"
                    : "no policy on the node or its ancestors: the current identity"
            case .node(let handle):
                let name = (try? broker.webViews.id(of: handle)) ?? "?"
                decider = "policy \(resolution.policy.name) set on \(name == id ? "the node itself" : "ancestor \(name)")"
            }
            return [("effective", .string(resolution.identity.rawValue)), ("why", .string(decider)),
                    ("blocksUploadAndPaste", .bool(resolution.blocksUploadAndPaste))]
        } catch {
            throw SimulatorError("field 'id': \(error)")
        }
    }

    func navigate(_ f: Fields, _ broker: ShareBroker) throws(SimulatorError) -> [(String, JSON)] {
        let view = try f.requiredString("view")
        let url = try f.requiredString("url")
        do {
            let navigation = try broker.navigation(broker.webViews.existingHandle(for: view), to: url)
            let outcome = navigation.opensInManagedBrowser ? "managedBrowser" : "webView"
            let why: String
            switch (navigation.resolution.identity, navigation.isExternal, navigation.opensInManagedBrowser) {
            case (.unmanaged, _, _): why = "stays: the web view is unmanaged, so its links are not restricted"
            case (.managed, false, _): why = "stays: the URL is internal to this managed web view"
            case (.managed, true, true):
                why = "managed browser: an external URL of a managed web view, and the policy requires the managed browser"
            case (.managed, true, false):
                why = "stays: the URL is external but the policy does not require the managed browser"
            }
            return [("outcome", .string(outcome)), ("external", .bool(navigation.isExternal)),
                    ("delegateAsked", .bool(navigation.delegateConsulted)), ("why", .string(why))]
        } catch {
            throw SimulatorError("field 'view': \(error)")
        }
    }
}
