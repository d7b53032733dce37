#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

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
    /// Rejects names that could escape the outbox folder or that no file system accepts.
    static func validate(name: String) throws(OutboxError) {
        // Byte-level checks: Foundation's String.contains would allocate on this hot path.
        let utf8 = name.utf8
        if utf8.isEmpty || name == "." || name == ".."
            || utf8.contains(UInt8(ascii: "/")) || utf8.contains(0) {
            throw .invalidName
        }
    }
}

/// The embedded default ``Outbox``: each hand-over goes into a fresh sub-folder of a folder, so a
/// delivered file keeps its original name and two hand-overs never collide.
public final class FolderOutbox: Outbox {
    /// The folder that receives hand-overs.
    public let directory: String
    private let counter = Atomic<UInt64>(0)

    /// Uses `directory`, creating it if needed.
    public init(directory: String) throws(OutboxError) {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .writeFailed(path: directory, errno: errno)
        }
    }

    /// Uses a fresh folder under the system's temporary folder.
    public convenience init() throws(OutboxError) {
        let base = NSTemporaryDirectory() + "sharebroker-outbox-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try self.init(directory: base)
    }

    public func handOver(name: String, bytes: [UInt8]) throws(OutboxError) -> HandedOverFile {
        try Self.validate(name: name)
        let slot = counter.add(1, ordering: .relaxed).newValue
        let folder = directory + "/\(slot)"
        if mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw .writeFailed(path: folder, errno: errno)
        }
        let path = folder + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .writeFailed(path: path, errno: errno) }
        defer { close(fd) }
        if let code = writeAll(fd, bytes) {
            unlink(path)
            throw .writeFailed(path: path, errno: code)
        }
        return HandedOverFile(path: path, name: name)
    }
}

/// An ``Outbox`` that keeps hand-overs in memory: for tests and benchmarks.
public final class InMemoryOutbox: Outbox {
    private let files = Mutex<[(name: String, bytes: [UInt8])]>([])

    /// Creates an empty outbox.
    public init() {}

    public func handOver(name: String, bytes: [UInt8]) throws(OutboxError) -> HandedOverFile {
        try Self.validate(name: name)
        let index = files.withLock { files in
            files.append((name, bytes))
            return files.count - 1
        }
        return HandedOverFile(path: "/memory/\(index)/\(name)", name: name)
    }

    /// Every hand-over so far, in order.
    public var handedOver: [(name: String, bytes: [UInt8])] { files.withLock { $0 } }

    /// Forgets every hand-over (benchmarks call this between batches).
    public func removeAll() { files.withLock { $0.removeAll(keepingCapacity: true) } }
}
