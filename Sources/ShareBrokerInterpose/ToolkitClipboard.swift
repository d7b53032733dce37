// Governing the toolkit's own clipboard writes: the one call (ShareBroker.governToolkitClipboard,
// ManagedApp.governToolkitClipboard, sb_broker_govern_clipboard) and the decision the C hooks
// (Sources/CShareBrokerInterpose) ask for each attempt to take CLIPBOARD or PRIMARY.
import CShareBrokerInterpose
import ShareBroker
import ShareBrokerLinux

/// Why ``ShareBroker/governToolkitClipboard()`` failed.
public enum ToolkitClipboardError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The hooks could not be installed (an errno value: ENOMEM, or ENOTSUP where the C library
    /// cannot list the loaded objects). Nothing was changed.
    case installFailed(errno: Int32)

    public var description: String {
        switch self {
        case .installFailed(let code):
            "the toolkit clipboard hooks could not be installed (errno \(code)); nothing is governed, "
                + "so do not show managed content (or call it again after freeing memory)"
        }
    }
}

/// Decides each attempt of the process's toolkits to take a selection, with the broker's copy
/// rules. Process-wide: the hooks are installed once; a later call makes another broker decide.
package final class ToolkitClipboardGovernor: Sendable {
    private let broker: @Sendable () -> ShareBroker?

    /// A governor asking `broker` (`nil`: the broker is gone; every attempt is refused).
    package init(broker: @escaping @Sendable () -> ShareBroker?) {
        self.broker = broker
    }

    /// Whether the toolkit may take `selection`. Unauthorized, SecureCopy without secure
    /// services, no policy yet, and SecureCopy itself (sealing a toolkit's offer in process is
    /// not built yet: failing closed, nothing goes out in the clear) keep the previous owner. A
    /// blocked attempt is reported once per burst on its selection (the core's
    /// `CopyAttemptBursts`: the PRIMARY selection while the user drags, a key held down).
    package func allows(_ selection: CopySelection) -> Bool {
        guard let broker = broker() else { return false }
        // The character-count exception needs the text, which the hook does not read: a toolkit
        // copy is counted as long text (fail closed).
        let decision = broker.decideCopy(characters: nil)
        switch decision.action {
        case .writeClear:
            return true
        case .writeSealed:
            return false
        case .blocked:
            broker.reportBlockedCopy(decision, origin: .toolkit(selection))
            return false
        }
    }
}

/// The process-wide installation.
package enum ToolkitClipboard {
    /// Installs the hooks (once) with a governor asking `broker`. The governor is never
    /// released: a hook running on another thread may still be asking it.
    package static func govern(by broker: @escaping @Sendable () -> ShareBroker?) throws(ToolkitClipboardError) {
        let governor = Unmanaged.passRetained(ToolkitClipboardGovernor(broker: broker))
        let status = sbi_install({ context, selection, _ in
            guard let context else { return Int32(SBI_BLOCK) }
            // Anything but PRIMARY is the clipboard (the hooks pass only the two).
            let which: CopySelection = selection == Int32(SBI_SELECTION_PRIMARY) ? .primary : .clipboard
            let governor = Unmanaged<ToolkitClipboardGovernor>.fromOpaque(context).takeUnretainedValue()
            return governor.allows(which) ? Int32(SBI_ALLOW) : Int32(SBI_BLOCK)
        }, governor.toOpaque())
        guard status == 0 else {
            governor.release()
            throw .installFailed(errno: status)
        }
    }

    /// How many GOT entries the hooks own (tests, diagnostics).
    package static var patchedEntries: Int { sbi_patched_count() }
}

extension ShareBroker {
    /// Puts every clipboard write of this process under this broker's pasteboard policy: a GTK or
    /// Qt app's own Ctrl+C, Ctrl+X, menu Copy and text selection (X11 CLIPBOARD and PRIMARY through
    /// Xlib or libxcb; Wayland `wl_data_device`, primary selection and data control through
    /// libwayland-client). Call it once at start-up, after the broker exists; it covers libraries
    /// loaded later too. What it covers and what it cannot is in docs/DESKTOP-INTEGRATION.md,
    /// "Governing a GTK or Qt app".
    ///
    /// Under an unauthorized pasteboard policy (and SecureCopy without secure services, or before
    /// the first policy) the toolkit's attempt is not sent: the previous owner keeps the selection,
    /// the attempt is reported once per burst and the delegate's
    /// `copyAttemptedWhenUnauthorized` runs. Authorized: the toolkit's offer goes out unchanged.
    /// SecureCopy: refused too for now (the sealed offer on the toolkit's connection is not built
    /// yet), so plaintext never leaves.
    ///
    /// The broker stays alive for the rest of the process; calling it again with another broker
    /// makes that one decide.
    /// - Throws: ``ToolkitClipboardError/installFailed(errno:)`` when the hooks could not be installed.
    public func governToolkitClipboard() throws(ToolkitClipboardError) {
        let broker = self
        try ToolkitClipboard.govern { broker }
    }
}

extension ManagedApp {
    /// ``ShareBroker/governToolkitClipboard()`` for this app's broker: the one call after
    /// ``ManagedApp/attach(_:delegate:)``.
    public func governToolkitClipboard() throws(ToolkitClipboardError) {
        try broker.governToolkitClipboard()
    }
}
