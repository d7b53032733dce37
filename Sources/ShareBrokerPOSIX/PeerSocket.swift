#if canImport(Glibc)
import Glibc
#endif
import CShareBrokerSocket

/// What the kernel says about a process at the other end of a Unix socket: `SO_PEERCRED` (the
/// process that called `connect` or `listen`) or `SCM_CREDENTIALS` (the writer of some bytes).
package struct KernelCredentials: Sendable, Hashable {
    package var pid: Int32
    package var uid: UInt32
    package var gid: UInt32

    package init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// Where a peer's pidfd came from.
package enum PidfdSource: Sendable, Hashable {
    /// `SO_PEERPIDFD` (Linux 6.5+): the very process that connected, pinned by the kernel.
    case peerPidfd
    /// `pidfd_open` of the `SO_PEERCRED` pid, at accept (older kernels).
    case pidfdOpen
}

/// Unix-socket and pidfd calls (Linux), through the CShareBrokerSocket shim.
package enum PeerSocket {
    /// `SO_PEERCRED`, or the `errno` that kept it from being read.
    package static func peerCredentials(_ fd: Int32) -> Result<KernelCredentials, POSIXErrorCode32> {
        var out = sbs_credentials()
        guard sbs_peer_credentials(fd, &out) == 0 else { return .failure(POSIXErrorCode32(errno)) }
        return .success(KernelCredentials(pid: out.pid, uid: out.uid, gid: out.gid))
    }

    /// Turns `SO_PASSCRED` on: every read then carries its writer's credentials.
    package static func enablePassCredentials(_ fd: Int32) -> Bool {
        sbs_enable_pass_credentials(fd) == 0
    }

    /// One `recvmsg` into `buffer[offset...]` (at most `count` bytes): the byte count (0 at end
    /// of file) and the writer's credentials when the kernel attached them, or the `errno`.
    package static func receive(_ fd: Int32, into buffer: inout [UInt8], offset: Int, count: Int)
        -> Result<(count: Int, credentials: KernelCredentials?), POSIXErrorCode32> {
        guard offset >= 0, count >= 0, offset + count <= buffer.count else { return .failure(POSIXErrorCode32(EINVAL)) }
        var cred = sbs_credentials()
        var has: Int32 = 0
        let n = buffer.withUnsafeMutableBytes { raw -> Int in
            guard let base = raw.baseAddress else { return -1 }
            return sbs_receive(fd, base + offset, count, &cred, &has)
        }
        guard n >= 0 else { return .failure(POSIXErrorCode32(errno)) }
        return .success((n, has != 0 ? KernelCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid) : nil))
    }

    /// A pidfd for the peer of `fd` (whose `SO_PEERCRED` pid is `pid`): `SO_PEERPIDFD` when the
    /// kernel has it (and `allowPeerPidfd`), else `pidfd_open(pid)`.
    package static func peerPidfd(_ fd: Int32, pid: Int32, allowPeerPidfd: Bool = true)
        -> Result<(fd: Int32, source: PidfdSource), POSIXErrorCode32> {
        var source: Int32 = 0
        let pidfd = sbs_peer_pidfd(fd, pid, allowPeerPidfd ? 1 : 0, &source)
        guard pidfd >= 0 else { return .failure(POSIXErrorCode32(errno)) }
        return .success((pidfd, source == 1 ? .peerPidfd : .pidfdOpen))
    }

    /// The pid or user namespace of the process behind `pidfd` (device and inode of its nsfs
    /// file), through the pidfd's namespace ioctls (Linux 6.11+), or the `errno` (`ENOTTY` or
    /// `EINVAL` where the kernel lacks them; `EACCES` when the agent may not inspect the process).
    package static func namespace(_ kind: NamespaceKind, pidfd: Int32) -> Result<FileIdentity, POSIXErrorCode32> {
        var device: UInt64 = 0
        var inode: UInt64 = 0
        guard sbs_pidfd_namespace(pidfd, kind == .pid ? 0 : 1, &device, &inode) == 0 else { return .failure(POSIXErrorCode32(errno)) }
        return .success(FileIdentity(device: device, inode: inode))
    }

    /// Accepts a connection (`SOCK_CLOEXEC`): the descriptor, or -1 with `errno`.
    package static func accept(_ listener: Int32) -> Int32 {
        sbs_accept(listener)
    }

    /// An eventfd to wake a `poll`: the descriptor, or -1 with `errno`.
    package static func eventDescriptor(nonBlocking: Bool) -> Int32 {
        sbs_eventfd(nonBlocking ? 1 : 0)
    }

    /// Whether the process behind `pidfd` is still alive, and still has pid `pid` (so a
    /// `/proc/PID` read made while it was alive described it, not a process that reused the pid).
    package static func isAlive(pidfd: Int32, pid: Int32) -> Bool {
        guard sbs_pidfd_alive(pidfd) == 1 else { return false }
        return sbs_pidfd_pid(pidfd) == pid
    }
}

/// A kind of Linux namespace the agent compares.
package enum NamespaceKind: String, Sendable, Hashable {
    case pid
    case user
}

/// A file as the kernel knows it: device and inode.
package struct FileIdentity: Sendable, Hashable {
    package var device: UInt64
    package var inode: UInt64

    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// An `errno` value carried in a `Result`.
package struct POSIXErrorCode32: Error, Sendable, Hashable, CustomStringConvertible {
    package var code: Int32
    package init(_ code: Int32) { self.code = code }
    package var description: String { "\(String(cString: strerror(code))) (errno \(code))" }
}
