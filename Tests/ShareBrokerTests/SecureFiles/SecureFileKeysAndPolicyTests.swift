@testable import ShareBroker
import Testing
import ShareBrokerCrypto

@Suite("SecureFile keys, authorization and policy through the broker")
struct SecureFileKeysAndPolicyTests {
    static let ready = PolicyUpdate(auth: .authorized, secureFileIO: .required)

    @Test("through a ready, authorized broker with keys, files round-trip")
    func brokerRoundTrip() throws {
        let folder = SecureFileScratchFolder()
        let fixture = try Fixture(ready: Self.ready, configuration: ShareBroker.Configuration(secureFileDirectories: [folder.path + "/nested/secure"]))
        let files = try fixture.broker.secureFiles(directory: folder.path + "/nested/secure")
        try files.write([1, 2, 3], to: "a")
        #expect(try files.read("a") == [1, 2, 3])
        #expect(files.policy == .required)
        #expect(folder.mode("nested/secure/a") == 0o600)
    }

    @Test("secure services unavailable: opening and creating fail with NoKeys (EACCES)")
    func noKeysWhenUnavailable() throws {
        let folder = SecureFileScratchFolder()
        let fixture = try Fixture(ready: Self.ready, configuration: ShareBroker.Configuration(secureFileDirectories: [folder.path]))
        let files = try fixture.broker.secureFiles(directory: folder.path)
        try files.write([1], to: "a")
        fixture.custodian.setAvailable(false)
        let expected = SecureFileError.noKeys(.secureServicesUnavailable)
        #expect(throws: expected) { try files.open("a") }
        #expect(throws: expected) { try files.createFile("b") }
        #expect(throws: expected) { try files.write([2], to: "a") }
        #expect(expected.code == .noKeys)
        #expect(expected.code.rawValue == 1)
        #expect(expected.posixErrorCode == 13) // EACCES
        #expect(expected.description.contains("no keys"))
        // The same when the library hears of it through the lifecycle.
        fixture.custodian.setAvailable(true)
        try fixture.broker.setSecureServices(.unavailable)
        #expect(throws: expected) { try files.open("a") }
        try fixture.broker.setSecureServices(.available)
        #expect(try files.read("a") == [1])
        #expect(folder.entries == ["a"]) // nothing half-written by the refused calls
    }

    @Test("before ready and while unauthorized, files cannot be reached (NoKeys)")
    func notReadyNotAuthorized() throws {
        let folder = SecureFileScratchFolder()
        let fixture = try Fixture(configuration: ShareBroker.Configuration(secureFileDirectories: [folder.path]))
        let files = try fixture.broker.secureFiles(directory: folder.path)
        #expect(throws: SecureFileError.noKeys(.notReady)) { try files.createFile("a") }
        try fixture.broker.apply(Self.ready)
        try files.write([7], to: "a")
        let reader = try files.open("a")
        try fixture.broker.apply(PolicyUpdate(auth: .unauthorized))
        #expect(throws: SecureFileError.noKeys(.notAuthorized)) { try files.open("a") }
        // An open reader is stopped at its next read.
        #expect(throws: SecureFileError.noKeys(.notAuthorized)) { try reader.read(offset: 0, count: 1) }
        try fixture.broker.apply(PolicyUpdate(auth: .authorized))
        #expect(try reader.read(offset: 0, count: 1) == [7])
    }

    @Test("a wipe of the keys stops open readers and writers; their file keys are zeroed")
    func wipeStopsHandles() throws {
        let folder = SecureFileScratchFolder()
        let ring = try KeyRing.generate()
        let store = SecureFileFixture.store(folder, ring: ring)
        try store.write(SecureFileFixture.bytes(1000), to: "a")
        let reader = try store.open("a")
        let writer = try store.createFile("b")
        try writer.write([1, 2, 3])
        ring.wipe()
        #expect(throws: SecureFileError.noKeys(.wiped)) { try reader.read(offset: 0, count: 1) }
        #expect(throws: SecureFileError.noKeys(.wiped)) { try writer.write([4]) }
        #expect(throws: SecureFileError.closed) { try writer.close() }
        #expect(throws: SecureFileError.noKeys(.wiped)) { try store.open("a") }
        #expect(folder.entries == ["a"]) // the abandoned writer left nothing
    }

    @Test("through the broker, a custodian wipe (retire) makes files unreachable")
    func custodianWipe() throws {
        let folder = SecureFileScratchFolder()
        let fixture = try Fixture(ready: Self.ready, configuration: ShareBroker.Configuration(secureFileDirectories: [folder.path]))
        let files = try fixture.broker.secureFiles(directory: folder.path)
        try files.write([1], to: "a")
        let reader = try files.open("a")
        fixture.custodian.wipe()
        #expect(throws: SecureFileError.noKeys(.secureServicesUnavailable)) { try reader.read(offset: 0, count: 1) }
        #expect(throws: SecureFileError.noKeys(.secureServicesUnavailable)) { try files.open("a") }
    }

