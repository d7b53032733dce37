/// One push from the management server. A field left `nil` keeps its current value; before the
/// first update every value is at its most restrictive (see `PolicySnapshot/initial(manifest:device:)`).
public struct PolicyUpdate: Sendable, Hashable {
    /// The user's authorization.
    public var auth: AuthState?
    /// The reason for the authorization state, shown to the user when not authorized.
    public var authMessage: String?
    /// The server's Open In setting.
    public var openIn: TransferSetting?
    /// The pasteboard (copy) policy.
    public var pasteboard: PasteboardPolicy?
    /// The print policy.
    public var print: PrintPolicy?
    /// The secure file I/O policy.
    public var secureFileIO: SecureFileIOPolicy?
    /// The log level.
    public var logLevel: LogLevel?
    /// The drag-and-drop policy.
    public var dragAndDrop: DragAndDropPolicy?
    /// Whether external URLs of managed web views must open in the managed browser.
    public var managedBrowserRequired: Bool?
    /// The app-specific configuration; when present it replaces the whole config.
    public var config: [String: String]?
    /// Copies of at most this many characters (grapheme clusters) of plain text are written in
    /// the clear whatever the pasteboard policy; 0 means no exception. 0 to
    /// ``PolicySnapshot/maxClipboardExceptionLength``.
    public var clipboardExceptionLength: Int?
    /// The notification policy.
    public var notifications: NotificationPolicy?
    /// The Open From (inbound) setting.
    public var openFrom: TransferSetting?
    /// Where clear items pasted into managed content may come from.
    public var pasteIn: PasteInPolicy?
    /// How long the app may go without a confirmation of its policy: the offline timers, which
    /// `ManagedApp` of ShareBrokerLinux runs (package access: the agent and the policy documents
    /// set it).
    package var offline: OfflinePolicy?
    /// Which exits warn instead of only blocking (``WarnPolicy``); when present it replaces the
    /// whole warn policy. An exit whose settings have a problem (``WarnSettings/problem``) blocks.
    public var warn: WarnPolicy?

    /// Creates an update; every field defaults to "keep the current value".
    public init(
        auth: AuthState? = nil, authMessage: String? = nil, openIn: TransferSetting? = nil,
        pasteboard: PasteboardPolicy? = nil, print: PrintPolicy? = nil,
        secureFileIO: SecureFileIOPolicy? = nil, logLevel: LogLevel? = nil,
        dragAndDrop: DragAndDropPolicy? = nil, managedBrowserRequired: Bool? = nil,
        config: [String: String]? = nil, clipboardExceptionLength: Int? = nil,
        notifications: NotificationPolicy? = nil, openFrom: TransferSetting? = nil, pasteIn: PasteInPolicy? = nil
    ) {
        self.auth = auth
        self.authMessage = authMessage
        self.openIn = openIn
        self.pasteboard = pasteboard
        self.print = print
        self.secureFileIO = secureFileIO
        self.logLevel = logLevel
        self.dragAndDrop = dragAndDrop
        self.managedBrowserRequired = managedBrowserRequired
        self.config = config
        self.clipboardExceptionLength = clipboardExceptionLength
        self.notifications = notifications
        self.openFrom = openFrom
        self.pasteIn = pasteIn
    }

    /// An update that also sets the offline timers (the agent's pushes, the policy documents).
    package init(
        auth: AuthState? = nil, authMessage: String? = nil, openIn: TransferSetting? = nil,
        pasteboard: PasteboardPolicy? = nil, print: PrintPolicy? = nil,
        secureFileIO: SecureFileIOPolicy? = nil, logLevel: LogLevel? = nil,
        dragAndDrop: DragAndDropPolicy? = nil, managedBrowserRequired: Bool? = nil,
        config: [String: String]? = nil, clipboardExceptionLength: Int? = nil,
        notifications: NotificationPolicy? = nil, openFrom: TransferSetting? = nil, pasteIn: PasteInPolicy? = nil,
        offline: OfflinePolicy?
    ) {
        self.init(auth: auth, authMessage: authMessage, openIn: openIn, pasteboard: pasteboard, print: print,
                  secureFileIO: secureFileIO, logLevel: logLevel, dragAndDrop: dragAndDrop,
                  managedBrowserRequired: managedBrowserRequired, config: config,
                  clipboardExceptionLength: clipboardExceptionLength, notifications: notifications,
                  openFrom: openFrom, pasteIn: pasteIn)
        self.offline = offline
    }

    /// This update with ``warn`` set to `warn`.
    package func withWarn(_ warn: WarnPolicy?) -> PolicyUpdate {
        var copy = self
        copy.warn = warn
        return copy
    }
}
