/// Every policy value in force at one moment, with the device it was computed against.
///
/// A snapshot is immutable. Decisions read one snapshot and use nothing else, so no decision can
/// see half an update; `PolicyStore` swaps whole snapshots atomically. Each snapshot carries a
/// ``generation`` that increases with every swap, which tests use to prove a decision never mixed
/// two policies.
public final class PolicySnapshot: Sendable {
    /// Increases by one with every swap.
    public let generation: UInt64
    /// Whether the first policy has arrived. Before it, every transfer fails closed.
    public let isReady: Bool
    /// The user's authorization.
    public let authState: AuthState
    /// Why the user is (not) authorized.
    public let authMessage: String
    /// The server's Open In setting, before expansion.
    package let openInSetting: TransferSetting
    /// The effective Open In policy: "All AppConnect apps" reads as ``OpenInPolicy/whitelist``.
    public let openInPolicy: OpenInPolicy
    /// The effective whitelist (empty unless ``openInPolicy`` is ``OpenInPolicy/whitelist``).
    public let openInWhitelist: Set<String>
    /// Whether ``openInWhitelist`` holds every native mail id of the device.
    public let whitelistAllowsNativeMail: Bool
    /// ``openInWhitelist`` and the device's native mail ids by their bytes (the Open In decisions).
    @usableFromInline package let openInTargets: OpenInTargets
    /// The pasteboard policy.
    public let pasteboardPolicy: PasteboardPolicy
    /// The print policy.
    public let printPolicy: PrintPolicy
    /// The secure file I/O policy.
    public let secureFileIOPolicy: SecureFileIOPolicy
    /// Whether secure services (the key custodian) are reachable.
    public let secureServices: SecureServicesAvailability
    /// The log level.
    public let logLevel: LogLevel
    /// The drag-and-drop policy.
    public let dragAndDropPolicy: DragAndDropPolicy
    /// Whether external URLs of managed web views must open in the managed browser.
    public let managedBrowserRequired: Bool
    /// The app-specific configuration.
    public let config: [String: String]
    /// The app's static settings.
    package let manifest: AppManifest
    /// The other apps on the device.
    @usableFromInline package let device: DeviceApps
    /// Whose content the app shows now: managed (the default) or a personal, unmanaged account.
    public let identity: ManagedIdentity
    /// Copies of plain text of at most this many characters (grapheme clusters, Swift's
    /// `String.count`) are written in the clear whatever ``pasteboardPolicy`` says; 0 (the
    /// default) means no exception. Intune's `allowedOutboundClipboardSharingExceptionLength`.
    public let clipboardExceptionLength: Int
    /// Whether notifications of managed content may be posted, and with what text.
    public let notificationPolicy: NotificationPolicy
    /// The server's Open From setting, before expansion.
    package let openFromSetting: TransferSetting
    /// The effective Open From policy: "All AppConnect apps" reads as ``OpenFromPolicy/whitelist``.
    public let openFromPolicy: OpenFromPolicy
    /// The effective Open From whitelist (empty unless ``openFromPolicy`` is ``OpenFromPolicy/whitelist``).
    public let openFromWhitelist: Set<String>
    /// Where clear items pasted into managed content may come from.
    public let pasteInPolicy: PasteInPolicy
    /// How long the app may go without a confirmation of its policy; no limit by default.
    package let offlinePolicy: OfflinePolicy
    /// Which exits warn instead of only blocking, and how (``WarnPolicy``); none by default.
    /// Settings with a problem (``WarnSettings/problem``) never reach a snapshot: that exit blocks.
    public let warnPolicy: WarnPolicy

    /// The largest ``clipboardExceptionLength`` (Intune's bound): 65,535 characters.
    public static let maxClipboardExceptionLength = 65_535

