#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Why the wipe journal could not be read.
package enum WipeJournalError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file system refused (see the wrapped error for the path and `errno`).
    case file(WipeFileError)
    /// The journal exists but is not a journal this library wrote. A resumed wipe then runs
    /// every registered eraser and replaces it.
    case corrupt(path: String, reason: String)

    package var description: String {
        switch self {
        case .file(let error): error.description
        case .corrupt(let path, let reason):
            "the wipe journal \(path) is unreadable (\(reason)); the next start wipes everything registered and replaces it"
        }
    }
}

/// The durable record of a retire in progress, so that a wipe interrupted by a crash is
/// finished at the next ``ShareBroker/start(delegate:)`` before anything can read data.
///
/// The broker keeps one in the state folder an app gives in
/// ``ShareBroker/Configuration/stateDirectory``, a folder of the app's
/// own that survives restarts. Without a journal a retire still wipes, but a crash half way
/// leaves the rest of the data in place.
///
/// ## Format (version 1)
///
/// One file, `wipe-journal`, in ``directory``: UTF-8 text, lines ending in `\n`.
///
/// ```
/// sharebroker-wipe-journal 1
/// step done files
/// step failed credentials credential%20'oauth'%3A%20could%20not%20unlink%20...
/// step pending keys
/// end
/// ```
///
/// One `step` line per eraser name, in the order they run, with its status: `pending`, `done`
/// or `failed` followed by the reason. Names and reasons are percent-encoded (`%`, space,
/// control bytes and bytes above 0x7E as `%XX`). The final `end` line tells a complete file
/// from a cut one. The journal holds eraser names and error reasons only, never data.
///
/// Every change replaces the whole file atomically: write `wipe-journal.tmp`, fsync it, rename
/// it over `wipe-journal`, fsync the folder. When the wipe has been reported the file is
/// unlinked and the folder fsynced.
package struct WipeJournal: Sendable {
    /// The journal's file name inside ``directory``.
    package static let fileName = "wipe-journal"
    /// The name under which a problem with the journal itself appears in a ``WipeReport``.
    package static let reportName = "wipe-journal"

    /// The folder that holds the journal; created when a retire first needs it.
    package let directory: String

    /// Keeps the journal in `directory`, an absolute path to a folder the app owns.
    package init(directory: String) {
        self.directory = directory
    }

    /// The journal file's path.
    package var path: String { directory + "/" + Self.fileName }

    /// Where one eraser of a wipe stands.
    package enum Status: Sendable, Hashable {
        /// Not run yet, or run without its completion reaching the disk: it runs (again).
        case pending
        /// Ran and erased everything it holds.
        case done
        /// Ran and could not erase something; the reason goes to the wipe report.
        case failed(String)
    }

    /// One step of a wipe: the erasers registered under one ``SensitiveDataEraser/wipeName``.
    package struct Step: Sendable, Hashable {
        /// The eraser name.
        package var name: String
        /// Where it stands.
        package var status: Status

        /// Creates a step.
        package init(name: String, status: Status = .pending) {
            self.name = name
            self.status = status
        }
    }

    /// The steps of an interrupted wipe, or `nil` when no wipe is in progress.
    package func interruptedWipe() throws(WipeJournalError) -> [Step]? {
        let bytes: [UInt8]?
        do {
            bytes = try DurableFiles.contents(of: path)
        } catch {
            throw .file(error)
        }
        guard let bytes else { return nil }
        return try Self.decode(bytes, path: path)
    }

    // MARK: - Writing (the lifecycle only)

    func write(_ steps: [Step]) throws(WipeFileError) {
        try DurableFiles.makeDirectories(directory)
        try DurableFiles.writeAtomically(Self.encode(steps), to: path)
    }

    func remove() throws(WipeFileError) {
        try DurableFiles.removeFile(path)
    }

    // MARK: - Format

    static let header = "sharebroker-wipe-journal 1"

    static func encode(_ steps: [Step]) -> [UInt8] {
        var text = header + "\n"
        for step in steps {
            switch step.status {
            case .pending: text += "step pending \(escape(step.name))\n"
            case .done: text += "step done \(escape(step.name))\n"
            case .failed(let reason): text += "step failed \(escape(step.name)) \(escape(reason))\n"
            }
        }
        text += "end\n"
        return Array(text.utf8)
    }

    static func decode(_ bytes: [UInt8], path: String) throws(WipeJournalError) -> [Step] {
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        guard lines.first == header else { throw .corrupt(path: path, reason: "no version 1 header") }
        guard lines.count >= 3, lines[lines.count - 1].isEmpty, lines[lines.count - 2] == "end" else {
            throw .corrupt(path: path, reason: "no end line: the file was cut short")
        }
        var steps: [Step] = []
        for (offset, line) in lines[1 ..< lines.count - 2].enumerated() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            let lineNumber = offset + 2
            guard fields.count >= 3, fields[0] == "step", let name = unescape(fields[2]), !name.isEmpty else {
                throw .corrupt(path: path, reason: "line \(lineNumber) is not a step")
            }
            switch (fields[1], fields.count) {
            case ("pending", 3): steps.append(Step(name: name, status: .pending))
            case ("done", 3): steps.append(Step(name: name, status: .done))
            case ("failed", 4):
                guard let reason = unescape(fields[3]) else {
                    throw .corrupt(path: path, reason: "line \(lineNumber) has a bad reason")
                }
                steps.append(Step(name: name, status: .failed(reason)))
            default:
                throw .corrupt(path: path, reason: "line \(lineNumber) has an unknown status")
            }
        }
        return steps
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "%") {
                let hex = String(byte, radix: 16, uppercase: true)
                out += byte < 16 ? "%0" + hex : "%" + hex
            } else {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return out
    }

    static func unescape(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                  let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - Crash-test hook

    private static let crashPoint = Mutex<WipeCrashPoint?>(nil)

    /// Where the process kills itself with `SIGKILL` during a wipe: for crash tests only.
    ///
    /// Inert unless set (a lock and a comparison per step). The `sharebroker wipe-probe` test
    /// command sets it from its `--crash-at` option; no library code sets it.
    package static var testCrashPoint: WipeCrashPoint? {
        get { crashPoint.withLock { $0 } }
        set { crashPoint.withLock { $0 = newValue } }
    }

    static func crashIfRequested(at point: WipeCrashPoint) {
        if crashPoint.withLock({ $0 }) == point {
            kill(getpid(), SIGKILL)
        }
    }
}

