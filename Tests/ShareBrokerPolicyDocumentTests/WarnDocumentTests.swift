import Foundation
import ShareBroker
@testable import ShareBrokerPolicyDocument
import Testing

/// Issue 33 in documents: the `warn` field (version 2), `check`'s errors and warnings, the
/// summary, `explain`, and the Intune import, which maps nothing to warn and says so.
@Suite struct WarnDocumentTests {
    func v2(_ policy: String) -> String {
        #"{"format":"sharebroker.policy","version":2,"app":"com.acme.notes","policy":\#(policy)}"#
    }

    @Test func theExampleParsesRoundTripsAndReachesTheSnapshotSettings() throws {
        let checked = try PolicyDocument.parse(try packageFile("examples/policies/warn.json"))
        #expect(checked.warnings.isEmpty, "\(checked.warnings)")
        guard case .app(let doc) = checked.document else { Issue.record("not an app policy"); return }
        let copy = try #require(doc.policy.warn?[.copy])
        #expect(copy.reasonRequired && copy.freeTextAllowed && copy.reasons.map(\.code) == ["customer-request", "internal"])
        #expect(copy.answerTimeoutMilliseconds == 60_000 && copy.rateLimit == WarnRateLimit(proceeds: 10, minutes: 60))
        #expect(doc.policy.warn?[.openIn]?.proceedLifetimeMinutes == 30)
        #expect(doc.policy.warn?[.dragAndDrop] == nil)
        let again = try PolicyDocument.parse(checked.document.jsonText)
        #expect(again.document == checked.document)
        #expect(again.document.jsonText == checked.document.jsonText)
        let summary = PolicySummary.render(checked)
        #expect(summary.contains("copy in the clear warns: the user may go on (a reason is required"))
        #expect(summary.contains("Open In outside the whitelist warns"))
    }

    @Test func warnIsAVersionTwoField() {
        let issues = refusal(appDocument(#"{"auth":"authorized","warn":{"print":{}}}"#))
        #expect(issues.first?.message.contains("version 2") == true)
    }

    @Test func badSettingsAreErrorsThatSayWhat() {
        let cases: [(String, String, String)] = [
            (#"{"paste":{}}"#, "$.policy.warn.paste", "unknown field"),
            (#"{"copy":{"reasonRequired":true}}"#, "$.policy.warn.copy", "could never go on"),
            (#"{"copy":{"answerSeconds":0}}"#, "$.policy.warn.copy.answerSeconds", "1 to 600"),
            (#"{"copy":{"proceedMinutes":2000}}"#, "$.policy.warn.copy.proceedMinutes", "0 to 1440"),
            (#"{"copy":{"reasons":[{"code":"a b","label":"x"}]}}"#, "$.policy.warn.copy", "invalid"),
            (#"{"copy":{"reasons":[{"code":"a","label":"x"},{"code":"a","label":"y"}]}}"#, "$.policy.warn.copy", "distinct"),
            (#"{"copy":{"rateLimit":{"proceeds":3}}}"#, "$.policy.warn.copy.rateLimit", "both"),
            (#"{"copy":{"freeText":"yes"}}"#, "$.policy.warn.copy.freeText", "true or false"),
        ]
        for (warn, path, words) in cases {
            let issues = refusal(v2(#"{"auth":"authorized","warn":\#(warn)}"#))
            #expect(issues.contains { $0.path == path && $0.message.contains(words) }, "\(warn): \(issues)")
        }
    }

    @Test func aWarningThatCanNeverApplyIsFlagged() throws {
        let (_, warnings) = try AppPolicyDocument.parse(Array(v2(
            #"{"auth":"authorized","pasteboard":"secureCopy","print":"authorized","openIn":"authorized","warn":{"copy":{},"print":{},"openIn":{}}}"#).utf8))
        let paths = Set(warnings.map(\.path))
        #expect(paths.isSuperset(of: ["$.policy.warn.copy", "$.policy.warn.print", "$.policy.warn.openIn"]))
        #expect(warnings.first { $0.path == "$.policy.warn.copy" }?.message.contains("never applies") == true)
    }

    @Test func explainShowsTheQuestion() throws {
        let doc = try PolicyDocument.parse(try packageFile("examples/policies/warn.json")).document
        let e = try explain(doc, action: #"{"op":"copy","text":"the merger plan"}"#)
        #expect(e.outcome == "warn")
        #expect(e.why?.contains("the user decide") == true)
        #expect(e.result.contains("customer-request"))
        let drop = try explain(doc, action: #"{"op":"dragAndDrop","target":"org.example.sheets"}"#)
        #expect(drop.outcome == "blocked", "drag and drop does not warn in this policy")
    }

    @Test func theIntuneImportMapsNothingToWarnAndSaysSo() throws {
        let body = ##"{"@odata.type":"#microsoft.graph.iosManagedAppProtection","printBlocked":true}"##
        let imported = try IntuneImporter.importPolicy(Array(body.utf8), appID: "com.acme.notes")
        #expect(imported.document.policy.warn == nil && imported.document.policyUpdate.warn == WarnPolicy.none)
        #expect(imported.unsourced.contains { $0.hasPrefix("warn none: Intune has no warn level") })
        #expect(imported.report.contains("Intune has no warn level"))
    }
}