    @Test("an app the custodian does not entitle gets NoKeys(notEntitled)")
    func notEntitled() throws {
        let folder = SecureFileScratchFolder()
        let fixture = try Fixture(ready: Self.ready, configuration: ShareBroker.Configuration(secureFileDirectories: [folder.path]))
        try fixture.custodian.revoke(appID: SecureFileFixture.appID)
        let files = try fixture.broker.secureFiles(directory: folder.path)
        #expect(throws: SecureFileError.noKeys(.notEntitled)) { try files.createFile("a") }
    }

    @Test("policy required refuses plaintext writes; optional allows them; encrypted writes work under both")
    func plaintextPolicy() throws {
        let folder = SecureFileScratchFolder()
        let fixture = try Fixture(ready: Self.ready, configuration: ShareBroker.Configuration(secureFileDirectories: [folder.path]))
        let files = try fixture.broker.secureFiles(directory: folder.path)
        #expect(throws: SecureFileError.plaintextWriteRefused) { try files.writePlaintext([1, 2], to: "p") }
        #expect(SecureFileError.plaintextWriteRefused.code == .invalidArgument)
        #expect(folder.entries.isEmpty)
        try files.write([3], to: "s")
        try fixture.broker.apply(PolicyUpdate(secureFileIO: .optional))
        #expect(files.policy == .optional)
        try files.writePlaintext(Array("plain".utf8), to: "p")
        #expect(folder.raw("p") == Array("plain".utf8))
        #expect(folder.mode("p") == 0o600)
        try files.write([4], to: "s")
        #expect(try files.read("s") == [4])
        try fixture.broker.apply(PolicyUpdate(secureFileIO: .required))
        #expect(throws: SecureFileError.plaintextWriteRefused) { try files.writePlaintext([9], to: "p") }
        #expect(folder.raw("p") == Array("plain".utf8))
        // Before ready the policy is at its most restrictive.
        let early = try Fixture(configuration: ShareBroker.Configuration(secureFileDirectories: [folder.path]))
        #expect(throws: SecureFileError.plaintextWriteRefused) {
            try early.broker.secureFiles(directory: folder.path).writePlaintext([1], to: "q")
        }
        // A store over a ring defaults to required.
        let direct = SecureFileStore(directory: folder.path, fileKeys: try FileKeyRing.generate())
        #expect(throws: SecureFileError.plaintextWriteRefused) { try direct.writePlaintext([1], to: "q") }
    }

    @Test("a store only over a configured folder: another one is refused, so every folder a retire must erase is known before start")
    func onlyConfiguredFolders() throws {
        let folder = SecureFileScratchFolder()
        let fixture = try Fixture(ready: Self.ready,
                                  configuration: ShareBroker.Configuration(secureFileDirectories: [folder.path + "/secure/"]))
        let files = try fixture.broker.secureFiles(directory: folder.path + "/secure")
        try files.write([1], to: "a")
        #expect(throws: ShareBrokerError.secureFileDirectoryNotConfigured(folder.path + "/other")) {
            try fixture.broker.secureFiles(directory: folder.path + "/other")
        }
        #expect(ShareBrokerError.secureFileDirectoryNotConfigured("x").description.contains("secureFileDirectories"))
    }

    @Test("every error maps to its ACError code")
    func codes() {
        #expect(SecureFileErrorCode.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6, 7, 444])
        let cases: [(SecureFileError, SecureFileErrorCode)] = [
            (.noKeys(.wiped), .noKeys), (.fileTooBig(size: 2, limit: 1), .fileTooBig),
            (.negativeLength(-1), .negativeFileLength), (.outOfMemory, .lowMemory),
            (.notASecureFile, .badKeyOrCorruptData), (.unsupportedVersion(9), .badKeyOrCorruptData),
            (.unknownKey(id: 1), .badKeyOrCorruptData), (.headerAuthenticationFailed, .badKeyOrCorruptData),
            (.corruptChunk(index: 0), .badKeyOrCorruptData), (.truncated(expectedSize: 2, actualSize: 1), .badKeyOrCorruptData),
            (.chunkOutOfOrder(position: 0, foundIndex: 1), .badKeyOrCorruptData),
            (.trailingData(expectedSize: 1, actualSize: 2), .badKeyOrCorruptData),
            (.plaintextWriteRefused, .invalidArgument), (.invalidName("/"), .invalidArgument),
            (.notFound("x"), .invalidArgument), (.closed, .invalidArgument),
            (.notARegularFile("d"), .regularFileOnly), (.io(operation: "write", path: "/x", code: 28), .internal),
        ]
        for (error, code) in cases {
            #expect(error.code == code, "\(error)")
            #expect(!error.description.isEmpty)
        }
    }
}
