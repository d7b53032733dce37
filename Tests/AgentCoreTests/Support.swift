import Foundation
import Logging
import ShareBrokerAgent
import ShareBrokerAgentProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A value behind an `NSLock` (a pthread mutex, which ThreadSanitizer sees).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// An `AgentConnection` that records what the core does with it, in order.
final class RecordingConnection: AgentConnection {
    enum Event: Sendable, Equatable {
        case admitted(UInt64)
        case frame(AgentFrame, sensitive: Bool)
        case closed
    }

    private let log = Locked<[Event]>([])
    /// Called for each frame as it is sent, on the sender's thread, before it is recorded.
    private let onSend: (@Sendable (AgentFrame) -> Void)?

    init(onSend: (@Sendable (AgentFrame) -> Void)? = nil) {
        self.onSend = onSend
    }

    func send(_ frames: [AgentFrame], sensitive: Bool) {
        for frame in frames { onSend?(frame) }
        log.withLock { $0.append(contentsOf: frames.map { .frame($0, sensitive: sensitive) }) }
    }

    func admitted(session id: UInt64) { log.withLock { $0.append(.admitted(id)) } }

    func close() { log.withLock { $0.append(.closed) } }

    var events: [Event] { log.withLock { $0 } }

    var frames: [AgentFrame] {
        events.compactMap { if case .frame(let frame, _) = $0 { frame } else { nil } }
    }

    func frames(_ type: AgentFrameType) -> [AgentFrame] { frames.filter { $0.type == type } }

    func decoded<T: Decodable>(_ type: AgentFrameType, as: T.Type) throws -> [T] {
        try frames(type).map { try AgentMessage.decode(T.self, from: $0.body) }
    }

    var session: UInt64? {
        events.lazy.compactMap { if case .admitted(let id) = $0 { id } else { nil } }.first
    }

    var isClosed: Bool { events.contains(.closed) }

    /// Group key ids of each key frame, in order (empty: "no keys").
    func keyFrames() throws -> [[UInt32]] {
        try frames(.keys).map { try KeyRingMessage.withEntries(in: $0.body) { group, _ in group.map(\.id) } }
    }

    /// File key ids (this app's own, newest first) of each key frame, in order (empty: "no keys").
    func fileKeyFrames() throws -> [[UInt32]] {
        try frames(.keys).map { try KeyRingMessage.withEntries(in: $0.body) { _, files in files.map(\.id) } }
    }
}

/// Polls `condition` until it holds or `seconds` pass (generous: the sanitizers slow things down).
func eventually(within seconds: Double = 60, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try condition()
}

/// Runs each job on a thread of its own, all at once, and returns when all have returned.
func onThreads(_ jobs: [@Sendable () -> Void]) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let group = DispatchGroup()
        for job in jobs {
            group.enter()
            Thread {
                job()
                group.leave()
            }.start()
        }
        group.notify(queue: .global()) { continuation.resume() }
    }
}

/// An agent's world in a temporary folder: a state folder, a device policy file, executables
/// under `apps/`, and a `proc/` the core's `PeerIdentifier` reads instead of `/proc`, where
/// `proc/PID/exe` is a symlink to the executable "process PID" runs.
final class CoreFixture: @unchecked Sendable {
    struct App {
        var id: String
        var executable: String
        /// The policy JSON, or `nil` for an app that does not link the library.
        var policy: String?
        var sha256: String? = nil
        var users: [UInt32]? = nil
    }

    static let secureCopy = #"{"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "secureCopy", "print": "authorized"}"#
    static let noPrint = #"{"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "secureCopy", "print": "unauthorized"}"#
    static let unauthorized = #"{"auth": "unauthorized", "openIn": "appConnectApps", "pasteboard": "secureCopy"}"#

    let root: String
    var proc: String { root + "/proc" }
    var apps: String { root + "/apps" }
    var state: String { root + "/state" }
    var policyFile: String { root + "/device.json" }
    var notes: String { apps + "/notes" }
    var viewer: String { apps + "/viewer" }
    var sheets: String { apps + "/sheets" }
    var stranger: String { apps + "/stranger" }

