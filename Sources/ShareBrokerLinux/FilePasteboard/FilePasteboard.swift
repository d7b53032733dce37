#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShareBroker
import Synchronization
import ShareBrokerCrypto
import ShareBrokerPOSIX

/// Why the file-backed pasteboard could not be written.
public struct FilePasteboardError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What it was doing.
    public var operation: String
    /// The file.
    public var path: String
    /// `errno`.
    public var code: Int32

    /// Creates an error.
    public init(operation: String, path: String, code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// Whether the path holds something other than a regular file (a symbolic link, a FIFO, a
    /// device, a folder): refused without reading or writing through it.
    public var isNotARegularFile: Bool { code == ELOOP || foundNonRegular }
    private var foundNonRegular = false

    /// The path holds something other than a regular file; nothing was read or written.
    static func notARegularFile(operation: String, path: String) -> FilePasteboardError {
        var error = FilePasteboardError(operation: operation, path: path, code: EINVAL)
        error.foundNonRegular = true
        return error
    }

    public var description: String {
        if isNotARegularFile {
            return "could not \(operation) \(path): it is not a regular file (a symbolic link, FIFO, device or folder stands there); remove it, and check who can write its folder"
        }
        return "could not \(operation) \(path): \(String(cString: strerror(code))) (errno \(code)); check the folder's permissions and free space"
    }
}

/// A general pasteboard shared by every process of the host that uses the same file: the host
/// counterpart of ``InMemoryPasteboard``, with the same semantics.
///
/// * **Atomic replacement.** A write builds a new file next to the pasteboard and renames it
///   over the old one, so a reader sees the old items or the new ones, never a mix, and a writer
///   killed half way leaves the pasteboard as it was.
/// * **Change count** stored in the file, incremented by every write and successful clear.
///   Writers of all processes serialize on an advisory lock (`flock` on `PATH.lock`); readers
///   take no lock.
/// * **No agent needed**: any process, managed or not, reads it; sealed items are opaque
///   without the group keys.
/// * **Bounded reads**: a file over ``maxFileSize`` (or holding more than ``maxItems`` items)
///   reads as empty, without reading it whole.
///
/// Layout (big-endian): magic `SBPB`, version `01`, change count (8 bytes), item count (4 bytes),
/// then per item a 2-byte type length, the UTF-8 type, a 4-byte byte count and the bytes.
public final class FilePasteboard: Pasteboard {
    /// The pasteboard file.
    public let path: String
    /// The largest file read: a sealed item of the largest size, plus room for types.
    public static let maxFileSize = EnvelopeFormat.maxEnvelopeSize + 64 * 1024
    /// The most items a pasteboard holds.
    public static let maxItems = 64
    static let magic: [UInt8] = [0x53, 0x42, 0x50, 0x42] // "SBPB"
    static let version: UInt8 = 1
    static let headerLength = 17


    /// Uses the pasteboard file at `path`, creating its folder (mode 0700) if needed; the file
    /// itself appears with the first write.
    public init(path: String) throws(FilePasteboardError) {
        self.path = path
        let folder = Self.parent(of: path)
        try Self.makeDirectories(folder)
    }

    // MARK: Pasteboard

    /// The items and change count in the file now (no lock: replacement is atomic). A missing,
    /// unreadable, oversized or malformed file reads as no items.
    public func read() -> (items: [PasteboardItem], changeCount: Int) {
        guard let bytes = Self.readFile(path) else { return ([], Self.changeCount(ofFile: path)) }
        return Self.parse(bytes) ?? ([], Self.changeCount(ofFile: path))
    }

    /// Replaces the items and returns the new change count.
    ///
    /// - Throws: ``FilePasteboardError`` when the file system refused; the pasteboard then
    ///   keeps exactly what it had.
    @discardableResult
    public func write(_ items: [PasteboardItem]) throws(FilePasteboardError) -> Int {
        try locked { () throws(FilePasteboardError) -> Int in
            let next = Self.changeCount(ofFile: path) + 1
            try replace(with: items, changeCount: next)
            return next
        }.get()
    }

