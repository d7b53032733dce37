/// The resource limits a document must respect before and while it is parsed.
///
/// Policy documents come from administrators, from tools and from other systems' exports: a
/// hostile or broken one (a million nested brackets, a 10 MB string, an array of millions of
/// items) must give a clear error, never a crash and never unbounded memory. The parser checks
/// every limit as it goes and stops at the first one exceeded, so the memory it uses is bounded by
/// ``maxDocumentBytes`` and ``maxValues`` whatever the input.
public struct PolicyDocumentLimits: Sendable, Hashable {
    /// The largest document read, in bytes (default 4 MiB). Checked before parsing; the file
    /// reader never reads more than one byte past it.
    public var maxDocumentBytes: Int
    /// The deepest nesting of arrays and objects (default 64). Native documents nest 5 levels.
    public var maxDepth: Int
    /// The longest string or object key, in UTF-8 bytes after unescaping (default 65,536).
    public var maxStringBytes: Int
    /// The most items in one array and members in one object (default 10,000).
    public var maxContainerCount: Int
    /// The most values (scalars, arrays and objects) in the whole document (default 200,000).
    public var maxValues: Int

    /// Creates limits; every parameter defaults to the value documented on its property.
    public init(maxDocumentBytes: Int = 4 * 1024 * 1024, maxDepth: Int = 64, maxStringBytes: Int = 65_536,
                maxContainerCount: Int = 10_000, maxValues: Int = 200_000) {
        self.maxDocumentBytes = maxDocumentBytes
        self.maxDepth = maxDepth
        self.maxStringBytes = maxStringBytes
        self.maxContainerCount = maxContainerCount
        self.maxValues = maxValues
    }

    /// The defaults.
    public static let standard = PolicyDocumentLimits()
}

/// Limits on the values of a native document, beyond what the JSON layer enforces.
public enum PolicyDocumentBounds {
    /// The most bundle ids in one Open In whitelist.
    public static let maxWhitelist = 10_000
    /// The most apps in one device document.
    public static let maxDeviceApps = 10_000
    /// The most entries in one app config.
    public static let maxConfigEntries = 1_000
    /// The longest config key, in characters.
    public static let maxConfigKey = 256
    /// The longest config value, in characters.
    public static let maxConfigValue = 16_384
    /// The longest bundle id, in characters.
    public static let maxBundleID = 255
    /// The longest auth message or description, in characters.
    public static let maxText = 4_096
    /// The longest executable path, in bytes.
    public static let maxPath = 4_096
    /// The most URL schemes one app handles.
    public static let maxSchemes = 100
}
