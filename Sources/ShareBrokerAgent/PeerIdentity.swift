#if canImport(Glibc)
import Glibc
#endif
import ShareBrokerAgentProtocol
import ShareBrokerPolicyDocument
import Synchronization
import ShareBrokerCrypto

/// What the kernel says about the process at the other end of a Unix socket (`SO_PEERCRED`):
/// captured when it called `connect`.
public struct PeerCredentials: Sendable, Hashable {
    /// Process id.
    public var pid: Int32
    /// Effective user id.
    public var uid: UInt32
    /// Effective group id.
    public var gid: UInt32

    /// Creates credentials.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// A peer identified: its registered app, and how it runs (``FlatpakInspection/host`` or the
/// verified Flatpak instance), which its session keeps for re-identification.
struct PeerIdentification: Sendable {
    var app: RegisteredApp
    var sandbox: FlatpakInspection
}

/// Maps a peer to a registered app from what the kernel says, never from what the client says:
/// its executable (`/proc/PID/exe`), that the file at the registered path is the very file the
/// process runs (same device and inode), and, when the registry pins one, the SHA-256 of the
/// file the process runs (read through `/proc/PID/exe`, so a file swapped at the path after the
/// check cannot be hashed in its place). A Flatpak app is identified by its app id instead, from
/// its sandbox's `/.flatpak-info` checked against Flatpak's records (``FlatpakSettings``), and
/// must run the file its trusted installation ships.
///
/// See docs/THREAT-MODEL.md for what this protects against and what it cannot.
public final class PeerIdentifier: Sendable {
    private struct FileKey: Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int
        var modifiedNanoseconds: Int
        var changed: Int
        var changedNanoseconds: Int
    }

    private let digests = Mutex<[FileKey: String]>([:])
    /// Where `/proc` is mounted (tests may point elsewhere).
    let procRoot: String
    /// Where Flatpak apps' installations and instance records are.
    let flatpak: FlatpakSettings

    /// The interpreters a registered executable must not be.
    let interpreters: InterpreterTable

    /// Creates an identifier reading `/proc`, trusting the Flatpak installations of `flatpak`.
    public convenience init(procRoot: String = "/proc", flatpak: FlatpakSettings = .standard) {
        self.init(procRoot: procRoot, flatpak: flatpak, interpreters: .system)
    }

    /// As ``init(procRoot:flatpak:)``, with the interpreters of `interpreters` (tests).
    package init(procRoot: String, flatpak: FlatpakSettings, interpreters: InterpreterTable) {
        self.procRoot = procRoot
        self.flatpak = flatpak
        self.interpreters = interpreters
    }

