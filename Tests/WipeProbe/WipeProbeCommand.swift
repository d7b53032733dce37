import ArgumentParser
import Foundation
import ShareBroker
import Synchronization
import ShareBrokerTesting

/// `sharebroker-wipe-probe`: the crash tests' probe of the wipe journal, a test-only executable
/// (Tests/WipeProbe), not part of the shipped `sharebroker` tool.
///
/// `--mode retire` lays out an app's sensitive data under `<directory>/data` (a registered
/// folder with nested, hidden and non-UTF-8-named files, a registered file, two stored
/// credentials, a stand-in for key material, each holding `--marker`), plus one file that is
/// not registered; it starts a broker journaling in `<directory>/state`, makes it ready and
/// authorized, then retires it. `--mode start` makes the same registrations (no data) and
/// starts, which finishes an interrupted wipe, then delivers a first policy.
///
/// `--crash-at` kills the process with SIGKILL at a point of the wipe (``WipeCrashPoint``):
/// `journal`, `ran:N`, `recorded:N` or `reported`. Every event is one JSON object per line on
/// standard output, written unbuffered so nothing is lost to the kill.
@main
struct WipeProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sharebroker-wipe-probe",
        abstract: "Crash-test probe of the wipe journal (for the test suite).")

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case retire, start
    }

    @Option(help: "The folder holding the app's data and state.")
    var directory: String

    @Option(help: "retire: lay out data, become ready, retire. start: start again (finishes an interrupted wipe).")
    var mode: Mode

    @Option(help: "The plaintext every sensitive file and credential holds.")
    var marker: String = "SHAREBROKER-WIPE-PROBE-MARKER"

    @Option(help: "Kill the process at this point of the wipe: journal, ran:N, recorded:N, reported.")
    var crashAt: String?

    /// The file that is not registered: a retire must leave it alone.
    static let unregisteredContent = "not sensitive: a retire must keep this file"

    func validate() throws {
        if let crashAt, Self.crashPoint(crashAt) == nil {
            throw ValidationError("--crash-at must be journal, ran:N, recorded:N or reported (N from 1)")
        }
    }

    static func crashPoint(_ text: String) -> WipeCrashPoint? {
        switch text {
        case "journal": return .journalWritten
        case "reported": return .reported
        default:
            let parts = text.split(separator: ":")
            guard parts.count == 2, let n = Int(parts[1]), n >= 1 else { return nil }
            switch parts[0] {
            case "ran": return .stepRan(n)
            case "recorded": return .stepRecorded(n)
            default: return nil
            }
        }
    }

    func run() throws {
        let data = directory + "/data"
        if mode == .retire { try layOut(data) }
        let sink = ProbeSink()
        var platform = try Platform.embedded(entitling: "com.acme.notes")
        platform.reportSink = sink
        let registry = SensitiveDataRegistry(credentialStore: FileCredentialStore(directory: data + "/credentials"))
        try registry.registerLocation(data + "/docs")
        try registry.registerLocation(data + "/single.txt")
        try registry.registerCredential(id: "oauth-token")
        try registry.registerCredential(id: "refresh-token")
        if mode == .retire {
            for id in registry.credentialIDs {
                try registry.credentialStore?.saveCredential(Array(marker.utf8), id: id)
            }
        }
        let erasers = registry.erasers + [KeyFileEraser(path: data + "/keys.bin")]
        let slot = BrokerSlot()
        let broker = ShareBroker(appID: "com.acme.notes", platform: platform, configuration: ShareBroker.Configuration(
            stateDirectory: directory + "/state",
            erasers: erasers.map { ObservingEraser(inner: $0, slot: slot) }))
        slot.set(broker)
        if let crashAt { WipeJournal.testCrashPoint = Self.crashPoint(crashAt) }
        let journalPath = directory + "/state/" + WipeJournal.fileName

        emit(["event": "before-start", "policy": Self.policyState(broker),
              "journal": FileManager.default.fileExists(atPath: journalPath)])
        try broker.start(delegate: ProbeDelegate())
        emit(["event": "started", "policy": Self.policyState(broker),
              "auth": "\(broker.currentSnapshot.authState)",
              "journal": FileManager.default.fileExists(atPath: journalPath)])
        switch mode {
        case .retire:
            try broker.apply(PolicyUpdate(auth: .authorized, openIn: .authorized))
            emit(["event": "authorized", "policy": Self.policyState(broker)])
            try broker.apply(PolicyUpdate(auth: .retired, authMessage: "retired by the probe"))
        case .start:
            try broker.apply(PolicyUpdate(auth: .authorized, openIn: .authorized))
        }
        emit(["event": "done", "policy": Self.policyState(broker),
              "journal": FileManager.default.fileExists(atPath: journalPath)])
    }

    /// `notReady`, or the auth state of the readable policy.
    static func policyState(_ broker: ShareBroker) -> String {
        do {
            return "\(try broker.policy().authState)"
        } catch {
            return error == .notReady ? "notReady" : "\(error)"
        }
    }

    private func layOut(_ data: String) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: data + "/docs/sub/deeper", withIntermediateDirectories: true)
        try files.createDirectory(atPath: data + "/outside", withIntermediateDirectories: true)
        let secret = Data(marker.utf8)
        for path in ["/docs/a.txt", "/docs/.hidden", "/docs/sub/b.txt", "/docs/sub/deeper/c.bin", "/single.txt", "/keys.bin"] {
            guard files.createFile(atPath: data + path, contents: secret) else {
                throw ValidationError("could not create \(data + path)")
            }
        }
        // A name that is not UTF-8: the wipe must remove it too.
        let rawName = Array((data + "/docs/").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), CChar(bitPattern: 0xFE), 0x78, 0]
        let fd = open(rawName, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw ValidationError("could not create the non-UTF-8 file (errno \(errno))") }
        _ = marker.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
        guard files.createFile(atPath: data + "/outside/keep.txt", contents: Data(Self.unregisteredContent.utf8)) else {
            throw ValidationError("could not create \(data)/outside/keep.txt")
        }
    }
}

