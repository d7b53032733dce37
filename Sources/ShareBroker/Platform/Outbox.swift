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

/// Why a hand-over could not be written.
public enum OutboxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The document name is empty, `.`/`..`, or holds `/` or NUL. Rename the document.
    case invalidName
    /// The file system refused the write (`errno`). Check the outbox folder and free space.
    case writeFailed(path: String, errno: Int32)
    /// A platform adapter could not hand the file to the target app; `reason` says why and what
    /// to do (never the document's name or content).
    case handOffFailed(reason: String)

    public var description: String {
        switch self {
        case .invalidName:
            "the document name must not be empty, '.' or '..', nor contain '/' or NUL; rename the document"
        case .writeFailed(let path, let code):
            "could not write \(path) (errno \(code)); check that the outbox folder exists and is writable"
        case .handOffFailed(let reason):
            reason
        }
    }
}

/// Where files handed to other apps go: the platform's stand-in for the Open In hand-over.
public protocol Outbox: Sendable {
    /// Writes `bytes` under `name` where the receiving app will find them.
    func handOver(name: String, bytes: [UInt8]) throws(OutboxError) -> HandedOverFile
}

extension Outbox {
    /// Rejects names that could escape the outbox folder or that no file system accepts: every
    /// ``Outbox`` calls this before it writes.
    package static func validate(name: String) throws(OutboxError) {
        try HandOverName.validate(name)
    }
}

/// The one rule for names handed to other apps.
enum HandOverName {
    /// Rejects names that could escape the outbox folder or that no file system accepts.
    static func validate(_ name: String) throws(OutboxError) {
        // Byte-level checks: Foundation's String.contains would allocate on this hot path.
        let utf8 = name.utf8
        if utf8.isEmpty || name == "." || name == ".."
            || utf8.contains(UInt8(ascii: "/")) || utf8.contains(0) {
            throw .invalidName
        }
    }
}
