import Foundation
import ShareBrokerAgent
import ShareBrokerAgentProtocol
import Testing

/// Issue 29, item 7: refusals are coalesced on the file a process runs (device and inode) and
/// its uid, so hard links of one file at many paths cannot flood the audit log.
@Suite("refusal coalescing")
struct RefusalCoalescingTests {
    @Test("300 processes running 300 hard links of one unregistered file: one audit record on its own and one coalesced record counting the rest, naming the first path")
    func hardLinksCoalesce() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let original = world.apps + "/unregistered"
        try world.installExecutable(at: original)
        var links: [String] = []
        for index in 0..<300 {
            let path = world.apps + "/link-\(index)"
            #expect(link(original, path) == 0)
            links.append(path)
        }
        for (index, path) in links.enumerated() {
            let connection = RecordingConnection()
            core.admitApp(peer: try world.peer(Int32(3000 + index), running: path), connection: connection)
            #expect(connection.session == nil)
        }
        core.flushCoalescedRefusals()
        #expect(await eventually {
            world.logRecords("audit.jsonl").filter { $0["reason"] as? String == "unregistered" }
                .reduce(0) { $0 + (($1["count"] as? Int) ?? 1) } == 300
        })
        let records = world.logRecords("audit.jsonl").filter { $0["reason"] as? String == "unregistered" }
        #expect(records.count == 2, "\(records.count) records for 300 refusals of one file")
        #expect(records.allSatisfy { ($0["executable"] as? String) == links[0] })
    }
}

/// Issue 29, item 11: registered executables someone other than root could replace.
@Suite("replaceable executables")
struct ReplaceableExecutableTests {
    @Test("A policy install names each unpinned registered executable its (non-root) owner could replace, and says to pin it; a pinned one is not named")
    func unpinnedWritableWarned() throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        // notes belongs to an ordinary user (as root: a uid of nobody's; as a user: the test's own).
        if geteuid() == 0 { #expect(chown(world.notes, 4242, 4242) == 0) }
        var apps = world.standardApps()
        apps[1].sha256 = PeerIdentifier.sha256(ofFile: world.viewer)
        let response = core.setPolicy(world.document(apps))
        #expect(response.ok)
        #expect(response.message.contains("warning: \(world.notes) (com.acme.notes) is not pinned"), "\(response.message)")
        #expect(response.message.contains("pin its sha256"))
        #expect(!response.message.contains(world.viewer), "\(response.message)")
        // Pinned, it is not named either.
        apps[0].sha256 = PeerIdentifier.sha256(ofFile: world.notes)
        let pinned = core.setPolicy(world.document(apps))
        #expect(pinned.ok && !pinned.message.contains("warning"), "\(pinned.message)")
    }
}
