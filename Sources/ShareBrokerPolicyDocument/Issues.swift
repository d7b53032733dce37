/// One problem found in a document: where it is (a JSON path such as `$.policy.openIn`) and a
/// sentence saying what is wrong and what is allowed.
public struct PolicyDocumentIssue: Sendable, Hashable, CustomStringConvertible {
    /// The JSON path of the offending value (`$` for the document itself).
    public let path: String
    /// What is wrong, and what would be right.
    public let message: String

    /// Creates an issue.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `path: message`, one line.
    public var description: String { "\(path): \(message)" }
}

/// A document that cannot be used: every error found, each naming its JSON path.
///
/// A document with any error is never applied, not even in part: parsing produces a value only
/// when the whole document is valid.
public struct PolicyDocumentError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The errors, in document order. At most ``maxReported`` are kept.
    public let issues: [PolicyDocumentIssue]
    /// How many further errors were found but not kept.
    public let omitted: Int

    /// The most errors one report keeps; a hostile document cannot make the report unbounded.
    public static let maxReported = 100

    /// Creates an error from its issues (at least one).
    public init(issues: [PolicyDocumentIssue], omitted: Int = 0) {
        self.issues = issues
        self.omitted = omitted
    }

    /// A single-issue error.
    init(_ path: JSONPath, _ message: String) {
        self.init(issues: [PolicyDocumentIssue(path: path.description, message: message)])
    }

    /// One issue per line, then a count of the omitted ones.
    public var description: String {
        var lines = issues.map(\.description)
        if omitted > 0 { lines.append("… and \(omitted) more error\(omitted == 1 ? "" : "s")") }
        return lines.joined(separator: "\n")
    }
}
