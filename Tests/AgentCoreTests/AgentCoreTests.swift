import Foundation
import ShareBroker
import ShareBrokerAgent
import ShareBrokerAgentProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The agent's logic in process: `AgentCore` driven through a recording `AgentConnection`, with
/// the real `PeerIdentifier` reading a `/proc` the fixture lays out. No sockets, no processes:
/// the ASan and TSan runs (`make sanitize`) run these.
@Suite("AgentCore in process")
struct AgentCoreTests {
    @Test("A registered app is admitted: session, then welcome with its policy and device; keys only when asked")
    func admission() throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let connection = RecordingConnection()
        core.admitApp(peer: try world.peer(101, running: world.notes), connection: connection)

        // admitted(session:) before the welcome, and nothing else yet: no key before a keyRequest.
        let events = connection.events
        #expect(events.count == 2)
        guard case .admitted(let session) = events.first else {
            Issue.record("first event is not the admission: \(events)")
            return
        }
        #expect(connection.frames.map(\.type) == [.welcome])
        #expect(events.last == .frame(try #require(connection.frames.first), sensitive: false))
        let welcome = try #require(try connection.decoded(.welcome, as: WelcomeMessage.self).first)
        #expect(welcome.app == "com.acme.notes")
        #expect(welcome.peer == PeerDescription(pid: 101, uid: geteuid(), executable: world.notes))
        #expect(welcome.push == 1)
        #expect(welcome.policy.authState == .authorized)
        #expect(welcome.policy.pasteboard == PasteboardPolicy.secureCopy.rawValue)
        // "All AppConnect apps" expanded by the agent: the other authorized app, not itself.
        #expect(welcome.policy.openInWhitelist == ["com.acme.viewer"])
        #expect(Set(welcome.device.map(\.id)) == ["com.acme.viewer", "org.example.sheets"])
        #expect(welcome.device.first { $0.id == "org.example.sheets" }?.appConnect == false)

