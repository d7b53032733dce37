#if canImport(Glibc)
import Glibc
#endif
import ShareBrokerAgentProtocol
import ShareBrokerPolicyDocument
import Synchronization
import ShareBrokerCrypto
import ShareBrokerPOSIX

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

/// What the agent learned about a connected process once, when it said hello, while it could
/// still read the process's `/proc` files. Its session keeps it: a policy install re-checks the
/// session against the new registry from this and from the files at the registered paths, and
/// reads nothing of the process again (an app makes itself non-dumpable once it holds keys, and
/// an agent of the same user without `CAP_SYS_PTRACE` can then no longer read `/proc/PID/exe`).
/// The connection's socket is close-on-exec in the client, so a process that execs another
/// program ends its session.
struct ProcessIdentity: Sendable, Hashable {
    /// The executable as `/proc/PID/exe` named it.
    var executable: String
    /// The file the process runs: its device and inode.
    var file: FileIdentity
    /// How the process runs: a host app, or its verified Flatpak instance.
    var sandbox: FlatpakInspection
}

/// A peer identified: its registered app, and what was read of the process
/// (``ProcessIdentity``), which its session keeps for re-identification.
struct PeerIdentification: Sendable {
    var app: RegisteredApp
    var identity: ProcessIdentity
}

/// Maps a peer to a registered app from what the kernel says, never from what the client says:
/// its executable (`/proc/PID/exe`), that the file at the registered path is the very file the
/// process runs (same device and inode), and, when the registry pins one, the SHA-256 of the
/// file the process runs (read through `/proc/PID/exe`, so a file swapped at the path after the
/// check cannot be hashed in its place). A host app must run in the agent's own pid and user
/// namespaces (compared through its pidfd): inside a namespace of its own a process may name
/// any pid of it in the credentials it attaches. A Flatpak app is identified by its app id
/// instead, from its sandbox's `/.flatpak-info` checked against Flatpak's records
/// (``FlatpakSettings``), and must run the file its trusted installation ships.
///
/// A process is read once, when it connects (``identify(_:pidfd:in:)``); a policy install
/// re-checks what was read then (``match(_:peer:in:)``).
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
        try? readExecutable(of: pid).get()
    }

    private func readExecutable(of pid: Int32) -> Result<String, POSIXErrorCode32> {
        var buffer = [CChar](repeating: 0, count: 4097)
        let n = readlink("\(procRoot)/\(pid)/exe", &buffer, 4096)
        guard n > 0 else { return .failure(POSIXErrorCode32(errno)) }
        return .success(String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The registered app that `peer` runs, or why it gets nothing. Reads the process's `/proc`
    /// files: called once, when it connects.
    ///
    /// A peer whose root holds a `/.flatpak-info` is a Flatpak app or nothing: its claim must
    /// verify (``FlatpakInspector``), the device must register that app id as a Flatpak, and the
    /// process must run the very file the app's trusted installation ships at its registered
    /// executable. Any other peer is identified by its executable's host path, and must run in
    /// the agent's pid and user namespaces.
    ///
    /// `pidfd` is the pidfd the connection took at accept (or -1: one is opened when needed).
    public func identify(_ peer: PeerCredentials, pidfd: Int32 = -1, in registry: DeviceRegistry) -> Result<RegisteredApp, RefusalMessage> {
        identification(of: peer, pidfd: pidfd, in: registry).map(\.app)
    }

    /// As ``identify(_:pidfd:in:)``, also giving what was read of the process, for its session.
    func identification(of peer: PeerCredentials, pidfd: Int32 = -1, in registry: DeviceRegistry) -> Result<PeerIdentification, RefusalMessage> {
        let exe: String
        switch readExecutable(of: peer.pid) {
        case .success(let path): exe = path
        case .failure(let error):
            let description = PeerDescription(pid: peer.pid, uid: peer.uid, executable: nil)
            let message: String
            switch error.code {
            case EACCES, EPERM:
                message = "the agent (uid \(geteuid())) may not read /proc/\(peer.pid)/exe: the process is not dumpable (an app makes itself so once it holds keys) and the agent has no CAP_SYS_PTRACE over it. The agent identifies an app when it connects, before that; an app that was already running when the agent started must be restarted (or give the agent CAP_SYS_PTRACE, docs/DEPLOYMENT.md); it gets no keys and no policy"
            case ENOENT, ESRCH:
                message = "process \(peer.pid) exited before the agent could read its executable; it gets no keys and no policy"
            default:
                message = "the agent could not read the executable of process \(peer.pid) (\(error)); it gets no keys and no policy"
            }
            return .failure(RefusalMessage(reason: .unidentified, message: message, peer: description))
        }
        if exe.hasSuffix(" (deleted)") {
            return .failure(RefusalMessage(reason: .executableChanged, message: "the process runs an executable that was deleted or replaced since it started (\(exe)); restart it",
                                           peer: PeerDescription(pid: peer.pid, uid: peer.uid, executable: exe)))
        }
        let sandbox = FlatpakInspector(procRoot: procRoot, settings: flatpak).inspect(pid: peer.pid, uid: peer.uid, pidfd: pidfd)
        if case .host = sandbox, let problem = namespaceProblem(pid: peer.pid, pidfd: pidfd) {
            return .failure(RefusalMessage(reason: .foreignNamespace, message: problem,
                                           peer: PeerDescription(pid: peer.pid, uid: peer.uid, executable: exe)))
        }
        var running = stat()
        guard stat("\(procRoot)/\(peer.pid)/exe", &running) == 0 else {
            return .failure(RefusalMessage(reason: .unidentified, message: "the agent could not examine the executable of process \(peer.pid) (\(Self.errnoText())); it gets no keys and no policy",
                                           peer: PeerDescription(pid: peer.pid, uid: peer.uid, executable: exe)))
        }
        let identity = ProcessIdentity(executable: exe, file: FileIdentity(device: UInt64(running.st_dev), inode: UInt64(running.st_ino)),
                                       sandbox: sandbox)
        return check(identity, peer: peer, in: registry, connecting: true).map { PeerIdentification(app: $0, identity: identity) }
    }

    /// Whether a host peer runs outside the agent's pid or user namespace (compared through its
    /// pidfd when the kernel can, else through `/proc/PID/ns`), and why; `nil` when it runs in both.
    func namespaceProblem(pid: Int32, pidfd: Int32) -> String? {
        for kind in [NamespaceKind.pid, .user] {
            var own = stat()
            guard stat("/proc/self/ns/\(kind.rawValue)", &own) == 0 else {
                return "the agent could not read its own \(kind.rawValue) namespace (\(Self.errnoText())); it admits no process until it can"
            }
            var peerNamespace: FileIdentity?
            var failure = ""
            if pidfd >= 0 {
                switch PeerSocket.namespace(kind, pidfd: pidfd) {
                case .success(let namespace): peerNamespace = namespace
                case .failure(let error): failure = error.description
                }
            }
            if peerNamespace == nil {
                var info = stat()
                if stat("\(procRoot)/\(pid)/ns/\(kind.rawValue)", &info) == 0 {
                    peerNamespace = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
                } else if failure.isEmpty || errno != ENOENT {
                    failure = Self.errnoText()
                }
            }
            guard let peerNamespace else {
                return "the agent could not read the \(kind.rawValue) namespace of process \(pid) (\(failure)); it gets no keys and no policy"
            }
            guard peerNamespace == FileIdentity(device: UInt64(own.st_dev), inode: UInt64(own.st_ino)) else {
                return "process \(pid) runs in another \(kind.rawValue) namespace than the agent's (made with unshare, or a container): inside a namespace of its own a process may attach credentials naming any process of it, so the agent cannot tell who writes on the connection; it gets no keys and no policy (run the app on the host, or as a Flatpak app)"
            }
        }
        return nil
    }

    /// Re-checks a connected session against `registry` (a policy install) from what was read
    /// when it connected and from the files at the registered paths: nothing of the process is
    /// read again.
    func match(_ identity: ProcessIdentity, peer: PeerCredentials, in registry: DeviceRegistry) -> Result<RegisteredApp, RefusalMessage> {
        check(identity, peer: peer, in: registry, connecting: false)
    }

    /// The registry's verdict on a process that runs `identity`. `connecting`: the process is
    /// being identified now, and its `/proc` files may be read (the interpreter check, the pin
    /// through `/proc/PID/exe`); otherwise only host files are read (the pin through the file at
    /// the registered path, which must still be the same device and inode).
    private func check(_ identity: ProcessIdentity, peer: PeerCredentials, in registry: DeviceRegistry,
                       connecting: Bool) -> Result<RegisteredApp, RefusalMessage> {
        let exe = identity.executable
        let description = PeerDescription(pid: peer.pid, uid: peer.uid, executable: exe)
        func refuse(_ reason: RefusalReason, _ message: String) -> Result<RegisteredApp, RefusalMessage> {
            .failure(RefusalMessage(reason: reason, message: message, peer: description))
        }
        let app: RegisteredApp
        /// The host path of the file the process must run.
        let registeredFile: String
        switch identity.sandbox {
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
        // The file at the registered path is the one the process runs: the same inode, so its
        // owner, mode and bytes are the running file's.
        var registered = stat()
        guard stat(registeredFile, &registered) == 0,
              UInt64(registered.st_dev) == identity.file.device, UInt64(registered.st_ino) == identity.file.inode else {
            return refuse(.executableChanged, "the file at \(registeredFile) is not the one process \(peer.pid) runs (replaced since it started); restart the app")
        }
        // Whoever can write the file could make any program this app; an interpreter (or the
        // loader) runs any script or binary it is handed.
        let me = geteuid()
        guard registered.st_uid == 0 || registered.st_uid == me, (registered.st_mode & 0o022) == 0 else {
            return refuse(.unsafeExecutable, "\(exe) is registered as \(app.id), but it is owned by uid \(registered.st_uid) with mode \(String(registered.st_mode & 0o7777, radix: 8)): only root or the agent's user may own it and nobody else may write it; it gets no keys and no policy (install it root-owned, mode 0755)")
        }
        // Unpinned, a file a user other than root can replace is whatever that user makes it. An
        // agent of the app's own user only warns (at policy installs): that user can puppet its
        // own apps anyway (docs/THREAT-MODEL.md). An agent that serves other users (its own
        // system user) refuses it.
        if app.sha256 == nil, !app.isFlatpak, peer.uid != me, peer.uid != 0,
           let who = Self.replacer(of: registeredFile, file: registered) {
            return refuse(.unsafeExecutable, "\(exe) is registered as \(app.id) without a sha256 pin, and \(who) can replace it with any program; an agent that runs as its own user refuses such an app to other users (uid \(peer.uid)): it gets no keys and no policy (pin its sha256 in the device policy, or install it root-owned in a root-owned folder)")
        }
        // Whether a file is an interpreter does not depend on the registry: checked once, at connect.
        if connecting, isInterpreter(pid: peer.pid, size: Int64(registered.st_size), device: identity.file.device, inode: identity.file.inode) {
            return refuse(.interpreter, "\(exe) is registered as \(app.id), but it is a copy or link of an interpreter or the dynamic loader of this system, which runs any script it is given; it gets no keys and no policy (register the app's own binary)")
        }
        if let pinned = app.sha256 {
            let digest = connecting ? sha256(ofExecutableOf: peer.pid) : sha256(ofFile: registeredFile, expecting: identity.file)
            guard let digest else {
                return refuse(.unidentified, connecting
                    ? "the agent could not read the executable of process \(peer.pid) to check its SHA-256; it gets no keys and no policy"
                    : "the agent could not read \(registeredFile), the file process \(peer.pid) runs, to check its SHA-256 against the new pin; it gets no keys and no policy")
            }
            guard digest == pinned.lowercased() else {
                return refuse(.hashMismatch, "\(exe) is registered as \(app.id), but its SHA-256 is not the one the device policy pins; it gets no keys and no policy (reinstall the app, or update the pin)")
            }
        }
        guard app.isAppConnect, app.policy != nil else {
            return refuse(.notAppConnect, "\(exe) is registered as \(app.id), which does not link the library: it has no policy and gets no keys")
        }
        return .success(app)
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }

    /// Who other than root could put another program at `path` (`file` is its `stat`): its
    /// owner when that is not root, whoever may write it (group or others), or whoever may write
    /// its folder (a folder not root's, or writable by group or others); `nil` when only root can.
    static func replacer(of path: String, file: stat) -> String? {
        if file.st_uid != 0 { return "its owner, uid \(file.st_uid)" }
        if file.st_mode & 0o022 != 0 { return "whoever may write it (mode \(String(file.st_mode & 0o7777, radix: 8)))" }
        let parent = DurableFile.parent(of: path)
        var folder = stat()
        guard stat(parent, &folder) == 0 else { return "whoever may write \(parent) (the agent could not examine it)" }
        guard folder.st_uid != 0 || folder.st_mode & 0o022 != 0 else { return nil }
        return "whoever may write \(parent) (owner uid \(folder.st_uid), mode \(String(folder.st_mode & 0o7777, radix: 8)))"
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
        cachedSHA256(of: "\(procRoot)/\(pid)/exe", expecting: nil)
    }

    /// The SHA-256 (lower-case hex) of the file at `path`, if it is the file `expected` (device
    /// and inode, checked on the opened file); cached as ``sha256(ofExecutableOf:)``.
    func sha256(ofFile path: String, expecting expected: FileIdentity) -> String? {
        cachedSHA256(of: path, expecting: expected)
    }

    private func cachedSHA256(of path: String, expecting expected: FileIdentity?) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        if let expected, expected != FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)) { return nil }
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
