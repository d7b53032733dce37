/// Where files handed to other apps go: the platform's stand-in for the Open In hand-over.
package protocol Outbox: Sendable {
    /// Writes `bytes` under `name` where the receiving app will find them, and answers the
    /// file's path there (absolute).
    ///
    /// - Throws: ``ShareBrokerError/invalidDocumentName``,
    ///   ``ShareBrokerError/handOverWriteFailed(path:errno:)``,
    ///   ``ShareBrokerError/handOffFailed(reason:)``.
    func handOver(name: String, bytes: [UInt8]) throws(ShareBrokerError) -> String
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
