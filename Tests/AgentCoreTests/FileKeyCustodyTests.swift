import Foundation
import ShareBroker
import ShareBrokerAgent
import ShareBrokerAgentProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 13, item 9, in the agent: every app gets its own file keys, never another app's; a
/// loss of entitlement starts a new generation and drops none; they persist across a restart;
/// a retire drops them.
@Suite("AgentCore: per-app file keys")
struct FileKeyCustodyTests {
    /// The file keys (id and bytes) of the last key frame `connection` received.
    static func lastFileKeys(_ connection: RecordingConnection) throws -> [(id: UInt32, bytes: [UInt8])] {
        let frame = try #require(connection.frames(.keys).last)
        return try KeyRingMessage.withEntries(in: frame.body) { _, files in files.map { ($0.id, Array($0.bytes)) } }
    }

    static func policy(_ world: CoreFixture, notes: String) -> String {
        world.document(world.standardApps(notes: notes))
    }

    @Test("each app gets its own file keys; deauthorizations add generations for that app only; all of them survive a restart; a retire drops them")
    func perAppGenerationsPersisted() throws {
        let world = try CoreFixture()
        var core: AgentCore? = try world.makeCore()
        let notes = try world.connect(try #require(core), try world.peer(101, running: world.notes))
        let viewer = try world.connect(try #require(core), try world.peer(102, running: world.viewer))
        let notesFirst = try Self.lastFileKeys(notes.connection)
        let viewerFirst = try Self.lastFileKeys(viewer.connection)
        #expect(notesFirst.count == 1)
        #expect(viewerFirst.count == 1)
        #expect(notesFirst[0].id != viewerFirst[0].id)
        #expect(notesFirst[0].bytes != viewerFirst[0].bytes)

        for _ in 0..<3 {
            #expect(try #require(core).setPolicy(Self.policy(world, notes: CoreFixture.unauthorized)).ok)
            #expect(try Self.lastFileKeys(notes.connection).isEmpty, "a deauthorized app gets no keys")
            #expect(try #require(core).setPolicy(Self.policy(world, notes: CoreFixture.secureCopy)).ok)
        }
        let notesNow = try Self.lastFileKeys(notes.connection)
        #expect(notesNow.count == 4)
        #expect(notesNow.last?.id == notesFirst[0].id, "the oldest generation is kept, last")
        #expect(notesNow.last?.bytes == notesFirst[0].bytes)
        #expect(Set(notesNow.map(\.id)).count == 4)
        let viewerNow = try Self.lastFileKeys(viewer.connection)
        #expect(viewerNow.map(\.id) == viewerFirst.map(\.id), "the other app's file keys did not change")
        #expect(Set(viewerNow.map(\.id)).isDisjoint(with: notesNow.map(\.id)))
        #expect(try viewer.connection.keyFrames().count >= 2, "the viewer got the rotated group ring")

        // A restart loads every generation, byte for byte.
        core = nil
        core = try world.makeCore()
        let again = try world.connect(try #require(core), try world.peer(103, running: world.notes))
        let reloaded = try Self.lastFileKeys(again.connection)
        #expect(reloaded.map(\.id) == notesNow.map(\.id))
        #expect(reloaded.map(\.bytes) == notesNow.map(\.bytes))
        let viewerAgain = try world.connect(try #require(core), try world.peer(104, running: world.viewer))
        #expect(try Self.lastFileKeys(viewerAgain.connection).map(\.bytes) == viewerNow.map(\.bytes))
        // The key ring file stays owner-only.
        var stats = stat()
        #expect(lstat(world.state + "/keyring", &stats) == 0)
        #expect(stats.st_mode & 0o777 == 0o600)

        // Retired: the app's file keys are dropped (its files are wiped); authorized again, it
        // starts over with one fresh generation.
        #expect(try #require(core).setPolicy(Self.policy(world, notes: #"{"auth": "retired"}"#)).ok)
        #expect(try #require(core).setPolicy(Self.policy(world, notes: CoreFixture.secureCopy)).ok)
        let fresh = try world.connect(try #require(core), try world.peer(105, running: world.notes))
        let freshKeys = try Self.lastFileKeys(fresh.connection)
        #expect(freshKeys.count == 1)
        #expect(!notesNow.map(\.id).contains(freshKeys[0].id))
        #expect(try Self.lastFileKeys(viewerAgain.connection).map(\.bytes) == viewerNow.map(\.bytes))
    }

    @Test("a version 1 key ring file (group keys only) loads: the group keys are kept and file keys are added")
    func keyStoreVersion1() throws {
        let world = try CoreFixture()
        try FileManager.default.createDirectory(atPath: world.state, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let meta = Array(#"{"entitled":["com.acme.notes","com.acme.viewer"],"rotation":3}"#.utf8)
        var file = Array("SBKR".utf8) + [1, 2]
        file += [0x11, 0x22, 0x33, 0x44] + [UInt8](repeating: 0xA5, count: 32)
        file += [0x55, 0x66, 0x77, 0x88] + [UInt8](repeating: 0x5A, count: 32)
        file += [0, 0, 0, UInt8(meta.count)] + meta
        #expect(FileManager.default.createFile(atPath: world.state + "/keyring", contents: Data(file),
                                               attributes: [.posixPermissions: 0o600]))
        let core = try world.makeCore()
        #expect(core.status().currentKey == 0x1122_3344)
        let notes = try world.connect(core, try world.peer(101, running: world.notes))
        #expect(try notes.connection.keyFrames().last == [0x1122_3344, 0x5566_7788])
        #expect(try Self.lastFileKeys(notes.connection).count == 1)
        // Saved as version 2.
        let saved = try #require(FileManager.default.contents(atPath: world.state + "/keyring"))
        #expect(Array(saved)[4] == 2)
    }
}
