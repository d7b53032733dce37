/// Something that holds sensitive data and erases it on retire: key material, the app's
/// pasteboard items, registered files, stored credentials.
public protocol SensitiveDataEraser: Sendable {
    /// A short name for the wipe report (never content).
    var wipeName: String { get }
    /// Erases everything this holder keeps. Throws when something could not be erased.
    func eraseSensitiveData() throws
}

/// What a retire erased, and what it could not.
public struct WipeReport: Sendable, Hashable {
    /// Names of what was erased.
    public var erased: [String]
    /// Names of what could not be erased, with why.
    public var failed: [String: String]

    /// Creates a report.
    public init(erased: [String] = [], failed: [String: String] = [:]) {
        self.erased = erased
        self.failed = failed
    }
}
