import Foundation
import ShareBrokerAgentProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 13, item 9, through the real agent and real app processes (`sharebroker secure-file`
/// run from the registered executables): per-app file keys, never dropped.
@Suite("secure files through the agent", .serialized, .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct SecureFileAgentTests {
    static let unauthorizedNotes = #"{"auth": "unauthorized", "openIn": "appConnectApps", "pasteboard": "secureCopy"}"#

    /// The standard device, with notes' policy as given.
    static func device(_ h: AgentHarness, notes: String) throws {
        try h.writePolicy([
            ("com.acme.notes", h.notes, notes, nil),
            ("com.acme.viewer", h.viewer, AgentHarness.secureCopyPolicy, nil),
            ("com.acme.locked", h.locked, AgentHarness.lockedPolicy, nil),
            ("org.example.sheets", h.apps + "/sheets", nil, nil),
        ])
    }

    /// Installs `notes`' policy and waits until the agent has (an admin request answers once
    /// the policy is installed and pushed).
    static func install(_ h: AgentHarness, notes: String) throws {
        try device(h, notes: notes)
        let reload = try h.run(AgentHarness.sharebrokerd, ["--reload"])
        #expect(reload.status == 0, "reload: \(reload.output) \(reload.error)")
    }

    static func write(_ h: AgentHarness, _ app: String, folder: String, name: String, _ text: String) throws -> AgentHarness.Run {
        try h.run(app, ["secure-file", "write", "--directory", folder, name, "--timeout", "10000"], input: text)
    }

    static func read(_ h: AgentHarness, _ app: String, folder: String, _ names: [String]) throws -> AgentHarness.Run {
        try h.run(app, ["secure-file", "read", "--directory", folder] + names + ["--timeout", "10000"], timeout: 60)
    }

    static func keyID(_ path: String) -> UInt32? {
        guard let bytes = FileManager.default.contents(atPath: path).map(Array.init), bytes.count >= 16 else { return nil }
        return bytes[12..<16].reduce(0) { $0 << 8 | UInt32($1) }
    }

    @Test("20 deauthorize/reauthorize cycles: every file notes wrote (one per cycle) opens for notes, none for the viewer, which is authorized and holds the group key; and after an agent restart")
    func twentyRotations() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let folder = h.root + "/notes-secure"
        var names: [String] = []
        for cycle in 0..<20 {
            try Self.install(h, notes: Self.unauthorizedNotes)
            try Self.install(h, notes: AgentHarness.secureCopyPolicy)
            let name = "f\(cycle)"
            let written = try Self.write(h, h.notes, folder: folder, name: name, "secret \(cycle)")
            #expect(written.status == 0, "cycle \(cycle): \(written.error)")
            names.append(name)
        }
        // 40 policy installs, 20 group key rotations: far past the 4 old group keys a ring keeps.
        let status = try h.run(AgentHarness.sharebrokerd, ["--status"])
        #expect(status.status == 0)
        // Each cycle's file names a file key generation of its own.
        #expect(Set(names.compactMap { Self.keyID(folder + "/" + $0) }).count == 20)
        let expected = (0..<20).map { "secret \($0)\n" }.joined()

        let read = try Self.read(h, h.notes, folder: folder, names)
        #expect(read.status == 0, "notes could not read its files: \(read.error)")
        #expect(read.output == expected)

        // The viewer is authorized and holds the group's keys, yet opens none of them.
        let viewerStatus = try h.run(h.viewer, ["status"])
        #expect(viewerStatus.output.contains("secure services: available, keys"))
        let stolen = try Self.read(h, h.viewer, folder: folder, names)
        #expect(stolen.status == 1)
        #expect(stolen.output.isEmpty, "the viewer read plaintext of notes' files")
        let refusals = stolen.error.split(separator: "\n").filter { $0.contains("another app's file") }
        #expect(refusals.count == 20, "\(stolen.error)")

        // The file keys are on disk with the group keys: after a restart notes still reads all.
        h.stopAgent()
        try h.startAgent()
        let afterRestart = try Self.read(h, h.notes, folder: folder, names)
        #expect(afterRestart.status == 0, "\(afterRestart.error)")
        #expect(afterRestart.output == expected)
        #expect(try Self.read(h, h.viewer, folder: folder, names).output.isEmpty)
    }

    @Test("Attack: the viewer, authorized with the group key, copies notes' secure file into its own folder and opens it: refused as another app's file, nothing decrypted")
    func otherAppCopiesTheFile() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        try h.startAgent()
        defer { h.stopAgent() }
        let notesFolder = h.root + "/notes-secure"
        let viewerFolder = h.root + "/viewer-secure"
        #expect(try Self.write(h, h.notes, folder: notesFolder, name: "plan", "the plan").status == 0)
        #expect(try Self.write(h, h.viewer, folder: viewerFolder, name: "own", "viewer's own").status == 0)
        try FileManager.default.copyItem(atPath: notesFolder + "/plan", toPath: viewerFolder + "/plan")
        let attempt = try Self.read(h, h.viewer, folder: viewerFolder, ["plan", "own"])
        #expect(attempt.status == 1)
        #expect(attempt.output == "viewer's own\n")
        #expect(attempt.error.contains("plan: the file is sealed under key"))
        #expect(attempt.error.contains("another app's file"))
        #expect(try Self.read(h, h.notes, folder: notesFolder, ["plan"]).output == "the plan\n")
        // Notes cannot read the viewer's file either.
        try FileManager.default.copyItem(atPath: viewerFolder + "/own", toPath: notesFolder + "/own")
        #expect(try Self.read(h, h.notes, folder: notesFolder, ["own"]).status == 1)
    }
}
