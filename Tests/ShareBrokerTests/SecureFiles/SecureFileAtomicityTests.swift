#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import ShareBroker
import Testing
import ShareBrokerCrypto

@Suite("SecureFile atomic writes")
struct SecureFileAtomicityTests {
    @Test("a writer dropped before close leaves no file and no temporary file")
    func droppedWriter() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate(), chunkSize: 256)
        do {
            let writer = try store.createFile("draft")
            try writer.write(SecureFileFixture.bytes(5000))
            #expect(folder.entries.count == 1) // the temporary file, under its own name
            #expect(folder.entries.first?.hasSuffix(SecureFileFormat.temporarySuffix) == true)
            #expect(folder.mode(folder.entries.first ?? "") == 0o600)
            #expect(!store.contains("draft"))
        }
        #expect(folder.entries.isEmpty)
    }

    @Test("abandon() leaves the previous version intact and no temporary file")
    func abandonKeepsPrevious() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate(), chunkSize: 256)
        try store.write([1, 2, 3], to: "doc")
        let writer = try store.createFile("doc")
        try writer.write(SecureFileFixture.bytes(1000))
        #expect(try store.read("doc") == [1, 2, 3]) // the old version until close
        writer.abandon()
        writer.abandon()
        #expect(throws: SecureFileError.closed) { try writer.close() }
        #expect(try store.read("doc") == [1, 2, 3])
        #expect(folder.entries == ["doc"])
    }

    @Test("a write that fails (over the cap) abandons the writer and leaves the previous version intact")
    func failedWriteKeepsPrevious() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate(), chunkSize: 256, maximumFileSize: 1000)
        try store.write(SecureFileFixture.bytes(1000, seed: 4), to: "doc")
        let writer = try store.createFile("doc")
        try writer.write(SecureFileFixture.bytes(600))
        #expect(throws: SecureFileError.fileTooBig(size: 1200, limit: 1000)) {
            try writer.write(SecureFileFixture.bytes(600))
        }
        #expect(throws: SecureFileError.closed) { try writer.write([1]) }
        #expect(throws: SecureFileError.fileTooBig(size: 1001, limit: 1000)) {
            try store.write(SecureFileFixture.bytes(1001), to: "doc")
        }
        #expect(try store.read("doc") == SecureFileFixture.bytes(1000, seed: 4))
        #expect(folder.entries == ["doc"])
    }

    @Test("a write whose folder vanished fails with an io error and leaves nothing behind")
    func ioFailure() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate(), chunkSize: 256)
        let writer = try store.createFile("doc")
        try writer.write([1, 2, 3])
        // Make the rename impossible: the target name is now a non-empty folder.
        mkdir(folder.path + "/doc", 0o700)
        mkdir(folder.path + "/doc/inner", 0o700)
        let error = #expect(throws: SecureFileError.self) { try writer.close() }
        if case .io(let operation, _, _)? = error {
            #expect(operation == "rename")
        } else {
            Issue.record("expected an io error, got \(String(describing: error))")
        }
        #expect(error?.code == .internal)
        #expect(folder.entries == ["doc"])
    }

    @Test("removeAbandonedTemporaryFiles clears what a crashed writer left")
    func crashLeftovers() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate())
        try store.write([1], to: "keep")
        try folder.overwrite(".0123456789abcdef" + SecureFileFormat.temporarySuffix, with: [0, 1, 2])
        #expect(folder.entries.count == 2)
        #expect(try store.removeAbandonedTemporaryFiles() == 1)
        #expect(folder.entries == ["keep"])
        #expect(try SecureFileFixture.store(SecureFileScratchFolder(), ring: try KeyRing.generate())
            .removeAbandonedTemporaryFiles() == 0)
    }
}
