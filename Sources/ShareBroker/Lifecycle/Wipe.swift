/// Something that holds sensitive data and erases it on retire: key material, the app's
/// pasteboard items, registered files, stored credentials.
///
/// Give erasers in ``ShareBroker/Configuration/erasers``: a retire interrupted by a crash is
/// finished inside the next ``ShareBroker/start(delegate:)``, and it matches the steps of its
/// journal to the configuration's erasers by ``wipeName``.
public protocol SensitiveDataEraser: Sendable {
    /// A short, stable name for the wipe journal and the wipe report (never content). Erasers
    /// that share a name run as one step.
    var wipeName: String { get }
    /// Erases everything this holder keeps. Throws when something could not be erased.
    ///
    /// Must be idempotent: a crash can interrupt it, or interrupt the wipe after it returned
    /// but before its completion was recorded, and the next start runs it again. Finding
    /// nothing to erase is success.
    func eraseSensitiveData() throws
}

/// What a retire erased, and what it could not.
package struct WipeReport: Sendable, Hashable {
    /// Names of what was erased.
    package var erased: [String]
    /// Names of what could not be erased, with why.
    package var failed: [String: String]
    /// Whether this wipe was interrupted (the process died) and finished by a later start.
    /// Steps erased before the interruption are listed too.
    package var resumedAfterInterruption: Bool

    /// Creates a report.
    package init(erased: [String] = [], failed: [String: String] = [:], resumedAfterInterruption: Bool = false) {
        self.erased = erased
        self.failed = failed
        self.resumedAfterInterruption = resumedAfterInterruption
    }
}