/// Writes one JSON object as a line on standard output, unbuffered.
private func emit(_ object: [String: Any]) {
    guard let json = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
    FileHandle.standardOutput.write(json + Data("\n".utf8))
}

/// Reports every wipe as an event.
private final class ProbeSink: ServerReportSink {
    func acknowledged(_ record: AcknowledgmentRecord) {}
    func blockedAttempt(_ record: BlockedAttemptRecord) {}
    func wiped(_ report: WipeReport) {
        emit(["event": "wiped", "erased": report.erased, "failed": report.failed,
              "resumed": report.resumedAfterInterruption])
    }
}

/// Reports ready and authorization changes as events.
private final class ProbeDelegate: ShareBrokerDelegate {
    func appConnectIsReady() { emit(["event": "ready"]) }
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment {
        emit(["event": "auth", "state": "\(state)"])
        return .applied
    }
}

/// Wraps an eraser: before erasing, reports what a reader of the library sees at that moment.
private struct ObservingEraser: SensitiveDataEraser {
    let inner: any SensitiveDataEraser
    /// The broker, set once it is made (its configuration holds this eraser).
    let slot: BrokerSlot

    var wipeName: String { inner.wipeName }

    func eraseSensitiveData() throws {
        guard let broker = slot.broker else { return try inner.eraseSensitiveData() }
        let transfer = try? broker.openIn(Array("probe".utf8), named: "probe.txt",
                                         target: "com.acme.viewer")
        emit(["event": "step", "name": wipeName, "policy": WipeProbeCommand.policyState(broker),
              "openIn": transfer.map { $0.delivered ? "delivered" : "dummy" } ?? "error",
              "auth": "\(broker.currentSnapshot.authState)"])
        try inner.eraseSensitiveData()
    }
}

/// The broker an ``ObservingEraser`` observes, set after the broker is made. Weak: the broker
/// holds its erasers, so a strong reference would be a cycle (a leak that LeakSanitizer reports at
/// exit, failing `make sanitize`). Erasers run only inside the broker.
private final class BrokerSlot: Sendable {
    private struct Weak { weak var broker: ShareBroker? }
    private let storage = Mutex(Weak())

    var broker: ShareBroker? { storage.withLock { $0.broker } }

    func set(_ broker: ShareBroker) { storage.withLock { $0.broker = broker } }
}

/// A stand-in for key material kept in a file: the eraser unlinks it.
private struct KeyFileEraser: SensitiveDataEraser {
    let path: String
    var wipeName: String { "keys" }
    func eraseSensitiveData() throws {
        if unlink(path) != 0 && errno != ENOENT {
            throw ValidationError("could not unlink \(path) (errno \(errno))")
        }
    }
}
