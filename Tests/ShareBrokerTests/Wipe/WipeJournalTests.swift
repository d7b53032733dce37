import Foundation
import ShareBroker
import Synchronization
import Testing
import ShareBrokerTesting

@Suite("Wipe journal: retire journals its wipe, start finishes an interrupted one")
struct WipeJournalTests {
    /// Writes a journal by hand, as a process killed half way through a retire leaves it.
    static func leaveJournal(in scratch: ScratchFolder, _ lines: [String]) throws {
        try scratch.file("state/wipe-journal", (["sharebroker-wipe-journal 1"] + lines + ["end"]).joined(separator: "\n") + "\n")
    }

    @Test("a retire runs every eraser with the journal on disk, reports, then removes the journal")
    func retireWithJournal() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        let sink = RecordingReportSink()
        let journal = WipeJournal(directory: scratch.path + "/state")
        let seen = Mutex<[[WipeJournal.Step]]>([])
        // Each eraser looks at the journal while it runs.
        let names = ["keys", "odd name %\n\u{e9}", "files"]
        let erasers = names.map { name in
            ClosureEraser(name) { seen.withLock { $0.append((try? journal.interruptedWipe()) ?? []) } }
        }
        let broker = try journaledBroker(in: scratch, sink: sink, erasers: erasers)
        #expect(broker.wipeJournal?.directory == journal.directory)
        try broker.start(delegate: MinimalDelegate())
        try broker.apply(PolicyUpdate(auth: .authorized))
        let outcome = try broker.applyReporting(PolicyUpdate(auth: .retired, authMessage: "bye"))

