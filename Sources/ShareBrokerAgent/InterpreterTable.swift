#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The interpreters and dynamic loaders of this system: programs that run whatever script or
/// binary they are handed. A registered "app" that is one of them would hand the app's keys and
/// policy to any script, so ``PeerIdentifier`` refuses it (``RefusalReason/interpreter``).
///
/// An interpreter is a file in one of ``standardFolders`` whose name is an interpreter's exact
/// name or a versioned form of it (`python3`, `python3.11`, `perl5.36`, `lua5.4`, `guile-3.0`;
/// `ld-linux-x86-64.so.2` for the loader): `shotwell`, `nodepad` or `sharebroker` are not. A
/// registered file is refused when it is the same file as one (same device and inode: a hard
/// link, or the path an alternatives link resolves to) or a copy (same size and SHA-256).
///
/// The table is read at the first check and read again whenever one of the folders changes
/// (its inode, modification or change time differ), so an interpreter installed while the agent
/// runs is known at the next identification.
package final class InterpreterTable: Sendable {
    /// Interpreters' names, lower-case, without a version.
    package static let names: Set<String> = [
        "python", "pypy", "perl", "ruby", "node", "nodejs", "deno", "bun", "bash", "sh", "dash", "zsh", "ksh",
        "mksh", "yash", "fish", "tcsh", "csh", "lua", "luajit", "php", "tclsh", "wish", "java", "busybox",
        "gdb", "env", "pwsh", "r", "rscript", "guile", "awk", "gawk", "mawk", "nawk", "expect", "osh",
    ]

    /// Where interpreters are installed (and `/etc/alternatives`, whose links name the chosen ones).
    package static let standardFolders = [
        "/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin", "/lib64", "/usr/lib64",
        "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib", "/etc/alternatives",
    ]

    /// The table of this system's folders.
    package static let system = InterpreterTable(folders: standardFolders)

    private struct Stamp: Equatable {
        var device: UInt64, inode: UInt64, modified: Int, modifiedNanoseconds: Int, changed: Int, changedNanoseconds: Int
    }

    private struct FileID: Hashable {
        var device: UInt64, inode: UInt64
    }

    private struct Table {
        /// Each folder's stamp when the table was read (`nil`: it did not exist).
        var stamps: [Stamp?]
        var files: Set<FileID>
        /// Paths by size, for the copy check.
        var bySize: [Int64: [String]]
        /// SHA-256 of the paths hashed so far.
        var digests: [String: String]
    }

    private let folders: [String]
    private let table = Mutex<Table?>(nil)

    /// A table of the interpreters in `folders`.
    package init(folders: [String]) {
        self.folders = folders
    }

    /// Whether a file named `name` is an interpreter or a dynamic loader by its name: an
    /// interpreter's exact name, or that name followed by a version (digits, `.`, `-`, `_`, and a
    /// final `m` or `d` as in `python3.7m`).
    package static func isInterpreterName(_ name: String) -> Bool {
        let lower = name.lowercased()
        if lower.hasPrefix("ld-linux") || lower.hasPrefix("ld-musl") || lower == "ld.so" { return lower.contains(".so") }
        var base = Substring(lower)
        if let last = base.last, last == "m" || last == "d", base.dropLast().last?.isNumber == true { base = base.dropLast() }
        while let last = base.last, last.isNumber || last == "." || last == "-" || last == "_" { base = base.dropLast() }
        // A version must start with a digit (or a separator and a digit): `sh-` or `python.` are
        // not versions of anything.
        let version = lower.dropFirst(base.count)
        if !version.isEmpty, !(version.first?.isNumber ?? false) {
            guard version.count > 1, version.dropFirst().first?.isNumber == true else { return false }
        }
        return names.contains(String(base))
    }

    /// Whether the file at (`device`, `inode`) of `size` bytes is an interpreter of this system:
    /// the same file as one, or a copy (`digest` gives its SHA-256, asked only when an
    /// interpreter has its size).
    package func contains(device: UInt64, inode: UInt64, size: Int64, digest: () -> String?) -> Bool {
        let current = refreshed()
        if current.files.contains(FileID(device: device, inode: inode)) { return true }
        guard let candidates = current.bySize[size], let wanted = digest() else { return false }
        for path in candidates {
            let known = table.withLock { $0?.digests[path] }
            guard let found = known ?? PeerIdentifier.sha256(ofFile: path) else { continue }
            if known == nil { table.withLock { $0?.digests[path] = found } }
            if found == wanted { return true }
        }
        return false
    }

    /// The table, read again when a folder changed since it was read.
    private func refreshed() -> Table {
        let stamps = folders.map(Self.stamp)
        if let current = table.withLock({ $0 }), current.stamps == stamps { return current }
        let fresh = read(stamps: stamps)
        table.withLock { $0 = fresh }
        return fresh
    }

    private static func stamp(_ folder: String) -> Stamp? {
        var info = stat()
        guard stat(folder, &info) == 0 else { return nil }
        return Stamp(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), modified: info.st_mtim.tv_sec,
                     modifiedNanoseconds: info.st_mtim.tv_nsec, changed: info.st_ctim.tv_sec,
                     changedNanoseconds: info.st_ctim.tv_nsec)
    }

    private func read(stamps: [Stamp?]) -> Table {
        var files = Set<FileID>()
        var bySize: [Int64: [String]] = [:]
        for folder in folders {
            guard let dir = opendir(folder) else { continue }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                // In place, up to the NUL: glibc sizes each record to its name (d_reclen), so
                // copying the whole 256-byte d_name reads past the last record of opendir's
                // buffer (AddressSanitizer: heap-buffer-overflow, seen by AgentCoreTests).
                let name = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                    tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) {
                        String(cString: $0)
                    }
                }
                guard Self.isInterpreterName(name) else { continue }
                var info = stat()
                let path = folder + "/" + name
                guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
                      (info.st_mode & 0o111) != 0 || name.hasPrefix("ld-") else { continue }
                guard files.insert(FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))).inserted else { continue }
                bySize[Int64(info.st_size), default: []].append(path)
            }
        }
        return Table(stamps: stamps, files: files, bySize: bySize, digests: [:])
    }
}