    /// The executable of process `pid`, as the kernel names it (`readlink /proc/PID/exe`).
    public func executable(of pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let n = readlink("\(procRoot)/\(pid)/exe", &buffer, 4096)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The registered app that `peer` runs, or why it gets nothing.
    ///
    /// A peer whose root holds a `/.flatpak-info` is a Flatpak app or nothing: its claim must
    /// verify (``FlatpakInspector``), the device must register that app id as a Flatpak, and the
    /// process must run the very file the app's trusted installation ships at its registered
    /// executable. Any other peer is identified by its executable's host path.
    ///
    /// `pidfd` is the pidfd the connection took at accept (or -1: one is opened when needed).
    public func identify(_ peer: PeerCredentials, pidfd: Int32 = -1, in registry: DeviceRegistry) -> Result<RegisteredApp, RefusalMessage> {
        identify(peer, pidfd: pidfd, in: registry, sandbox: nil).map(\.app)
    }

    /// As ``identify(_:pidfd:in:)``, also saying how the peer runs (a host app, or the verified
    /// Flatpak instance). `sandbox` is what an earlier identification of this same connected
    /// process found (its session's): the Flatpak claim is then not read and checked again, so a
    /// re-identification at a policy install reads nothing in the peer's root or in the user's
    /// runtime folder, which the user could make stall (a FUSE mount that never answers) to hold
    /// every later install back; everything the new registry decides (the app id registered as
    /// a Flatpak or not, the executable, the installed file, owner, pin, users) is checked again.
    func identify(_ peer: PeerCredentials, pidfd: Int32 = -1, in registry: DeviceRegistry,
                  sandbox known: FlatpakInspection?) -> Result<PeerIdentification, RefusalMessage> {
        let exe = executable(of: peer.pid)
        let description = PeerDescription(pid: peer.pid, uid: peer.uid, executable: exe)
        func refuse(_ reason: RefusalReason, _ message: String) -> Result<PeerIdentification, RefusalMessage> {
            .failure(RefusalMessage(reason: reason, message: message, peer: description))
        }
        guard let exe else {
            return refuse(.unidentified, "the agent could not read the executable of process \(peer.pid); it gets no keys and no policy")
        }
        if exe.hasSuffix(" (deleted)") {
            return refuse(.executableChanged, "the process runs an executable that was deleted or replaced since it started (\(exe)); restart it")
        }
        let app: RegisteredApp
        /// The host path of the file the process must run.
        let registeredFile: String
        let sandbox = known ?? FlatpakInspector(procRoot: procRoot, settings: flatpak).inspect(pid: peer.pid, uid: peer.uid, pidfd: pidfd)
        switch sandbox {
        case .refused(let reason):
            return refuse(.flatpakUnverified, reason + "; it gets no keys and no policy")
        case .verified(let instance):
            guard let registered = registry.app(forFlatpak: instance.appID) else {
                return refuse(.unregistered, "process \(peer.pid) is the Flatpak app \(instance.appID), which is not registered on this device as a Flatpak; it gets no keys and no policy (register it with \"flatpak\": true)")
            }
            guard exe == registered.executable else {
                return refuse(.unregistered, "process \(peer.pid) is the Flatpak app \(instance.appID), but it runs \(exe), not the app's registered executable \(registered.executable); it gets no keys and no policy")
            }
            switch installedFile(of: instance, executable: registered.executable) {
            case .failure(let refusal): return refuse(.flatpakUnverified, "process \(peer.pid) says it is the Flatpak app \(instance.appID), but \(refusal.description); it gets no keys and no policy")
            case .success(let path): registeredFile = path
            }
            app = registered
        case .host:
            guard let registered = registry.app(forExecutable: exe), !registered.isFlatpak else {
                return refuse(.unregistered, "\(exe) is not a registered app on this device; it gets no keys and no policy (register its executable in the device policy)")
            }
            app = registered
            registeredFile = registered.executable
        }
        // The user is the kernel's (SO_PEERCRED), checked before anything is hashed.
        let allowed = app.users ?? [geteuid(), 0]
        guard allowed.contains(peer.uid) else {
            let who = app.users == nil ? "only the agent's user (uid \(geteuid())) and root, as the app names no users" : "uids \(allowed.map(String.init).joined(separator: ", "))"
            return refuse(.userNotAllowed, "\(exe) is registered as \(app.id), but uid \(peer.uid) may not run it: the device policy allows \(who); it gets no keys and no policy (add the uid to the app's \"users\")")
        }
        var running = stat()
        var registered = stat()
        guard stat("\(procRoot)/\(peer.pid)/exe", &running) == 0, stat(registeredFile, &registered) == 0,
              running.st_dev == registered.st_dev, running.st_ino == registered.st_ino else {
            return refuse(.executableChanged, "the file at \(registeredFile) is not the one process \(peer.pid) runs (replaced since it started); restart the app")
        }
        // Whoever can write the file could make any program this app; an interpreter (or the
        // loader) runs any script or binary it is handed.
        let me = geteuid()
        guard running.st_uid == 0 || running.st_uid == me, (running.st_mode & 0o022) == 0 else {
            return refuse(.unsafeExecutable, "\(exe) is registered as \(app.id), but it is owned by uid \(running.st_uid) with mode \(String(running.st_mode & 0o7777, radix: 8)): only root or the agent's user may own it and nobody else may write it; it gets no keys and no policy (install it root-owned, mode 0755)")
        }
        if isInterpreter(pid: peer.pid, size: Int64(running.st_size), device: UInt64(running.st_dev), inode: UInt64(running.st_ino)) {
            return refuse(.interpreter, "\(exe) is registered as \(app.id), but it is a copy or link of an interpreter or the dynamic loader of this system, which runs any script it is given; it gets no keys and no policy (register the app's own binary)")
        }
        if let pinned = app.sha256 {
            guard let digest = sha256(ofExecutableOf: peer.pid) else {
                return refuse(.unidentified, "the agent could not read the executable of process \(peer.pid) to check its SHA-256")
            }
            guard digest == pinned.lowercased() else {
                return refuse(.hashMismatch, "\(exe) is registered as \(app.id), but its SHA-256 is not the one the device policy pins; it gets no keys and no policy (reinstall the app, or update the pin)")
            }
        }
        guard app.isAppConnect, app.policy != nil else {
            return refuse(.notAppConnect, "\(exe) is registered as \(app.id), which does not link the library: it has no policy and gets no keys")
        }
        return .success(PeerIdentification(app: app, sandbox: sandbox))
    }

    /// The host path of `executable` (a path under `/app/`) in the installed app `instance`
    /// runs: its `app-path` must be inside `INSTALLATION/app/APP-ID/` of a trusted installation,
    /// free of symbolic links, in a folder only root or the agent's user can write.
    func installedFile(of instance: FlatpakInstance, executable: String) -> Result<String, FlatpakRefusal> {
        let appPath = instance.appPath
        guard let installation = flatpak.installations.first(where: { appPath.hasPrefix("\($0)/app/\(instance.appID)/") }) else {
            return .failure(FlatpakRefusal("its app path \(appPath) is not inside a trusted Flatpak installation (\(flatpak.installations.joined(separator: ", "))) under app/\(instance.appID)/ (install the app system-wide, or name its installation to the agent)"))
        }
        let appFolder = "\(installation)/app/\(instance.appID)"
        var folder = stat()
        let me = geteuid()
        guard lstat(appFolder, &folder) == 0, (folder.st_mode & S_IFMT) == S_IFDIR,
              folder.st_uid == 0 || folder.st_uid == me, (folder.st_mode & 0o022) == 0 else {
            return .failure(FlatpakRefusal("the installation's folder \(appFolder) is missing, not a folder, or writable by others than root and the agent's user"))
        }
        guard executable.hasPrefix("/app/") else {
            return .failure(FlatpakRefusal("the registered executable \(executable) is not under /app/"))
        }
        let file = appPath + "/" + executable.dropFirst("/app/".count)
        guard let resolved = realpath(file, nil) else {
            return .failure(FlatpakRefusal("the installed app has no file \(file)"))
        }
        defer { free(resolved) }
        guard String(cString: resolved) == file else {
            return .failure(FlatpakRefusal("the path \(file) in the installed app goes through a symbolic link"))
        }
        // Every folder from the installation down to the file's: whoever can write one of them
        // can put another root-owned file at the app's path (another app's folder renamed, a
        // hard link), since the app path is the claim's to choose within the app's folder.
        var folderPath = installation
        var chain = [installation]
        for part in file.dropFirst(installation.count + 1).split(separator: "/").dropLast() {
            folderPath += "/" + part
            chain.append(folderPath)
        }
        for path in chain {
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR,
                  info.st_uid == 0 || info.st_uid == me, (info.st_mode & 0o022) == 0 else {
                return .failure(FlatpakRefusal("the installation's folder \(path) is not a folder of root or the agent's user that nobody else can write (fix its owner and mode, or reinstall the app)"))
            }
        }
        return .success(file)
    }

    /// Whether the file process `pid` runs is an interpreter of this system (``InterpreterTable``):
    /// the same file as one (a hard link), or a copy (same size, same SHA-256).
    func isInterpreter(pid: Int32, size: Int64, device: UInt64, inode: UInt64) -> Bool {
        interpreters.contains(device: device, inode: inode, size: size) { sha256(ofExecutableOf: pid) }
    }

    /// The SHA-256 (lower-case hex) of the file process `pid` runs, read through
    /// `/proc/PID/exe`; cached by device, inode, size and times.
    func sha256(ofExecutableOf pid: Int32) -> String? {
        let fd = open("\(procRoot)/\(pid)/exe", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let key = FileKey(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                          modified: info.st_mtim.tv_sec, modifiedNanoseconds: info.st_mtim.tv_nsec,
                          changed: info.st_ctim.tv_sec, changedNanoseconds: info.st_ctim.tv_nsec)
        if let cached = digests.withLock({ $0[key] }) { return cached }
        guard let digest = Self.sha256(fd: fd) else { return nil }
        digests.withLock { $0[key] = digest }
        return digest
    }

    /// SHA-256 of everything readable from `fd`, as lower-case hex.
    static func sha256(fd: Int32) -> String? {
        var hasher = SHA256()
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { break }
            chunk.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
        }
        return hasher.hexDigest()
    }

    /// SHA-256 of the file at `path`, as lower-case hex, or `nil` if it cannot be read.
    public static func sha256(ofFile path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return sha256(fd: fd)
    }
}