        #expect(outcome.wiped)
        #expect(erasers.allSatisfy { $0.runs == 1 })
        #expect(sink.appWipeReports == [WipeReport(erased: names)])
        #expect(try journal.interruptedWipe() == nil)
        #expect(!scratch.exists("state/wipe-journal"))
        #expect(!scratch.exists("state/wipe-journal.tmp"))
        // The journal on disk during each step: the steps before it done, the rest pending.
        let during = seen.withLock { $0 }
        #expect(during.count == 3)
        for (index, steps) in during.enumerated() {
            let appSteps = steps.filter { !$0.name.hasPrefix("sharebroker.") }
            #expect(appSteps.map(\.name) == names)
            #expect(appSteps.map(\.status) == names.indices.map { $0 < index ? .done : .pending })
        }
    }

    @Test("a step that fails is reported with its reason, and the other steps still run")
    func failingStep() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        let sink = RecordingReportSink()
        let first = ClosureEraser("first")
        let broken = ClosureEraser("broken") { throw Refused() }
        let last = ClosureEraser("last")
        let broker = try journaledBroker(in: scratch, sink: sink, erasers: [first, broken, last])
        try broker.start(delegate: MinimalDelegate())
        try broker.apply(PolicyUpdate(auth: .retired))
        #expect(first.runs == 1 && broken.runs == 1 && last.runs == 1)
        #expect(sink.appWipeReports == [WipeReport(erased: ["first", "last"], failed: ["broken": "refused by the test"])])
        #expect(!scratch.exists("state/wipe-journal"))
    }

    @Test("erasers sharing a name run as one step; one failing fails the step")
    func sharedNames() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        let sink = RecordingReportSink()
        let a = ClosureEraser("cache")
        let b = ClosureEraser("cache") { throw Refused() }
        let broker = try journaledBroker(in: scratch, sink: sink, erasers: [a, b])
        try broker.start(delegate: MinimalDelegate())
        try broker.apply(PolicyUpdate(auth: .retired))
        #expect(a.runs == 1 && b.runs == 1)
        #expect(sink.appWipeReports == [WipeReport(failed: ["cache": "refused by the test"])])
    }

    @Test("start finishes an interrupted wipe first: pending steps only, unregistered ones reported, nothing readable meanwhile")
    func resumeAtStart() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        try Self.leaveJournal(in: scratch, [
            "step done files",
            "step failed credentials credential%20'oauth'%3A%20busy",
            "step pending keys",
            "step pending pasteboard",
        ])
        let sink = RecordingReportSink()
        let files = ClosureEraser("files")
        let credentials = ClosureEraser("credentials")
        let keys = ClosureEraser("keys")
        let added = ClosureEraser("registered-since")
        let broker = try journaledBroker(in: scratch, sink: sink, erasers: [files, credentials, keys, added])
        let observed = Mutex<[String]>([])
        keys.set {
            // What a reader sees while the resumed wipe runs.
            let policy: String
            do {
                policy = "\(try broker.policy().authState)"
            } catch {
                policy = (error as? ShareBrokerError) == .notReady ? "notReady" : "other"
            }
            let transfer = try broker.openIn([1], named: "a.txt", target: "com.acme.viewer")
            observed.withLock { $0 = [policy, transfer.delivered ? "delivered" : "dummy", "\(broker.currentSnapshot.authState)"] }
        }
        defer { keys.set {} } // the broker holds the eraser and the closure holds the broker: break the cycle
        let delegate = MinimalDelegate()
        try broker.start(delegate: delegate)

        #expect(files.runs == 0, "a step recorded done does not run again")
        #expect(credentials.runs == 0, "a step recorded failed keeps its failure")
        #expect(keys.runs == 1)
        #expect(added.runs == 1, "an eraser the journal does not list runs too")
        #expect(observed.withLock { $0 } == ["notReady", "dummy", "retired"])
        let report = try #require(sink.appWipeReports.first)
        #expect(sink.appWipeReports.count == 1)
        #expect(report.resumedAfterInterruption)
        #expect(report.erased == ["files", "keys", "registered-since"])
        #expect(report.failed["credentials"] == "credential 'oauth': busy")
        #expect(report.failed["pasteboard"]?.hasPrefix("could not be wiped: not registered") == true)
        #expect(report.failed.count == 2)
        #expect(!scratch.exists("state/wipe-journal"))

        // After start: retired defaults, still not ready; ready comes with the first policy.
        #expect(throws: ShareBrokerError.notReady) { try broker.policy() }
        let snapshot = broker.currentSnapshot
        #expect(snapshot.authState == .retired)
        #expect(snapshot.openInPolicy == .unauthorized && snapshot.pasteboardPolicy == .unauthorized)
        #expect(snapshot.config.isEmpty)
        #expect(delegate.calls.isEmpty)
        let outcome = try broker.applyReporting(PolicyUpdate(auth: .retired, authMessage: "still retired"))
        #expect(outcome.changes == [.ready])
        #expect(delegate.calls == ["ready"])
        #expect(try broker.policy().authState == .retired)
    }

    @Test("the ordering rule cannot be broken: a wipe interrupted before the crash is finished at start over the configuration's eraser and secure-file folder")
    func configurationFinishesInterruptedWipe() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        // A retire died after the app's eraser ran, before the library's own steps.
        try Self.leaveJournal(in: scratch, [
            "step done cache",
            "step pending tokens",
            "step pending sharebroker.keys",
            "step pending sharebroker.pasteboard",
            "step pending sharebroker.secure-files",
        ])
        try scratch.file("secure/notes.bin")
        try scratch.file("secure/nested/more.bin")
        let sink = RecordingReportSink()
        let cache = ClosureEraser("cache")
        let tokens = ClosureEraser("tokens")
        // Everything a retire erases is in the configuration, so it exists before `start`: there
        // is no later registration that could miss the resumed wipe.
        let broker = try journaledBroker(in: scratch, sink: sink, erasers: [cache, tokens],
                                         secureFileDirectories: [scratch.path + "/secure"])
        try broker.start(delegate: MinimalDelegate())
        #expect(cache.runs == 0, "a step recorded done does not run again")
        #expect(tokens.runs == 1)
        #expect(scratch.names(in: "secure").isEmpty)
        let report = try #require(sink.wipeReports.first)
        #expect(report.resumedAfterInterruption)
        #expect(report.erased.contains("tokens") && report.erased.contains("sharebroker.secure-files"))
        #expect(report.failed.isEmpty)
        #expect(!scratch.exists("state/wipe-journal"))
        #expect(broker.currentSnapshot.authState == .retired)
    }

    @Test("without a journal on disk start wipes nothing and reports nothing")
    func nothingToResume() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        let sink = RecordingReportSink()
        let eraser = ClosureEraser("files")
        let broker = try journaledBroker(in: scratch, sink: sink, erasers: [eraser])
        try broker.start(delegate: MinimalDelegate())
        #expect(eraser.runs == 0)
        #expect(sink.appWipeReports.isEmpty)
        #expect(broker.currentSnapshot.authState == .unauthorized)
        #expect(broker.currentSnapshot.generation == 0)
    }

    @Test("an unreadable journal means: wipe everything registered")
    func corruptJournal() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        try scratch.file("state/wipe-journal", "sharebroker-wipe-journal 1\nstep pending fi")
        let journal = WipeJournal(directory: scratch.path + "/state")
        #expect(throws: WipeJournalError.self) { try journal.interruptedWipe() }
        let sink = RecordingReportSink()
        let files = ClosureEraser("files")
        let keys = ClosureEraser("keys")
        let broker = try journaledBroker(in: scratch, sink: sink, erasers: [files, keys])
        try broker.start(delegate: MinimalDelegate())
        #expect(files.runs == 1 && keys.runs == 1)
        #expect(sink.appWipeReports == [WipeReport(erased: ["files", "keys"], resumedAfterInterruption: true)])
        #expect(try journal.interruptedWipe() == nil)
    }

    @Test("the journal format rejects what it did not write", arguments: [
        "",
        "sharebroker-wipe-journal 2\nend\n",
        "sharebroker-wipe-journal 1\nstep pending files\n",
        "sharebroker-wipe-journal 1\nstep maybe files\nend\n",
        "sharebroker-wipe-journal 1\nstep done\nend\n",
        "sharebroker-wipe-journal 1\nstep failed files\nend\n",
        "sharebroker-wipe-journal 1\nstep done files%G1\nend\n",
        "sharebroker-wipe-journal 1\nend\ntrailing\n",
    ])
    func rejectsCorrupt(text: String) throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        try scratch.file("state/wipe-journal", text)
        #expect(throws: WipeJournalError.self) { try WipeJournal(directory: scratch.path + "/state").interruptedWipe() }
    }

    @Test("when the journal cannot be written the wipe still runs, and the report says it was not crash-safe")
    func unwritableJournal() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        try scratch.file("state", "a file where the state folder should be")
        let sink = RecordingReportSink()
        let eraser = ClosureEraser("files")
        let broker = try journaledBroker(in: scratch, sink: sink, erasers: [eraser])
        try broker.start(delegate: MinimalDelegate())
        try broker.apply(PolicyUpdate(auth: .retired))
        #expect(eraser.runs == 1)
        let report = try #require(sink.appWipeReports.first)
        #expect(report.erased == ["files"])
        #expect(report.failed[WipeJournal.reportName]?.contains("would not have survived a crash") == true)
    }

    @Test("a retire without a journal still wipes (the pre-journal behaviour)")
    func noJournal() throws {
        let sink = RecordingReportSink()
        let eraser = ClosureEraser("files")
        let broker = ShareBroker(appID: "com.acme.notes", platform: try embeddedPlatform(reportingTo: sink),
                                 configuration: ShareBroker.Configuration(erasers: [eraser]))
        try broker.start(delegate: MinimalDelegate())
        try broker.apply(PolicyUpdate(auth: .retired))
        #expect(eraser.runs == 1)
        #expect(sink.appWipeReports == [WipeReport(erased: ["files"])])
    }

    @Test("the registry's erasers plug into the broker and a retire erases the registered data")
    func registryThroughBroker() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        try scratch.file("data/docs/a.txt")
        let store = FileCredentialStore(directory: scratch.path + "/data/credentials")
        try store.saveCredential(Array("token".utf8), id: "oauth")
        let registry = SensitiveDataRegistry(credentialStore: store)
        try registry.registerLocation(scratch.path + "/data/docs")
        try registry.registerCredential(id: "oauth")
        let sink = RecordingReportSink()
        let broker = try journaledBroker(in: scratch, sink: sink, erasers: registry.erasers)
        try broker.start(delegate: MinimalDelegate())
        try broker.apply(PolicyUpdate(auth: .authorized))
        try broker.apply(PolicyUpdate(auth: .retired))
        #expect(sink.appWipeReports == [WipeReport(erased: ["files", "credentials"])])
        #expect(scratch.names(in: "data/docs").isEmpty)
        #expect(try store.loadCredential(id: "oauth") == nil)
    }
}
