import ShareBroker
import ShareBrokerPolicyDocument
import Testing

/// `nativeMail` in a device document: which desktop app ids count as native mail on a Linux device.
@Suite struct NativeMailDocumentTests {
    let apps = #"[{"id":"org.example.Notes","executable":"/usr/bin/notes","appConnect":true,"policy":{"auth":"authorized","openIn":"whitelist","openInWhitelist":["org.gnome.Evolution"]}}]"#

    @Test func aDeviceDocumentNamesItsNativeMailIds() throws {
        let text = #"{"format":"sharebroker.device","version":1,"nativeMail":["org.gnome.Evolution","org.gnome.Evolution.Compose"],"apps":\#(apps)}"#
        let (registry, _) = try DeviceRegistry.parse(Array(text.utf8))
        #expect(registry.nativeMail.ids == ["org.gnome.Evolution", "org.gnome.Evolution.Compose"])
        #expect(registry.nativeMail.launchID == "org.gnome.Evolution")
        #expect(registry.deviceApps().nativeMail == registry.nativeMail)
        // The written document reads back the same.
        let (again, _) = try DeviceRegistry.parse(Array(registry.jsonText.utf8))
        #expect(again == registry)
        #expect(registry.jsonText.contains("nativeMail"))
    }

    @Test func withoutNativeMailTheAppleIdsApply() throws {
        let (registry, _) = try DeviceRegistry.parse(Array(#"{"format":"sharebroker.device","version":1,"apps":\#(apps)}"#.utf8))
        #expect(registry.nativeMail == .appleDevices)
        #expect(!registry.jsonText.contains("nativeMail"))
    }

    @Test(arguments: [#"[]"#, #""org.gnome.Evolution""#, #"["bad id with spaces"]"#])
    func aBadNativeMailListIsAnError(value: String) {
        let text = #"{"format":"sharebroker.device","version":1,"nativeMail":\#(value),"apps":\#(apps)}"#
        #expect(throws: PolicyDocumentError.self) { try DeviceRegistry.parse(Array(text.utf8)) }
    }
}
