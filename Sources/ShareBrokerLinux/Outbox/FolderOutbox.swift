#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBroker
import ShareBrokerPOSIX
import Synchronization

/// An `Outbox` on the file system: each hand-over goes into a fresh sub-folder of a folder, so a
/// delivered file keeps its original name and two hand-overs never collide.
public final class FolderOutbox: Outbox {
    /// The folder that receives hand-overs.
    public let directory: String
    private let counter = Atomic<UInt64>(0)

    /// Uses `directory`, creating it if needed.
    public init(directory: String) throws(ShareBrokerError) {
        self.directory = directory
        do throws(POSIXFailure) {
            // Mode 0777 less the umask, as mkdir -p: each hand-over's own folder is 0700.
            try DurableIO.makeDirectories(directory, mode: 0o777)
        } catch {
            throw .handOverWriteFailed(path: directory, errno: error.code)
        }
    }

    /// Uses a fresh folder under the system's temporary folder.
    public convenience init() throws(ShareBrokerError) {
        let base = Self.temporaryDirectory + "/sharebroker-outbox-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try self.init(directory: base)
    }

    /// `$TMPDIR`, or `/tmp` when it is unset or empty.
    private static var temporaryDirectory: String {
        guard let value = getenv("TMPDIR"), value.pointee != 0 else { return "/tmp" }
        return String(cString: value)
    }

    public func handOver(name: String, bytes: [UInt8]) throws(ShareBrokerError) -> String {
        try Self.validate(name: name)
        // A slot folder this call creates itself (one that exists, from an earlier process or
        // planted by someone, is skipped, never entered), opened without following a link, and
        // the file created in it exclusively, never through a link: a link planted at the slot
        // cannot make the document overwrite its target.
        var folder = ""
        var created = false
        for _ in 0..<Self.slotAttempts {
            let slot = counter.add(1, ordering: .relaxed).newValue
            folder = directory + "/\(slot)"
            if mkdir(folder, 0o700) == 0 {
                created = true
                break
            }
            guard errno == EEXIST else { throw .handOverWriteFailed(path: folder, errno: errno) }
        }
        guard created else { throw .handOverWriteFailed(path: folder, errno: EEXIST) }
        let folderFD = open(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folderFD >= 0 else { throw .handOverWriteFailed(path: folder, errno: errno) }
        defer { close(folderFD) }
        let path = folder + "/" + name
        let fd = openat(folderFD, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .handOverWriteFailed(path: path, errno: errno) }
        defer { close(fd) }
        let written: Result<Void, POSIXFailure> = bytes.withUnsafeBytes { raw in
            Result { () throws(POSIXFailure) in try DurableIO.writeAll(fd, raw, path: path) }
        }
        if case .failure(let failure) = written {
            unlinkat(folderFD, name, 0)
            throw .handOverWriteFailed(path: path, errno: failure.code)
        }
        return path
    }

    /// How many taken slot folders a hand-over skips before it gives up.
    static let slotAttempts = 1024
}
