@testable import ShareBroker
import ShareBrokerCrypto
import ShareBrokerTesting
import Testing

/// Issue 13, item 9: secure files are sealed under per-app file keys (format version 2) that
/// the custodian never drops, and legacy version 1 files (group-key derived) still open.
@Suite("SecureFile per-app file keys and format version 2")
struct SecureFilePerAppKeyTests {
    static let ready = PolicyUpdate(auth: .authorized, secureFileIO: .required)

    /// Two apps of one device sharing the in-process custodian, both ready and authorized.
    struct TwoApps {
        let custodian: InProcessKeyCustodian
        let a: ShareBroker
        let b: ShareBroker
        let delegates: [RecordingDelegate]

        /// `secureFileDirectories`: the folders both brokers' configurations name.
        init(secureFileDirectories: [String] = []) throws {
            custodian = try InProcessKeyCustodian(entitledAppIDs: ["com.acme.a", "com.acme.b"])
            var brokers: [ShareBroker] = []
            var delegates: [RecordingDelegate] = []
            for id in ["com.acme.a", "com.acme.b"] {
                let broker = ShareBroker(appID: id, platform: Platform(
                    outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: RecordingReportSink(),
                    pasteboard: InMemoryPasteboard(), secureServices: custodian),
                    configuration: ShareBroker.Configuration(secureFileDirectories: secureFileDirectories))
                let delegate = RecordingDelegate()
                try broker.start(delegate: delegate)
                try broker.apply(SecureFilePerAppKeyTests.ready)
                brokers.append(broker)
                delegates.append(delegate)
            }
            a = brokers[0]
            b = brokers[1]
            self.delegates = delegates
        }
    }

    /// A valid legacy version 1 file of `plaintext` (under 64 KiB: one FINAL chunk) sealed under
    /// `ring`'s current group key, as the library wrote before file keys.
    static func legacyFile(_ plaintext: [UInt8], ring: KeyRing) throws -> [UInt8] {
        var header = [UInt8](repeating: 0, count: SecureFileFormat.headerLength)
        header.replaceSubrange(0..<4, with: SecureFileFormat.magic)
        header[4] = SecureFileFormat.legacyVersion
        header.replaceSubrange(8..<12, with: [0, 1, 0, 0]) // 65,536
        let id = ring.currentKeyID
        header.replaceSubrange(12..<16, with: [UInt8(id >> 24), UInt8(truncatingIfNeeded: id >> 16),
                                                UInt8(truncatingIfNeeded: id >> 8), UInt8(truncatingIfNeeded: id)])
        header.replaceSubrange(16..<48, with: SealingFixture.random(32))
        header.replaceSubrange(48..<56, with: (0..<8).map { UInt8(truncatingIfNeeded: plaintext.count >> (56 - 8 * $0)) })
        let key = try header.withUnsafeBytes { try ring.secureFileKey(forWritingFileID: $0.baseAddress! + 16) }
        header.withUnsafeMutableBytes { raw in
            key.headerMAC(UnsafeRawBufferPointer(rebasing: raw[0..<56]), into: raw.baseAddress! + 56)
        }
        let aad = Array(header[0..<48]) + [0, 0, 0, 0]
        var sealed = [UInt8](repeating: 0, count: plaintext.count + SecureFileKey.chunkOverhead)
        _ = aad.withUnsafeBytes { aad in
            plaintext.withUnsafeBytes { plaintext in
                sealed.withUnsafeMutableBytes { out in
                    key.sealChunk(aad: aad, plaintext: plaintext, isFinal: true, into: out.baseAddress!)
                }
            }
        }
        return header + [0, 0, 0, 0] + sealed
    }

    static func keyID(_ file: [UInt8]) -> UInt32 {
        file[12..<16].reduce(0) { $0 << 8 | UInt32($1) }
    }

