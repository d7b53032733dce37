import ShareBrokerAgentProtocol

/// Administers a running agent over its socket: reload the device policy, install a new one,
/// read its status. The agent accepts admin connections only from its own user or root.
///
/// ```swift
/// let response = try AdminClient.send(AdminRequest(command: "reload"))
/// print(response.message)
/// ```
public enum AdminClient {
    /// Sends one request and returns the agent's response.
    ///
    /// - Throws: ``AgentClientError``: agent unavailable, refused (not the agent's user), timed
    ///   out, or an unexpected answer.
    ///
    /// The socket is ``AgentPaths/administrationSocket`` unless given; the agent must run as one of
    /// `agentUserIDs`, by default this user or root, `SHAREBROKER_AGENT_UID` when set, and at the
    /// system service's socket also the system service's user.
    public static func send(_ request: AdminRequest, socketPath: String = AgentPaths.administrationSocket,
                            timeoutMilliseconds: Int = 10_000,
                            agentUserIDs: [UInt32]? = nil) throws(AgentClientError) -> AdminResponse {
        let socket = try FrameSocket.connect(path: socketPath,
                                             agentUserIDs: agentUserIDs ?? FrameSocket.administrationAgentUserIDs(path: socketPath))
        defer { socket.shutdown() }
        try socket.write(AgentMessage.frame(.hello, HelloMessage(role: .admin)))
        try socket.write(AgentMessage.frame(.adminRequest, request))
        let frame = try socket.read(timeoutMilliseconds: timeoutMilliseconds)
        switch frame.type {
        case .adminResponse:
            do { return try AgentMessage.decode(AdminResponse.self, from: frame.body) } catch { throw .protocolError(error.description) }
        case .refused:
            let refusal = (try? AgentMessage.decode(RefusalMessage.self, from: frame.body))
                ?? RefusalMessage(reason: .notAdministrator, message: "refused", peer: nil)
            throw .refused(refusal)
        case .error:
            throw .protocolError((try? AgentMessage.decode(ErrorMessage.self, from: frame.body))?.message ?? "error")
        default:
            throw .protocolError("expected an admin response, got a \(frame.type) frame")
        }
    }
}