    init(
        generation: UInt64, isReady: Bool, authState: AuthState, authMessage: String,
        openInSetting: TransferSetting, pasteboardPolicy: PasteboardPolicy, printPolicy: PrintPolicy,
        secureFileIOPolicy: SecureFileIOPolicy, secureServices: SecureServicesAvailability,
        logLevel: LogLevel, dragAndDropPolicy: DragAndDropPolicy, managedBrowserRequired: Bool,
        config: [String: String], manifest: AppManifest, device: DeviceApps, identity: ManagedIdentity = .initial,
        clipboardExceptionLength: Int = 0, notificationPolicy: NotificationPolicy = .allow,
        openFromSetting: TransferSetting = .authorized, pasteInPolicy: PasteInPolicy = .anyApp,
        offlinePolicy: OfflinePolicy = .unlimited, warnPolicy: WarnPolicy = .none,
        reusingOpenInTargets: OpenInTargets? = nil
    ) {
        self.generation = generation
        self.isReady = isReady
        self.authState = authState
        self.authMessage = authMessage
        self.openInSetting = openInSetting
        switch openInSetting {
        case .unauthorized:
            openInPolicy = .unauthorized
            openInWhitelist = []
        case .authorized:
            openInPolicy = .authorized
            openInWhitelist = []
        case .whitelist(let ids):
            openInPolicy = .whitelist
            openInWhitelist = ids
        case .allAppConnectApps:
            openInPolicy = .whitelist
            openInWhitelist = device.authorizedAppConnectIDs
        }
        whitelistAllowsNativeMail = device.nativeMail.isWhitelisted(in: openInWhitelist)
        openInTargets = reusingOpenInTargets ?? OpenInTargets(whitelist: openInWhitelist, nativeMail: device.nativeMail.ids)
        self.pasteboardPolicy = pasteboardPolicy
        self.printPolicy = printPolicy
        self.secureFileIOPolicy = secureFileIOPolicy
        self.secureServices = secureServices
        self.logLevel = logLevel
        self.dragAndDropPolicy = dragAndDropPolicy
        self.managedBrowserRequired = managedBrowserRequired
        self.config = config
        self.manifest = manifest
        self.device = device
        self.identity = identity
        self.clipboardExceptionLength = min(max(clipboardExceptionLength, 0), Self.maxClipboardExceptionLength)
        self.notificationPolicy = notificationPolicy
        self.openFromSetting = openFromSetting
        switch openFromSetting {
        case .unauthorized:
            openFromPolicy = .unauthorized
            openFromWhitelist = []
        case .authorized:
            openFromPolicy = .authorized
            openFromWhitelist = []
        case .whitelist(let ids):
            openFromPolicy = .whitelist
            openFromWhitelist = ids
        case .allAppConnectApps:
            openFromPolicy = .whitelist
            openFromWhitelist = device.authorizedAppConnectIDs
        }
        self.pasteInPolicy = pasteInPolicy
        self.offlinePolicy = offlinePolicy
        self.warnPolicy = WarnPolicy(warnPolicy.exits.filter { $0.value.problem == nil })
    }

    /// The snapshot before the first policy: not ready, and every value at its most restrictive
    /// (every transfer fails closed). The policies added after AppConnect's set (the clipboard
    /// exception, notifications, Open From, paste-in) start at the behaviour the library had
    /// before them, so that a server that never sends them changes nothing.
    package static func initial(manifest: AppManifest, device: DeviceApps = DeviceApps(),
                               secureServices: SecureServicesAvailability = .available) -> PolicySnapshot {
        PolicySnapshot(
            generation: 0, isReady: false, authState: .unauthorized, authMessage: "",
            openInSetting: .unauthorized, pasteboardPolicy: .unauthorized, printPolicy: .unauthorized,
            secureFileIOPolicy: .required, secureServices: secureServices, logLevel: .status,
            dragAndDropPolicy: .noApps, managedBrowserRequired: false, config: [:],
            manifest: manifest, device: device)
    }

    /// The user may reach sensitive data: the library is ready and the user is authorized.
    /// Every transfer fails closed when this is false.
    public var isOperational: Bool { isReady && authState == .authorized }

    /// Whether the app may copy right now (and so should show its copy UI).
    public var copyEnabled: Bool {
        guard isOperational else { return false }
        switch pasteboardPolicy {
        case .unauthorized: return false
        case .authorized: return true
        case .secureCopy: return secureServices == .available
        }
    }

    /// Whether the app should show its Open In menu item enabled.
    public var openInEnabled: Bool { isOperational && openInPolicy != .unauthorized }

