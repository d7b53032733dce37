import Foundation
import Testing

/// Runs `sharebroker-wipe-probe` (Tests/WipeProbe, built by `swift build`) in child processes, kills them at each point of a retire's wipe,
/// starts again, and checks by scanning the file system that no plaintext survived.
///
/// The probe's wipe has three steps, in this order: `files` (a registered folder and file),
/// `credentials` (two stored credentials) and `keys` (a stand-in for key material).
@Suite("Wipe survives a crash (child processes)")
struct WipeCrashTests {
    static let steps = ["files", "credentials", "keys"]

    /// Every crash point, how many steps had run when the process died, and the steps the next
    /// start must (re)run: a step whose completion was not recorded runs again.
    static let crashPoints: [(point: String, ran: Int, rerun: [String])] = [
        ("journal", 0, steps),
        ("ran:1", 1, steps),
        ("recorded:1", 1, ["credentials", "keys"]),
        ("ran:2", 2, ["credentials", "keys"]),
        ("recorded:2", 2, ["keys"]),
        ("ran:3", 3, ["keys"]),
        ("recorded:3", 3, []),
        ("reported", 3, []),
    ]

    @Test("killed at each point of the wipe, the next start finishes it before anything is readable",
          arguments: crashPoints.map(\.point))
    func killedAndResumed(point: String) throws {
        let expected = try #require(Self.crashPoints.first { $0.point == point })
        let probe = try Probe()
        defer { probe.cleanUp() }

        // 1. Retire, killed at the point.
        let first = try probe.run(mode: "retire", crashAt: point)
        #expect(first.killedBySIGKILL, "the probe should have killed itself at \(point)")
        #expect(first.events.filter { $0.event == "step" }.count == expected.ran)
        #expect(probe.journalExists, "the journal must be on disk after a crash at \(point)")
        // Plaintext survives the crash exactly when a step had not run yet.
        let leftBefore = FileScan.filesContaining(probe.marker, under: probe.directory)
        #expect(leftBefore.isEmpty == (expected.ran == Self.steps.count), "after the crash at \(point): \(leftBefore)")

        // 2. Start again: the wipe is finished inside start.
        let second = try probe.run(mode: "start")
        #expect(second.exitedCleanly, "start after a crash at \(point) should succeed: \(second.events)")
        try Self.checkResumed(second.events, rerun: expected.rerun, point: point)

        // 3. The file system holds no plaintext, the unregistered file is untouched.
        #expect(FileScan.filesContaining(probe.marker, under: probe.directory).isEmpty)
        #expect(!probe.journalExists)
        try probe.checkRemains()
    }

    @Test("a crash during the resumed wipe is resumed again at the following start")
    func crashDuringResume() throws {
        let probe = try Probe()
        defer { probe.cleanUp() }
        #expect(try probe.run(mode: "retire", crashAt: "ran:1").killedBySIGKILL)
        let second = try probe.run(mode: "start", crashAt: "recorded:2")
        #expect(second.killedBySIGKILL)
        #expect(second.events.filter { $0.event == "step" }.map(\.name) == ["files", "credentials"])
        #expect(!FileScan.filesContaining(probe.marker, under: probe.directory).isEmpty, "keys not wiped yet")
        let third = try probe.run(mode: "start")
        #expect(third.exitedCleanly)
        try Self.checkResumed(third.events, rerun: ["keys"], point: "ran:1 then recorded:2")
        #expect(FileScan.filesContaining(probe.marker, under: probe.directory).isEmpty)
        try probe.checkRemains()
    }

    @Test("without a crash the retire wipes everything, removes its journal, and the next start has nothing to finish")
    func noCrash() throws {
        let probe = try Probe()
        defer { probe.cleanUp() }
        let first = try probe.run(mode: "retire")
        #expect(first.exitedCleanly)
        let wiped = try #require(first.events.first { $0.event == "wiped" })
        #expect(wiped.erased == Self.steps)
        #expect(wiped.object["resumed"] as? Bool == false)
        // During the wipe the snapshot is already retired: transfers get dummies.
        for step in first.events where step.event == "step" {
            #expect(step.object["openIn"] as? String == "dummy")
            #expect(step.object["auth"] as? String == "retired")
        }
        #expect(!probe.journalExists)
        #expect(FileScan.filesContaining(probe.marker, under: probe.directory).isEmpty)
        try probe.checkRemains()

        let second = try probe.run(mode: "start")
        #expect(second.exitedCleanly)
        #expect(!second.events.contains { $0.event == "wiped" || $0.event == "step" })
        #expect(second.events.first { $0.event == "started" }?.object["auth"] as? String == "unauthorized")
    }