    /// Empties the pasteboard if nobody (in any process) wrote since `changeCount`.
    @discardableResult
    public func clear(ifChangeCount changeCount: Int) -> Bool {
        let result = locked { () throws(FilePasteboardError) -> Bool in
            let current = Self.changeCount(ofFile: path)
            guard current == changeCount else { return false }
            try replace(with: [], changeCount: current + 1)
            return true
        }
        switch result {
        case .success(let cleared):
            return cleared
        case .failure:
            return false
        }
    }

    /// `file:` and the path: the items outlive their writers.
    public var persistentIdentity: String? { "file:" + path }

    // MARK: Internals

    private func locked<T>(_ body: () throws(FilePasteboardError) -> T) -> Result<T, FilePasteboardError> {
        let lockPath = path + ".lock"
        // Never through a symbolic link (it would create the file it points at), never on a
        // FIFO or device (O_NONBLOCK: opening one cannot hang; it is then refused).
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else { return .failure(FilePasteboardError(operation: "open", path: lockPath, code: errno)) }
        defer { close(fd) }
        guard Self.isRegularFile(fd) else { return .failure(.notARegularFile(operation: "lock", path: lockPath)) }
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR { return .failure(FilePasteboardError(operation: "lock", path: lockPath, code: errno)) }
        }
        defer { _ = flock(fd, LOCK_UN) }
        removeLeftovers()
        return Result(catching: body)
    }

    /// The prefix of the names a write links its finished file under before renaming it over
    /// the pasteboard (only a crash in between leaves one).
    private var temporaryPrefix: String { Self.baseName(of: path) + ".tmp." }

    /// Removes what a writer that crashed left behind: names starting with the temporary
    /// prefix. Called with the lock held, when no write of any process is under way.
    private func removeLeftovers() {
        let folder = Self.parent(of: path)
        guard let stream = opendir(folder) else { return }
        defer { closedir(stream) }
        let prefix = temporaryPrefix
        var stale: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name.hasPrefix(prefix) { stale.append(name) }
        }
        for name in stale { unlink(folder + "/" + name) }
    }

    /// `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY` of the generic Linux ABI, x86-64 and arm64),
    /// which Glibc's module does not export to Swift.
    static let openTemporaryFile: Int32 = 0o20_000_000 | O_DIRECTORY

    static func baseName(of path: String) -> String { DurableIO.lastComponent(of: path) }

    /// Whether the open descriptor is a regular file.
    static func isRegularFile(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Opens `path` for reading only if it is a regular file: never through a symbolic link, and
    /// a FIFO or device is refused without blocking on it.
    static func openRegularFile(_ path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        guard isRegularFile(fd) else {
            close(fd)
            return nil
        }
        return fd
    }

    private func replace(with items: [PasteboardItem], changeCount: Int) throws(FilePasteboardError) {
        var out: [UInt8] = []
        out.reserveCapacity(Self.headerLength + items.reduce(0) { $0 + 6 + $1.type.utf8.count + $1.bytes.count })
        out.append(contentsOf: Self.magic)
        out.append(Self.version)
        Self.append(UInt64(max(0, changeCount)), bytes: 8, to: &out)
        Self.append(UInt64(items.count), bytes: 4, to: &out)
        for item in items {
            let type = Array(item.type.utf8.prefix(Int(UInt16.max)))
            Self.append(UInt64(type.count), bytes: 2, to: &out)
            out.append(contentsOf: type)
            Self.append(UInt64(item.bytes.count), bytes: 4, to: &out)
            out.append(contentsOf: item.bytes)
        }
        let folder = Self.parent(of: path)
        let temporary = folder + "/" + temporaryPrefix + "\(getpid()).\(UInt32.random(in: 0 ... .max))"
        // The new contents are written to an unnamed file (O_TMPFILE): a writer that crashes
        // half way leaves nothing on disk. Only once complete is it given a name and renamed
        // over the pasteboard; a crash between the two leaves a name the next write removes.
        var anonymous = true
        var fd = open(folder, Self.openTemporaryFile | O_WRONLY | O_CLOEXEC, 0o600)
        if fd < 0 {
            // A file system without O_TMPFILE: a named temporary file, removed on failure and,
            // after a crash, by the next write.
            anonymous = false
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        }
        guard fd >= 0 else { throw FilePasteboardError(operation: "create", path: temporary, code: errno) }
        let written: Result<Void, POSIXFailure> = out.withUnsafeBytes { raw in
            Result { () throws(POSIXFailure) in try DurableIO.writeAll(fd, raw, path: temporary) }
        }
        if case .failure(let failure) = written {
            close(fd)
            if !anonymous { unlink(temporary) }
            throw FilePasteboardError(operation: failure.operation, path: temporary, code: failure.code)
        }
        if anonymous {
            // linkat through /proc/self/fd names an O_TMPFILE file without CAP_DAC_READ_SEARCH.
            guard linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, temporary, AT_SYMLINK_FOLLOW) == 0 else {
                let code = errno
                close(fd)
                throw FilePasteboardError(operation: "create", path: temporary, code: code)
            }
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw FilePasteboardError(operation: "replace", path: path, code: code)
        }
    }

    private static func append(_ value: UInt64, bytes: Int, to out: inout [UInt8]) {
        for shift in stride(from: (bytes - 1) * 8, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// The change count in the file's header (0 when there is no readable header).
    static func changeCount(ofFile path: String) -> Int {
        guard let fd = openRegularFile(path) else { return 0 }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: headerLength)
        let n = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, headerLength, 0) }
        guard n == headerLength, Array(header[0..<4]) == magic, header[4] == version else { return 0 }
        let count = header[5..<13].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(clamping: count)
    }

    /// The whole file, or `nil` if missing, unreadable or over ``maxFileSize`` (not read then).
    static func readFile(_ path: String) -> [UInt8]? {
        guard let fd = openRegularFile(path) else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 0, Int(info.st_size) <= maxFileSize else { return nil }
        let size = Int(info.st_size)
        var out = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let n = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress.map { $0 + done }, size - done) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { break }
            done += n
        }
        return done == size ? out : nil
    }

    /// Parses a pasteboard file; `nil` when it is not one (then it reads as empty).
    static func parse(_ bytes: [UInt8]) -> (items: [PasteboardItem], changeCount: Int)? {
        guard bytes.count >= headerLength, Array(bytes[0..<4]) == magic, bytes[4] == version else { return nil }
        func number(_ start: Int, _ length: Int) -> Int? {
            guard start >= 0, length >= 0, start + length <= bytes.count else { return nil }
            return Int(clamping: bytes[start..<(start + length)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
        guard let changeCount = number(5, 8), let count = number(13, 4), count <= maxItems else { return nil }
        var offset = headerLength
        var items: [PasteboardItem] = []
        for _ in 0..<count {
            guard let typeLength = number(offset, 2) else { return nil }
            offset += 2
            guard offset + typeLength <= bytes.count,
                  let type = String(validating: bytes[offset..<(offset + typeLength)], as: UTF8.self) else { return nil }
            offset += typeLength
            guard let length = number(offset, 4) else { return nil }
            offset += 4
            guard offset + length <= bytes.count else { return nil }
            items.append(PasteboardItem(type: type, bytes: Array(bytes[offset..<(offset + length)])))
            offset += length
        }
        guard offset == bytes.count else { return nil }
        return (items, changeCount)
    }

    static func parent(of path: String) -> String { DurableIO.parent(of: path) }

    /// Creates the pasteboard's folder and missing parents (mode 0700).
    static func makeDirectories(_ directory: String) throws(FilePasteboardError) {
        do throws(POSIXFailure) { try DurableIO.makeDirectories(directory) } catch {
            throw FilePasteboardError(operation: error.operation, path: error.path, code: error.code)
        }
    }
}
