import Foundation
import ShareBroker
import Testing

@Suite("SecureFile retire")
struct SecureFileRetireTests {
    @Test("a retire erases the folders of the broker's secure file stores")
    func retireErasesSecureFiles() throws {
        let folder = NSTemporaryDirectory() + "sb-securefile-retire-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, secureFileIO: .required))
        let store = fixture.broker.secureFiles(directory: folder)
        try store.write(Array("quarterly numbers".utf8), to: "q3.bin")
        #expect(try store.read("q3.bin") == Array("quarterly numbers".utf8))
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: folder)).isEmpty)
        let outcome = try fixture.broker.apply(PolicyUpdate(auth: .retired))
        #expect(outcome.wiped)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        #expect(fixture.sink.wipeReports.last?.erased.contains("sharebroker.secure-files") == true)
        #expect(throws: SecureFileError.self) { try store.read("q3.bin") }
    }
}