        core.keysRequested(session: session)
        let status = core.status()
        let keys = try connection.keyFrames()
        #expect(keys.count == 1)
        #expect(keys.first?.first == status.currentKey, "the first key seals: the ring's current one")
        #expect(connection.events.last.map { if case .frame(_, let sensitive) = $0 { sensitive } else { false } } == true,
                "a frame holding key bytes is sent as sensitive")
        #expect(status.connectedApps == ["com.acme.notes (pid 101)"])
        #expect(status.entitledApps == ["com.acme.notes", "com.acme.viewer"])

        // A second request sends the ring again; the session stays open.
        core.keysRequested(session: session)
        #expect(try connection.keyFrames() == [keys[0], keys[0]])
        #expect(!connection.isClosed)

        core.disconnected(session: session)
        #expect(core.status().connectedApps.isEmpty)
        core.keysRequested(session: session)
        #expect(connection.frames(.keys).count == 2, "a session that ended gets nothing")
    }

    @Test("Peers that are not registered AppConnect apps are refused: audited first, then the refusal, then close")
    func refusals() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let audited = Locked<[Int32: Bool]>([:])
        let cases: [(peer: PeerCredentials, reason: RefusalReason)] = [
            (try world.peer(201, running: world.stranger), .unregistered),
            (try world.peer(202, running: world.sheets), .notAppConnect),
            (PeerCredentials(pid: 203, uid: geteuid(), gid: getegid()), .unidentified),    // no proc/203
            (try world.peer(204, running: world.notes, uid: geteuid() + 4_321), .userNotAllowed),
        ]
        var connections: [RecordingConnection] = []
        for item in cases {
            let pid = item.peer.pid
            let connection = RecordingConnection { [world] frame in
                // The refusal leaves only once its audit record is on disk.
                guard frame.type == .refused else { return }
                let onDisk = world.logRecords("audit.jsonl").contains { ($0["pid"] as? Int).map(Int32.init) == pid }
                audited.withLock { $0[pid] = onDisk }
            }
            core.admitApp(peer: item.peer, connection: connection)
            connections.append(connection)
        }
        for (item, connection) in zip(cases, connections) {
            #expect(await eventually { connection.isClosed }, "pid \(item.peer.pid) was not closed")
            #expect(connection.session == nil)
            #expect(connection.frames.map(\.type) == [.refused], "no welcome, no keys, no policy")
            #expect(connection.events.last == .closed)
            let refusal = try #require(try connection.decoded(.refused, as: RefusalMessage.self).first)
            #expect(refusal.reason == item.reason)
            #expect(refusal.peer?.pid == item.peer.pid)
            #expect(audited.withLock { $0[item.peer.pid] } == true, "pid \(item.peer.pid): refused before its audit record was durable")
        }
        let records = world.logRecords("audit.jsonl")
        let stranger = try #require(records.first { $0["pid"] as? Int == 201 })
        #expect(stranger["event"] as? String == "refused")
        #expect(stranger["reason"] as? String == "unregistered")
        #expect(stranger["executable"] as? String == world.stranger)
        #expect(core.status().connectedApps.isEmpty)

        // The server's last check (process gone, early bytes) refuses a registered app too.
        let late = RecordingConnection()
        core.admitApp(peer: try world.peer(205, running: world.viewer), connection: late) { executable in
            RefusalMessage(reason: .processGone, message: "gone", peer: PeerDescription(pid: 205, uid: geteuid(), executable: executable))
        }
        #expect(await eventually { late.isClosed })
        #expect(try late.decoded(.refused, as: RefusalMessage.self).map(\.reason) == [.processGone])
        #expect(late.session == nil)
        #expect(core.status().connectedApps.isEmpty)
    }

    @Test("Acknowledgments are logged durably, then receipted; an empty batch is receipted without a record")
    func acknowledgments() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let onDiskAtReceipt = Locked<[String: Int]>([:])
        let (connection, session) = try world.connect(core, try world.peer(301, running: world.notes)) { [world] frame in
            guard frame.type == .receipt, let receipt = try? AgentMessage.decode(ReceiptMessage.self, from: frame.body) else { return }
            let lines = world.logRecords("acknowledgments.jsonl").filter { $0["batch"] as? String == receipt.batch }.count
            onDiskAtReceipt.withLock { $0[receipt.batch] = lines }
        }
        let batch = AcknowledgmentBatch(id: "batch-1", push: 1, records: [
            WireAcknowledgment(id: "r1", AcknowledgmentRecord(kind: .pasteboard, acknowledgment: .applied, generation: 7)),
            WireAcknowledgment(id: "r2", AcknowledgmentRecord(kind: .print, acknowledgment: .error("no printer"), generation: 7)),
        ])
        core.acknowledgments(batch, session: session)
        core.acknowledgments(AcknowledgmentBatch(id: "empty", push: 1, records: []), session: session)
        core.acknowledgments(batch, session: session + 99)    // no such session: ignored

        #expect(await eventually { connection.frames(.receipt).count == 2 })
        let receipts = try connection.decoded(.receipt, as: ReceiptMessage.self)
        #expect(Set(receipts.map(\.batch)) == ["batch-1", "empty"])
        #expect(receipts.allSatisfy { $0.logged && $0.reason == nil })
        #expect(onDiskAtReceipt.withLock { $0 } == ["batch-1": 2, "empty": 0], "receipted before the records were on disk")

        let records = world.logRecords("acknowledgments.jsonl")
        #expect(records.count == 2, "the batch for an unknown session is not logged")
        let first = try #require(records.first { $0["id"] as? String == "r1" })
        #expect(first["app"] as? String == "com.acme.notes")
        #expect(first["pid"] as? Int == 301)
        #expect(first["kind"] as? String == "pasteboard")
        #expect(first["state"] as? String == "applied")
        #expect(first["generation"] as? Int == 7)
        #expect(records.first { $0["id"] as? String == "r2" }?["state"] as? String == "error")
        #expect(!connection.isClosed)
    }

    @Test("Audit batches (blocked attempts, wipe reports) are logged with the session's identity, then receipted")
    func auditBatches() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let (connection, session) = try world.connect(core, try world.peer(401, running: world.viewer))
        let json = #"{"id": "audit-1", "records": [{"id": "a1", "event": "blocked", "action": "copy", "target": "pasteboard", "rule": "pasteboard.unauthorized", "generation": 3}, {"id": "a2", "event": "wiped", "erased": ["files", "credentials"], "failed": {"cache": "EACCES"}}]}"#
        core.audit(try AgentMessage.decode(AuditBatch.self, from: Array(json.utf8)), session: session)

        #expect(await eventually { connection.frames(.receipt).count == 1 })
        let receipt = try #require(try connection.decoded(.receipt, as: ReceiptMessage.self).first)
        #expect(receipt.batch == "audit-1" && receipt.logged)
        let records = world.logRecords("audit.jsonl").filter { $0["app"] as? String == "com.acme.viewer" }
        #expect(records.count == 2)
        let blocked = try #require(records.first { $0["event"] as? String == "blocked" })
        #expect(blocked["pid"] as? Int == 401)
        #expect(blocked["action"] as? String == "copy")
        #expect(blocked["rule"] as? String == "pasteboard.unauthorized")
        let wiped = try #require(records.first { $0["event"] as? String == "wiped" })
        #expect(wiped["erased"] as? [String] == ["files", "credentials"])
        #expect(wiped["failed"] as? [String: String] == ["cache": "EACCES"])
    }

    @Test("A warned attempt (issue 33) is logged with its outcome, reason code and text; text a client did not escape is escaped by the agent")
    func warnedAudit() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let (connection, session) = try world.connect(core, try world.peer(402, running: world.viewer))
        let json = #"{"id": "audit-2", "records": [{"id": "w1", "event": "warned", "action": "copy", "rule": "proceeded", "generation": 4, "reasonCode": "internal", "text": "ok\n\u001b[31mFAKE \"x\""}]}"#
        core.audit(try AgentMessage.decode(AuditBatch.self, from: Array(json.utf8)), session: session)
        #expect(await eventually { connection.frames(.receipt).count == 1 })
        let records = world.logRecords("audit.jsonl").filter { $0["event"] as? String == "warned" }
        let warned = try #require(records.first)
        #expect(warned["action"] as? String == "copy" && warned["rule"] as? String == "proceeded")
        #expect(warned["reasonCode"] as? String == "internal")
        #expect(warned["text"] as? String == "ok\\u{A}\\u{1B}[31mFAKE \\u{22}x\\u{22}")
        #expect(AgentCore.warnedReason(code: "internal", text: "t") == "code=internal text=\"t\"")
        #expect(AgentCore.warnedReason(code: nil, text: nil) == nil)
    }

    @Test("A policy install pushes one policy frame per live session, persists the document, and rotates nothing when no one lost keys")
    func policyPush() throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let key = core.status().currentKey
        let notesA = try world.connect(core, try world.peer(501, running: world.notes))
        let notesB = try world.connect(core, try world.peer(502, running: world.notes))
        let viewer = try world.connect(core, try world.peer(503, running: world.viewer))
        let all = [notesA, notesB, viewer]

        let text = world.document(world.standardApps(notes: CoreFixture.noPrint))
        let response = core.setPolicy(text)
        #expect(response.ok, "\(response.message)")
        #expect(response.push == 2)
        #expect(response.currentKey == key, "no app lost its entitlement: no rotation")
        for (connection, _) in all {
            let pushes = try connection.decoded(.policy, as: PolicyPushMessage.self)
            #expect(pushes.map(\.push) == [2])
            #expect(connection.frames(.keys).count == 1, "keys unchanged: not sent again")
            #expect(!connection.isClosed)
        }
        let notesPush = try #require(try notesA.connection.decoded(.policy, as: PolicyPushMessage.self).first)
        let viewerPush = try #require(try viewer.connection.decoded(.policy, as: PolicyPushMessage.self).first)
        #expect(notesPush.policy.print == PrintPolicy.unauthorized.rawValue)
        #expect(viewerPush.policy.print == PrintPolicy.authorized.rawValue)
        #expect(try String(contentsOfFile: world.state + "/device.json", encoding: .utf8) == text, "persisted as given")

        // A reload of the --policy file pushes again, to the same sessions.
        try world.writePolicy(world.document(world.standardApps()))
        #expect(core.reload().ok)
        for (connection, _) in all {
            #expect(try connection.decoded(.policy, as: PolicyPushMessage.self).map(\.push) == [2, 3])
        }
        #expect(try notesB.connection.decoded(.policy, as: PolicyPushMessage.self).last?.policy.print == PrintPolicy.authorized.rawValue)
        #expect(core.status().connectedApps.count == 3)
    }

    @Test("An app that loses its entitlement gets \"no keys\"; the key rotates and only the apps still entitled get the new ring")
    func entitlementLoss() throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let notes = try world.connect(core, try world.peer(601, running: world.notes))
        let viewer = try world.connect(core, try world.peer(602, running: world.viewer))
        let viewerWithoutKeys = try world.connect(core, try world.peer(603, running: world.viewer), requestKeys: false)
        let before = try #require(core.status().currentKey)

        let response = core.setPolicy(world.document(world.standardApps(viewer: CoreFixture.unauthorized)))
        #expect(response.ok, "\(response.message)")
        #expect(response.message.contains("rotated"))
        let after = try #require(response.currentKey)
        #expect(after != before)
        #expect(response.entitledApps == ["com.acme.notes"])

        // notes: the new ring, the old key kept for opening, sent as sensitive.
        let notesKeys = try notes.connection.keyFrames()
        #expect(notesKeys.count == 2)
        #expect(notesKeys.last?.first == after)
        #expect(notesKeys.last?.contains(before) == true)
        #expect(notes.connection.events.contains { if case .frame(let f, true) = $0 { f.type == .keys } else { false } })
        // viewer: "no keys", as a frame holding no key bytes, then its (unauthorized) policy; still connected.
        let viewerKeys = try viewer.connection.keyFrames()
        #expect(viewerKeys.count == 2)
        #expect(viewerKeys.last == [])
        #expect(viewer.connection.frames.suffix(2).map(\.type) == [.keys, .policy])
        #expect(viewer.connection.events.contains(.frame(AgentFrame(type: .keys, body: KeyRingMessage.none), sensitive: false)))
        #expect(try viewer.connection.decoded(.policy, as: PolicyPushMessage.self).last?.policy.authState == .unauthorized)
        #expect(!viewer.connection.isClosed)
        #expect(!(try viewer.connection.keyFrames().joined().contains(after)), "the deauthorized app never sees the new key")
        // A viewer session that never asked for keys gets none now either.
        #expect(viewerWithoutKeys.connection.frames(.keys).isEmpty)
        core.keysRequested(session: viewer.session)
        #expect(try viewer.connection.keyFrames().last == [])

        // The new policy is the one persisted.
        let stored = try String(contentsOfFile: world.state + "/device.json", encoding: .utf8)
        #expect(stored.contains(#""auth": "unauthorized""#))
    }

    @Test("Re-identification on install closes sessions that no longer match (pin, new id) and rotates if they held keys")
    func reidentification() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let notes = try world.connect(core, try world.peer(701, running: world.notes))
        let viewer = try world.connect(core, try world.peer(702, running: world.viewer))
        let sheetsBinary = world.apps + "/renamed"
        try world.installExecutable(at: sheetsBinary)
        let before = try #require(core.status().currentKey)

        // notes is now pinned to a digest its file does not have; viewer to its true digest.
        var apps = world.standardApps()
        apps[0].sha256 = String(repeating: "0", count: 64)
        let viewerDigest = PeerIdentifier.sha256(ofFile: world.viewer)
        #expect(viewerDigest?.count == 64)
        apps[1].sha256 = viewerDigest
        let response = core.setPolicy(world.document(apps))
        #expect(response.ok, "\(response.message)")

        #expect(await eventually { notes.connection.isClosed })
        #expect(notes.connection.frames.map(\.type).suffix(2) == [.keys, .refused])
        #expect(try notes.connection.keyFrames().last == [])
        #expect(try notes.connection.decoded(.refused, as: RefusalMessage.self).first?.reason == .hashMismatch)
        #expect(notes.connection.frames(.policy).isEmpty, "a closed session gets no push")
        #expect(notes.connection.events.last == .closed)

        // notes held keys: the ring rotated, and viewer (pin matches) got the new one and the push.
        let after = try #require(response.currentKey)
        #expect(after != before)
        #expect(try viewer.connection.keyFrames().last?.first == after)
        #expect(try viewer.connection.decoded(.policy, as: PolicyPushMessage.self).map(\.push) == [2])
        #expect(!viewer.connection.isClosed)
        #expect(core.status().connectedApps == ["com.acme.viewer (pid 702)"])
        #expect(await eventually { world.logRecords("audit.jsonl").contains { $0["pid"] as? Int == 701 && $0["reason"] as? String == "hashMismatch" } })

        // The viewer's executable now registered under another id: closed, told why.
        apps[1].id = "com.acme.viewer2"
        #expect(core.setPolicy(world.document(apps)).ok)
        #expect(await eventually { viewer.connection.isClosed })
        let refusal = try #require(try viewer.connection.decoded(.refused, as: RefusalMessage.self).first)
        #expect(refusal.reason == .unregistered)
        #expect(refusal.message.contains("com.acme.viewer2"))
        #expect(core.status().connectedApps.isEmpty)
    }

    @Test("Attack: a device policy installed while a process is being identified (a new pin, other users) does not admit it under the old rules")
    func policyChangedDuringIdentification() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        for change in ["pin", "users"] {
            var apps = world.standardApps()
            if change == "pin" { apps[0].sha256 = String(repeating: "0", count: 64) } else { apps[0].users = [geteuid() &+ 4242] }
            let changed = world.document(apps)
            let installed = Locked<Bool>(false)
            let connection = RecordingConnection()
            // identify() passed under the standard device; the admin's install lands before the
            // session is registered (the server's last check runs in that gap), so the install's
            // re-identification of live sessions does not see this one.
            core.admitApp(peer: try world.peer(1101, running: world.notes), connection: connection) { _ in
                let ok = core.setPolicy(changed).ok
                installed.withLock { $0 = ok }
                return nil
            }
            #expect(installed.withLock { $0 }, "\(change)")
            #expect(connection.session == nil, "\(change): admitted under the rules the new device replaced: \(connection.events)")
            #expect(await eventually { connection.isClosed }, "\(change)")
            #expect(try connection.decoded(.refused, as: RefusalMessage.self).first?.reason == .unregistered, "\(change)")
            #expect(core.status().connectedApps.isEmpty, "\(change)")
            #expect(core.setPolicy(world.document(world.standardApps())).ok)
        }
    }

    @Test("A reload or set-policy with a bad document changes nothing: same push, same key, no frames, audited")
    func badPolicyChangesNothing() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let notes = try world.connect(core, try world.peer(801, running: world.notes))
        let viewer = try world.connect(core, try world.peer(802, running: world.viewer))
        let before = core.status()
        let persisted = try String(contentsOfFile: world.state + "/device.json", encoding: .utf8)
        let framesBefore = [notes.connection.events.count, viewer.connection.events.count]

        try world.writePolicy(#"{"format": "sharebroker.device", "version": 1, "apps": [{"id": "com.acme.notes""#)
        let reload = core.reload()
        #expect(!reload.ok)
        // Semantically invalid: an unknown auth value, and a viewer that would lose its keys.
        let bad = world.document(world.standardApps(notes: #"{"auth": "sometimes"}"#, viewer: CoreFixture.unauthorized))
        let set = core.setPolicy(bad)
        #expect(!set.ok)
        #expect(set.message.contains("invalid"))

        let after = core.status()
        #expect(after.push == before.push)
        #expect(after.currentKeyID == before.currentKeyID)
        #expect(after.entitledApps == before.entitledApps)
        #expect(after.connectedApps == before.connectedApps)
        #expect([notes.connection.events.count, viewer.connection.events.count] == framesBefore, "nothing was pushed")
        #expect(try String(contentsOfFile: world.state + "/device.json", encoding: .utf8) == persisted)
        #expect(await eventually { world.logRecords("audit.jsonl").filter { $0["event"] as? String == "policy-refused" }.count == 2 })
        let refused = world.logRecords("audit.jsonl").filter { $0["event"] as? String == "policy-refused" }
        #expect(Set(refused.compactMap { $0["target"] as? String }) == [world.policyFile, "(admin)"])

        // The sessions still work.
        core.acknowledgments(AcknowledgmentBatch(id: "still", push: 1, records: []), session: notes.session)
        #expect(notes.connection.frames(.receipt).count == 1)
    }

    @Test("Many sessions acknowledging, asking for keys and connecting while policies are installed and reloaded")
    func concurrency() async throws {
        let world = try CoreFixture()
        let core = try world.makeCore()
        let sessionCount = 8
        let batches = 25
        let installs = 12
        var sessions: [(connection: RecordingConnection, session: UInt64)] = []
        for index in 0..<sessionCount {
            sessions.append(try world.connect(core, try world.peer(Int32(900 + index), running: index % 2 == 0 ? world.notes : world.viewer)))
        }
        let documents = [world.document(world.standardApps(notes: CoreFixture.noPrint)), world.document(world.standardApps())]
        try world.writePolicy(documents[1])
        for index in 0..<20 { try world.run(pid: Int32(1_000 + index), index % 2 == 0 ? world.notes : world.viewer) }
        let churned = Locked<[RecordingConnection]>([])
        let failures = Locked<[String]>([])

        var jobs: [@Sendable () -> Void] = []
        for (index, entry) in sessions.enumerated() {
            jobs.append { [core] in
                for batch in 0..<batches {
                    core.acknowledgments(AcknowledgmentBatch(id: "s\(index)-b\(batch)", push: 1, records: [
                        WireAcknowledgment(id: "s\(index)-b\(batch)-1", AcknowledgmentRecord(kind: .print, acknowledgment: .applied, generation: 1)),
                        WireAcknowledgment(id: "s\(index)-b\(batch)-2", AcknowledgmentRecord(kind: .openIn, acknowledgment: .applied, generation: 1)),
                    ]), session: entry.session)
                    if batch % 5 == 0 { core.keysRequested(session: entry.session) }
                }
            }
        }
        jobs.append { [core] in
            for index in 0..<installs {
                // Alternately a set-policy and a reload of the file: every one is a push.
                let response = index % 2 == 0 ? core.setPolicy(documents[index / 2 % 2]) : core.reload()
                if !response.ok { failures.withLock { $0.append(response.message) } }
                _ = core.status()
            }
        }
        jobs.append { [core] in
            for index in 0..<20 {
                let connection = RecordingConnection()
                core.admitApp(peer: PeerCredentials(pid: Int32(1_000 + index), uid: geteuid(), gid: getegid()), connection: connection)
                if let session = connection.session {
                    core.keysRequested(session: session)
                    if index % 3 == 0 { core.disconnected(session: session) }
                }
                churned.withLock { $0.append(connection) }
            }
        }
        await onThreads(jobs)
        #expect(failures.withLock { $0 }.isEmpty)

        // Every batch receipted, logged, once.
        #expect(await eventually { sessions.allSatisfy { $0.connection.frames(.receipt).count == batches } })
        for (index, entry) in sessions.enumerated() {
            let receipts = try entry.connection.decoded(.receipt, as: ReceiptMessage.self)
            #expect(receipts.allSatisfy { $0.logged })
            #expect(Set(receipts.map(\.batch)) == Set((0..<batches).map { "s\(index)-b\($0)" }))
        }
        let logged = world.logRecords("acknowledgments.jsonl")
        #expect(logged.count == sessionCount * batches * 2)
        #expect(Set(logged.compactMap { $0["id"] as? String }).count == sessionCount * batches * 2)

        // Every push reached every original session, once and in order; nothing rotated.
        let status = core.status()
        #expect(status.push == UInt64(1 + installs))
        for entry in sessions {
            #expect(try entry.connection.decoded(.policy, as: PolicyPushMessage.self).map(\.push) == Array(2...UInt64(1 + installs)))
            #expect(Set(try entry.connection.keyFrames().compactMap(\.first)) == [try #require(status.currentKey)], "one ring throughout")
            #expect(!entry.connection.isClosed)
        }
        // Sessions admitted mid-way saw a consistent stream: a welcome, then only newer pushes.
        let late = churned.withLock { $0 }
        #expect(late.count == 20)
        for connection in late {
            let welcome = try #require(try connection.decoded(.welcome, as: WelcomeMessage.self).first)
            let pushes = try connection.decoded(.policy, as: PolicyPushMessage.self).map(\.push)
            #expect(pushes == pushes.sorted() && pushes.allSatisfy { $0 > welcome.push })
        }
        #expect(status.connectedApps.count == sessionCount + 20 - 7)
    }
}
