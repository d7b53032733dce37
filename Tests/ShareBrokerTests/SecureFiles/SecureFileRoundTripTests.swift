#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import ShareBroker
import Testing
import ShareBrokerCrypto

@Suite("SecureFile round trips and random access")
struct SecureFileRoundTripTests {
    static let chunk = SecureFileFormat.defaultChunkSize
    static let sizes = [0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk + 17]

    @Test("write then read returns the bytes, at 0 B, 1 B, chunk-1, chunk, chunk+1 and several chunks",
          arguments: sizes)
    func roundTrip(size: Int) throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        let store = SecureFileFixture.store(folder, ring: ring)
        let plaintext = SecureFileFixture.bytes(size, seed: UInt32(size) &+ 3)
        try store.write(plaintext, to: "file.bin")
        #expect(folder.entries == ["file.bin"])
        #expect(folder.raw("file.bin").count == SecureFileFormat.fileSize(plaintextLength: size))
        #expect(try store.read("file.bin") == plaintext)
        let reader = try store.open("file.bin")
        #expect(reader.size == size)
        try reader.verify()
        reader.close()
    }

    @Test("a streaming writer fed in odd-sized pieces gives the same file content", arguments: sizes)
    func streamingRoundTrip(size: Int) throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        let store = SecureFileFixture.store(folder, ring: ring)
        let plaintext = SecureFileFixture.bytes(size, seed: 9)
        let writer = try store.createFile("stream.bin")
        var position = 0
        var piece = 1
        while position < plaintext.count {
            let end = min(plaintext.count, position + piece)
            try writer.write(Array(plaintext[position..<end]))
            position = end
            piece = piece * 3 + 7 // 1, 10, 37, 118, ... crosses chunk boundaries at odd places
        }
        try writer.write([]) // empty writes are harmless
        #expect(writer.bytesWritten == size)
        try writer.close()
        #expect(throws: SecureFileError.closed) { try writer.close() }
        #expect(throws: SecureFileError.closed) { try writer.write([1]) }
        #expect(try store.read("stream.bin") == plaintext)
    }

    @Test("the file on disk holds no run of the plaintext, and is mode 0600")
    func ciphertextOnly() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate(), chunkSize: 1024)
        let plaintext = Array(String(repeating: "patient record: Jane Doe, diagnosis 1234. ", count: 200).utf8)
        try store.write(plaintext, to: "records.txt")
        let raw = folder.raw("records.txt")
        #expect(!SecureFileFixture.containsRun(of: plaintext, in: raw))
        #expect(Array(raw.prefix(4)) == SecureFileFormat.magic)
        #expect(folder.mode("records.txt") == 0o600)
    }

    @Test("random-access reads across chunk boundaries match the plaintext", arguments: [256, chunk])
    func randomAccess(chunkSize: Int) throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate(), chunkSize: chunkSize)
        let size = 5 * chunkSize + 123
        let plaintext = SecureFileFixture.bytes(size, seed: 77)
        try store.write(plaintext, to: "r.bin")
        let reader = try store.open("r.bin")
        let c = chunkSize
        let ranges: [(Int, Int)] = [
            (0, 0), (0, 1), (c - 3, 10), (c - 1, 2), (c, c), (c - 1, c + 2), (2 * c + 5, 3 * c),
            (0, size), (size - 1, 5), (size - 123, 123), (3, size - 6), (4 * c, c + 123),
        ]
        for (offset, count) in ranges {
            let got = try reader.read(offset: offset, count: count)
            let end = min(size, offset + count)
            #expect(got == Array(plaintext[offset..<end]), "offset \(offset) count \(count)")
        }
        // Backwards, chunk by chunk, with a buffer.
        var buffer = [UInt8](repeating: 0, count: 100)
        for offset in stride(from: size - 50, through: 0, by: -(c / 2 + 1)) {
            let n = try buffer.withUnsafeMutableBytes { try reader.read(offset: offset, into: $0) }
            #expect(n == min(100, size - offset))
            #expect(Array(buffer[0..<n]) == Array(plaintext[offset..<(offset + n)]))
        }
        #expect(try reader.read(offset: size, count: 10) == [])
        #expect(try reader.read(offset: size + 1_000_000, count: 10) == [])
        #expect(throws: SecureFileError.negativeLength(-1)) { try reader.read(offset: -1, count: 1) }
        #expect(throws: SecureFileError.negativeLength(-5)) { try reader.read(offset: 0, count: -5) }
        #expect(SecureFileError.negativeLength(-1).code == .negativeFileLength)
        reader.close()
        #expect(throws: SecureFileError.closed) { try reader.read(offset: 0, count: 1) }
    }

    @Test("rewriting a file replaces it whole; remove deletes it; names are single components")
    func replaceAndRemove() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate(), chunkSize: 256)
        try store.write(SecureFileFixture.bytes(5000, seed: 1), to: "a")
        try store.write(SecureFileFixture.bytes(10, seed: 2), to: "a")
        #expect(try store.read("a") == SecureFileFixture.bytes(10, seed: 2))
        #expect(store.contains("a"))
        #expect(try store.remove("a"))
        #expect(try !store.remove("a"))
        #expect(!store.contains("a"))
        #expect(throws: SecureFileError.notFound("a")) { try store.open("a") }
        #expect(folder.entries.isEmpty)
        for bad in ["", ".", "..", "a/b", "/etc/passwd", "x\u{0}y", String(repeating: "n", count: 256),
                    ".abc" + SecureFileFormat.temporarySuffix] {
            #expect(throws: SecureFileError.invalidName(bad)) { try store.write([1], to: bad) }
            #expect(throws: SecureFileError.invalidName(bad)) { try store.open(bad) }
        }
        #expect(SecureFileError.invalidName("").code == .invalidArgument)
    }

    @Test("folders, links and other non-regular files are refused with RegularFileOnly")
    func regularFilesOnly() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate())
        try store.write([1, 2, 3], to: "real")
        mkdir(folder.path + "/sub", 0o700)
        symlink(folder.path + "/real", folder.path + "/link")
        #expect(throws: SecureFileError.notARegularFile("sub")) { try store.open("sub") }
        #expect(throws: SecureFileError.notARegularFile("link")) { try store.open("link") }
        #expect(throws: SecureFileError.notARegularFile("sub")) { try store.remove("sub") }
        #expect(SecureFileError.notARegularFile("x").code == .regularFileOnly)
        // The writer replaces a link with a file rather than writing through it.
        try store.write([9], to: "link")
        #expect(try store.read("link") == [9])
        #expect(try store.read("real") == [1, 2, 3])
    }

    @Test("a file written under a key stays readable after the ring rotates")
    func rotation() throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        try SecureFileFixture.store(folder, ring: ring).write([1, 2, 3], to: "old")
        let next = try ring.rotated()
        let store = SecureFileFixture.store(folder, ring: next)
        #expect(try store.read("old") == [1, 2, 3])
        try store.write([4], to: "new")
        #expect(Array(folder.raw("new")[12..<16]) != Array(folder.raw("old")[12..<16])) // another key id
    }
}
