#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the agent and its clients look by default: one runtime folder shared by every process
/// of the user, holding the agent's socket, its state folder and the host pasteboard.
///
/// The folder is, in order: `$SHAREBROKER_RUNTIME_DIR`; `$XDG_RUNTIME_DIR/sharebroker`.
/// There is no shared fallback (a predictable folder in `/tmp` could be created first by another
/// user): without either variable, ``resolvedRuntimeDirectory()`` throws and
/// ``runtimeDirectory`` is ``unsetRuntimeDirectory``, a path under `/proc` that nobody, not even
/// root, can create. `SHAREBROKER_SOCKET` and `SHAREBROKER_PASTEBOARD` override one path each.
/// Tests and the demo set `SHAREBROKER_RUNTIME_DIR` to a temporary folder.
public enum AgentPaths {
    /// What ``runtimeDirectory`` is when neither variable is set: nothing can be created there.
    public static let unsetRuntimeDirectory = "/proc/sharebroker-needs-XDG_RUNTIME_DIR"

    /// Why there is no runtime folder.
    public struct UnsetError: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String {
            "neither XDG_RUNTIME_DIR nor SHAREBROKER_RUNTIME_DIR is set: set XDG_RUNTIME_DIR (a folder only this user can write, as a login session's /run/user/UID) or SHAREBROKER_RUNTIME_DIR, or give --state and --socket; there is no shared fallback in /tmp"
        }
    }

    /// The runtime folder, or why there is none.
    public static func resolvedRuntimeDirectory() throws(UnsetError) -> String {
        if let explicit = variable("SHAREBROKER_RUNTIME_DIR") { return explicit }
        if let xdg = variable("XDG_RUNTIME_DIR") { return xdg + "/sharebroker" }
        throw UnsetError()
    }

    /// The runtime folder (``unsetRuntimeDirectory`` when there is none).
    public static var runtimeDirectory: String {
        (try? resolvedRuntimeDirectory()) ?? unsetRuntimeDirectory
    }

    /// The agent's socket.
    public static var socket: String {
        variable("SHAREBROKER_SOCKET") ?? runtimeDirectory + "/agent.sock"
    }

    /// The host pasteboard file.
    public static var pasteboard: String {
        variable("SHAREBROKER_PASTEBOARD") ?? runtimeDirectory + "/pasteboard"
    }

    /// The system service's socket (deploy/systemd/sharebrokerd.service: `RuntimeDirectory=sharebroker`).
    public static let systemSocket = "/run/sharebroker/agent.sock"

    /// The system service's user (deploy/systemd/sharebroker.sysusers).
    public static let systemUser = "sharebroker"

    /// The socket administration commands (`sharebroker admin`, `sharebrokerd --reload` and
    /// `--status`) use when none is given: `$SHAREBROKER_SOCKET`, else
    /// `$SHAREBROKER_RUNTIME_DIR/agent.sock`, else this user's own agent's socket when there is
    /// one, else the system service's ``systemSocket`` when there is one. So an administrator's
    /// root shell reaches the system service with no variable set, and a developer's shell its
    /// own agent.
    public static var administrationSocket: String {
        if variable("SHAREBROKER_SOCKET") != nil || variable("SHAREBROKER_RUNTIME_DIR") != nil { return socket }
        let own = socket
        if !own.hasPrefix(unsetRuntimeDirectory), access(own, F_OK) == 0 { return own }
        if access(systemSocket, F_OK) == 0 { return systemSocket }
        return own
    }

    /// The agent's state folder.
    public static var state: String { runtimeDirectory + "/agent-state" }

    /// The folder of the embedded default device's app executables: copy a binary to
    /// `apps/acme-notes` to make it the notes app.
    public static var apps: String { runtimeDirectory + "/apps" }

    /// The environment variable `name`, or `nil` when it is unset or empty.
    static func variable(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}
