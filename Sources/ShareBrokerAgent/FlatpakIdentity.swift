#if canImport(Glibc)
import Glibc
#endif
import CGIO
import Foundation
import ShareBrokerPOSIX
import ShareBrokerPolicyDocument

/// `O_PATH` (Linux, the same value on every architecture Swift runs on; Glibc's module does not
/// export it): looks a file up without opening it, so nothing a device or FUSE driver does on
/// open runs; `fstat`, `fstatvfs` and the `*at` calls work on the descriptor.
let openPathOnly: Int32 = 0o10000000

/// Where the agent finds Flatpak's own records when a peer says, through its `/.flatpak-info`,
/// that it is a Flatpak app (docs/THREAT-MODEL.md, "Flatpak apps").
public struct FlatpakSettings: Sendable, Hashable {
    /// The Flatpak installations whose apps the agent trusts: an app's files must be under
    /// `INSTALLATION/app/APP-ID/`, a folder owned by root (or the agent's user) that nobody else
    /// can write. Default: the system installation, `/var/lib/flatpak`. A per-user installation
    /// (`~/.local/share/flatpak`) is the user's to write, so it is not trusted by default.
    public var installations: [String]
    /// The folder holding the users' runtime folders: Flatpak's instance records are read from
    /// `RUNTIME-ROOT/UID/.flatpak/INSTANCE/` (`UID` the peer's, from the kernel). Default `/run/user`.
    public var runtimeRoot: String

    /// Creates settings. Give real paths (no symbolic links): an app whose path goes through a
    /// link is refused. Trailing `/` are dropped.
    public init(installations: [String] = ["/var/lib/flatpak"], runtimeRoot: String = "/run/user") {
        self.installations = installations.map(Self.trimmed)
        self.runtimeRoot = Self.trimmed(runtimeRoot)
    }

    private static func trimmed(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// The system installation and `/run/user`.
    public static let standard = FlatpakSettings()
}

/// A peer's Flatpak claim after it verified: the app id and the sandbox instance it runs in.
struct FlatpakInstance: Sendable, Hashable {
    /// `[Application] name=` of the peer's `/.flatpak-info`.
    var appID: String
    /// `[Instance] instance-id=`.
    var instanceID: String
    /// `[Instance] app-path=`: where the app's `/app` lives on the host.
    var appPath: String
}

/// What the peer's root says about it.
enum FlatpakInspection: Sendable, Hashable {
    /// No `/.flatpak-info` in the peer's root: identified as a host app.
    case host
    /// A Flatpak claim that holds (the checks are listed on ``FlatpakInspector``).
    case verified(FlatpakInstance)
    /// A Flatpak claim that does not verify, and why (for the log and the refusal: no keys, no
    /// document names).
    case refused(String)
}

/// Reads and checks a peer's Flatpak claim, the facts xdg-desktop-portal uses plus the
/// cross-checks that still hold against a process that builds its own namespace:
///
/// 1. `/proc/PID` is opened, and the peer's pidfd says the process that connected is still
///    alive with that pid, so every later read through that folder is of that process.
/// 2. `/.flatpak-info` in the peer's root is looked up with `O_PATH | O_NOFOLLOW` and examined
///    before it is opened: a symbolic link, a FIFO, a device, a folder or a file over 64 KiB is
///    refused and never opened (opening a device the peer binds there can have effects: a
///    watchdog starts); it must be on a read-only mount (Flatpak binds it read-only, so the
///    sandboxed app cannot rewrite its own identity).
/// 3. It is parsed with GLib's `GKeyFile` (as the portal does): `[Application] name=` is the app
///    id (a Flatpak app id), `[Instance] instance-id=` and `app-path=` are required; a runtime
///    (`[Runtime]`) is not an app.
/// 4. The instance record Flatpak keeps on the host, `RUNTIME-ROOT/UID/.flatpak/INSTANCE/` of
///    the peer's own user (folders and files owned by that user, not writable by others, no
///    symbolic links): its `info` must hold exactly the bytes of the peer's `/.flatpak-info`,
///    and its `bwrapinfo.json` (written by bubblewrap's `--info-fd`) names the sandbox's first
///    process (`child-pid`) and its namespaces. A sandboxed app cannot write there.
/// 5. That process is running (a pidfd of its own), is in the same mount and pid namespaces as
///    the peer (those `bwrapinfo.json` names), which are not the agent's, and its
///    `/.flatpak-info` is the very file the peer's is (device and inode).
/// 6. After the reads, both pidfds still say alive.
///
/// What this cannot stop (a process of the user's own uid outside any sandbox can make a user
/// and mount namespace of its own and write an instance record that matches) is why the agent
/// then requires the peer to run the very file the app's trusted installation ships
/// (``PeerIdentifier``): docs/THREAT-MODEL.md.
struct FlatpakInspector: Sendable {
    /// Where `/proc` is mounted.
    let procRoot: String
    /// Installations and the runtime root.
    let settings: FlatpakSettings

