/// Key-value settings the management server may put in an app's config.
public enum ServerConfigKey {
    /// `"true"` lets a `mailto:` URL open native mail even when Open In blocks it.
    public static let disableSchemeBlocking = "MI_AC_DISABLE_SCHEME_BLOCKING"
    /// Which apps may read shared encrypted data.
    public static let sharedGroupID = "MI_AC_SHARED_GROUP_ID"
}

/// Bundle ids with a fixed meaning in the Open In rules.
public enum WellKnownApp {
    /// The native mail app.
    public static let nativeMail = "com.apple.mobilemail"
    /// The mail share activity; whitelisting native mail needs both this id and ``nativeMail``.
    public static let mailActivity = "com.apple.UIKit.activity.Mail"
}