/// A point in a wipe where a crash test can kill the process (``WipeJournal/testCrashPoint``).
package enum WipeCrashPoint: Sendable, Hashable {
    /// The journal listing every step is on disk; no step has run.
    case journalWritten
    /// Step `n` (1-based, counting every step of the journal) ran; its completion is not recorded.
    case stepRan(Int)
    /// Step `n` ran and its completion is on disk.
    case stepRecorded(Int)
    /// The report went to the server sink; the journal is not removed yet.
    case reported
}

extension ShareBroker {
    /// Runs a wipe as a journal of steps and reports it. Called with the lifecycle lock held.
    ///
    /// Writes the journal, runs every pending step (all the erasers registered under its name),
    /// recording each outcome durably, reports to the server sink, then removes the journal.
    /// A step no registered eraser answers to fails as not registered. When the journal cannot
    /// be written the wipe still runs, and the report says it would not have survived a crash.
    @discardableResult
    func runJournaledWipe(_ steps: [WipeJournal.Step], erasers: [any SensitiveDataEraser],
                          resumed: Bool) -> WipeReport {
        var steps = steps
        var journal = wipeJournal
        var journalProblem: String?
        func record() {
            guard let current = journal else { return }
            do {
                try current.write(steps)
            } catch {
                journal = nil
                journalProblem = "could not be kept, so this wipe would not have survived a crash: \(error.description)"
                logger.error("the wipe journal could not be written; the wipe goes on without it")
            }
        }
        record()
        WipeJournal.crashIfRequested(at: .journalWritten)
        for index in steps.indices where steps[index].status == .pending {
            let name = steps[index].name
            let matching = erasers.filter { $0.wipeName == name }
            if matching.isEmpty {
                steps[index].status = .failed(
                    "could not be wiped: not registered (no eraser named '\(name)' at start; register every eraser before calling start)")
            } else {
                var failures: [String] = []
                for eraser in matching {
                    do {
                        try eraser.eraseSensitiveData()
                    } catch {
                        failures.append(String(describing: error))
                    }
                }
                steps[index].status = failures.isEmpty ? .done : .failed(failures.joined(separator: "; "))
            }
            if case .failed = steps[index].status { logger.error("retire could not erase \(name)") }
            WipeJournal.crashIfRequested(at: .stepRan(index + 1))
            record()
            WipeJournal.crashIfRequested(at: .stepRecorded(index + 1))
        }
        var report = WipeReport(resumedAfterInterruption: resumed)
        for step in steps {
            switch step.status {
            case .done: report.erased.append(step.name)
            case .failed(let reason): report.failed[step.name] = reason
            case .pending: break
            }
        }
        if let journalProblem { report.failed[WipeJournal.reportName] = journalProblem }
        platform.reportSink.wiped(report)
        WipeJournal.crashIfRequested(at: .reported)
        if let wipeJournal {
            do {
                try wipeJournal.remove()
            } catch {
                logger.error("the finished wipe's journal could not be removed; the next start repeats the wipe")
            }
        }
        return report
    }

    /// The steps of a new wipe: one per distinct eraser name, in the order of registration.
    static func wipeSteps(for erasers: [any SensitiveDataEraser]) -> [WipeJournal.Step] {
        var seen: Set<String> = []
        return erasers.compactMap { seen.insert($0.wipeName).inserted ? WipeJournal.Step(name: $0.wipeName) : nil }
    }

    /// Finishes a wipe that a crash interrupted, if the journal holds one. Called from
    /// ``start(delegate:)`` with the lifecycle lock held, before anything can make the library
    /// ready: until it returns, ``policy()`` throws and every transfer fails closed.
    ///
    /// Installs the retired snapshot (not ready) first. The pending steps of the journal run,
    /// and so does every registered eraser the journal does not list. An unreadable journal
    /// means "wipe everything registered". Returns the report, or `nil` when there was nothing
    /// to finish.
    @discardableResult
    func finishInterruptedWipe(erasers: [any SensitiveDataEraser]) -> WipeReport? {
        guard let wipeJournal else { return nil }
        var steps: [WipeJournal.Step]
        do {
            guard let found = try wipeJournal.interruptedWipe() else { return nil }
            steps = found
        } catch {
            logger.error("the wipe journal could not be read; wiping everything registered")
            steps = []
        }
        let old = store.snapshot
        store.install(old.retired(message: old.authMessage, isReady: false))
        let listed = Set(steps.map(\.name))
        steps += Self.wipeSteps(for: erasers).filter { !listed.contains($0.name) }
        return runJournaledWipe(steps, erasers: erasers, resumed: true)
    }
}
