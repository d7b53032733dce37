/// Key-value settings the management server may put in an app's config.
package enum ServerConfigKey {
    /// `"true"` lets a `mailto:` URL open native mail even when Open In blocks it.
    package static let disableSchemeBlocking = "MI_AC_DISABLE_SCHEME_BLOCKING"
    /// The text a desktop clipboard adapter offers under every text target in place of a
    /// SecureCopy item (unmanaged apps paste this). Default: ``defaultClipboardPlaceholder``.
    package static let clipboardPlaceholder = "SHAREBROKER_CLIPBOARD_PLACEHOLDER"
    /// The placeholder when the config names none.
    package static let defaultClipboardPlaceholder = "Your organization's data cannot be pasted here."
}

/// Bundle ids with a fixed meaning in the Open In rules.
package enum WellKnownApp {
    /// The native mail app.
    package static let nativeMail = "com.apple.mobilemail"
    /// The mail share activity; whitelisting native mail needs both this id and ``nativeMail``.
    package static let mailActivity = "com.apple.UIKit.activity.Mail"

    /// Whether `id` is one of the two native mail ids. Compares lengths first, so the common case
    /// (any other app) costs one load.
    @inlinable
    package static func isNativeMail(_ id: String) -> Bool {
        let count = id.utf8.count
        guard count == 20 || count == 29 else { return false }
        return id == nativeMail || id == mailActivity
    }
}

/// Which apps count as "native mail" on a platform: the seeds' rule is that a whitelist allows
/// native mail only when it holds **every** one of these ids.
///
/// On iOS-style devices these are the seeds' two Apple ids (``appleDevices``); on a Linux device
/// the device document names them (desktop app ids such as `org.gnome.Evolution`). An empty set
/// of ids means native mail is never whitelisted (fail closed).
@usableFromInline
package struct NativeMail: Sendable, Hashable {
    /// Every id that must be in the whitelist for native mail to count as whitelisted.
    @usableFromInline package let ids: [String]
    /// The app a `mailto:` URL or the mail composer opens when the platform names no handler.
    package let launchID: String

    /// Native mail made of `ids`, opened as `launchID` (which is added to `ids` when missing).
    package init(ids: [String], launchID: String) {
        var all = ids
        if !all.contains(launchID) { all.append(launchID) }
        self.ids = all
        self.launchID = launchID
    }

    /// The seeds' rule on iOS-style devices: both `com.apple.UIKit.activity.Mail` and
    /// `com.apple.mobilemail`.
    package static let appleDevices = NativeMail(ids: [WellKnownApp.mailActivity, WellKnownApp.nativeMail],
                                                launchID: WellKnownApp.nativeMail)

    /// Whether `id` is one of the native mail ids (exact match). Compares lengths first, so the
    /// common case (any other app) costs a length load per id.
    @inlinable @inline(__always)
    package func contains(_ id: String) -> Bool {
        let count = id.utf8.count
        for candidate in ids where candidate.utf8.count == count && candidate == id { return true }
        return false
    }

    /// Whether `whitelist` holds every native mail id.
    @usableFromInline
    package func isWhitelisted(in whitelist: Set<String>) -> Bool {
        !ids.isEmpty && ids.allSatisfy { whitelist.contains($0) }
    }

    /// The ids for people: "a and b".
    package var listed: String { ids.joined(separator: " and ") }
}
