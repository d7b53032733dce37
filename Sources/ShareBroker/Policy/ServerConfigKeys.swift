/// Key-value settings the management server may put in an app's config.
public enum ServerConfigKey {
    /// `"true"` lets a `mailto:` URL open native mail even when Open In blocks it.
    public static let disableSchemeBlocking = "MI_AC_DISABLE_SCHEME_BLOCKING"
    /// Which apps may read shared encrypted data.
    public static let sharedGroupID = "MI_AC_SHARED_GROUP_ID"
    /// The text a desktop clipboard adapter offers under every text target in place of a
    /// SecureCopy item (unmanaged apps paste this). Default: ``defaultClipboardPlaceholder``.
    public static let clipboardPlaceholder = "SHAREBROKER_CLIPBOARD_PLACEHOLDER"
    /// The placeholder when the config names none.
    public static let defaultClipboardPlaceholder = "Your organization's data cannot be pasted here."
}

/// Bundle ids with a fixed meaning in the Open In rules.
public enum WellKnownApp {
    /// The native mail app.
    public static let nativeMail = "com.apple.mobilemail"
    /// The mail share activity; whitelisting native mail needs both this id and ``nativeMail``.
    public static let mailActivity = "com.apple.UIKit.activity.Mail"

    /// Whether `id` is one of the two native mail ids. Compares lengths first, so the common case
    /// (any other app) costs one load.
    @inlinable
    public static func isNativeMail(_ id: String) -> Bool {
        let count = id.utf8.count
        guard count == 20 || count == 29 else { return false }
        return id == nativeMail || id == mailActivity
    }
}
