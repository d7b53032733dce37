// libFuzzer harness: the secure file reader (header, chunk frames, random-access reads). Built and
// run by scripts/fuzz.sh; a plain `swift build` makes it a do-nothing executable. Only
// declarations here: under libFuzzer, libFuzzer owns `main` and top-level code never runs.
//
// The first byte of an input chooses a mode (its value modulo 2):
//
// 0  raw: the rest of the input is the file; it is opened and read whole, then at a range the
//    input chooses. Any typed error is fine; a crash, a trap or a hang is not.
// 1  written then mutated: a plaintext read from the input is written through the store under a
//    fixed file key (format version 2; version 1 inputs open under a fixed group key), then up to eight bytes of the file are changed and the file may be cut short, as
//    the input says. Unchanged, it must read back to exactly the plaintext; changed, every read
//    of the whole file must be refused.

import Foundation
import FuzzSupport
@_spi(Fuzzing) import ShareBroker
import ShareBrokerCrypto

enum SecureFileFuzz {
    static let folder: String = {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        let path = base + "sharebroker-fuzz-securefile-\(ProcessInfo.processInfo.processIdentifier)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// A fixed file key (writes, version 2 files) and a fixed group key (legacy version 1 seeds).
    static let store: SecureFileStore? = {
        let fileKeyBytes = (0..<32).map { UInt8(0x60 + $0) }
        guard let key = try? GroupKey(id: 0x5342_4601, importing: (0..<32).map { UInt8(0x40 + $0) }),
              let ring = try? KeyRing(current: key),
              let fileKeys = fileKeyBytes.withUnsafeBytes({ bytes in
                  try? FileKeyRing(importing: [(id: 0x5342_4602, bytes: bytes)])
              })
        else { return nil }
        return SecureFileStore.withKeys(directory: folder, fileKeys: fileKeys, legacyKeyRing: ring, policy: .required)
    }()

    static var path: String { folder + "/f" }

    static func run(_ bytes: [UInt8]) {
        guard let store else {
            fuzzRequire(false, "the fixed key ring could not be made")
            return
        }
        var input = FuzzInput(bytes)
        if input.byte() % 2 == 0 {
            let file = input.rest()
            _ = FileManager.default.createFile(atPath: path, contents: Data(file))
            readEverything(store, range: (Int(file.first ?? 0) * 37, Int(file.last ?? 0) * 101))
            return
        }
        let plaintext = input.bytes(input.int(upTo: 4096))
        do {
            try store.write(plaintext, to: "f")
        } catch {
            fuzzRequire(false, "writing \(plaintext.count) bytes failed: \(error)")
            return
        }
        guard var file = FileManager.default.contents(atPath: path).map(Array.init) else {
            fuzzRequire(false, "the written file is missing")
            return
        }
        let original = file
        for _ in 0..<input.int(upTo: 8) where !file.isEmpty {
            let at = Int(input.uint32()) % file.count
            let flip = input.byte()
            file[at] ^= flip == 0 ? 1 : flip
        }
        if input.byte() % 4 == 0, !file.isEmpty {
            file.removeLast(1 + Int(input.uint32()) % file.count)
        }
        _ = FileManager.default.createFile(atPath: path, contents: Data(file))
        let changed = !sameBytes(file, original)
        do {
            let read = try store.read("f")
            fuzzRequire(!changed, "a changed file was read without an error")
            fuzzRequire(sameBytes(read, plaintext), "an unchanged file read back different bytes")
        } catch {
            fuzzRequire(changed, "an unchanged file was refused: \(error)")
        }
        readEverything(store, range: (Int(input.uint16()), Int(input.uint16())))
    }

    /// Opens the file and reads it whole, then at `range`; only typed errors may come out.
    static func readEverything(_ store: SecureFileStore, range: (offset: Int, count: Int)) {
        _ = try? store.read("f")
        guard let reader = try? store.open("f") else { return }
        _ = try? reader.verify()
        _ = try? reader.read(offset: range.offset, count: range.count)
        _ = try? reader.read(offset: max(0, reader.size - 1), count: 2)
        reader.close()
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSecureFile(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    SecureFileFuzz.run(FuzzInput(start, count).bytes)
    return 0
}
