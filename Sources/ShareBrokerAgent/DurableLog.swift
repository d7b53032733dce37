#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Synchronization

/// An append-only JSON Lines file whose records are on disk (fsynced) before anyone is told
/// they were logged.
///
/// Appends are group-committed: records that arrive while a write is in progress are written
/// together and covered by one `fsync`, so a hundred clients acknowledging at once cost a few
/// fsyncs, not a hundred. The completion of an append runs after its fsync.
///
/// A crash can leave a torn last line (never one whose completion ran); opening the log ends it
/// with a newline so the next record starts clean, and readers skip lines that do not parse.
///
/// Rotation: before a batch would take the file past ``Rotation/maxBytes``, the file is closed
/// (every record in it fsynced) and renamed `PATH.1` (`PATH.1` becomes `PATH.2`, and so on;
/// the oldest beyond ``Rotation/keep`` is removed), and a new file is started; the renames are
/// made durable before the batch is written. A record is never split across files. The disk a
/// log takes is thus bounded by about `maxBytes × (keep + 1)`.
final class DurableLog: Sendable {
    /// When a log starts a new file, and how many old ones it keeps.
    struct Rotation: Sendable, Hashable {
        /// The size past which a new file is started (a single batch larger than this still
        /// goes whole into a fresh file).
        var maxBytes: Int
        /// Old files kept (`PATH.1` … `PATH.keep`).
        var keep: Int

        /// 16 MiB files, 3 kept: at most about 64 MiB per log.
        static let standard = Rotation(maxBytes: 16 << 20, keep: 3)
    }

    /// The file.
    let path: String
    private let rotation: Rotation
    /// The open file and its size; touched only on `queue` (and in `init`/`deinit`).
    private let file: Mutex<(fd: Int32, size: Int)>
    private let queue: DispatchQueue
    private let pending = Mutex<(lines: [[UInt8]], completions: [@Sendable (AgentStateError?) -> Void], scheduled: Bool)>(
        ([], [], false))

    /// Opens (creating, mode 0600) the log at `path`.
    init(path: String, rotation: Rotation = .standard) throws(AgentStateError) {
        self.path = path
        self.rotation = rotation
        let existed = access(path, F_OK) == 0
        let fd = try Self.openFile(path)
        var info = stat()
        let size = fstat(fd, &info) == 0 ? Int(info.st_size) : 0
        self.file = Mutex((fd, size))
        self.queue = DispatchQueue(label: "sharebrokerd.log." + (path.split(separator: "/").last.map(String.init) ?? "log"))
        if !existed {
            try DurableFile.syncDirectory(DurableFile.parent(of: path))
        } else {
            try Self.endTornLine(path: path, fd: fd)
        }
    }

    deinit {
        file.withLock { _ = close($0.fd) }
    }

    /// Opens (creating, 0600) the log file for appending; it must be a regular file of ours.
    private static func openFile(_ path: String) throws(AgentStateError) -> Int32 {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw AgentStateError(operation: "open the log", path: path, code: errno) }
        do throws(AgentStateError) { try SecureFolders.checkOwnedFile(fd, path: path) } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Closes the full file, shifts the old ones, and opens a fresh one (on `queue`).
    private func rotate() throws(AgentStateError) {
        let old = file.withLock { $0.fd }
        guard fsync(old) == 0 else { throw AgentStateError(operation: "fsync", path: path, code: errno) }
        if rotation.keep <= 0 {
            guard unlink(path) == 0 || errno == ENOENT else {
                throw AgentStateError(operation: "remove the full log", path: path, code: errno)
            }
        } else {
            _ = unlink(path + ".\(rotation.keep)")
            for generation in stride(from: rotation.keep - 1, through: 1, by: -1) {
                let from = path + ".\(generation)", to = path + ".\(generation + 1)"
                if rename(from, to) != 0 && errno != ENOENT {
                    throw AgentStateError(operation: "rotate the log", path: from, code: errno)
                }
            }
            guard rename(path, path + ".1") == 0 else {
                throw AgentStateError(operation: "rotate the log", path: path, code: errno)
            }
        }
        let fresh = try Self.openFile(path)
        do throws(AgentStateError) { try DurableFile.syncDirectory(DurableFile.parent(of: path)) } catch {
            close(fresh)
            throw error
        }
        file.withLock { state in
            close(state.fd)
            state = (fresh, 0)
        }
    }

    /// If the file does not end with a newline (a crash tore the last record), adds one.
    private static func endTornLine(path: String, fd: Int32) throws(AgentStateError) {
        let reader = open(path, O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else { throw AgentStateError(operation: "open the log", path: path, code: errno) }
        defer { close(reader) }
        let size = lseek(reader, 0, SEEK_END)
        guard size > 0 else { return }
        var last: UInt8 = 0
        guard pread(reader, &last, 1, size - 1) == 1 else { return }
        if last != UInt8(ascii: "\n") {
            var newline = UInt8(ascii: "\n")
            _ = write(fd, &newline, 1)
            guard fsync(fd) == 0 else { throw AgentStateError(operation: "fsync", path: path, code: errno) }
        }
    }

    /// Appends `records` (each encoded as one JSON line) and calls `completion` once they are
    /// fsynced, or with the error that kept them from the disk.
    func append<T: Encodable>(_ records: [T], completion: @escaping @Sendable (AgentStateError?) -> Void) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let lines = records.map { record -> [UInt8] in
            var line = (try? Array(encoder.encode(record))) ?? Array("{}".utf8)
            line.append(UInt8(ascii: "\n"))
            return line
        }
        let schedule = pending.withLock { state -> Bool in
            state.lines.append(contentsOf: lines)
            state.completions.append(completion)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule { queue.async { self.drain() } }
    }

    /// Appends and waits until the records are on disk.
    func appendAndWait<T: Encodable>(_ records: [T]) throws(AgentStateError) {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<AgentStateError?>(nil)
        append(records) { error in
            outcome.withLock { $0 = error }
            done.signal()
        }
        done.wait()
        if let error = outcome.withLock({ $0 }) { throw error }
    }

    private func drain() {
        while true {
            let batch = pending.withLock { state -> (lines: [[UInt8]], completions: [@Sendable (AgentStateError?) -> Void])? in
                guard !state.completions.isEmpty else {
                    state.scheduled = false
                    return nil
                }
                defer {
                    state.lines = []
                    state.completions = []
                }
                return (state.lines, state.completions)
            }
            guard let batch else { return }
            var error: AgentStateError?
            var buffer: [UInt8] = []
            for line in batch.lines { buffer.append(contentsOf: line) }
            let size = file.withLock { $0.size }
            if size > 0 && size + buffer.count > rotation.maxBytes {
                do throws(AgentStateError) { try rotate() } catch let failure {
                    // The records still go to the full file (losing them would be worse); the
                    // next attempt comes after another maxBytes.
                    FileHandle.standardError.write(Data("sharebrokerd: \(failure); the log keeps growing until it can rotate\n".utf8))
                    file.withLock { $0.size = 0 }
                }
            }
            let fd = file.withLock { $0.fd }
            let written: Result<Void, AgentStateError> = buffer.withUnsafeBytes { raw in
                Result { () throws(AgentStateError) in try DurableFile.writeAll(fd, raw, path: path) }
            }
            if case .failure(let failure) = written {
                error = failure
            } else if fsync(fd) != 0 {
                error = AgentStateError(operation: "fsync", path: path, code: errno)
            } else {
                file.withLock { $0.size += buffer.count }
            }
            for completion in batch.completions { completion(error) }
        }
    }
}
