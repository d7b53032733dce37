#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PropertyBased
@testable import ShareBroker
import Testing
import ShareBrokerCrypto

@Suite("SecureFile properties and the 64 MiB file")
struct SecureFilePropertyTests {
    @Test("random sizes, chunk sizes and piece sizes round-trip; random read ranges match the plaintext")
    func randomRanges() async throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        await propertyCheck(count: 120, input: Gen.int(in: 0...4000), Gen.int(in: 8...10),
                            Gen.int(in: 1...700), Gen.int(in: 0...1_000_000).array(of: 1...12)) {
            size, chunkShift, piece, picks in
            let store = SecureFileFixture.store(folder, ring: ring, chunkSize: 1 << chunkShift)
            let plaintext = SecureFileFixture.bytes(size, seed: UInt32(truncatingIfNeeded: picks.first ?? 0))
            do {
                let writer = try store.createFile("p")
                var position = 0
                while position < size {
                    let end = min(size, position + piece)
                    try writer.write(Array(plaintext[position..<end]))
                    position = end
                }
                try writer.close()
                #expect(folder.raw("p").count == SecureFileFormat.fileSize(plaintextLength: size, chunkSize: 1 << chunkShift))
                let reader = try store.open("p")
                #expect(reader.size == size)
                for pair in stride(from: 0, to: picks.count - 1, by: 2) {
                    let offset = picks[pair] % (size + 2)
                    let count = picks[pair + 1] % (size + 2)
                    let got = try reader.read(offset: offset, count: count)
                    let start = min(offset, size), end = min(size, offset + count)
                    #expect(got == Array(plaintext[start..<end]), "size \(size) offset \(offset) count \(count)")
                }
                #expect(try reader.read(offset: 0, count: size) == plaintext)
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test("any single flipped bit is refused with BadKeyOrCorruptData and never yields wrong bytes")
    func randomBitFlips() async throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        let store = SecureFileFixture.store(folder, ring: ring, chunkSize: 256)
        let plaintext = SecureFileFixture.bytes(1000, seed: 8)
        try store.write(plaintext, to: "f")
        let raw = folder.raw("f")
        await propertyCheck(count: 150, input: Gen.int(in: 0...(raw.count * 8 - 1))) { bit in
            var bytes = raw
            bytes[bit / 8] ^= UInt8(1 << (bit % 8))
            do {
                try folder.overwrite("f", with: bytes)
                let reader = try store.open("f")
                try reader.verify()
                Issue.record("bit \(bit) went unnoticed")
            } catch let error as SecureFileError {
                if bit / 8 < 12 || bit / 8 >= 16 {
                    #expect(error.code == .badKeyOrCorruptData, "bit \(bit): \(error)")
                } else {
                    #expect(error == .unknownKey(id: BigEndianBytes.load32(bytes, at: 12)), "bit \(bit)")
                }
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test("64 MiB streams in and reads back, sequentially and at random offsets")
    func sixtyFourMiB() throws {
        let folder = SecureFileScratchFolder()
        let store = SecureFileFixture.store(folder, ring: try KeyRing.generate())
        let total = 64 << 20
        // content[p] = base[p % period]: a period that no chunk size divides, so a misplaced
        // chunk never matches. The only large array in the test.
        let period = 1_048_573
        let base = SecureFileFixture.bytes(period, seed: 64)
        try base.withUnsafeBytes { (base) throws in
            let writer = try store.createFile("big")
            var position = 0
            while position < total {
                let start = position % period
                let take = min(period - start, total - position, 100_003)
                try writer.write(UnsafeRawBufferPointer(rebasing: base[start..<(start + take)]))
                position += take
            }
            try writer.close()
            #expect(folder.raw("big").count == SecureFileFormat.fileSize(plaintextLength: total))

            let reader = try store.open("big")
            #expect(reader.size == total)
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            try buffer.withUnsafeMutableBytes { buffer in
                var position = 0
                while position < total {
                    let n = try reader.read(offset: position, into: buffer)
                    #expect(n == min(buffer.count, total - position))
                    #expect(Self.matches(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), at: position, base: base, period: period))
                    position += n
                }
                for offset in [0, 65_535, 65_536 * 7 - 10, total / 2 + 3, total - 70_000, total - 1] {
                    let n = try reader.read(offset: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<100_000]))
                    #expect(n == min(100_000, total - offset))
                    #expect(Self.matches(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), at: offset, base: base, period: period))
                }
            }
            reader.close()
        }
    }

    /// Whether `bytes` equal the content at `position` of the periodic file.
    static func matches(_ bytes: UnsafeRawBufferPointer, at position: Int, base: UnsafeRawBufferPointer, period: Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let start = (position + done) % period
            let take = min(period - start, bytes.count - done)
            guard SecureFileFixture.same(UnsafeRawBufferPointer(rebasing: bytes[done..<(done + take)]),
                                         UnsafeRawBufferPointer(rebasing: base[start..<(start + take)])) else {
                return false
            }
            done += take
        }
        return true
    }
}

extension BigEndianBytes {
    /// The big-endian UInt32 at `offset` of `bytes` (tests).
    static func load32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
