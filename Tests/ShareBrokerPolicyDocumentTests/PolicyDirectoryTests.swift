import ShareBroker
import ShareBrokerPolicyDocument
import Testing

@Suite("policy directory assembly")
struct PolicyDirectoryAssemblyTests {
    let device = Array("""
        {"format": "sharebroker.device", "version": 1, "apps": [
          {"id": "com.acme.notes", "executable": "/opt/notes", "appConnect": true,
           "policy": {"auth": "authorized", "pasteboard": "secureCopy"}},
          {"id": "org.example.sheets", "executable": "/opt/sheets"}]}
        """.utf8)

    func file(_ name: String, _ text: String) -> (name: String, bytes: [UInt8]) { (name, Array(text.utf8)) }

    @Test("No policy files: the device document as written")
    func deviceAlone() throws {
        let assembled = try PolicyDirectory.assemble(device: device, policies: [])
        #expect(assembled.registry["com.acme.notes"]?.policy?.pasteboard == .secureCopy)
    }

    @Test("A native app policy replaces the app's whole policy; an Intune body applies to the device's apps it targets")
    func filesWin() throws {
        let native = file("10-notes.json", #"{"format": "sharebroker.policy", "version": 1, "app": "com.acme.notes", "policy": {"auth": "authorized", "pasteboard": "authorized"}}"#)
        var assembled = try PolicyDirectory.assemble(device: device, policies: [native])
        #expect(assembled.registry["com.acme.notes"]?.policy?.pasteboard == .authorized)
        #expect(assembled.registry["com.acme.notes"]?.policy?.print == nil, "left out: most restrictive when completed")

        let intune = file("intune.json", ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "allowedOutboundClipboardSharingLevel": "blocked", "apps": [{"mobileAppIdentifier": {"bundleId": "com.acme.notes"}}, {"mobileAppIdentifier": {"bundleId": "com.other.app"}}]}"##)
        assembled = try PolicyDirectory.assemble(device: device, policies: [intune])
        #expect(assembled.registry["com.acme.notes"]?.policy?.pasteboard == .unauthorized)
        #expect(assembled.warnings.contains { $0.contains("com.other.app") && $0.contains("not on this device") })
    }

    @Test("Refused, naming the file: an unknown app, an app without the library, two files for one app, bad JSON, an Intune body for no device app")
    func refusals() {
        let cases: [(files: [(name: String, bytes: [UInt8])], file: String, says: String)] = [
            ([file("a.json", #"{"format": "sharebroker.policy", "version": 1, "app": "com.unknown", "policy": {}}"#)], "policies.d/a.json", "not in device.json"),
            ([file("b.json", #"{"format": "sharebroker.policy", "version": 1, "app": "org.example.sheets", "policy": {}}"#)], "policies.d/b.json", "does not link the library"),
            ([file("c1.json", #"{"format": "sharebroker.policy", "version": 1, "app": "com.acme.notes", "policy": {}}"#),
              file("c2.json", #"{"format": "sharebroker.policy", "version": 1, "app": "com.acme.notes", "policy": {}}"#)], "policies.d/c2.json", "already sets the policy"),
            ([file("d.json", "{not json")], "policies.d/d.json", "not valid JSON"),
            ([file("e.json", ##"{"@odata.type": "#microsoft.graph.iosManagedAppProtection", "apps": [{"mobileAppIdentifier": {"bundleId": "com.other.app"}}]}"##)], "policies.d/e.json", "targets no app of this device"),
        ]
        for c in cases {
            #expect(throws: PolicyDirectoryError.self) { try PolicyDirectory.assemble(device: device, policies: c.files) }
            do {
                _ = try PolicyDirectory.assemble(device: device, policies: c.files)
            } catch {
                #expect(error.file == c.file)
                #expect(error.reason.contains(c.says), "\(error)")
            }
        }
        #expect(throws: PolicyDirectoryError.self) { try PolicyDirectory.assemble(device: Array("{}".utf8), policies: []) }
    }

    @Test("Only visible *.json files are policy files")
    func fileNames() {
        #expect(PolicyDirectory.isPolicyFileName("notes.json"))
        #expect(!PolicyDirectory.isPolicyFileName(".notes.json.swp"))
        #expect(!PolicyDirectory.isPolicyFileName("notes.json~"))
        #expect(!PolicyDirectory.isPolicyFileName(".json"))
    }
}
