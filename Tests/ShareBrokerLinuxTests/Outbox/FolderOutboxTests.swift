import Foundation
import ShareBroker
import ShareBrokerLinux
import Testing

/// Issue 29, item 8: a link planted where the outbox will put a hand-over must not make the
/// document overwrite the link's target.
@Suite("FolderOutbox")
struct FolderOutboxTests {
    static func folder() throws -> String {
        let path = NSTemporaryDirectory() + "sbt-outbox-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("A symbolic link planted at the slot file, and a slot folder that is a link: the target is untouched, the document lands in a folder of the outbox's own")
    func plantedLinks() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let outboxFolder = root + "/outbox"
        let victim = root + "/victim.txt"
        let elsewhere = root + "/elsewhere"
        try "precious".write(toFile: victim, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        let outbox = try FolderOutbox(directory: outboxFolder)
        // The next slots are 1 and 2: the first holds a link named as the document, the second
        // is itself a link to another folder.
        try FileManager.default.createDirectory(atPath: outboxFolder + "/1", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: outboxFolder + "/1/Q3.pdf", withDestinationPath: victim)
        try FileManager.default.createSymbolicLink(atPath: outboxFolder + "/2", withDestinationPath: elsewhere)

        let path = try outbox.handOver(name: "Q3.pdf", bytes: Array("the document".utf8))
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
        #expect(path.hasPrefix(outboxFolder + "/"))
        #expect(!path.hasPrefix(outboxFolder + "/1/") && !path.hasPrefix(outboxFolder + "/2/"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "the document")
        var info = stat()
        #expect(lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG)
        #expect(info.st_mode & 0o777 == 0o600)
    }
}
