/// A file handed over to another app.
public struct HandedOverFile: Sendable, Hashable {
    /// Where the receiving app finds it (absolute).
    public var path: String
    /// The file name the receiving app sees.
    public var name: String

    /// Creates a description of a handed-over file: for ``Outbox`` implementations outside the
    /// library (a host's real hand-over, a benchmark's discarding outbox).
    public init(path: String, name: String) {
        self.path = path
        self.name = name
    }
}

/// Where files handed to other apps go: the platform's stand-in for the Open In hand-over.
public protocol Outbox: Sendable {
    /// Writes `bytes` under `name` where the receiving app will find them.
    ///
    /// - Throws: ``ShareBrokerError/invalidDocumentName``,
    ///   ``ShareBrokerError/handOverWriteFailed(path:errno:)``,
    ///   ``ShareBrokerError/handOffFailed(reason:)``.
    func handOver(name: String, bytes: [UInt8]) throws(ShareBrokerError) -> HandedOverFile
}

extension Outbox {
    /// Rejects names that could escape the outbox folder or that no file system accepts: every
    /// ``Outbox`` calls this before it writes.
    package static func validate(name: String) throws(ShareBrokerError) {
        try HandOverName.validate(name)
    }
}

/// The one rule for names handed to other apps.
enum HandOverName {
    /// Rejects names that could escape the outbox folder or that no file system accepts.
    static func validate(_ name: String) throws(ShareBrokerError) {
        // Byte-level checks: Foundation's String.contains would allocate on this hot path.
        let utf8 = name.utf8
        if utf8.isEmpty || name == "." || name == ".."
            || utf8.contains(UInt8(ascii: "/")) || utf8.contains(0) {
            throw .invalidDocumentName
        }
    }
}
