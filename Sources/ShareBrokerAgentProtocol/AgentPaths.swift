import Foundation

/// Where the agent and its clients look by default: one runtime folder shared by every process
/// of the user, holding the agent's socket, its state folder and the host pasteboard.
///
/// The folder is, in order: `$SHAREBROKER_RUNTIME_DIR`; `$XDG_RUNTIME_DIR/sharebroker`;
/// `/tmp/sharebroker-UID`. `SHAREBROKER_SOCKET` and `SHAREBROKER_PASTEBOARD` override one path
/// each. Tests and the demo set `SHAREBROKER_RUNTIME_DIR` to a temporary folder.
public enum AgentPaths {
    /// The runtime folder.
    public static var runtimeDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["SHAREBROKER_RUNTIME_DIR"], !explicit.isEmpty { return explicit }
        if let xdg = environment["XDG_RUNTIME_DIR"], !xdg.isEmpty { return xdg + "/sharebroker" }
        return "/tmp/sharebroker-\(getuid())"
    }

    /// The agent's socket.
    public static var socket: String {
        ProcessInfo.processInfo.environment["SHAREBROKER_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            ?? runtimeDirectory + "/agent.sock"
    }

    /// The host pasteboard file.
    public static var pasteboard: String {
        ProcessInfo.processInfo.environment["SHAREBROKER_PASTEBOARD"].flatMap { $0.isEmpty ? nil : $0 }
            ?? runtimeDirectory + "/pasteboard"
    }

    /// The agent's state folder.
    public static var state: String { runtimeDirectory + "/agent-state" }

    /// The folder of the embedded default device's app executables: copy a binary to
    /// `apps/acme-notes` to make it the notes app.
    public static var apps: String { runtimeDirectory + "/apps" }
}
