import Foundation
import ShareBroker
import ShareBrokerAgentClient
import ShareBrokerAgentProtocol
import Testing
import ShareBrokerTesting

/// End to end, with real processes: the agent, copies of the CLI at registered paths, an
/// unregistered copy, raw sockets. Each test has its own runtime folder and agent.
@Suite("agent end to end", .serialized, .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct AgentEndToEndTests {
    @Test("SecureCopy across managed apps; an unmanaged process reads only clear items; Open In follows the policy")
    func secureCopyAcrossApps() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }

        let status = try h.run(h.notes, ["status"])
        #expect(status.status == 0)
        #expect(status.output.contains("app: com.acme.notes"))
        #expect(status.output.contains("secure services: available"))

        let copy = try h.run(h.notes, ["copy"], input: "Q3 numbers")
        #expect(copy.status == 0, "\(copy.error)")
        #expect(copy.output.hasPrefix("copied sealed"))
        let raw = try h.pasteboard.read()
        #expect(raw.items.first?.type == PasteboardItem.sealedType)
        let rawText = String(decoding: raw.items.first?.bytes ?? [], as: UTF8.self)
        #expect(!rawText.contains("Q3 numbers"))

        let viewer = try h.run(h.viewer, ["paste"])
        #expect(viewer.status == 0)
        #expect(viewer.output == "Q3 numbers")

        let stranger = try h.run(h.unmanaged, ["paste"])
        #expect(stranger.status == 1)
        #expect(stranger.output.isEmpty)
        #expect(try h.run(h.unmanaged, ["paste", "--unmanaged"]).output.isEmpty)

        // An unregistered process cannot copy as a managed app: refused, nothing written.
        let before = try h.pasteboard.read().changeCount
        let refusedCopy = try h.run(h.unmanaged, ["copy"], input: "spoof")
        #expect(refusedCopy.status == 77)
        #expect(try h.pasteboard.read().changeCount == before)

        // Clear items from an unmanaged process are readable by managed apps.
        #expect(try h.run(h.unmanaged, ["copy", "--unmanaged"], input: "lunch?").status == 0)
        #expect(try h.run(h.notes, ["paste"]).output == "lunch?")

        // A locked app copies nothing, and the agent audits the attempt.
        let lockedCopy = try h.run(h.locked, ["copy"], input: "secret")
        #expect(lockedCopy.status == 3)
        #expect(lockedCopy.output.hasPrefix("blocked"))
        #expect(try h.run(h.notes, ["paste"]).output == "lunch?")
        #expect(h.auditRecords.contains { $0["app"] as? String == "com.acme.locked" && $0["action"] as? String == "copy"
            && $0["pid"] as? Int == Int(lockedCopy.pid) })

        // Open In: the viewer is an authorized AppConnect app (the agent's expansion); sheets is not.
        let document = h.root + "/Q3.txt"
        try "quarterly".write(toFile: document, atomically: true, encoding: .utf8)
        let delivered = try h.run(h.notes, ["open-in", document, "--to", "com.acme.viewer", "--outbox", h.root + "/out"])
        #expect(delivered.status == 0)
        #expect((try? String(contentsOfFile: delivered.output.trimmingCharacters(in: .whitespacesAndNewlines), encoding: .utf8)) == "quarterly")
        let dummy = try h.run(h.notes, ["open-in", document, "--to", "org.example.sheets", "--outbox", h.root + "/out"])
        #expect(dummy.status == 3)
        let dummyPath = dummy.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(FileManager.default.contents(atPath: dummyPath)?.isEmpty == true)
        #expect(!dummyPath.hasSuffix("Q3.txt"))
        #expect(h.auditRecords.contains { $0["action"] as? String == "openIn" && $0["target"] as? String == "org.example.sheets" })
        // "All AppConnect apps", expanded by the agent: every authorized managed app (locked too: its user is authorized), no unmanaged app.
        #expect(try h.run(h.viewer, ["open-in", document, "--to", "com.acme.notes", "--outbox", h.root + "/out"]).status == 0)
        #expect(try h.run(h.viewer, ["open-in", document, "--to", "com.acme.locked", "--outbox", h.root + "/out"]).status == 0)
        #expect(try h.run(h.viewer, ["open-in", document, "--to", "org.example.sheets", "--outbox", h.root + "/out"]).status == 3)
    }

    @Test("Retiring an app rotates the key: it reads nothing sealed afterwards; others still read items sealed before")
    func retireRotates() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let watcher = try h.startWatch(h.viewer, name: "viewer")
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "attached" } })

        #expect(try h.run(h.notes, ["copy"], input: "before retire").status == 0)
        let sealedBefore = try h.pasteboard.read().items
        let keysBefore = try h.run(h.notes, ["status"]).output

        try h.standardDevice(viewer: AgentHarness.retiredPolicy)
        let admin = try h.run(h.notes, ["admin", "reload"])
        #expect(admin.status == 0)
        #expect(admin.output.contains("rotated"))

        // The connected viewer was told: no keys, retired policy, acknowledged back and logged.
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "keysDropped" } })
        #expect(h.wait { h.acknowledgmentRecords.contains { $0["app"] as? String == "com.acme.viewer" && $0["kind"] as? String == "auth" } })
        #expect(h.wait { h.auditRecords.contains { $0["app"] as? String == "com.acme.viewer" && $0["event"] as? String == "wiped" } })

        let keysAfter = try h.run(h.notes, ["status"]).output
        #expect(keysBefore != keysAfter)
        #expect(try h.run(h.notes, ["copy"], input: "after retire").status == 0)
        #expect(try h.run(h.viewer, ["paste"]).status == 1)
        #expect(try h.run(h.notes, ["paste"]).output == "after retire")

        // Sealed just before the retire: still readable to the app that is still authorized.
        try h.pasteboard.write(sealedBefore)
        #expect(try h.run(h.notes, ["paste"]).output == "before retire")
        #expect(try h.run(h.viewer, ["paste"]).status == 1)
        h.stop(watcher.process)
    }

    @Test("Spoofing: an unregistered binary and a registered path with the wrong SHA-256 get no keys and no policy")
    func spoofing() throws {
        let h = try AgentHarness()
        let pinned = try h.install(at: h.apps + "/pinned")
        let wrong = try h.install(at: h.apps + "/wrong")
        let digest = try #require(Self.sha256(of: AgentHarness.sharebroker))
        try h.writePolicy([
            ("com.acme.pinned", pinned, AgentHarness.secureCopyPolicy, digest),
            ("com.acme.wrong", wrong, AgentHarness.secureCopyPolicy, String(repeating: "0", count: 64)),
        ])
        try h.install(at: h.root + "/bin/unmanaged")
        try h.startAgent()
        defer { h.stopAgent() }

        let good = try h.run(pinned, ["status"])
        #expect(good.status == 0)
        #expect(good.output.contains("com.acme.pinned"))

        let bad = try h.run(wrong, ["status"])
        #expect(bad.status == 77)
        #expect(bad.output.contains("hashMismatch"))
        #expect(!bad.output.contains("keys 0x"))
        let stranger = try h.run(h.unmanaged, ["status"])
        #expect(stranger.status == 77)
        #expect(stranger.output.contains("unregistered"))
        // Hard links share the pinned file's inode but are other paths: still unregistered.
        let link = try h.install(at: h.root + "/bin/pinned-alias")
        #expect(try h.run(link, ["status"]).status == 77)

        // The client cannot claim an identity: the agent's answer comes from the kernel.
        #expect(try h.run(wrong, ["copy"], input: "x").status == 77)
        #expect(h.wait { h.auditRecords.filter { $0["event"] as? String == "refused" }.count >= 4 })
        #expect(h.auditRecords.contains { $0["reason"] as? String == "hashMismatch" && ($0["executable"] as? String) == wrong })
        #expect(h.auditRecords.contains { $0["reason"] as? String == "unregistered" })
    }

    @Test("Garbage, oversized and out-of-place frames drop that connection; the agent keeps serving others")
    func hostileFrames() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let watcher = try h.startWatch(h.notes, name: "notes")
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "attached" } })

        let attacks: [[UInt8]] = [
            Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8),                      // not a frame
            [0xFF, 0xFF, 0xFF, 0xFF, 1, 1],                                       // 4 GiB announced
            [0x00, 0x40, 0x00, 0x01] + [UInt8](repeating: 0x41, count: 1024),    // 4 MiB + 1
            [0, 0, 0, 0],                                                         // too short
            [0, 0, 0, 2, 9, 1],                                                   // wrong version
            [0, 0, 0, 2, 1, 0xEE],                                                // unknown type
            AgentFrame(type: .hello, body: Array("{not json".utf8)).encoded(),   // bad hello
            AgentFrame(type: .audit, body: Array("{}".utf8)).encoded(),          // audit before hello
            AgentFrame(type: .adminRequest, body: Array("{}".utf8)).encoded(),   // admin before hello
        ]
        for attack in attacks {
            let answer = Self.exchange(h.socket, send: attack)
            #expect(answer.closed, "the agent must drop a connection that sent \(attack.prefix(8))")
            if let frame = answer.frame { #expect(frame.type == .error) }
        }
        // Hello then an oversized frame: dropped too.
        let hello = AgentMessage.frame(.hello, HelloMessage(role: .app)).encoded()
        #expect(Self.exchange(h.socket, send: hello + [0x7F, 0, 0, 0], readFrames: 3).closed)

        // Others are unaffected: the watcher is still connected, a new app is served.
        #expect(!h.jsonLines(watcher.output).contains { $0["event"] as? String == "disconnected" })
        #expect(try h.run(h.notes, ["copy"], input: "still serving").status == 0)
        #expect(try h.run(h.viewer, ["paste"]).output == "still serving")
        #expect(h.agent?.isRunning == true)
        h.stop(watcher.process)
    }

    @Test("A connection that never says hello is dropped after the handshake timeout; others are served meanwhile")
    func silentConnection() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent(arguments: ["--policy", h.policyPath, "--handshake-timeout", "300"])
        defer { h.stopAgent() }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        #expect(AgentHarness.connectUnix(fd, h.socket))
        // Half a hello, then silence.
        let hello = AgentMessage.frame(.hello, HelloMessage(role: .app)).encoded()
        _ = hello.prefix(3).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        #expect(try h.run(h.notes, ["status"]).status == 0)
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&descriptor, 1, 3_000) == 1)
        var byte: UInt8 = 0
        #expect(recv(fd, &byte, 1, 0) == 0, "the agent closed the silent connection")
    }

    @Test("A registered binary replaced after its process started is refused when that process connects again")
    func replacedExecutable() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let watcher = try h.startWatch(h.notes, name: "notes")
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "attached" } })
        // Replace the file at the registered path (a new inode), as an update or an attacker would.
        let replacement = h.root + "/notes.new"
        try AgentHarness.copyOfTheTool(to: replacement)
        #expect(rename(replacement, h.notes) == 0)
        h.stopAgent(signal: SIGKILL)
        try h.startAgent()
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "refused" } })
        #expect(h.wait { h.auditRecords.contains { $0["reason"] as? String == "executableChanged" } })
        // A process started from the new file is the app.
        #expect(try h.run(h.notes, ["status"]).status == 0)
        h.stop(watcher.process)
    }

    @Test("SIGKILL during a stream of copies: each copy succeeded or failed with nothing written; no audit or acknowledgment record lost")
    func killDuringCopies() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent(signal: SIGKILL) }
        let watcher = try h.startWatch(h.notes, name: "notes")
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "attached" } })

        var succeeded: [(text: String, items: [PasteboardItem])] = []
        var confirmedBlocked: [Int32] = []
        var failures = 0
        var killedAt = -1
        for index in 0..<36 {
            if index == 12 || index == 24 {
                // A policy push (the notes watcher acknowledges it), then SIGKILL at once, mid-stream.
                try h.standardDevice(notesPrint: index == 12 ? "unauthorized" : "authorized")
                h.reloadAgent()
                usleep(UInt32.random(in: 0...30_000))
                h.stopAgent(signal: SIGKILL)
                killedAt = index
            }
            if killedAt >= 0 && index == killedAt + 4 { try h.startAgent() }
            let before = try h.pasteboard.read()
            if index % 3 == 2 {
                let run = try h.run(h.locked, ["copy"], input: "locked \(index)")
                #expect(try h.pasteboard.read().changeCount == before.changeCount, "a blocked copy writes nothing")
                if run.status == 3 { confirmedBlocked.append(run.pid) } else { failures += 1 }
                continue
            }
            let text = "item \(index)"
            let run = try h.run(h.notes, ["copy"], input: text)
            let after = try h.pasteboard.read()
            if run.status == 0 {
                #expect(after.changeCount == before.changeCount + 1)
                #expect(after.items.first?.type == PasteboardItem.sealedType)
                succeeded.append((text, after.items))
            } else {
                failures += 1
                #expect(after.changeCount == before.changeCount, "a failed copy writes nothing (exit \(run.status))")
            }
        }
        #expect(failures >= 4, "the copies while the agent was down must fail")
        #expect(succeeded.count >= 10)
        h.stopAgent(signal: SIGKILL)
        try h.startAgent()

        // Every copy that succeeded opens after the restart: its key was on disk before it was used.
        for copy in succeeded {
            try h.pasteboard.write(copy.items)
            #expect(try h.run(h.viewer, ["paste"]).output == copy.text)
        }
        // Every blocked attempt the agent confirmed is in the audit log.
        let audited = Set(h.auditRecords.compactMap { $0["pid"] as? Int })
        for pid in confirmedBlocked { #expect(audited.contains(Int(pid)), "audit record of pid \(pid) lost") }
        // Every acknowledgment batch the agent confirmed is in the log; the watcher resends the rest.
        #expect(h.wait(15) {
            let events = h.jsonLines(watcher.output)
            let withAcks = Set(events.filter { $0["event"] as? String == "policy" && ($0["acknowledgments"] as? Int ?? 0) > 0 }
                .compactMap { $0["batch"] as? String })
            let logged = Set(h.acknowledgmentRecords.compactMap { $0["batch"] as? String })
            return !withAcks.isEmpty && withAcks.isSubset(of: logged)
        })
        let confirmed = Set(h.jsonLines(watcher.output).filter { $0["event"] as? String == "receipt" && $0["logged"] as? Bool == true }
            .compactMap { $0["batch"] as? String })
        let withAcks = Set(h.jsonLines(watcher.output).filter { $0["event"] as? String == "policy" && ($0["acknowledgments"] as? Int ?? 0) > 0 }
            .compactMap { $0["batch"] as? String })
        let logged = Set(h.acknowledgmentRecords.compactMap { $0["batch"] as? String })
        #expect(confirmed.intersection(withAcks).isSubset(of: logged))
        h.stop(watcher.process)
    }

    @Test("Restart: the key ring, the device policy and a retire survive; clients reconnect; plain items stay readable while the agent is down")
    func restart() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        let watcher = try h.startWatch(h.notes, name: "notes")
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "attached" } })
        #expect(try h.run(h.notes, ["copy"], input: "sealed before restart").status == 0)
        let sealed = try h.pasteboard.read().items
        let keys = try h.run(h.notes, ["status"]).output.split(separator: "\n").first { $0.hasPrefix("secure services") }

        h.stopAgent()
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "disconnected" } })
        #expect(try h.run(h.notes, ["copy"], input: "while down").status == 69)
        #expect(try h.pasteboard.read().items == sealed, "nothing written while the agent is down")
        #expect(try h.run(h.unmanaged, ["copy", "--unmanaged"], input: "plain while down").status == 0)
        let plain = try h.run(h.notes, ["paste"])
        #expect(plain.status == 0)
        #expect(plain.output == "plain while down")

        // Restart without --policy: the agent's own copy of the policy is used.
        try h.startAgent(arguments: [])
        defer { h.stopAgent() }
        #expect(h.wait { h.jsonLines(watcher.output).filter { $0["event"] as? String == "connected" }.count >= 2 })
        // The long-lived app was told: secure services went away, then came back.
        let callbacks = h.jsonLines(watcher.output).compactMap { $0["callback"] as? String }
        #expect(h.wait {
            let callbacks = h.jsonLines(watcher.output).compactMap { $0["callback"] as? String }
            guard let down = callbacks.firstIndex(of: "secureServices=unavailable") else { return false }
            return callbacks[down...].contains("secureServices=available")
        }, "\(callbacks)")
        #expect(try h.run(h.notes, ["status"]).output.split(separator: "\n").first { $0.hasPrefix("secure services") } == keys)
        try h.pasteboard.write(sealed)
        #expect(try h.run(h.viewer, ["paste"]).output == "sealed before restart")

        // A retire persists across a restart.
        try h.standardDevice(viewer: AgentHarness.retiredPolicy)
        let text = try String(contentsOfFile: h.policyPath, encoding: .utf8)
        #expect(try h.run(h.notes, ["admin", "set-policy", h.policyPath]).status == 0)
        h.stopAgent(signal: SIGKILL)
        try? FileManager.default.removeItem(atPath: h.policyPath)
        try h.startAgent(arguments: [])
        #expect(try h.run(h.viewer, ["status"]).output.contains("auth retired"))
        #expect(try h.run(h.viewer, ["paste"]).status == 1)
        #expect(!text.isEmpty)
        h.stop(watcher.process)
    }

    @Test("SIGHUP re-reads the policy file and pushes it; the app acknowledges and the agent logs it")
    func sighupPushes() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let watcher = try h.startWatch(h.notes, name: "notes")
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "attached" } })
        try h.standardDevice(notesPrint: "unauthorized")
        h.reloadAgent()
        #expect(h.wait { h.jsonLines(watcher.output).contains { ($0["changes"] as? [String])?.contains("printPolicyChanged") == true } })
        #expect(h.wait { h.acknowledgmentRecords.contains { $0["kind"] as? String == "print" && $0["app"] as? String == "com.acme.notes" } })
        h.stop(watcher.process)
    }

    @Test("A second agent on the same state folder refuses to start (one key ring, one custodian)")
    func oneAgentPerStateFolder() throws {
        let h = try AgentHarness()
        try h.startAgent(arguments: [])
        defer { h.stopAgent() }
        let second = try h.run(AgentHarness.sharebrokerd, ["--socket", h.root + "/other.sock"], timeout: 10)
        #expect(second.status == 71)
        #expect(second.error.contains("another agent is using this state folder"))
        let third = try h.run(AgentHarness.sharebrokerd, ["--state", h.root + "/other-state"], timeout: 10)
        #expect(third.status == 71)
        #expect(third.error.contains("another agent is already listening"))
    }

    @Test("No device policy: the agent starts, says so, and refuses every app until one is installed")
    func noDevicePolicyRefusesEveryApp() throws {
        let h = try AgentHarness()
        try h.standardDevice()    // the apps' executables, and a policy file the agent is not given
        try h.startAgent(arguments: [])
        defer { h.stopAgent() }
        let log = try String(contentsOfFile: h.root + "/agent-1.log", encoding: .utf8)
        #expect(log.contains("no device policy: every app is refused"))
        #expect(!FileManager.default.fileExists(atPath: h.state + "/device.json"), "nothing invented, nothing persisted")
        let refused = try h.run(h.notes, ["status"])
        #expect(refused.status == 77)
        #expect(refused.output.contains("unregistered"))
        #expect(try h.run(h.notes, ["copy"], input: "no keys without a policy").status != 0)

        // Installing a policy lets the registered app in.
        #expect(try h.run(h.unmanaged, ["admin", "set-policy", h.policyPath]).status == 0)
        #expect(try h.run(h.notes, ["copy"], input: "hello").status == 0)
        #expect(try h.run(h.viewer, ["paste"]).output == "hello")
        let mode = try FileManager.default.attributesOfItem(atPath: h.state + "/keyring")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    // MARK: Helpers

    static func sha256(of path: String) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init)
    }

    /// Sends `bytes` on a fresh connection; reads up to `readFrames` frames; reports whether the
    /// agent closed the connection within 3 seconds.
    static func exchange(_ socketPath: String, send bytes: [UInt8], readFrames: Int = 1) -> (closed: Bool, frame: AgentFrame?) {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return (false, nil) }
        defer { close(fd) }
        guard AgentHarness.connectUnix(fd, socketPath) else { return (false, nil) }
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(3)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 {
                let first = try? AgentFrame.decode(Array(received.prefix(4 + ((try? AgentFrame.bodyLength(prefix: received)) ?? 0))))
                return (true, first)
            }
            received.append(contentsOf: buffer[0..<n])
        }
        return (false, nil)
    }
}

