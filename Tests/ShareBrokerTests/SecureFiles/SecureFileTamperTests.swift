@testable import ShareBroker
import Testing
import ShareBrokerCrypto

@Suite("SecureFile tampering: corruption, truncation, reordering, wrong keys")
struct SecureFileTamperTests {
    static let chunk = 256
    /// Four full chunks and a partial one.
    static let size = 4 * chunk + 100

    /// A folder with one file "f" of ``size`` bytes in ``chunk``-byte chunks, and its store.
    struct Setup {
        let folder = SecureFileScratchFolder()
        let ring: KeyRing
        let store: SecureFileStore
        let plaintext = SecureFileFixture.bytes(SecureFileTamperTests.size, seed: 5)
        let raw: [UInt8]

        init() throws {
            ring = try KeyRing.generate()
            store = SecureFileFixture.store(folder, ring: ring, chunkSize: SecureFileTamperTests.chunk)
            try store.write(plaintext, to: "f")
            raw = folder.raw("f")
        }

        func frame(_ index: Int) -> Int { SecureFileFixture.frameOffset(index, chunkSize: SecureFileTamperTests.chunk) }

        func tamper(_ change: (inout [UInt8]) -> Void) throws {
            var bytes = raw
            change(&bytes)
            try folder.overwrite("f", with: bytes)
        }
    }