    /// Whether `MI_AC_DISABLE_SCHEME_BLOCKING` is set, by the manifest or by the server config.
    public var schemeBlockingDisabled: Bool {
        manifest.disableSchemeBlocking
            || config[ServerConfigKey.disableSchemeBlocking]?.lowercased() == "true"
    }

    /// A copy with some values replaced and the next generation.
    func with(
        isReady: Bool? = nil, authState: AuthState? = nil, authMessage: String? = nil,
        openInSetting: TransferSetting? = nil, pasteboardPolicy: PasteboardPolicy? = nil,
        printPolicy: PrintPolicy? = nil, secureFileIOPolicy: SecureFileIOPolicy? = nil,
        secureServices: SecureServicesAvailability? = nil, logLevel: LogLevel? = nil,
        dragAndDropPolicy: DragAndDropPolicy? = nil, managedBrowserRequired: Bool? = nil,
        config: [String: String]? = nil, device: DeviceApps? = nil, identity: ManagedIdentity? = nil,
        clipboardExceptionLength: Int? = nil, notificationPolicy: NotificationPolicy? = nil,
        openFromSetting: TransferSetting? = nil, pasteInPolicy: PasteInPolicy? = nil, offlinePolicy: OfflinePolicy? = nil,
        warnPolicy: WarnPolicy? = nil
    ) -> PolicySnapshot {
        PolicySnapshot(
            generation: generation &+ 1,
            isReady: isReady ?? self.isReady,
            authState: authState ?? self.authState,
            authMessage: authMessage ?? self.authMessage,
            openInSetting: openInSetting ?? self.openInSetting,
            pasteboardPolicy: pasteboardPolicy ?? self.pasteboardPolicy,
            printPolicy: printPolicy ?? self.printPolicy,
            secureFileIOPolicy: secureFileIOPolicy ?? self.secureFileIOPolicy,
            secureServices: secureServices ?? self.secureServices,
            logLevel: logLevel ?? self.logLevel,
            dragAndDropPolicy: dragAndDropPolicy ?? self.dragAndDropPolicy,
            managedBrowserRequired: managedBrowserRequired ?? self.managedBrowserRequired,
            config: config ?? self.config,
            manifest: manifest,
            device: device ?? self.device,
            identity: identity ?? self.identity,
            clipboardExceptionLength: clipboardExceptionLength ?? self.clipboardExceptionLength,
            notificationPolicy: notificationPolicy ?? self.notificationPolicy,
            openFromSetting: openFromSetting ?? self.openFromSetting,
            pasteInPolicy: pasteInPolicy ?? self.pasteInPolicy,
            offlinePolicy: offlinePolicy ?? self.offlinePolicy,
            warnPolicy: warnPolicy ?? self.warnPolicy,
            // The same whitelist and native mail ids: the same table.
            reusingOpenInTargets: openInSetting == nil && device == nil ? openInTargets : nil)
    }

    /// This snapshot as an action sees it once an offline period is over and no check has applied
    /// the timers yet: the same generation and values, with `authState` (unauthorized past the
    /// access check, retired past the wipe period) and the timers' message, so the action fails
    /// closed. Never installed: the next ``ShareBroker/checkOfflineTimers()`` applies the timers.
    func heldOffline(_ authState: AuthState, message: String) -> PolicySnapshot {
        PolicySnapshot(
            generation: generation, isReady: isReady, authState: authState, authMessage: message,
            openInSetting: openInSetting, pasteboardPolicy: pasteboardPolicy, printPolicy: printPolicy,
            secureFileIOPolicy: secureFileIOPolicy, secureServices: secureServices, logLevel: logLevel,
            dragAndDropPolicy: dragAndDropPolicy, managedBrowserRequired: managedBrowserRequired, config: config,
            manifest: manifest, device: device, identity: identity, clipboardExceptionLength: clipboardExceptionLength,
            notificationPolicy: notificationPolicy, openFromSetting: openFromSetting, pasteInPolicy: pasteInPolicy,
            offlinePolicy: offlinePolicy, warnPolicy: warnPolicy, reusingOpenInTargets: openInTargets)
    }
}