@Suite("agent demo", .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct AgentDemoTests {
    @Test("sharebroker agent-demo plays every step as expected (Open In through real desktop hand-offs) and cleans up")
    func demo() throws {
        let h = try AgentHarness()
        let run = try h.run(AgentHarness.sharebroker, ["agent-demo"], timeout: 120)
        #expect(run.status == 0, "\(run.output.suffix(2000))")
        #expect(run.output.contains("Every step answered as expected."))
        #expect(!run.output.contains("NOT OK"))
        #expect(run.output.contains("group key rotated"))
        // The Open In steps hand off through GIO to desktop entries of recording apps, with no
        // display and no D-Bus session: what each target received is checked by the demo.
        #expect(run.output.contains("ok: com.acme.viewer got a private copy under the runtime folder with the document's exact bytes"))
        #expect(run.output.contains("ok: org.example.sheets got an empty file with a mangled name"))
        #expect(run.output.contains("ok: com.acme.notes got a private copy under the runtime folder with the document's exact bytes"))
    }
}

@Suite("agent client in process", .serialized, .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct AgentClientInProcessTests {
    final class Delegate: ShareBrokerDelegate, @unchecked Sendable {
        let lock = NSLock()
        var availability: [SecureServicesAvailability] = []
        func appConnectIsReady() {}
        func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
        func secureServicesAvailabilityChanged(to availability: SecureServicesAvailability) {
            lock.lock()
            self.availability.append(availability)
            lock.unlock()
        }
        var seen: [SecureServicesAvailability] {
            lock.lock()
            defer { lock.unlock() }
            return availability
        }
    }

    @Test("A long-lived app: copies use the cached ring; agent gone means SecureCopy fails with nothing written and clear items stay readable; it reconnects")
    func longLivedApp() throws {
        let h = try AgentHarness()
        let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        try h.writePolicy([("com.acme.tests", me, AgentHarness.secureCopyPolicy, nil)])
        try h.startAgent()
        defer { h.stopAgent() }

        let client = AgentClient(configuration: AgentClientConfiguration(
            socketPath: h.socket, expectedAppID: "com.acme.tests", initialBackoffMilliseconds: 20, maximumBackoffMilliseconds: 200))
        defer { client.close() }
        let welcome = try client.connect()
        #expect(welcome.app == "com.acme.tests")
        let pasteboard = try h.pasteboard
        let delegate = Delegate()
        let broker = ShareBroker(appID: welcome.app, device: client.device, platform: Platform(
            outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: client, pasteboard: pasteboard,
            secureServices: client))
        try broker.start(delegate: delegate)
        try client.attach(broker)
        #expect(try broker.policy().pasteboardPolicy == .secureCopy)
        #expect(try broker.copyResult(.text("sealed")).action == .writeSealed)
        #expect(broker.paste()?.bytes == Array("sealed".utf8))

        h.stopAgent(signal: SIGKILL)
        #expect(h.wait { client.availability == .unavailable && broker.currentSnapshot.secureServices == .unavailable })
        #expect(delegate.seen.last == .unavailable)
        let before = pasteboard.read()
        let refused = try broker.copyResult(.text("must not be written"))
        #expect(refused.action == .blocked)
        #expect(pasteboard.read() == before)
        #expect(throws: ShareBrokerError.secureServicesUnavailable) { try client.keyRing(for: welcome.app) }
        try pasteboard.write([.text("plain")])
        #expect(broker.paste()?.bytes == Array("plain".utf8))

        try h.startAgent()
        #expect(h.wait { client.availability == .available && broker.currentSnapshot.secureServices == .available })
        #expect(delegate.seen.last == .available)
        #expect(try broker.copyResult(.text("sealed again")).action == .writeSealed)
        #expect(broker.paste()?.bytes == Array("sealed again".utf8))
        #expect(client.flush(timeoutMilliseconds: 5_000))

        // The wrong expected identity is an error, not a silent switch of app.
        let impostor = AgentClient(configuration: AgentClientConfiguration(socketPath: h.socket, expectedAppID: "com.acme.notes", reconnects: false))
        #expect(throws: AgentClientError.wrongApp(expected: "com.acme.notes", identified: "com.acme.tests")) { try impostor.connect() }
        impostor.close()
    }

    @Test("A push replaces the attached broker's device: an app gone from the device leaves the All-AppConnect whitelist; native mail ids follow the device document")
    func pushReplacesTheDevice() throws {
        let h = try AgentHarness()
        let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let notes = h.apps + "/notes"
        _ = try h.install(at: notes)
        try h.writePolicy([("com.acme.tests", me, AgentHarness.secureCopyPolicy, nil),
                           ("com.acme.notes", notes, AgentHarness.secureCopyPolicy, nil)])
        try h.startAgent()
        defer { h.stopAgent() }
        let client = AgentClient(configuration: AgentClientConfiguration(socketPath: h.socket, expectedAppID: "com.acme.tests"))
        defer { client.close() }
        let welcome = try client.connect()
        let broker = ShareBroker(appID: welcome.app, device: client.device, platform: Platform(
            outbox: InMemoryOutbox(), urlOpener: RecordingURLOpener(), reportSink: client, pasteboard: InMemoryPasteboard(),
            secureServices: client))
        try broker.start(delegate: Delegate())
        try client.attach(broker)
        #expect(broker.decideOpenIn(target: "com.acme.notes", via: .documentInteraction).allowed)
        #expect(broker.currentSnapshot.device.nativeMail == .appleDevices)

        // The administrator removes notes from the device and names the desktop's mail app.
        try h.writePolicy([("com.acme.tests", me, AgentHarness.secureCopyPolicy, nil)])
        let text = try String(contentsOfFile: h.policyPath, encoding: .utf8)
        try text.replacingOccurrences(of: #""version": 1,"#, with: #""version": 1, "nativeMail": ["org.example.Mail"],"#)
            .write(toFile: h.policyPath, atomically: true, encoding: .utf8)
        h.reloadAgent()
        #expect(h.wait { broker.currentSnapshot.device.nativeMail.ids == ["org.example.Mail"] })
        #expect(broker.currentSnapshot.device["com.acme.notes"] == nil)
        let decision = broker.decideOpenIn(target: "com.acme.notes", via: .documentInteraction)
        #expect(!decision.allowed)
        #expect(client.device == broker.currentSnapshot.device)
    }
}

@Suite("agent binaries")
struct AgentBinariesTests {
    @Test("sharebroker and sharebrokerd are built before the tests (the end-to-end suites need them)")
    func built() {
        #expect(FileManager.default.isExecutableFile(atPath: AgentHarness.sharebroker),
                "build it first: swift build --product sharebroker")
        #expect(FileManager.default.isExecutableFile(atPath: AgentHarness.sharebrokerd),
                "build it first: swift build --product sharebrokerd (swift test compiles it but does not link it)")
    }
}