    /// The events of a start that finished an interrupted wipe.
    static func checkResumed(_ events: [Event], rerun: [String], point: String) throws {
        let before = try #require(events.first { $0.event == "before-start" })
        #expect(before.object["journal"] as? Bool == true)
        #expect(before.object["policy"] as? String == "notReady")

        let steps = events.filter { $0.event == "step" }
        #expect(steps.map(\.name) == rerun, "steps run again after \(point)")
        for step in steps {
            // While the wipe runs, nothing is readable and every transfer fails closed.
            #expect(step.object["policy"] as? String == "notReady", "policy readable during the wipe after \(point)")
            #expect(step.object["openIn"] as? String == "dummy")
            #expect(step.object["auth"] as? String == "retired")
        }

        let wipedIndex = try #require(events.firstIndex { $0.event == "wiped" }, "no wipe report after \(point)")
        let wiped = events[wipedIndex]
        #expect(wiped.erased == WipeCrashTests.steps)
        #expect((wiped.object["failed"] as? [String: String])?.isEmpty == true)
        #expect(wiped.object["resumed"] as? Bool == true)

        let started = try #require(events.firstIndex { $0.event == "started" })
        #expect(started > wipedIndex, "start returned before the wipe was reported")
        #expect(events[started].object["policy"] as? String == "notReady")
        #expect(events[started].object["auth"] as? String == "retired")
        #expect(events[started].object["journal"] as? Bool == false)

        let ready = try #require(events.firstIndex { $0.event == "ready" })
        #expect(ready > wipedIndex, "ready was signalled before the wipe finished")
        #expect(events.last?.event == "done")
    }
}

/// One event line of the probe.
struct Event: CustomStringConvertible {
    let object: [String: Any]
    var event: String { object["event"] as? String ?? "" }
    var name: String { object["name"] as? String ?? "" }
    /// The steps the report says were erased, without the library's own (`sharebroker.` keys and
    /// pasteboard), which every retire runs after the app's.
    var erased: [String] { (object["erased"] as? [String] ?? []).filter { !$0.hasPrefix("sharebroker.") } }
    var description: String { "\(object)" }
}

/// A scratch folder for one probe app, and how to run the probe on it.
struct Probe {
    let directory: String
    let marker: [UInt8]
    private let markerText: String

    init() throws {
        directory = NSTemporaryDirectory() + "sharebroker-wipe-\(UUID().uuidString)"
        markerText = "PLAINTEXT-\(UUID().uuidString)"
        marker = Array(markerText.utf8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    var journalExists: Bool { FileManager.default.fileExists(atPath: directory + "/state/wipe-journal") }

    struct Run {
        var status: Int32
        var reason: Process.TerminationReason
        var events: [Event]
        var killedBySIGKILL: Bool { reason == .uncaughtSignal && status == SIGKILL }
        var exitedCleanly: Bool { reason == .exit && status == 0 }
    }

    func run(mode: String, crashAt: String? = nil) throws -> Run {
        let probe = CLI.binary.deletingLastPathComponent().appendingPathComponent("sharebroker-wipe-probe")
        try #require(FileManager.default.isExecutableFile(atPath: probe.path), "build it first: swift build --product sharebroker-wipe-probe")
        let process = Process()
        process.executableURL = probe
        process.arguments = ["--directory", directory, "--mode", mode, "--marker", markerText]
            + (crashAt.map { ["--crash-at", $0] } ?? [])
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let events = String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.map(Event.init)
        return Run(status: process.terminationStatus, reason: process.terminationReason, events: events)
    }

    /// What a wipe must leave: the registered folder (empty), the credential folder (empty), the
    /// unregistered file with its content.
    func checkRemains() throws {
        #expect(FileScan.entries(of: directory + "/data/docs") == [], "the registered folder must be emptied")
        #expect(FileScan.entries(of: directory + "/data/credentials") == [])
        #expect(!FileManager.default.fileExists(atPath: directory + "/data/single.txt"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/data/keys.bin"))
        let kept = try String(contentsOfFile: directory + "/data/outside/keep.txt", encoding: .utf8)
        #expect(kept.hasPrefix("not sensitive"))
    }
}

/// Walks a folder with POSIX calls, keeping names as raw bytes so names that are not UTF-8
/// are scanned too (Foundation's enumerator cannot open them).
enum FileScan {
    /// Every regular file under `root` whose content contains `needle`.
    static func filesContaining(_ needle: [UInt8], under root: String) -> [String] {
        var found: [String] = []
        walk(Array(root.utf8)) { path in
            if contains(read(path), needle) { found.append(String(decoding: path, as: UTF8.self)) }
        }
        return found
    }

    /// The raw names in a folder (without `.` and `..`); `nil` when it cannot be opened.
    static func entries(of directory: String) -> [[UInt8]]? {
        entries(ofRaw: Array(directory.utf8))
    }

    private static func entries(ofRaw path: [UInt8]) -> [[UInt8]]? {
        guard let stream = opendir(cString(path)) else { return nil }
        defer { closedir(stream) }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            let name: [UInt8] = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) { start in
                    UnsafeBufferPointer(start: start, count: strlen(start)).map { UInt8(bitPattern: $0) }
                }
            }
            if name == [46] || name == [46, 46] { continue }
            names.append(name)
        }
        return names
    }

    private static func walk(_ path: [UInt8], visit: (_ file: [UInt8]) -> Void) {
        var stats = stat()
        guard lstat(cString(path), &stats) == 0 else { return }
        switch stats.st_mode & S_IFMT {
        case S_IFREG: visit(path)
        case S_IFDIR:
            for name in entries(ofRaw: path) ?? [] { walk(path + [UInt8(ascii: "/")] + name, visit: visit) }
        default: break
        }
    }

    private static func read(_ path: [UInt8]) -> [UInt8] {
        let fd = open(cString(path), O_RDONLY)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return result }
            result += chunk[0 ..< n]
        }
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        for start in 0 ... (haystack.count - needle.count) where haystack[start ..< start + needle.count].elementsEqual(needle) {
            return true
        }
        return false
    }

    private static func cString(_ bytes: [UInt8]) -> [CChar] {
        bytes.map { CChar(bitPattern: $0) } + [0]
    }
}
