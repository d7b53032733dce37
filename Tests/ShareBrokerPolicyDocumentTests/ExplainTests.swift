import Foundation
import ShareBroker
@testable import ShareBrokerPolicyDocument
import Testing

/// `explain`: a world built from a document, one action through the real library.
@Suite struct ExplainTests {
    func document(_ path: String) throws -> PolicyDocument {
        try PolicyDocument.parse(try packageFile(path)).document
    }

    @Test func aTargetOutsideTheWhitelistGetsADummyAndTheRuleSaysWhy() throws {
        let e = try explain(try document("examples/policies/whitelist.json"),
                            action: #"{"op":"openIn","document":"Q3.pdf","content":"numbers","target":"org.example.sheets"}"#)
        #expect(!e.rejected)
        #expect(e.outcome == "dummy")
        #expect(e.text.hasPrefix("dummy: blocked: target org.example.sheets is not in the whitelist of 3 apps; "
                                 + "the whitelist is matched exactly"))
        #expect(e.notifications == ["openInAttemptedWhenBlocked"])
        #expect(e.text.contains("callbacks: openInAttemptedWhenBlocked"))
    }

    @Test func aPrefixOfAListedIdIsNotListed() throws {
        let e = try explain(try document("examples/policies/whitelist.json"),
                            action: #"{"op":"openIn","document":"a","content":"b","target":"com.acme.viewer.evil"}"#)
        #expect(e.outcome == "dummy")
        let ok = try explain(try document("examples/policies/whitelist.json"),
                             action: #"{"op":"openIn","document":"a","content":"b","target":"com.acme.viewer"}"#)
        #expect(ok.text.hasPrefix("delivered: allowed: target com.acme.viewer is in the whitelist of 3 apps"))
    }

    @Test func theVersionTwoFieldsAreExplained() throws {
        let doc = try document("examples/policies/managedData.json")
        let generic = try explain(doc, action: #"{"op":"notify","title":"Q3 from the CFO"}"#)
        #expect(generic.text.hasPrefix("generic: the notification policy is blockOrgData"))
        let inbound = try explain(doc, action: #"{"op":"openFrom","source":"org.example.photos"}"#)
        #expect(inbound.outcome == "blocked")
        #expect(inbound.text.hasPrefix("blocked: source org.example.photos is not in the Open From whitelist of 0 apps"))
        #expect(inbound.notifications == ["openFromAttemptedWhenBlocked"])
        let short = try explain(doc, action: #"{"op":"copy","text":"👨‍👩‍👧‍👦 twenty characters!"}"#)
        #expect(short.text.hasPrefix("written: plain text this short is exempt"), "20 characters, 39 bytes")
        let long = try explain(doc, action: #"{"op":"copy","text":"twenty-one characters"}"#)
        #expect(long.outcome == "encrypted")
        let summary = PolicySummary.render(try PolicyDocument.parse(try packageFile("examples/policies/managedData.json")))
        #expect(summary.contains("version 2"))
        #expect(summary.contains("+ copy of plain text of at most 20 characters"))
        #expect(summary.contains("- paste into managed content of clear items other apps wrote"))
        #expect(summary.contains("offline: transfers held back after 43200 s, wiped after 7776000 s"))
        guard case .app(let app) = doc else { Issue.record("an app document"); return }
        #expect(app.policy.offline == OfflinePolicy(accessCheckAfter: .seconds(43_200), wipeAfter: .seconds(7_776_000)))
    }

    @Test func aVersionOneDocumentMayNotNameVersionTwoFields() throws {
        let text = #"{"format":"sharebroker.policy","version":1,"app":"a.b","policy":{"auth":"authorized","notifications":"block"}}"#
        #expect(throws: PolicyDocumentError.self) { try PolicyDocument.parse(Array(text.utf8)) }
        do {
            _ = try PolicyDocument.parse(Array(text.utf8))
        } catch {
            #expect(error.issues.first?.path == "$.policy.notifications")
            #expect(error.issues.first?.message.contains(#"set "version": 2"#) == true)
        }
        let v2 = text.replacingOccurrences(of: #""version":1"#, with: #""version":2"#)
        #expect(try PolicyDocument.parse(Array(v2.utf8)).document == .app(AppPolicyDocument(
            app: "a.b", description: nil, policy: PolicyUpdate(auth: .authorized, notifications: .block))))
    }

    @Test func printAndMailFollowThePolicy() throws {
        let lockdown = try document("examples/policies/lockdown.json")
        #expect(try explain(lockdown, action: #"{"op":"print"}"#).text == "blocked: the print policy is unauthorized")
        let mail = try explain(try document("examples/policies/whitelist.json"), action: #"{"op":"openURL","url":"mailto:a@b.c"}"#)
        #expect(mail.outcome == "opened")
        #expect(mail.handler == "com.apple.mobilemail")
        #expect(mail.text.hasPrefix("opened (com.apple.mobilemail): allowed: native mail is whitelisted"))
    }

    @Test func aDeviceDocumentSuppliesTheOtherApps() throws {
        let device = try document("examples/device-default.json")
        #expect(throws: PolicyExplainError.self) { try explain(device, action: #"{"op":"print"}"#) }
        let drop = try explain(device, app: "com.acme.notes", action: #"{"op":"dragAndDrop","target":"com.acme.viewer"}"#)
        #expect(drop.text == "allowed: target com.acme.viewer is an authorized AppConnect app")
        let sheets = try explain(device, app: "com.acme.notes", action: #"{"op":"dragAndDrop","target":"org.example.sheets"}"#)
        #expect(sheets.outcome == "blocked")
        #expect(sheets.notifications == ["dragAndDropToNonAppConnectApp"])
        // The viewer's policy is "All AppConnect apps": on this device that is com.acme.notes.
        let fromViewer = try explain(device, app: "com.acme.viewer",
                                     action: #"{"op":"openIn","document":"a","content":"b","target":"com.acme.notes"}"#)
        #expect(fromViewer.text.hasPrefix("delivered: allowed: target com.acme.notes is in the whitelist of 1 app"))
    }

    @Test func anAppPolicyCanBorrowADevice() throws {
        let (registry, _) = try DeviceRegistry.parse(try packageFile("examples/device-default.json"))
        let e = try explain(try document("examples/policies/secureCopy.json"), device: registry,
                            action: #"{"op":"openIn","document":"a","content":"b","target":"com.acme.viewer"}"#)
        #expect(e.outcome == "delivered")
        let alone = try explain(try document("examples/policies/secureCopy.json"),
                                action: #"{"op":"openIn","document":"a","content":"b","target":"com.acme.viewer"}"#)
        #expect(alone.text.hasPrefix("dummy: blocked: target com.acme.viewer is not in the whitelist of 0 apps"))
    }

    @Test func anUnauthorizedUserFailsClosed() throws {
        let doc = try PolicyDocument.parse(appDocument(#"{"openIn":"authorized","print":"authorized"}"#)).document
        #expect(try explain(doc, action: #"{"op":"print"}"#).text
            == "blocked: the user is not authorized, so every transfer fails closed")
    }

    @Test func badActionsAreRefusedClearly() throws {
        let doc = try document("examples/policies/whitelist.json")
        let rejected = try explain(doc, action: #"{"op":"openIn","target":"x"}"#)
        #expect(rejected.rejected)
        #expect(rejected.text == "rejected: missing required field 'document'")
        for action in ["not json", "[]", #"{"target":"x"}"#, #"{"op":"start","app":"x"}"#] {
            #expect(throws: PolicyExplainError.self) { try explain(doc, action: action) }
        }
        #expect(throws: PolicyExplainError.self) { try explain(doc, app: "com.other.app", action: #"{"op":"print"}"#) }
    }

    @Test func nonDecisionOpsShowTheResult() throws {
        let e = try explain(try document("examples/policies/secureCopy.json"), action: #"{"op":"state"}"#)
        #expect(e.outcome == nil)
        #expect(e.text.hasPrefix(#"result: {"line":3,"op":"state","ready":true,"authState":"authorized""#))
    }

    @Test func setupLinesCarryTheWholePolicy() throws {
        let lines = try PolicyExplainer.setupLines(for: try document("examples/device-default.json"), app: "com.acme.notes")
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix(#"{"op":"start","app":"com.acme.notes","implements":["configChanged""#))
        #expect(lines[0].contains(#"{"id":"com.acme.viewer","appConnect":true,"authorized":true,"handles":[]}"#))
        #expect(!lines[0].contains(#""id":"com.acme.notes""#))
        #expect(lines[1] == #"{"op":"policy","auth":"authorized","authMessage":"Welcome","openIn":"whitelist","#
                + #""openInWhitelist":["com.acme.viewer"],"pasteboard":"secureCopy","print":"authorized","#
                + #""secureFileIO":"required","logLevel":"status","dragAndDrop":"appConnectApps","#
                + #""managedBrowserRequired":false,"config":{},"clipboardExceptionLength":0,"notifications":"allow","#
                + #""openFrom":"authorized","pasteIn":"anyApp","offlineAccessCheckSeconds":0,"offlineWipeSeconds":0}"#)
    }
}