    @Test("a flipped byte in a chunk is CorruptChunk for that chunk only; the others stay readable")
    func corruption() throws {
        let s = try Setup()
        for (index, within) in [(0, 4), (1, 30), (2, 200), (4, 60)] {
            try s.tamper { $0[s.frame(index) + within] ^= 0x01 }
            let reader = try s.store.open("f")
            #expect(throws: SecureFileError.corruptChunk(index: index)) {
                try reader.read(offset: index * Self.chunk, count: 1)
            }
            #expect(throws: SecureFileError.corruptChunk(index: index)) { try reader.verify() }
            let other = index == 0 ? 1 : 0
            #expect(try reader.read(offset: other * Self.chunk, count: Self.chunk)
                == Array(s.plaintext[(other * Self.chunk)..<((other + 1) * Self.chunk)]))
            #expect(SecureFileError.corruptChunk(index: index).code == .badKeyOrCorruptData)
        }
        // The last byte of the final MAC, too.
        try s.tamper { $0[$0.count - 1] ^= 0x80 }
        #expect(throws: SecureFileError.corruptChunk(index: 4)) { try s.store.read("f") }
    }

    @Test("a read that hits a corrupt chunk returns nothing and zeroes the caller's buffer")
    func failedReadLeavesNothing() throws {
        let s = try Setup()
        try s.tamper { $0[s.frame(2) + 40] ^= 0x10 }
        let reader = try s.store.open("f")
        var buffer = [UInt8](repeating: 0xAA, count: 3 * Self.chunk)
        #expect(throws: SecureFileError.corruptChunk(index: 2)) {
            _ = try buffer.withUnsafeMutableBytes { try reader.read(offset: 0, into: $0) }
        }
        #expect(buffer[0..<(2 * Self.chunk)].allSatisfy { $0 == 0 })
    }

    @Test("dropping the final chunk, or cutting the file anywhere, is Truncated at open")
    func truncation() throws {
        let s = try Setup()
        let full = s.raw.count
        // Drop the final chunk.
        try s.tamper { $0.removeSubrange(s.frame(4)...) }
        #expect(throws: SecureFileError.truncated(expectedSize: full, actualSize: s.frame(4))) { try s.store.open("f") }
        // Drop the final chunk and the one before (still a chunk boundary).
        try s.tamper { $0.removeSubrange(s.frame(3)...) }
        #expect(throws: SecureFileError.truncated(expectedSize: full, actualSize: s.frame(3))) { try s.store.open("f") }
        // Cut mid-chunk.
        try s.tamper { $0.removeSubrange((s.frame(2) + 77)...) }
        #expect(throws: SecureFileError.truncated(expectedSize: full, actualSize: s.frame(2) + 77)) {
            try s.store.open("f")
        }
        // One byte short.
        try s.tamper { $0.removeLast() }
        #expect(throws: SecureFileError.truncated(expectedSize: full, actualSize: full - 1)) { try s.store.read("f") }
        // Cut inside the header, and an empty file.
        try s.tamper { $0.removeSubrange(40...) }
        #expect(throws: SecureFileError.truncated(expectedSize: SecureFileFormat.headerLength, actualSize: 40)) {
            try s.store.open("f")
        }
        try s.tamper { $0.removeAll() }
        #expect(throws: SecureFileError.truncated(expectedSize: SecureFileFormat.headerLength, actualSize: 0)) {
            try s.store.open("f")
        }
        #expect(SecureFileError.truncated(expectedSize: 1, actualSize: 0).code == .badKeyOrCorruptData)
    }

    @Test("when the chunk size divides the length, the empty FINAL chunk is still required")
    func emptyFinalChunk() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate(), chunkSize: Self.chunk)
        try store.write(SecureFileFixture.bytes(4 * Self.chunk), to: "f")
        var raw = folder.raw("f")
        #expect(raw.count == SecureFileFixture.frameOffset(4, chunkSize: Self.chunk) + SecureFileFormat.frameOverhead)
        raw.removeLast(SecureFileFormat.frameOverhead)
        try folder.overwrite("f", with: raw)
        #expect(throws: SecureFileError.truncated(expectedSize: raw.count + SecureFileFormat.frameOverhead,
                                                  actualSize: raw.count)) { try store.open("f") }
    }

    @Test("an authentic chunk with the wrong tag for its place (forged with the file key) is CorruptChunk")
    func wrongTags() throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        let store = SecureFileFixture.store(folder, ring: ring, chunkSize: Self.chunk)
        // Two chunks, tagged as given, under a correct header: what only a key holder could make.
        func forge(_ tags: [Bool]) throws -> [UInt8] {
            var header = [UInt8](repeating: 0, count: SecureFileFormat.headerLength)
            header.replaceSubrange(0..<4, with: SecureFileFormat.magic)
            header[4] = 1
            header.replaceSubrange(8..<12, with: [0, 0, 1, 0]) // 256
            let id = ring.currentKeyID
            header.replaceSubrange(12..<16, with: [UInt8(id >> 24), UInt8(truncatingIfNeeded: id >> 16),
                                                    UInt8(truncatingIfNeeded: id >> 8), UInt8(truncatingIfNeeded: id)])
            header.replaceSubrange(16..<48, with: SealingFixture.random(32))
            let plaintextLength = Self.chunk + 10
            header.replaceSubrange(48..<56, with: (0..<8).map { UInt8(truncatingIfNeeded: plaintextLength >> (56 - 8 * $0)) })
            let key = try header.withUnsafeBytes { try ring.secureFileKey(forWritingFileID: $0.baseAddress! + 16) }
            header.withUnsafeMutableBytes { raw in
                key.headerMAC(UnsafeRawBufferPointer(rebasing: raw[0..<56]), into: raw.baseAddress! + 56)
            }
            var file = header
            for (index, isFinal) in tags.enumerated() {
                let plaintext = SecureFileFixture.bytes(index == 0 ? Self.chunk : 10, seed: UInt32(index))
                let aad = Array(header[0..<48]) + [0, 0, 0, UInt8(index)]
                var sealed = [UInt8](repeating: 0, count: plaintext.count + SecureFileKey.chunkOverhead)
                _ = aad.withUnsafeBytes { aad in
                    plaintext.withUnsafeBytes { plaintext in
                        sealed.withUnsafeMutableBytes { out in
                            key.sealChunk(aad: aad, plaintext: plaintext, isFinal: isFinal, into: out.baseAddress!)
                        }
                    }
                }
                file += [0, 0, 0, UInt8(index)] + sealed
            }
            return file
        }
        try folder.overwrite("f", with: try forge([false, true]))
        #expect(try store.read("f").count == Self.chunk + 10) // the forgery is well-formed
        try folder.overwrite("f", with: try forge([false, false]))
        #expect(throws: SecureFileError.corruptChunk(index: 1)) { try store.read("f") }
        try folder.overwrite("f", with: try forge([true, true]))
        #expect(throws: SecureFileError.corruptChunk(index: 0)) { try store.read("f") }
    }

    @Test("appended bytes are TrailingData at open")
    func trailing() throws {
        let s = try Setup()
        try s.tamper { $0 += [0] }
        #expect(throws: SecureFileError.trailingData(expectedSize: s.raw.count, actualSize: s.raw.count + 1)) {
            try s.store.open("f")
        }
    }

    @Test("swapped chunks are ChunkOutOfOrder, naming where each was found")
    func reordering() throws {
        let s = try Setup()
        let frame = Self.chunk + SecureFileFormat.frameOverhead
        try s.tamper { bytes in
            let one = Array(bytes[s.frame(1)..<(s.frame(1) + frame)])
            let three = Array(bytes[s.frame(3)..<(s.frame(3) + frame)])
            bytes.replaceSubrange(s.frame(1)..<(s.frame(1) + frame), with: three)
            bytes.replaceSubrange(s.frame(3)..<(s.frame(3) + frame), with: one)
        }
        let reader = try s.store.open("f") // the header and the size are intact
        #expect(throws: SecureFileError.chunkOutOfOrder(position: 1, foundIndex: 3)) {
            try reader.read(offset: Self.chunk, count: 10)
        }
        #expect(throws: SecureFileError.chunkOutOfOrder(position: 3, foundIndex: 1)) {
            try reader.read(offset: 3 * Self.chunk, count: 10)
        }
        #expect(throws: SecureFileError.chunkOutOfOrder(position: 1, foundIndex: 3)) { try reader.verify() }
        #expect(try reader.read(offset: 0, count: Self.chunk) == Array(s.plaintext[0..<Self.chunk]))
        // A chunk duplicated over its neighbour is out of order too.
        try s.tamper { bytes in
            let zero = Array(bytes[s.frame(0)..<(s.frame(0) + frame)])
            bytes.replaceSubrange(s.frame(2)..<(s.frame(2) + frame), with: zero)
        }
        #expect(throws: SecureFileError.chunkOutOfOrder(position: 2, foundIndex: 0)) { try s.store.read("f") }
        // Relabelling a chunk's clear index does not pass it off as another chunk.
        try s.tamper { $0[s.frame(1) + 3] = 2 }
        #expect(throws: SecureFileError.corruptChunk(index: 1)) { try s.store.read("f") }
        #expect(SecureFileError.chunkOutOfOrder(position: 0, foundIndex: 1).code == .badKeyOrCorruptData)
    }

    @Test("a chunk from another file (same key, same position) is CorruptChunk")
    func splicing() throws {
        let s = try Setup()
        try s.store.write(SecureFileFixture.bytes(Self.size, seed: 6), to: "g")
        let other = s.folder.raw("g")
        try s.tamper { $0.replaceSubrange(s.frame(1)..<s.frame(2), with: other[s.frame(1)..<s.frame(2)]) }
        #expect(throws: SecureFileError.corruptChunk(index: 1)) { try s.store.read("f") }
    }

    @Test("header damage: magic is NotASecureFile, an unknown version UnsupportedVersion, version 1 and any other byte fail the header MAC")
    func header() throws {
        let s = try Setup()
        try s.tamper { $0[1] = UInt8(ascii: "X") }
        #expect(throws: SecureFileError.notASecureFile) { try s.store.open("f") }
        try s.tamper { $0[4] = 3 }
        #expect(throws: SecureFileError.unsupportedVersion(3)) { try s.store.open("f") }
        // Version 2 relabelled as the legacy version 1: the header no longer authenticates.
        try s.tamper { $0[4] = 1 }
        #expect(throws: SecureFileError.headerAuthenticationFailed) { try s.store.open("f") }
        for offset in [5, 9, 20, 47, 48, 55, 56, 87] {
            try s.tamper { $0[offset] ^= 0x04 }
            #expect(throws: SecureFileError.headerAuthenticationFailed, "offset \(offset)") { try s.store.open("f") }
        }
        // A plaintext file is not a secure file.
        try s.folder.overwrite("plain", with: Array("hello".utf8))
        #expect(throws: SecureFileError.notASecureFile) { try s.store.open("plain") }
    }

    @Test("a file whose header declares more than the store's cap is FileTooBig, before any decryption")
    func tooBigToRead() throws {
        let s = try Setup()
        let small = SecureFileFixture.store(s.folder, ring: s.ring, chunkSize: Self.chunk, maximumFileSize: Self.size - 1)
        #expect(throws: SecureFileError.fileTooBig(size: Self.size, limit: Self.size - 1)) { try small.open("f") }
        #expect(SecureFileError.fileTooBig(size: 2, limit: 1).code == .fileTooBig)
    }

    @Test("a different key ring is the wrong key: UnknownKey; the same key id with other key bytes fails the header")
    func wrongKey() throws {
        let s = try Setup()
        let stranger = SecureFileFixture.store(s.folder, ring: try KeyRing.generate(), chunkSize: Self.chunk)
        #expect(throws: SecureFileError.unknownKey(id: s.ring.currentKeyID)) { try stranger.open("f") }
        let impostorRing = try SealingFixture.ring(keyBytes: SealingFixture.random(32), id: s.ring.currentKeyID)
        let impostor = SecureFileFixture.store(s.folder, ring: impostorRing, chunkSize: Self.chunk)
        #expect(throws: SecureFileError.headerAuthenticationFailed) { try impostor.open("f") }
        #expect(SecureFileError.unknownKey(id: 1).code == .badKeyOrCorruptData)
        #expect(SecureFileError.headerAuthenticationFailed.code == .badKeyOrCorruptData)
        #expect(SecureFileError.headerAuthenticationFailed.posixErrorCode == 5) // EIO
    }
}
