import Foundation
import Synchronization
import Testing

/// Issue 17: a reload of the watched policy directory under a stream of copies loses no
/// acknowledgment. Real processes: the agent with `--policy-dir`, long-lived `watch` apps, and a
/// stream of `sharebroker copy` processes from two apps while `device.json` is rewritten.
@Suite("policy directory reload under copies", .serialized, .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct ReloadUnderCopiesTests {
    /// One copy process's outcome, from its exit status and its one line of output.
    enum Outcome: Equatable, Sendable {
        case sealed, blocked, clear, other(Int32, String)
        /// The copy could not complete its handshake and wrote nothing (exit 69, "nothing was
        /// written"): closed, as a copy without the agent must be.
        case failedClosed
    }

    /// What the copy threads share with the test.
    final class CopyStream: Sendable {
        let stop = Atomic<Bool>(false)
        let outcomes = Mutex<[String: [Outcome]]>([:])
    }

    /// The device for rewrite `round`: every rewrite changes exactly one setting of each watched
    /// app (the notes app's pasteboard, the viewer's print), so each push carries one change for
    /// each of them.
    static func device(_ h: AgentHarness, round: Int, to path: String) throws {
        let notesPasteboard = round % 2 == 1 ? "unauthorized" : "secureCopy"
        let viewerPrint = round % 2 == 1 ? "unauthorized" : "authorized"
        try h.writePolicy([
            ("com.acme.notes", h.notes, #"{"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "\#(notesPasteboard)", "print": "authorized", "dragAndDrop": "appConnectApps"}"#, nil),
            ("com.acme.viewer", h.viewer, #"{"auth": "authorized", "openIn": "appConnectApps", "pasteboard": "secureCopy", "print": "\#(viewerPrint)", "dragAndDrop": "appConnectApps"}"#, nil),
            ("com.acme.locked", h.locked, AgentHarness.lockedPolicy, nil),
        ], to: path)
    }

    static func outcome(_ run: AgentHarness.Run) -> Outcome {
        let line = run.output.split(separator: "\n").first.map(String.init) ?? ""
        switch (run.status, line) {
        case (0, let l) where l.hasPrefix("copied sealed "): return .sealed
        case (0, let l) where l.hasPrefix("copied clear "): return .clear
        case (3, let l) where l.hasPrefix("blocked "): return .blocked
        case (69, ""): return run.error.hasSuffix("nothing was written\n") ? .failedClosed : .other(run.status, run.error)
        default: return .other(run.status, line + " " + run.error)
        }
    }

    @Test("Rewrites of the watched device.json while two apps copy: every push reaches every watching app, each of its acknowledgments is logged once, every copy is sealed or blocked and audited")
    func reloadUnderCopiesLosesNoAcknowledgment() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let directory = h.root + "/etc-sharebroker"
        try FileManager.default.createDirectory(atPath: directory + "/policies.d", withIntermediateDirectories: true)
        try Self.device(h, round: 0, to: directory + "/device.json")
        try h.startAgent(arguments: ["--policy-dir", directory])
        defer { h.stopAgent() }

        // Three long-lived apps: two processes of the notes app and one of the viewer.
        let watchers = try [("notes-1", h.notes), ("notes-2", h.notes), ("viewer", h.viewer)].map { name, executable in
            try h.startWatch(executable, name: name)
        }
        defer { for watcher in watchers { h.stop(watcher.process) } }
        for watcher in watchers {
            #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "attached" } })
        }
        func installs() -> [UInt64] {
            h.auditRecords.filter { $0["event"] as? String == "policy-installed" }.compactMap { ($0["generation"] as? NSNumber)?.uint64Value }
        }
        let initialInstalls = installs()

        // The copy stream: each app copies, one process after another, until the rewrites end.
        let stream = CopyStream()
        let group = DispatchGroup()
        for (name, executable) in [("notes", h.notes), ("viewer", h.viewer)] {
            group.enter()
            Thread {
                var index = 0
                while !stream.stop.load(ordering: .relaxed) {
                    index += 1
                    let result = (try? h.run(executable, ["copy"], input: "reload-test payload \(index)"))
                        .map(Self.outcome) ?? .other(-1, "did not start")
                    stream.outcomes.withLock { $0[name, default: []].append(result) }
                }
                group.leave()
            }.start()
        }

        // Rewrites, each waited for until the agent has installed it, while the copies run (and
        // while the previous push's acknowledgments are still on their way).
        let rewrites = 8
        for round in 1...rewrites {
            let before = installs().count
            try Self.device(h, round: round, to: directory + "/device.json")
            #expect(h.wait(20) { installs().count > before }, "rewrite \(round) was installed")
            // Let a few copies land between reloads.
            usleep(150_000)
        }
        stream.stop.store(true, ordering: .relaxed)
        #expect(group.wait(timeout: .now() + 60) == .success, "the copy streams ended")

        // Every watcher: every push installed since it attached reached it, and each push's
        // acknowledgments were logged (receipt logged: true) and are in acknowledgments.jsonl,
        // exactly once, under its pid.
        let pushes = Set(installs()).subtracting(initialInstalls)
        #expect(pushes.count >= rewrites, "\(pushes.sorted())")
        #expect(h.wait(20) {
            watchers.allSatisfy { watcher in
                let lines = h.jsonLines(watcher.output)
                let receipts = Set(lines.filter { $0["event"] as? String == "receipt" && $0["logged"] as? Bool == true }
                    .compactMap { $0["batch"] as? String })
                let policies = lines.filter { $0["event"] as? String == "policy" && ($0["acknowledgments"] as? Int ?? 0) > 0 }
                return policies.count >= rewrites && policies.allSatisfy { receipts.contains($0["batch"] as? String ?? "") }
            }
        }, "every watcher's acknowledgment batches were receipted as logged")

        let acknowledgments = h.acknowledgmentRecords
        for watcher in watchers {
            let pid = watcher.process.processIdentifier
            let lines = h.jsonLines(watcher.output)
            let seen = Set(lines.filter { $0["event"] as? String == "policy" }.compactMap { ($0["push"] as? NSNumber)?.uint64Value })
            #expect(pushes.isSubset(of: seen), "pid \(pid) missed pushes \(pushes.subtracting(seen).sorted())")
            let logged = acknowledgments.filter { ($0["pid"] as? NSNumber)?.int32Value == pid }
            // Each rewrite changed exactly one of this app's settings: one acknowledgment each.
            #expect(logged.count == rewrites, "pid \(pid): \(logged.count) acknowledgments logged for \(rewrites) rewrites")
            #expect(logged.allSatisfy { $0["state"] as? String == "applied" })
            let loggedPushes = logged.compactMap { ($0["push"] as? NSNumber)?.uint64Value }
            #expect(Set(loggedPushes).count == loggedPushes.count, "no push acknowledged twice by pid \(pid)")
            #expect(Set(loggedPushes).isSubset(of: pushes), "acknowledged pushes are installed pushes")
            // What the app said it acknowledged is what was logged, push by push.
            for line in lines where line["event"] as? String == "policy" {
                guard let push = (line["push"] as? NSNumber)?.uint64Value, pushes.contains(push) else { continue }
                let said = line["acknowledgments"] as? Int ?? 0
                #expect(loggedPushes.filter { $0 == push }.count == said, "pid \(pid) push \(push)")
            }
        }

        // Every copy succeeded sealed or failed closed (blocked, audited); never in the clear.
        let results = stream.outcomes.withLock { $0 }
        let notes = results["notes", default: []], viewer = results["viewer", default: []]
        #expect(!notes.isEmpty && !viewer.isEmpty, "copies ran during the rewrites")
        let notesSealed = notes.filter { $0 == .sealed }.count, notesBlocked = notes.filter { $0 == .blocked }.count
        let notesClosed = notes.filter { $0 == .failedClosed }.count
        // A copy that connected while a reload was pushed used to fail its handshake (a policy
        // frame where the key ring was expected): closed, but a failure. None may now.
        #expect(notesClosed == 0 && viewer.filter { $0 == .failedClosed }.isEmpty, "copies failed by a reload during their handshake")
        #expect(notesSealed + notesBlocked == notes.count, "notes: \(notes.filter { $0 != .sealed && $0 != .blocked })")
        #expect(notesSealed > 0 && notesBlocked > 0, "the notes app copied under both of its policies: \(notesSealed) sealed, \(notesBlocked) blocked")
        let viewerSealed = viewer.filter { $0 == .sealed }.count, viewerClosed = viewer.filter { $0 == .failedClosed }.count
        #expect(viewerSealed == viewer.count, "viewer: \(viewer.filter { $0 != .sealed })")
        print("reload under copies: notes \(notesSealed) sealed, \(notesBlocked) blocked, \(notesClosed) failed closed; viewer \(viewerSealed) sealed, \(viewerClosed) failed closed; \(pushes.count) pushes")
        // Nothing reached the pasteboard in the clear.
        let pasteboard = FileManager.default.contents(atPath: h.pasteboardPath) ?? Data()
        #expect(!pasteboard.isEmpty, "sealed copies were written")
        #expect(pasteboard.range(of: Data("reload-test payload".utf8)) == nil)
        let blockedAudited = h.auditRecords.filter {
            $0["event"] as? String == "blocked" && $0["action"] as? String == "copy" && $0["app"] as? String == "com.acme.notes"
        }.count
        #expect(blockedAudited == notesBlocked, "every blocked copy audited once: \(blockedAudited) records, \(notesBlocked) blocked")
        #expect(h.auditRecords.filter { $0["event"] as? String == "blocked" && $0["app"] as? String == "com.acme.viewer" }.isEmpty)
    }
}
