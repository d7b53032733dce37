import Foundation
@testable import ShareBroker
import Testing

/// Issue 13, item 10: a wipe report reaches the app's delegate and the agent's audit log, so it
/// names the registered location and a count, never the files inside it (document names).
@Suite("Wipe reports name the folder and a count, never the files in it")
struct WipeReportPrivacyTests {
    @Test("failures inside a registered folder: one line per cause, with the folder and the count")
    func summaryHidesEntryNames() {
        let location = "/home/user/.local/share/app/documents"
        let failures = [
            WipeFileError(operation: "unlink", path: location + "/Q3 layoffs.xlsx", code: EACCES),
            WipeFileError(operation: "unlink", path: location + "/merger/term sheet.pdf", code: EACCES),
            WipeFileError(operation: "enter", path: location + "/board-usb", code: EXDEV),
        ]
        let lines = WipeFileError.summary(of: failures, under: location)
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("could not erase 2 entries in \(location) (unlink): Permission denied"))
        #expect(lines[1].hasPrefix("could not erase 1 entry in \(location) (enter):"))
        for secret in ["Q3 layoffs", "term sheet", "merger", "board-usb"] {
            #expect(!lines.joined().contains(secret), "\(secret) leaked into the report")
        }
    }

    @Test("a real registered location that refuses removals (procfs): the eraser's error names only the location")
    func realFailureNamesOnlyTheLocation() throws {
        let location = "/proc/self/ns"
        let entries = try FileManager.default.contentsOfDirectory(atPath: location)
        #expect(!entries.isEmpty)
        let registry = SensitiveDataRegistry()
        try registry.registerLocation(location)
        let eraser = RegisteredFilesEraser(registry: registry)
        do {
            try eraser.eraseSensitiveData()
            Issue.record("procfs let the wipe remove its entries")
        } catch let error as SensitiveDataWipeError {
            #expect(!error.failures.isEmpty)
            #expect(error.failures.allSatisfy { $0.contains(location) })
            #expect(error.failures.contains { $0.contains("\(entries.count) entries") || $0.contains("entries in") })
            #expect(!error.description.contains(location + "/"), "no path below the location: \(error.description)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: location).count == entries.count)
    }
}
