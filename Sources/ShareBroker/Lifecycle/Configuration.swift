import Logging

extension ShareBroker {
    /// Everything the library must have before ``ShareBroker/start(delegate:)``, given once, at
    /// ``ShareBroker/init(appID:platform:configuration:)``.
    ///
    /// A retire that a crash interrupted is finished inside the next `start`, over what the
    /// configuration names: the app's erasers and its secure-file folders. Because they can only
    /// be given here, no eraser or folder can arrive too late for that wipe.
    ///
    /// ```swift
    /// var configuration = ShareBroker.Configuration(stateDirectory: stateFolder)
    /// configuration.erasers = [cacheEraser, tokenEraser]
    /// configuration.secureFileDirectories = [appSupport + "/secure"]
    /// let broker = ShareBroker(appID: "com.acme.notes", platform: platform, configuration: configuration)
    /// let files = try broker.secureFiles(directory: appSupport + "/secure")
    /// ```
    ///
    /// Web views are the exception that stays at run time: the app creates them as the user
    /// works, so ``ShareBroker/webViews`` takes declarations at any time. Nothing at `start` or
    /// in a retire reads the hierarchy, so no ordering rule depends on it; the configuration's
    /// ``webViews`` only lets the screens known at launch be declared before the broker exists.
    public struct Configuration: Sendable {
        /// `MI_AC_DISABLE_SCHEME_BLOCKING` (AppConnect's Info.plist): a `mailto:` URL opens native
        /// mail even when Open In blocks it. Default `false`, the blocking behaviour.
        public var disableSchemeBlocking: Bool
        /// `TreatAllWebViewsAsUnmanaged` (AppConnect's Info.plist, Intune's `IntuneMAMSettings`):
        /// a web view with no policy of its own, on the way to the root, counts as unmanaged.
        /// Default `false`, the managed behaviour.
        public var treatAllWebViewsAsUnmanaged: Bool
        /// A folder of the app's own that survives restarts, where the library keeps what a crash
        /// must not lose: the journal of a retire in progress (finished by the next
        /// ``ShareBroker/start(delegate:)``) and the record of the app's last pasteboard write (so
        /// a retire can take it back). Production apps should give one: without it a crash during
        /// a retire leaves the rest of the sensitive data in place. `ManagedApp` gives one under
        /// `$XDG_STATE_HOME`.
        public var stateDirectory: String?
        /// The app's holders of sensitive data, erased by every retire in this order, before the
        /// library's own steps (key material, the app's pasteboard items, the secure-file folders).
        public var erasers: [any SensitiveDataEraser]
        /// The folders of the app's encrypted files: ``ShareBroker/secureFiles(directory:maximumFileSize:)``
        /// opens stores over these folders only, and a retire erases everything in them (wipe
        /// step `sharebroker.secure-files`).
        public var secureFileDirectories: [String]
        /// How old a sealed (SecureCopy) item may be when pasted, in seconds (default 86,400:
        /// 24 h). Lower it for stricter replay protection; an item older than the limit is
        /// refused on paste and the refusal reported (rule `sealedItemTooOld`).
        public var sealedItemMaximumAge: UInt64
        /// The app's viewers and their web-view policies (``ShareBroker/webViews``). Declare the
        /// screens known at launch here if convenient; views created later are declared on
        /// ``ShareBroker/webViews``, the same object.
        public var webViews: WebViewHierarchy
        /// The library's logger (default: label `sharebroker` through the process's swift-log
        /// back end). The policy's log level governs it; it never carries payloads, document
        /// contents or keys, at any level.
        public var logger: Logger

        /// A configuration; every field has a default (no state folder: a retire runs unjournaled).
        public init(disableSchemeBlocking: Bool = false, treatAllWebViewsAsUnmanaged: Bool = false,
                    stateDirectory: String? = nil,
                    erasers: [any SensitiveDataEraser] = [], secureFileDirectories: [String] = [],
                    sealedItemMaximumAge: UInt64 = 86_400,
                    webViews: WebViewHierarchy = WebViewHierarchy(), logger: Logger = Logger(label: "sharebroker")) {
            self.disableSchemeBlocking = disableSchemeBlocking
            self.treatAllWebViewsAsUnmanaged = treatAllWebViewsAsUnmanaged
            self.stateDirectory = stateDirectory
            self.erasers = erasers
            self.secureFileDirectories = secureFileDirectories
            self.sealedItemMaximumAge = sealedItemMaximumAge
            self.webViews = webViews
            self.logger = logger
        }

        /// The two static settings as the snapshot keeps them.
        package var manifest: AppManifest {
            get { AppManifest(disableSchemeBlocking: disableSchemeBlocking, treatAllWebViewsAsUnmanaged: treatAllWebViewsAsUnmanaged) }
            set {
                disableSchemeBlocking = newValue.disableSchemeBlocking
                treatAllWebViewsAsUnmanaged = newValue.treatAllWebViewsAsUnmanaged
            }
        }
    }
}
