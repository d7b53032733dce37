import Foundation
import ShareBroker
import Testing
import ShareBrokerCrypto

@Suite("SecureFile retire")
struct SecureFileRetireTests {
    @Test("a retire erases the folders of the broker's secure file stores")
    func retireErasesSecureFiles() throws {
        let folder = NSTemporaryDirectory() + "sb-securefile-retire-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, secureFileIO: .required),
                                  configuration: ShareBroker.Configuration(secureFileDirectories: [folder]))
        let store = try fixture.broker.secureFiles(directory: folder)
        try store.write(Array("quarterly numbers".utf8), to: "q3.bin")
        #expect(try store.read("q3.bin") == Array("quarterly numbers".utf8))
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: folder)).isEmpty)
        let outcome = try fixture.broker.applyReporting(PolicyUpdate(auth: .retired))
        #expect(outcome.wiped)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        #expect(fixture.sink.wipeReports.last?.erased.contains("sharebroker.secure-files") == true)
        #expect(throws: SecureFileError.self) { try store.read("q3.bin") }
    }
}

@Suite("SecureFile regressions")
struct SecureFileRegressionTests {
    /// Found by FuzzSecureFile: the empty final chunk of an empty file (or of one whose size is a
    /// multiple of the chunk size) was not authenticated by a whole-file read, so a flipped byte
    /// in its tag went unnoticed. Fuzz/regressions/FuzzSecureFile/empty-final-chunk-tampered.
    @Test("a tampered empty final chunk is refused", arguments: [0, 65_536])
    func tamperedEmptyFinalChunk(size: Int) throws {
        let folder = NSTemporaryDirectory() + "sb-securefile-regression-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = SecureFileStore(directory: folder, fileKeys: try FileKeyRing.generate())
        let plaintext = [UInt8](repeating: 0x5A, count: size)
        try store.write(plaintext, to: "f")
        #expect(try store.read("f") == plaintext)
        var file = try #require(FileManager.default.contents(atPath: folder + "/f").map(Array.init))
        file[file.count - 6] ^= 0x06  // inside the last frame's MAC
        #expect(FileManager.default.createFile(atPath: folder + "/f", contents: Data(file)))
        #expect(throws: SecureFileError.self) { try store.read("f") }
    }
}