    init() throws {
        root = "/tmp/sbcore-\(getpid())-\(UUID().uuidString.prefix(8))"
        for folder in [proc, apps] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        for path in [notes, viewer, sheets, stranger] { try installExecutable(at: path) }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root)
    }

    /// A file that stands for an app's binary: its own bytes (so its SHA-256 is its own), an odd
    /// size no interpreter of the system has, owned by us, mode 0755.
    func installExecutable(at path: String) throws {
        var bytes = Array("#!/not/an/interpreter \(path)\n".utf8)
        bytes += [UInt8](repeating: UInt8(ascii: "x"), count: 7_777 - bytes.count % 7_777)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        guard chmod(path, 0o755) == 0 else { throw CocoaError(.fileWriteNoPermission) }
    }

    /// "Process `pid` runs `executable`": `proc/PID/exe` points at it, and `proc/PID/ns/` at
    /// this process's namespaces.
    func run(pid: Int32, _ executable: String) throws {
        let folder = proc + "/\(pid)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: folder + "/exe")
        try FileManager.default.createSymbolicLink(atPath: folder + "/exe", withDestinationPath: executable)
        // A host process in the agent's own pid and user namespaces (this test process's).
        try FileManager.default.createDirectory(atPath: folder + "/ns", withIntermediateDirectories: true)
        for kind in ["pid", "user"] where !FileManager.default.fileExists(atPath: folder + "/ns/" + kind) {
            try FileManager.default.createSymbolicLink(atPath: folder + "/ns/" + kind, withDestinationPath: "/proc/self/ns/" + kind)
        }
    }

    /// A process of the agent's user, running `executable`.
    func peer(_ pid: Int32, running executable: String, uid: UInt32 = geteuid()) throws -> PeerCredentials {
        try run(pid: pid, executable)
        return PeerCredentials(pid: pid, uid: uid, gid: getegid())
    }

    func document(_ apps: [App]) -> String {
        let entries = apps.map { app -> String in
            var fields = [#""id": "\#(app.id)""#, #""executable": "\#(app.executable)""#]
            if let sha = app.sha256 { fields.append(#""sha256": "\#(sha)""#) }
            if let users = app.users { fields.append(#""users": [\#(users.map(String.init).joined(separator: ", "))]"#) }
            if let policy = app.policy {
                fields.append(#""appConnect": true"#)
                fields.append(#""policy": \#(policy)"#)
            }
            return "{" + fields.joined(separator: ", ") + "}"
        }
        return #"{"format": "sharebroker.device", "version": 1, "apps": ["# + entries.joined(separator: ",\n") + "]}\n"
    }

    /// The standard device: notes and viewer (SecureCopy, authorized), sheets (not AppConnect).
    func standardApps(notes notesPolicy: String = secureCopy, viewer viewerPolicy: String = secureCopy) -> [App] {
        [App(id: "com.acme.notes", executable: notes, policy: notesPolicy),
         App(id: "com.acme.viewer", executable: viewer, policy: viewerPolicy),
         App(id: "org.example.sheets", executable: sheets, policy: nil)]
    }

    func writePolicy(_ text: String) throws {
        try text.write(toFile: policyFile, atomically: true, encoding: .utf8)
    }

    /// A core over this folder, reading `device.json` here as its `--policy`.
    func makeCore(apps: [App]? = nil) throws -> AgentCore {
        try writePolicy(document(apps ?? standardApps()))
        let configuration = AgentConfiguration(stateDirectory: state, socketPath: root + "/agent.sock",
                                               policyFile: policyFile, systemLog: .off)
        return try AgentCore(configuration: configuration, logger: Logger(label: "agentcore-tests") { _ in SwiftLogNoOpLogHandler() },
                             identifier: PeerIdentifier(procRoot: proc))
    }

    /// Admits `peer` on a new recording connection and asks for its keys, as a client does.
    func connect(_ core: AgentCore, _ peer: PeerCredentials, requestKeys: Bool = true,
                 onSend: (@Sendable (AgentFrame) -> Void)? = nil) throws -> (connection: RecordingConnection, session: UInt64) {
        let connection = RecordingConnection(onSend: onSend)
        core.admitApp(peer: peer, connection: connection)
        let session = try #require(connection.session, "pid \(peer.pid) was not admitted: \(connection.events)")
        if requestKeys { core.keysRequested(session: session) }
        return (connection, session)
    }

    /// The JSON objects of a log in the state folder (`acknowledgments.jsonl`, `audit.jsonl`).
    func logRecords(_ name: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: state + "/" + name, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }
}

extension AdminResponse {
    /// The current key id as the key frames carry it.
    var currentKey: UInt32? { currentKeyID.flatMap { UInt32($0.dropFirst(2), radix: 16) } }
}