    /// The largest `/.flatpak-info` (and instance `info`) accepted. Flatpak's are a few KiB.
    static let infoLimit = 64 * 1024
    /// The largest `bwrapinfo.json` accepted (bubblewrap writes well under 1 KiB).
    static let bwrapInfoLimit = 4 * 1024
    /// `ST_RDONLY` of `statvfs(3)`.
    static let readOnlyMount: UInt = 1

    /// Inspects process `pid` of user `uid`. `pidfd` is the pidfd the connection took at accept,
    /// or -1 (one is opened here then).
    func inspect(pid: Int32, uid: UInt32, pidfd: Int32) -> FlatpakInspection {
        let procDir = open("\(procRoot)/\(pid)", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard procDir >= 0 else {
            return .refused("the agent could not open /proc/\(pid) to see whether the process is a Flatpak app (\(Self.errnoText()))")
        }
        defer { close(procDir) }
        let rootFD = openat(procDir, "root", openPathOnly | O_DIRECTORY | O_CLOEXEC)
        if rootFD < 0 {
            // A /proc laid out by tests has no root: that peer is a host app. A real process
            // always has one; one that is gone fails the pidfd check after identification.
            if errno == ENOENT { return .host }
            return .refused("the agent could not open the root folder of process \(pid) to see whether it is a Flatpak app (\(Self.errnoText())); give the agent CAP_SYS_PTRACE if it runs as another user")
        }
        defer { close(rootFD) }
        // O_PATH: looked up, not opened; readRegularFile opens it only once it is a regular file.
        let infoFD = openat(rootFD, ".flatpak-info", openPathOnly | O_NOFOLLOW | O_CLOEXEC)
        if infoFD < 0 {
            if errno == ENOENT { return .host }
            return .refused("the agent could not open the /.flatpak-info of process \(pid) (\(Self.errnoText())); not identified as a Flatpak app")
        }
        defer { close(infoFD) }

        // The process behind /proc/PID must be the one that connected, for the reads to mean it.
        var ownPidfd: Int32 = -1
        defer { if ownPidfd >= 0 { close(ownPidfd) } }
        var pin = pidfd
        if pin < 0 {
            guard case .success(let opened) = PeerSocket.peerPidfd(-1, pid: pid, allowPeerPidfd: false) else {
                return .refused("process \(pid) exited while the agent read its /.flatpak-info")
            }
            ownPidfd = opened.fd
            pin = opened.fd
        }
        guard PeerSocket.isAlive(pidfd: pin, pid: pid) else {
            return .refused("process \(pid), which connected, exited before its /.flatpak-info was read (its pid may now be another process's)")
        }

        let info: (bytes: [UInt8], device: UInt64, inode: UInt64)
        switch Self.readRegularFile(infoFD, limit: Self.infoLimit, what: "the /.flatpak-info of process \(pid)") {
        case .failure(let refusal): return .refused(refusal.description)
        case .success(let read): info = read
        }
        var mount = statvfs()
        guard fstatvfs(infoFD, &mount) == 0, (UInt(mount.f_flag) & Self.readOnlyMount) != 0 else {
            return .refused("the /.flatpak-info of process \(pid) is not on a read-only mount (Flatpak binds it read-only); not identified as a Flatpak app")
        }
        guard PeerSocket.isAlive(pidfd: pin, pid: pid) else {
            return .refused("process \(pid) exited while the agent read its /.flatpak-info")
        }

        let claim: FlatpakInstance
        switch Self.parse(info.bytes) {
        case .failure(let message): return .refused("the /.flatpak-info of process \(pid) \(message); not identified as a Flatpak app")
        case .success(let parsed): claim = parsed
        }
        let subject = "process \(pid) says it is the Flatpak app \(claim.appID) (instance \(claim.instanceID))"

        // The instance record Flatpak wrote on the host, in the peer's own runtime folder.
        let record: (info: [UInt8], bwrap: [UInt8])
        switch readInstanceRecord(uid: uid, instance: claim.instanceID) {
        case .failure(let message): return .refused("\(subject), but \(message); not identified as that app")
        case .success(let read): record = read
        }
        guard record.info == info.bytes else {
            return .refused("\(subject), but its /.flatpak-info is not the one Flatpak recorded for that instance; not identified as that app")
        }
        let sandbox: (childPid: Int32, mountNamespace: UInt64?, pidNamespace: UInt64?)
        switch Self.parseBwrapInfo(record.bwrap) {
        case .failure(let message): return .refused("\(subject), but the instance's bwrapinfo.json \(message); not identified as that app")
        case .success(let parsed): sandbox = parsed
        }

        // The sandbox's first process: alive, in the peer's namespaces, with the peer's file.
        guard case .success(let child) = PeerSocket.peerPidfd(-1, pid: sandbox.childPid, allowPeerPidfd: false) else {
            return .refused("\(subject), but the sandbox process the instance record names (pid \(sandbox.childPid)) is not running; not identified as that app")
        }
        defer { close(child.fd) }
        let childDir = open("\(procRoot)/\(sandbox.childPid)", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard childDir >= 0 else {
            return .refused("\(subject), but the agent could not open /proc/\(sandbox.childPid) of the sandbox process (\(Self.errnoText())); not identified as that app")
        }
        defer { close(childDir) }
        guard PeerSocket.isAlive(pidfd: child.fd, pid: sandbox.childPid) else {
            return .refused("\(subject), but the sandbox process the instance record names (pid \(sandbox.childPid)) exited; not identified as that app")
        }
        guard let peerMount = Self.namespace(procDir, "ns/mnt"), let peerPids = Self.namespace(procDir, "ns/pid"),
              let childMount = Self.namespace(childDir, "ns/mnt"), let childPids = Self.namespace(childDir, "ns/pid") else {
            return .refused("\(subject), but the agent could not read its namespaces or the sandbox's (\(Self.errnoText())); not identified as that app")
        }
        guard peerMount == childMount, peerPids == childPids else {
            return .refused("\(subject), but it does not run inside that instance's sandbox (its mount or pid namespace is not the sandbox's, pid \(sandbox.childPid)); not identified as that app")
        }
        if let recorded = sandbox.mountNamespace, recorded != childMount {
            return .refused("\(subject), but the sandbox's mount namespace is not the one bubblewrap recorded; not identified as that app")
        }
        if let recorded = sandbox.pidNamespace, recorded != childPids {
            return .refused("\(subject), but the sandbox's pid namespace is not the one bubblewrap recorded; not identified as that app")
        }
        if let own = Self.ownNamespace("mnt"), own == peerMount {
            return .refused("\(subject), but it shares the agent's mount namespace, which no Flatpak sandbox does; not identified as that app")
        }
        let childRoot = openat(childDir, "root", openPathOnly | O_DIRECTORY | O_CLOEXEC)
        guard childRoot >= 0 else {
            return .refused("\(subject), but the agent could not open the sandbox process's root (\(Self.errnoText())); not identified as that app")
        }
        defer { close(childRoot) }
        // Examined, never opened (whatever the sandbox holds there).
        var childStat = stat()
        guard fstatat(childRoot, ".flatpak-info", &childStat, AT_SYMLINK_NOFOLLOW) == 0 else {
            return .refused("\(subject), but the sandbox process (pid \(sandbox.childPid)) has no /.flatpak-info; not identified as that app")
        }
        guard UInt64(childStat.st_dev) == info.device, UInt64(childStat.st_ino) == info.inode else {
            return .refused("\(subject), but its /.flatpak-info is not the file the sandbox process (pid \(sandbox.childPid)) has; not identified as that app")
        }
        guard PeerSocket.isAlive(pidfd: child.fd, pid: sandbox.childPid), PeerSocket.isAlive(pidfd: pin, pid: pid) else {
            return .refused("\(subject), but it or the sandbox process exited while the agent checked them; not identified as that app")
        }
        return .verified(claim)
    }

    // MARK: The instance record

    /// `info` and `bwrapinfo.json` of `RUNTIME-ROOT/UID/.flatpak/INSTANCE/`, each folder and
    /// file opened without following links and owned by `uid` (or root), writable by nobody else.
    private func readInstanceRecord(uid: UInt32, instance: String) -> Result<(info: [UInt8], bwrap: [UInt8]), FlatpakRefusal> {
        let runtime = "\(settings.runtimeRoot)/\(uid)"
        var folder = open(runtime, openPathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else {
            return .failure(FlatpakRefusal("the user's runtime folder \(runtime) could not be opened (\(Self.errnoText()))"))
        }
        defer { close(folder) }
        if let problem = Self.ownership(folder, uid: uid, what: runtime) { return .failure(problem) }
        for name in [".flatpak", instance] {
            let next = openat(folder, name, openPathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else {
                return .failure(FlatpakRefusal("Flatpak keeps no record of that instance (\(runtime)/.flatpak/\(instance): \(Self.errnoText()))"))
            }
            close(folder)
            folder = next
            if let problem = Self.ownership(folder, uid: uid, what: "the instance record") { return .failure(problem) }
        }
        var files: [[UInt8]] = []
        for (name, limit) in [("info", Self.infoLimit), ("bwrapinfo.json", Self.bwrapInfoLimit)] {
            let fd = openat(folder, name, openPathOnly | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else {
                return .failure(FlatpakRefusal("the instance record has no readable \(name) (\(Self.errnoText()))"))
            }
            defer { close(fd) }
            if let problem = Self.ownership(fd, uid: uid, what: "the instance record's \(name)") { return .failure(problem) }
            switch Self.readRegularFile(fd, limit: limit, what: "the instance record's \(name)") {
            case .failure(let problem): return .failure(problem)
            case .success(let read): files.append(read.bytes)
            }
        }
        return .success((files[0], files[1]))
    }

    /// Why `fd` may not be trusted as part of `uid`'s instance record, or `nil`: owned by `uid`
    /// or root, writable by nobody else.
    private static func ownership(_ fd: Int32, uid: UInt32, what: String) -> FlatpakRefusal? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return FlatpakRefusal("\(what) could not be examined (\(errnoText()))") }
        guard info.st_uid == uid || info.st_uid == 0, (info.st_mode & 0o022) == 0 else {
            return FlatpakRefusal("\(what) is owned by uid \(info.st_uid) with mode \(String(info.st_mode & 0o7777, radix: 8)), not by the process's user (uid \(uid)) and writable by it only")
        }
        return nil
    }

    // MARK: Reading and parsing

    /// Reads all of the file `pathFD` refers to (an `O_PATH` descriptor, or any other), a
    /// regular file of at most `limit` bytes (checked before and while reading): the bytes and
    /// the file's device and inode, or a message saying why not. The type is checked on `pathFD`
    /// before the file is opened (through `/proc/self/fd`, the same inode), so a FIFO, socket or
    /// device is refused without ever being opened.
    static func readRegularFile(_ pathFD: Int32, limit: Int, what: String) -> Result<(bytes: [UInt8], device: UInt64, inode: UInt64), FlatpakRefusal> {
        var info = stat()
        guard fstat(pathFD, &info) == 0 else { return .failure(FlatpakRefusal("\(what) could not be examined (\(errnoText()))")) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(FlatpakRefusal("\(what) is not a regular file (\(kind(info.st_mode)))"))
        }
        guard info.st_size >= 0, info.st_size <= limit else {
            return .failure(FlatpakRefusal("\(what) is \(info.st_size) bytes, more than the \(limit) accepted"))
        }
        let fd = open("/proc/self/fd/\(pathFD)", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(FlatpakRefusal("\(what) could not be opened (\(errnoText()))")) }
        defer { close(fd) }
        var opened = stat()
        guard fstat(fd, &opened) == 0, opened.st_dev == info.st_dev, opened.st_ino == info.st_ino else {
            return .failure(FlatpakRefusal("\(what) changed while it was opened"))
        }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var total = 0
        while total <= limit {
            let n = bytes.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return read(fd, base + total, raw.count - total)
            }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(FlatpakRefusal("\(what) could not be read (\(errnoText()))"))
            }
            if n == 0 { break }
            total += n
        }
        guard total <= limit else {
            return .failure(FlatpakRefusal("\(what) grew past the \(limit) bytes accepted while it was read"))
        }
        return .success((Array(bytes[..<total]), UInt64(info.st_dev), UInt64(info.st_ino)))
    }

    /// The claim in a `.flatpak-info`, parsed by GLib's key-file parser.
    static func parse(_ bytes: [UInt8]) -> Result<FlatpakInstance, FlatpakRefusal> {
        // GKeyFile cuts a line at a NUL, so two readers could see two claims; Flatpak writes none.
        guard !bytes.contains(0) else { return .failure(FlatpakRefusal("holds a NUL byte, which Flatpak never writes")) }
        guard let keyFile = g_key_file_new() else { return .failure(FlatpakRefusal("could not be parsed (out of memory)")) }
        defer { g_key_file_free(keyFile) }
        var error: UnsafeMutablePointer<GError>?
        let loaded = bytes.withUnsafeBufferPointer { buffer -> gboolean in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                g_key_file_load_from_data(keyFile, chars.baseAddress, gsize(chars.count), G_KEY_FILE_NONE, &error)
            }
        }
        guard loaded != 0 else {
            let reason = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            if let error { g_error_free(error) }
            return .failure(FlatpakRefusal("is not a valid key file (\(reason))"))
        }
        if g_key_file_has_group(keyFile, "Runtime") != 0 {
            return .failure(FlatpakRefusal("describes a runtime, not an app"))
        }
        func value(_ group: String, _ key: String) -> String? {
            guard let raw = g_key_file_get_string(keyFile, group, key, nil) else { return nil }
            defer { g_free(raw) }
            return String(validatingCString: raw)
        }
        guard let appID = value("Application", "name") else {
            return .failure(FlatpakRefusal("names no app ([Application] name=)"))
        }
        guard FlatpakAppID.isValid(appID) else {
            return .failure(FlatpakRefusal("names an app id that is not a valid Flatpak app id"))
        }
        guard let instance = value("Instance", "instance-id"), isSafeInstanceID(instance) else {
            return .failure(FlatpakRefusal("names no valid instance ([Instance] instance-id=, letters, digits, '_' and '-' only)"))
        }
        guard let appPath = value("Instance", "app-path"), isNormalizedAbsolutePath(appPath) else {
            return .failure(FlatpakRefusal("names no valid app path ([Instance] app-path=, an absolute, normalized path)"))
        }
        return .success(FlatpakInstance(appID: appID, instanceID: instance, appPath: appPath))
    }

