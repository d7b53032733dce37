import Foundation
import Logging
import ShareBrokerPolicyDocument

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads a policy directory (``ShareBrokerPolicyDocument/PolicyDirectory``) from disk, trusting
/// only what its administrator could have written: every folder and file must be owned by root
/// or by the agent's user and writable by no one else, files must be regular files (a symlink,
/// FIFO or device is refused, so a read can neither be redirected nor hang), and each is read
/// within the document size limit.
enum PolicyDirectoryReader {
    /// Whether `directory` holds a device document (the directory is in use).
    static func isInUse(_ directory: String) -> Bool {
        var info = stat()
        return lstat(directory + "/" + PolicyDirectory.deviceFileName, &info) == 0
    }

    /// The assembled registry, the text the agent persists for itself, and warnings for people.
    static func read(_ directory: String) throws(AgentError) -> (registry: DeviceRegistry, bytes: [UInt8], warnings: [String]) {
        try checkTrusted(directory, folder: true, source: directory)
        let device = try readFile(directory + "/" + PolicyDirectory.deviceFileName, source: directory)
        var policies: [(name: String, bytes: [UInt8])] = []
        let folder = directory + "/" + PolicyDirectory.policiesFolderName
        var info = stat()
        if lstat(folder, &info) == 0 {
            try checkTrusted(folder, folder: true, source: directory)
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: folder)
            } catch {
                throw .policy(source: folder, errors: "cannot list the folder (\(error.localizedDescription)); check its permissions")
            }
            for name in names.sorted() where PolicyDirectory.isPolicyFileName(name) {
                policies.append((name, try readFile(folder + "/" + name, source: directory)))
            }
        }
        do {
            let assembled = try PolicyDirectory.assemble(device: device, policies: policies)
            return (assembled.registry, Array(assembled.registry.jsonText.utf8), assembled.warnings)
        } catch {
            throw .policy(source: directory + "/" + error.file, errors: error.reason)
        }
    }

    static func readFile(_ path: String, source: String) throws(AgentError) -> [UInt8] {
        try checkTrusted(path, folder: false, source: source)
        do {
            return try PolicyDocumentFile.read(path)
        } catch {
            throw .policy(source: path, errors: error.reason)
        }
    }

    /// Refuses what the administrator did not write: the wrong kind of file, another owner, or
    /// write access for anyone but the owner.
    static func checkTrusted(_ path: String, folder: Bool, source: String) throws(AgentError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw .policy(source: path, errors: "cannot read it (\(String(cString: strerror(errno))))")
        }
        let kind = info.st_mode & S_IFMT
        if folder ? kind != S_IFDIR : kind != S_IFREG {
            let what = kind == S_IFLNK ? "a symbolic link" : kind == S_IFIFO ? "a FIFO" : kind == S_IFDIR ? "a folder" : "not a regular file"
            throw .policy(source: path, errors: "\(what) where a \(folder ? "folder" : "regular file") should be; replace it with one")
        }
        if info.st_uid != 0 && info.st_uid != getuid() {
            throw .policy(source: path, errors: "owned by uid \(info.st_uid), not by root or the agent's user (uid \(getuid())); chown it")
        }
        if info.st_mode & 0o022 != 0 {
            throw .policy(source: path, errors: "writable by its group or by everyone (mode \(String(info.st_mode & 0o7777, radix: 8))); chmod go-w it")
        }
    }
}

/// Watches a policy directory with inotify and calls `onChange` once things settle (a burst of
/// events, as configuration tools write files, gives one reload). Runs on a thread of its own;
/// `stop()` ends it.
final class PolicyDirectoryWatcher: Sendable {
    private let descriptor: Int32
    private let stopPipe: (read: Int32, write: Int32)

    /// Starts watching `directory` and its `policies.d`, or returns `nil` (logged) when inotify
    /// is unavailable: SIGHUP and `sharebrokerd --reload` still work.
    init?(directory: String, logger: Logger, onChange: @escaping @Sendable () -> Void) {
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        var fds: [Int32] = [0, 0]
        guard fd >= 0, pipe(&fds) == 0 else {
            logger.warning("cannot watch the policy directory (inotify: \(String(cString: strerror(errno)))); reload with SIGHUP")
            if fd >= 0 { close(fd) }
            return nil
        }
        for end in fds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        descriptor = fd
        stopPipe = (fds[0], fds[1])
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB)
        let folder = directory + "/" + PolicyDirectory.policiesFolderName
        _ = inotify_add_watch(fd, directory, mask)
        _ = inotify_add_watch(fd, folder, mask)
        let stopRead = fds[0]
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                var polls = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                             pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
                guard poll(&polls, 2, -1) >= 0 || errno == EINTR else { return }
                if polls[1].revents != 0 { return }
                guard polls[0].revents != 0 else { continue }
                // Drain this burst and the ones that follow within 150 ms, then reload once.
                repeat {
                    _ = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    polls[0].revents = 0
                } while poll(&polls, 1, 150) > 0
                // policies.d may have been created since: watching it again is harmless.
                _ = inotify_add_watch(fd, folder, mask)
                onChange()
            }
        }
        thread.name = "sharebrokerd-policy-watch"
        thread.start()
    }

    /// Stops the watching thread.
    func stop() {
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    deinit {
        stop()
    }
}
