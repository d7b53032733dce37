import Foundation
import ShareBroker
import Synchronization
import ShareBrokerTesting

/// A fresh folder under the temporary folder, removed by `cleanUp()`.
struct ScratchFolder {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "sharebroker-wipetest-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `content` at `relative`, creating folders on the way; returns the absolute path.
    @discardableResult
    func file(_ relative: String, _ content: String = "secret") throws -> String {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(content.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    func exists(_ relative: String) -> Bool {
        var stats = stat()
        return lstat(path + "/" + relative, &stats) == 0
    }

    /// Raw names in a folder (works for names that are not UTF-8).
    func names(in relative: String) -> [[UInt8]] {
        guard let stream = opendir(path + "/" + relative) else { return [] }
        defer { closedir(stream) }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            let name: [UInt8] = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) { start in
                    UnsafeBufferPointer(start: start, count: strlen(start)).map { UInt8(bitPattern: $0) }
                }
            }
            if name != [46] && name != [46, 46] { names.append(name) }
        }
        return names
    }
}

/// An eraser that runs a closure and counts its runs.
final class ClosureEraser: SensitiveDataEraser {
    let wipeName: String
    private let body: Mutex<(@Sendable () throws -> Void)?>
    private let count = Mutex(0)

    init(_ name: String, _ body: (@Sendable () throws -> Void)? = nil) {
        wipeName = name
        self.body = Mutex(body)
    }

    /// Replaces what the eraser does (for closures that need the broker made after it).
    func set(_ body: @escaping @Sendable () throws -> Void) { self.body.withLock { $0 = body } }

    var runs: Int { count.withLock { $0 } }

    func eraseSensitiveData() throws {
        count.withLock { $0 += 1 }
        try body.withLock { $0 }?()
    }
}

struct Refused: Error, CustomStringConvertible {
    var description: String { "refused by the test" }
}

/// A broker that journals its wipes in `folder/state`, with `erasers` and
/// `secureFileDirectories` in its configuration, not started.
func journaledBroker(in folder: ScratchFolder, sink: RecordingReportSink = RecordingReportSink(),
                     erasers: [any SensitiveDataEraser] = [], secureFileDirectories: [String] = []) throws -> ShareBroker {
    ShareBroker(appID: "com.acme.notes", platform: try embeddedPlatform(reportingTo: sink),
                configuration: ShareBroker.Configuration(stateDirectory: folder.path + "/state", erasers: erasers,
                                                         secureFileDirectories: secureFileDirectories))
}

/// The embedded platform, reporting to `sink`.
func embeddedPlatform(reportingTo sink: RecordingReportSink) throws -> Platform {
    var platform = try Platform.embedded(entitling: "com.acme.notes")
    platform.reportSink = sink
    return platform
}

extension WipeReport {
    /// The report without the library's own steps (`sharebroker.keys`, `sharebroker.pasteboard`),
    /// which every retire runs after the app's registered erasers.
    var appSteps: WipeReport {
        var report = self
        report.erased = erased.filter { !$0.hasPrefix("sharebroker.") }
        report.failed = failed.filter { !$0.key.hasPrefix("sharebroker.") }
        return report
    }
}

extension RecordingReportSink {
    /// The wipe reports, each without the library's own steps.
    var appWipeReports: [WipeReport] { wipeReports.map(\.appSteps) }
}