    /// `child-pid` and, when bubblewrap wrote them, `mnt-namespace` and `pid-namespace`.
    static func parseBwrapInfo(_ bytes: [UInt8]) -> Result<(childPid: Int32, mountNamespace: UInt64?, pidNamespace: UInt64?), FlatpakRefusal> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            return .failure(FlatpakRefusal("is not a JSON object"))
        }
        func number(_ key: String) -> UInt64? {
            guard let value = object[key] as? NSNumber else { return nil }
            let double = value.doubleValue
            guard double >= 0, double < 1.8e19, double == double.rounded() else { return nil }
            return value.uint64Value
        }
        guard let child = number("child-pid"), child > 1, child <= UInt64(Int32.max) else {
            return .failure(FlatpakRefusal("names no sandbox process (child-pid)"))
        }
        return .success((Int32(child), number("mnt-namespace"), number("pid-namespace")))
    }

    /// An instance id as Flatpak makes them (decimal digits), or at least a single safe name.
    static func isSafeInstanceID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty, bytes.count <= 64 else { return false }
        return bytes.allSatisfy { b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
        }
    }

    /// Starts with `/`, no empty, `.` or `..` components, no trailing `/`, no NUL, at most 4,096 bytes.
    static func isNormalizedAbsolutePath(_ path: String) -> Bool {
        guard path.hasPrefix("/"), path.utf8.count > 1, path.utf8.count <= 4096, !path.utf8.contains(0) else { return false }
        return !path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            .contains { $0.isEmpty || $0 == "." || $0 == ".." }
    }

    /// The inode of namespace link `name` (`ns/mnt`) under an open `/proc/PID` folder.
    static func namespace(_ procDir: Int32, _ name: String) -> UInt64? {
        var info = stat()
        guard fstatat(procDir, name, &info, 0) == 0 else { return nil }
        return UInt64(info.st_ino)
    }

    /// The agent's own namespace of kind `kind` (`mnt`, `pid`).
    static func ownNamespace(_ kind: String) -> UInt64? {
        var info = stat()
        guard stat("/proc/self/ns/\(kind)", &info) == 0 else { return nil }
        return UInt64(info.st_ino)
    }

    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFDIR: "a folder"
        case S_IFLNK: "a symbolic link"
        case S_IFSOCK: "a socket"
        case S_IFCHR, S_IFBLK: "a device"
        default: "not a regular file"
        }
    }

    static func errnoText() -> String { "\(String(cString: strerror(errno))), errno \(errno)" }
}

/// Why a Flatpak claim did not verify, for people (no keys, no document names).
struct FlatpakRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
