import Foundation
import Testing

/// The agent's policy directory (`--policy-dir`): `device.json` and `policies.d/`, native app
/// policies and Intune Graph bodies, watched with inotify; a bad document changes nothing.
@Suite("policy directory", .serialized, .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct PolicyDirectoryTests {
    static let notesClipboardBlocked = """
        {"format": "sharebroker.policy", "version": 1, "app": "com.acme.notes",
         "policy": {"auth": "authorized", "pasteboard": "unauthorized", "openIn": "appConnectApps"}}
        """
    static let viewerIntune = """
        {"@odata.type": "#microsoft.graph.iosManagedAppProtection", "displayName": "Viewer, clear copies",
         "allowedOutboundClipboardSharingLevel": "allApps",
         "apps": [{"mobileAppIdentifier": {"@odata.type": "#microsoft.graph.iosMobileAppIdentifier", "bundleId": "com.acme.viewer"}},
                  {"mobileAppIdentifier": {"@odata.type": "#microsoft.graph.iosMobileAppIdentifier", "bundleId": "com.microsoft.Office.Outlook"}}]}
        """

    func statusLine(_ h: AgentHarness, _ app: String) throws -> String {
        try h.run(app, ["status"]).output.split(separator: "\n").first { $0.hasPrefix("policy:") }.map(String.init) ?? ""
    }

    @Test("Policies dropped into the watched directory are pushed without a signal; a bad one changes nothing and is audited")
    func watchedDirectory() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let directory = h.root + "/etc-sharebroker"
        let policies = directory + "/policies.d"
        try FileManager.default.createDirectory(atPath: policies, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: h.policyPath, toPath: directory + "/device.json")
        try h.startAgent(arguments: ["--policy-dir", directory])
        defer { h.stopAgent() }
        #expect(try statusLine(h, h.notes).contains("pasteboard secureCopy"), "device.json's own policy at start")

        let watcher = try h.startWatch(h.notes, name: "notes")
        defer { h.stop(watcher.process) }
        #expect(h.wait { h.jsonLines(watcher.output).contains { $0["event"] as? String == "attached" } })

        // A native app policy for the notes app: pushed as soon as the file is written.
        try Self.notesClipboardBlocked.write(toFile: policies + "/notes.json", atomically: true, encoding: .utf8)
        #expect(h.wait { h.jsonLines(watcher.output).contains { ($0["changes"] as? [String])?.contains("pasteboardPolicyChanged") == true } })
        let blocked = try statusLine(h, h.notes)
        #expect(blocked.contains("pasteboard unauthorized"), "\(blocked)")
        #expect(h.wait { h.auditRecords.contains { $0["event"] as? String == "policy-installed" && ($0["target"] as? String) == directory } })

        // A document that does not validate: refused, audited, and nothing changes for any app.
        let viewerBefore = try statusLine(h, h.viewer)
        try #"{"format": "sharebroker.policy", "version": 1, "app": "com.acme.notes", "policy": {"pasteboard": "everything"}}"#
            .write(toFile: policies + "/zz-bad.json", atomically: true, encoding: .utf8)
        #expect(h.wait { h.auditRecords.contains { $0["event"] as? String == "policy-refused"
            && ($0["reason"] as? String)?.contains("zz-bad.json") == true } })
        #expect(try statusLine(h, h.notes) == blocked)
        #expect(try statusLine(h, h.viewer) == viewerBefore)

        // Two files for one app are refused too (which one was meant cannot be known).
        try FileManager.default.removeItem(atPath: policies + "/zz-bad.json")
        try Self.notesClipboardBlocked.write(toFile: policies + "/notes-again.json", atomically: true, encoding: .utf8)
        #expect(h.wait { h.auditRecords.contains { ($0["reason"] as? String)?.contains("already sets the policy of com.acme.notes") == true } })
        try FileManager.default.removeItem(atPath: policies + "/notes-again.json")

        // An Intune body: imported for the device's app it targets (the other target is not on this device).
        try Self.viewerIntune.write(toFile: policies + "/viewer-intune.json", atomically: true, encoding: .utf8)
        #expect(h.wait { (try? statusLine(h, h.viewer))?.contains("pasteboard authorized") == true })
        #expect(try statusLine(h, h.notes).contains("pasteboard unauthorized"), "the notes app keeps its own file's policy")
    }

    @Test("A policy file that is a symlink, a FIFO, or writable by others is refused at start with a clear error")
    func untrustedFilesAreRefused() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let directory = h.root + "/etc-sharebroker"
        try FileManager.default.createDirectory(atPath: directory + "/policies.d", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: h.policyPath, toPath: directory + "/device.json")

        try FileManager.default.createSymbolicLink(atPath: directory + "/policies.d/link.json", withDestinationPath: h.policyPath)
        var run = try h.run(AgentHarness.sharebrokerd, ["--policy-dir", directory], timeout: 10)
        #expect(run.status == 71)
        #expect(run.error.contains("link.json") && run.error.contains("symbolic link"), "\(run.error)")
        try FileManager.default.removeItem(atPath: directory + "/policies.d/link.json")

        #expect(mkfifo(directory + "/policies.d/fifo.json", 0o600) == 0)
        run = try h.run(AgentHarness.sharebrokerd, ["--policy-dir", directory], timeout: 10)
        #expect(run.status == 71, "refused, not hung on the FIFO")
        #expect(run.error.contains("FIFO"), "\(run.error)")
        try FileManager.default.removeItem(atPath: directory + "/policies.d/fifo.json")

        #expect(chmod(directory + "/device.json", 0o666) == 0)
        run = try h.run(AgentHarness.sharebrokerd, ["--policy-dir", directory], timeout: 10)
        #expect(run.status == 71)
        #expect(run.error.contains("writable by its group or by everyone"), "\(run.error)")
        #expect(!FileManager.default.fileExists(atPath: h.state + "/device.json"), "nothing was installed")
    }
}