    @Test("new files are format version 2 and name the app's newest file key, not a group key")
    func writesVersion2() throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        let fileKeys = try FileKeyRing.generate().advanced()
        let store = SecureFileStore(directory: folder.path, fileKeys: fileKeys, legacyKeyRing: ring)
        try store.write(Array("v2".utf8), to: "f")
        let raw = folder.raw("f")
        #expect(raw[4] == 2)
        #expect(SecureFileFormat.version == 2)
        #expect(Self.keyID(raw) == fileKeys.currentKeyID)
        #expect(Self.keyID(raw) != ring.currentKeyID)
        #expect(raw.count == SecureFileFormat.fileSize(plaintextLength: 2))
        #expect(try store.read("f") == Array("v2".utf8))
        #expect(throws: SealingError.invalidKeyLength) { try FileKeyRing(importing: []) }
    }

    @Test("a file sealed under an older generation opens after any number of new generations")
    func olderGenerationsOpen() throws {
        let folder = SecureFileScratchFolder()
        var keys = try FileKeyRing.generate()
        var expected: [String: [UInt8]] = [:]
        for generation in 0..<20 {
            let store = SecureFileStore(directory: folder.path, fileKeys: keys)
            let bytes = SecureFileFixture.bytes(100 + generation, seed: UInt32(generation))
            try store.write(bytes, to: "g\(generation)")
            expected["g\(generation)"] = bytes
            keys = try keys.advanced()
        }
        #expect(keys.count == 21)
        let store = SecureFileStore(directory: folder.path, fileKeys: keys)
        for (name, bytes) in expected { #expect(try store.read(name) == bytes) }
        #expect(Set(expected.keys.map { Self.keyID(folder.raw($0)) }).count == 20)
    }

    @Test("legacy version 1 files (group-key derived) still open through the group ring, and are refused without it")
    func legacyVersion1() throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        let plaintext = Array("written before file keys".utf8)
        try folder.overwrite("old", with: try Self.legacyFile(plaintext, ring: ring))
        #expect(folder.raw("old")[4] == 1)
        let fileKeys = try FileKeyRing.generate()
        let store = SecureFileStore(directory: folder.path, fileKeys: fileKeys, legacyKeyRing: ring)
        #expect(try store.read("old") == plaintext)
        // After a rotation of the group ring (within its kept keys) it still opens.
        let rotated = SecureFileStore(directory: folder.path, fileKeys: fileKeys, legacyKeyRing: try ring.rotated())
        #expect(try rotated.read("old") == plaintext)
        // No group ring: the group key is unknown.
        let noLegacy = SecureFileStore(directory: folder.path, fileKeys: fileKeys)
        #expect(throws: SecureFileError.unknownKey(id: ring.currentKeyID)) { try noLegacy.read("old") }
        // Rewriting it makes a version 2 file under the file key.
        try store.write(try store.read("old"), to: "old")
        #expect(folder.raw("old")[4] == 2)
        #expect(Self.keyID(folder.raw("old")) == fileKeys.currentKeyID)
        #expect(try noLegacy.read("old") == plaintext)
        // Through the broker: the custodian's group ring opens a version 1 file.
        let apps = try TwoApps(secureFileDirectories: [folder.path])
        let groupRing = try apps.custodian.keyRing(for: "com.acme.a")
        try folder.overwrite("old1", with: try Self.legacyFile(plaintext, ring: groupRing))
        #expect(try apps.a.secureFiles(directory: folder.path).read("old1") == plaintext)
    }

    @Test("a version byte changed between 1 and 2 fails the header, whichever keys are held")
    func versionDowngrade() throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        let fileKeys = FileKeyRing(sharingKeysOf: ring) // the worst case: one key under both versions
        let store = SecureFileStore(directory: folder.path, fileKeys: fileKeys, legacyKeyRing: ring)
        try store.write([1, 2, 3], to: "f")
        var raw = folder.raw("f")
        raw[4] = 1
        try folder.overwrite("f", with: raw)
        #expect(throws: SecureFileError.headerAuthenticationFailed) { try store.open("f") }
        try folder.overwrite("v1", with: try Self.legacyFile([4, 5, 6], ring: ring))
        var legacy = folder.raw("v1")
        legacy[4] = 2
        try folder.overwrite("v1", with: legacy)
        #expect(throws: SecureFileError.headerAuthenticationFailed) { try store.open("v1") }
        raw[4] = 3
        try folder.overwrite("f", with: raw)
        #expect(throws: SecureFileError.unsupportedVersion(3)) { try store.open("f") }
    }

    @Test("20 revocations in process: every file app A wrote opens for A, none for B, which is authorized and holds the group key")
    func twentyRotationsInProcess() throws {
        let folder = SecureFileScratchFolder()
        let apps = try TwoApps(secureFileDirectories: [folder.path])
        let filesA = try apps.a.secureFiles(directory: folder.path)
        var written: [String: [UInt8]] = [:]
        _ = try apps.custodian.fileKeys(for: "com.acme.a") // the first generation
        for cycle in 0..<20 {
            try apps.custodian.revoke(appID: "com.acme.a")
            apps.custodian.entitle(appID: "com.acme.a")
            let bytes = Array("cycle \(cycle)".utf8)
            try filesA.write(bytes, to: "f\(cycle)")
            written["f\(cycle)"] = bytes
        }
        #expect(try apps.custodian.fileKeys(for: "com.acme.a").count == 21)
        #expect(try apps.custodian.fileKeys(for: "com.acme.b").count == 1)
        for (name, bytes) in written { #expect(try filesA.read(name) == bytes) }
        let filesB = try apps.b.secureFiles(directory: folder.path)
        _ = try apps.custodian.keyRing(for: "com.acme.b") // B holds the group's keys
        for name in written.keys {
            let id = Self.keyID(folder.raw(name))
            #expect(throws: SecureFileError.unknownKey(id: id)) { try filesB.read(name) }
        }
        #expect(SecureFileError.unknownKey(id: 1).description.contains("another app's file"))
    }

    @Test("Attack: B, authorized and holding the group key, takes A's file bytes: its own store refuses them, the group key used as a file key fails the header, and so does the header downgraded to version 1 under the group key")
    func otherAppWithGroupKey() throws {
        let folderA = SecureFileScratchFolder()
        let folderB = SecureFileScratchFolder()
        let apps = try TwoApps(secureFileDirectories: [folderA.path, folderB.path])
        let secret = Array("A's secret".utf8)
        try apps.a.secureFiles(directory: folderA.path).write(secret, to: "f")
        let stolen = folderA.raw("f")
        let idA = Self.keyID(stolen)
        // 1. B copies the bytes into its own folder and opens them with its own keys.
        try folderB.overwrite("f", with: stolen)
        let filesB = try apps.b.secureFiles(directory: folderB.path)
        #expect(throws: SecureFileError.unknownKey(id: idA)) { try filesB.read("f") }
        // 2. B imports every group key it holds as a file key under A's key id.
        let group = try apps.custodian.keyRing(for: "com.acme.b")
        for index in group.keyIDs.indices {
            let forged = try #require(try group.exportKeys { keys in
                try? FileKeyRing(importing: [(id: idA, bytes: keys[index].bytes)])
            })
            let store = SecureFileStore(directory: folderB.path, fileKeys: forged, legacyKeyRing: group)
            #expect(throws: SecureFileError.headerAuthenticationFailed) { try store.read("f") }
        }
        // 3. B rewrites the header as a legacy version 1 file under the group key's id.
        var downgraded = stolen
        downgraded[4] = 1
        let groupID = group.currentKeyID
        downgraded.replaceSubrange(12..<16, with: [UInt8(groupID >> 24), UInt8(truncatingIfNeeded: groupID >> 16),
                                                   UInt8(truncatingIfNeeded: groupID >> 8), UInt8(truncatingIfNeeded: groupID)])
        try folderB.overwrite("f", with: downgraded)
        #expect(throws: SecureFileError.headerAuthenticationFailed) { try filesB.read("f") }
        // A still reads its file.
        #expect(try apps.a.secureFiles(directory: folderA.path).read("f") == secret)
    }

    @Test("the in-process custodian: file keys are per app, refused when not entitled or unavailable, and wiped at a retire")
    func custodianFileKeys() throws {
        let apps = try TwoApps()
        let a = try apps.custodian.fileKeys(for: "com.acme.a")
        let b = try apps.custodian.fileKeys(for: "com.acme.b")
        #expect(Set(a.keyIDs).isDisjoint(with: b.keyIDs))
        #expect(try apps.custodian.fileKeys(for: "com.acme.a") === a)
        #expect(throws: ShareBrokerError.notEntitled("com.acme.c")) { try apps.custodian.fileKeys(for: "com.acme.c") }
        apps.custodian.setAvailable(false)
        #expect(throws: ShareBrokerError.secureServicesUnavailable) { try apps.custodian.fileKeys(for: "com.acme.a") }
        apps.custodian.setAvailable(true)
        #expect(a.description.contains("FileKeyRing("))
        apps.custodian.wipe()
        #expect(a.isWiped)
        #expect(b.isWiped)
        #expect(throws: ShareBrokerError.secureServicesUnavailable) { try apps.custodian.fileKeys(for: "com.acme.a") }
    }
}
