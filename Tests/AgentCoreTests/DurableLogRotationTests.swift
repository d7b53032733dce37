import Foundation
@testable import ShareBrokerAgent
import Testing

/// Issue 13, item 7: the audit and acknowledgment logs grew without bound.
@Suite("The agent's logs rotate: bounded on disk, no record split or lost before its turn")
struct DurableLogRotationTests {
    struct Record: Codable, Equatable {
        var n: Int
        var filler: String
    }

    @Test("past maxBytes a new file starts; keep old files are kept, the oldest beyond goes")
    func rotatesAndBounds() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("log-rotation-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/audit.jsonl"
        let log = try DurableLog(path: path, rotation: .init(maxBytes: 1_000, keep: 2))
        let filler = String(repeating: "x", count: 80)
        for n in 0 ..< 100 {
            try log.appendAndWait([Record(n: n, filler: filler)])
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(names == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"], "\(names)")
        var seen: [Int] = []
        for name in ["audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"] {
            let data = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
            #expect(data.count <= 1_000, "\(name) holds \(data.count) bytes")
            for line in data.split(separator: UInt8(ascii: "\n")) {
                seen.append(try JSONDecoder().decode(Record.self, from: Data(line)).n)
            }
        }
        // Every record of the kept files is whole, in order, and the newest is there.
        #expect(seen == Array(seen.first.map { $0 ..< 100 } ?? 0 ..< 0), "contiguous up to the last: \(seen)")
        #expect(seen.count >= 20, "three files of about 10 records each")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test("a log reopened after a restart counts its existing size")
    func reopenedLogKeepsCounting() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("log-rotation-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/acknowledgments.jsonl"
        let filler = String(repeating: "y", count: 80)
        do {
            let first = try DurableLog(path: path, rotation: .init(maxBytes: 1_000, keep: 1))
            for n in 0 ..< 8 { try first.appendAndWait([Record(n: n, filler: filler)]) }
        }
        let second = try DurableLog(path: path, rotation: .init(maxBytes: 1_000, keep: 1))
        for n in 8 ..< 12 { try second.appendAndWait([Record(n: n, filler: filler)]) }
        #expect(FileManager.default.fileExists(atPath: path + ".1"), "the reopened log rotated at the limit")
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        #expect(size <= 1_000)
    }
}
