import Foundation
import ShareBroker
@testable import ShareBrokerPolicyDocument
import Testing

/// Native documents: valid, invalid, contradictory; conversion; examples; schemas.
@Suite struct AppPolicyDocumentTests {
    @Test func readsAFullPolicyIntoAPolicyUpdate() throws {
        let text = appDocument(#"""
            {"auth":"authorized","authMessage":"Welcome","openIn":"whitelist",
             "openInWhitelist":["com.acme.viewer","com.apple.mobilemail","com.apple.UIKit.activity.Mail"],
             "pasteboard":"secureCopy","print":"unauthorized","secureFileIO":"optional","logLevel":"info",
             "dragAndDrop":"appConnectApps","managedBrowserRequired":true,
             "config":{"MI_AC_DISABLE_SCHEME_BLOCKING":"true","custom":"x"}}
            """#)
        let (doc, warnings) = try AppPolicyDocument.parse(Array(text.utf8))
        #expect(warnings.isEmpty)
        #expect(doc.app == "com.acme.notes")
        let expected = PolicyUpdate(
            auth: .authorized, authMessage: "Welcome",
            openIn: .whitelist(["com.acme.viewer", "com.apple.mobilemail", "com.apple.UIKit.activity.Mail"]),
            pasteboard: .secureCopy, print: .unauthorized, secureFileIO: .optional, logLevel: .info,
            dragAndDrop: .appConnectApps, managedBrowserRequired: true,
            config: ["MI_AC_DISABLE_SCHEME_BLOCKING": "true", "custom": "x"])
        #expect(doc.policy == expected)
        // The whole policy: the version 2 fields a version 1 document cannot name keep the
        // behaviour from before they existed.
        var complete = expected
        complete.clipboardExceptionLength = 0
        complete.notifications = .allow
        complete.openFrom = .authorized
        complete.pasteIn = .anyApp
        complete.offline = .unlimited
        complete.warn = WarnPolicy.none
        #expect(doc.policyUpdate == complete)
    }

    @Test func fieldsLeftOutTakeTheirMostRestrictiveValue() throws {
        let (doc, warnings) = try AppPolicyDocument.parse(Array(appDocument(#"{"openIn":"authorized"}"#).utf8))
        #expect(doc.policy == PolicyUpdate(openIn: .authorized))
        let complete = doc.policyUpdate
        #expect(complete.auth == .unauthorized)
        #expect(complete.authMessage == "")
        #expect(complete.openIn == .authorized)
        #expect(complete.pasteboard == .unauthorized)
        #expect(complete.print == .unauthorized)
        #expect(complete.secureFileIO == .required)
        #expect(complete.logLevel == .status)
        #expect(complete.dragAndDrop == DragAndDropPolicy.noApps)
        #expect(complete.managedBrowserRequired == false)
        #expect(complete.config == [:])
        #expect(warnings.map(\.path) == ["$.policy.auth"], "a policy without auth blocks everything: say so")
    }

    @Test func everyOpenInSettingConverts() throws {
        let cases: [(String, TransferSetting)] = [
            (#"{"openIn":"unauthorized"}"#, .unauthorized), (#"{"openIn":"authorized"}"#, .authorized),
            (#"{"openIn":"appConnectApps"}"#, .allAppConnectApps),
            (#"{"openIn":"whitelist","openInWhitelist":["a.b"]}"#, .whitelist(["a.b"])),
        ]
        for (policy, setting) in cases {
            #expect(try AppPolicyDocument.parse(Array(appDocument(policy).utf8)).document.policy.openIn == setting)
        }
    }

    @Test func roundTripsThroughItsCanonicalText() throws {
        for name in ["authorized", "whitelist", "secureCopy", "lockdown"] {
            let checked = try PolicyDocument.parse(try packageFile("examples/policies/\(name).json"))
            let again = try PolicyDocument.parse(checked.document.jsonText)
            #expect(again.document == checked.document)
            #expect(again.document.jsonText == checked.document.jsonText)
        }
    }

    @Test func unknownFieldsAreErrorsWithPathsAndSuggestions() {
        let issues = refusal(appDocument(#"{"auth":"authorized","opnIn":"authorized","color":"red"}"#))
        #expect(issues.map(\.path) == ["$.policy.opnIn", "$.policy.color"])
        #expect(issues[0].message.contains("did you mean \"openIn\"?"))
        #expect(issues[0].message.contains("allowed fields: auth, authMessage, openIn, openInWhitelist"))
        let top = refusal(#"{"format":"sharebroker.policy","version":1,"app":"a.b","policy":{},"extra":1}"#)
        #expect(top.map(\.path) == ["$.extra"])
    }

    @Test func wrongTypesAndUnknownValuesNameTheAllowedValues() {
        let issues = refusal(appDocument(#"{"auth":1,"openIn":"sometimes","pasteboard":"SecureCopy","print":null,"#
                                         + #""managedBrowserRequired":"true","config":[]}"#))
        let byPath = Dictionary(issues.map { ($0.path, $0.message) }, uniquingKeysWith: { a, _ in a })
        #expect(byPath["$.policy.auth"]?.contains(#"expected a string, one of "unauthorized", "authorized", "retired"; got a number"#) == true)
        #expect(byPath["$.policy.openIn"]?.contains(#"unknown value "sometimes"; allowed values: "unauthorized", "whitelist", "appConnectApps", "authorized""#) == true)
        #expect(byPath["$.policy.pasteboard"]?.contains(#"did you mean "secureCopy"?"#) == true)
        #expect(byPath["$.policy.print"]?.contains("got null") == true)
        #expect(byPath["$.policy.managedBrowserRequired"]?.contains("write true without quotes") == true)
        #expect(byPath["$.policy.config"]?.contains("expected an object of string values") == true)
        #expect(issues.count == 6, "every error is reported, not just the first")
    }

    @Test func aWhitelistWithAnotherOpenInPolicyIsAContradiction() {
        for other in ["unauthorized", "authorized", "appConnectApps"] {
            let issues = refusal(appDocument(#"{"openIn":"\#(other)","openInWhitelist":["com.acme.viewer"]}"#))
            #expect(issues.map(\.path) == ["$.policy.openInWhitelist"])
            #expect(issues.first?.message.contains("contradicts openIn \"\(other)\"") == true)
        }
        #expect(refusal(appDocument(#"{"openInWhitelist":["a.b"]}"#)).first?.message.contains("given without openIn") == true)
        #expect(refusal(appDocument(#"{"openIn":"whitelist"}"#)).first?.message.contains("must list the bundle ids") == true)
    }

    @Test func bundleIDsAreCheckedAndMatchedExactly() throws {
        let issues = refusal(appDocument(#"{"openIn":"whitelist","openInWhitelist":["com.acme.viewer","com acme",""]}"#,
                                         app: "com.acme/notes"))
        #expect(issues.map(\.path) == ["$.app", "$.policy.openInWhitelist[1]", "$.policy.openInWhitelist[2]"])
        let (_, warnings) = try AppPolicyDocument.parse(Array(appDocument(
            #"{"auth":"authorized","openIn":"whitelist","openInWhitelist":["com.acme.viewer","com.Acme.Viewer","com.acme.viewer","com.apple.mobilemail"]}"#).utf8))
        #expect(warnings.map(\.path) == ["$.policy.openInWhitelist[1]", "$.policy.openInWhitelist[2]", "$.policy.openInWhitelist"])
        #expect(warnings[0].message.contains("only in case"))
        #expect(warnings[1].message.contains("listed twice"))
        #expect(warnings[2].message.contains("both com.apple.mobilemail and com.apple.UIKit.activity.Mail"))
    }

    @Test func capsWhitelistsAndConfigs() {
        let ids = (0...PolicyDocumentBounds.maxWhitelist).map { "\"app.n\($0)\"" }.joined(separator: ",")
        let limits = PolicyDocumentLimits(maxContainerCount: 20_000)
        let issues = refusal(appDocument(#"{"openIn":"whitelist","openInWhitelist":[\#(ids)]}"#), limits: limits)
        #expect(issues.map(\.path) == ["$.policy.openInWhitelist"])
        #expect(issues.first?.message.contains("at most 10000") == true)
        let entries = (0...PolicyDocumentBounds.maxConfigEntries).map { "\"k\($0)\":\"v\"" }.joined(separator: ",")
        #expect(refusal(appDocument(#"{"config":{\#(entries)}}"#)).first?.message.contains("at most 1000") == true)
        let longMessage = String(repeating: "m", count: PolicyDocumentBounds.maxText + 1)
        #expect(refusal(appDocument(#"{"authMessage":"\#(longMessage)"}"#)).first?.path == "$.policy.authMessage")
    }

    @Test func knownConfigKeysTakeTrueOrFalse() {
        let issues = refusal(appDocument(#"{"config":{"MI_AC_DISABLE_SCHEME_BLOCKING":"yes"}}"#))
        #expect(issues.first?.path == "$.policy.config.MI_AC_DISABLE_SCHEME_BLOCKING")
        #expect(issues.first?.message.contains(#"allowed values: "true", "false""#) == true)
    }

    @Test func formatAndVersionComeFirst() {
        #expect(refusal(#"{"version":1,"app":"a.b","policy":{}}"#).first?.message.contains("missing field \"format\"") == true)
        #expect(refusal(##"{"@odata.type":"#microsoft.graph.iosManagedAppProtection"}"##).first?.message
            .contains("policy import --from intune") == true)
        #expect(refusal(#"{"format":"sharebroker.polcy","version":1}"#).first?.message
            .contains(#"did you mean "sharebroker.policy"?"#) == true)
        #expect(refusal(#"{"format":"sharebroker.policy","version":3,"app":"a.b","policy":{}}"#).first?.message
            .contains("newer than this tool reads") == true)
        #expect(refusal(#"{"format":"sharebroker.policy","version":"1","app":"a.b","policy":{}}"#).first?.path == "$.version")
        #expect(refusal(#"{"format":"sharebroker.policy","version":1.5,"app":"a.b","policy":{}}"#).first?.path == "$.version")
        #expect(refusal("[]").first?.message.contains("expected a JSON object") == true)
        #expect(refusal(#"{"format":"sharebroker.policy","version":1}"#).map(\.message) == [
            #"missing field "app": the bundle id of the app, e.g. "com.acme.notes""#,
            #"missing field "policy": an object with the app's policy, e.g. {"auth": "authorized"}"#,
        ])
    }

    @Test func aRefusedDocumentIsNeverPartlyApplied() {
        // Valid fields next to an invalid one: parsing yields nothing at all to apply.
        let text = appDocument(#"{"auth":"authorized","openIn":"authorized","print":"sometimes"}"#)
        #expect(throws: PolicyDocumentError.self) { try PolicyDocument.parse(text) }
    }

    @Test func errorReportsAreBounded() {
        let fields = (0..<500).map { "\"unknown\($0)\":1" }.joined(separator: ",")
        do {
            _ = try PolicyDocument.parse(appDocument("{\(fields)}"))
            Issue.record("accepted")
        } catch {
            #expect(error.issues.count == PolicyDocumentError.maxReported)
            #expect(error.omitted == 400)
            #expect(error.description.hasSuffix("… and 400 more errors"))
        }
    }
}

@Suite struct DeviceDocumentTests {
    func device(_ apps: String) -> String {
        #"{"format":"sharebroker.device","version":1,"apps":[\#(apps)]}"#
    }

    @Test func readsTheRegistryAndDerivesTheDeviceApps() throws {
        let (registry, warnings) = try DeviceRegistry.parse(try packageFile("examples/device-default.json"))
        #expect(warnings.isEmpty)
        #expect(registry.apps.map(\.id) == ["com.acme.notes", "com.acme.viewer", "com.apple.mobilemail", "org.example.sheets"])
        let notes = try #require(registry["com.acme.notes"])
        #expect(notes.isAppConnect && notes.isAuthorized)
        #expect(notes.executable == "/opt/acme/notes/bin/acme-notes")
        #expect(notes.sha256?.count == 64)
        #expect(notes.policyUpdate?.openIn == .whitelist(["com.acme.viewer"]))
        #expect(registry.app(forExecutable: "/usr/bin/mail-client")?.id == "com.apple.mobilemail")
        let device = registry.deviceApps(excluding: "com.acme.notes")
        #expect(device["com.acme.notes"] == nil)
        #expect(device.authorizedAppConnectIDs == ["com.acme.viewer"])
        #expect(device.handler(forScheme: "MAILTO")?.id == "com.apple.mobilemail")
        #expect(registry["com.apple.mobilemail"]?.policyUpdate == nil)
    }

    @Test func idsAndExecutablesAreUnique() {
        let issues = refusal(device(#"""
            {"id":"a.one","executable":"/bin/one"},{"id":"a.two","executable":"/bin/one"},{"id":"a.one","executable":"/bin/three"}
            """#))
        #expect(issues.map(\.path) == ["$.apps[1].executable", "$.apps[2].id"])
        #expect(issues[0].message.contains("could not tell the two apps apart"))
        #expect(issues[1].message.contains("also $.apps[0].id"))
    }

    @Test func aPolicyGoesWithAppConnectAndOnlyWithIt() {
        #expect(refusal(device(#"{"id":"a.b","executable":"/bin/b","policy":{}}"#)).map(\.path) == ["$.apps[0].policy"])
        #expect(refusal(device(#"{"id":"a.b","executable":"/bin/b","appConnect":true}"#)).first?.message
            .contains("needs its policy") == true)
        #expect(refusal(device(#"{"id":"a.b","executable":"/bin/b","appConnect":true,"policy":{"openIn":"nope"}}"#))
            .map(\.path) == ["$.apps[0].policy.openIn"])
    }

    @Test func pathsDigestsAndSchemesAreChecked() {
        let issues = refusal(device(#"""
            {"id":"a.b","executable":"bin/b"},
            {"id":"a.c","executable":"/opt/../etc/c"},
            {"id":"a.d","executable":"/opt/d/"},
            {"id":"a.e","executable":"/opt/e","sha256":"ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"},
            {"id":"a.f","executable":"/opt/f","sha256":"abc"},
            {"id":"a.g","executable":"/opt/g","handles":["mailto:","ok+scheme","9p"]}
            """#))
        #expect(issues.map(\.path) == ["$.apps[0].executable", "$.apps[1].executable", "$.apps[2].executable",
                                       "$.apps[3].sha256", "$.apps[4].sha256", "$.apps[5].handles[0]", "$.apps[5].handles[2]"])
        #expect(issues[3].message.contains("write it in lower case"))
    }

    @Test func aFlatpakAppIsNamedByItsAppIdAndRunsFromApp() throws {
        let (registry, _) = try DeviceRegistry.parse(Array(device(#"""
            {"id":"org.acme.Notes","executable":"/app/bin/acme-notes","flatpak":true},
            {"id":"org.acme.Host","executable":"/opt/acme/host"}
            """#).utf8))
        #expect(registry["org.acme.Notes"]?.isFlatpak == true)
        #expect(registry["org.acme.Host"]?.isFlatpak == false)
        #expect(registry.app(forFlatpak: "org.acme.Notes")?.executable == "/app/bin/acme-notes")
        // Exact, and only Flatpak entries: a host app of that id, a case variant or a prefix is none.
        #expect(registry.app(forFlatpak: "org.acme.Host") == nil)
        #expect(registry.app(forFlatpak: "org.acme.notes") == nil)
        #expect(registry.app(forFlatpak: "org.acme.Note") == nil)
        let issues = refusal(device(#"""
            {"id":"acme.notes","executable":"/app/bin/n","flatpak":true},
            {"id":"org.acme.Viewer","executable":"/opt/acme/viewer","flatpak":true},
            {"id":"org.1acme.Sheets","executable":"/app/bin/s","flatpak":true},
            {"id":"org.acme.Mail","executable":"/app/bin/m","flatpak":"yes"}
            """#))
        #expect(issues.map(\.path) == ["$.apps[0].id", "$.apps[1].executable", "$.apps[2].id", "$.apps[3].flatpak"])
        #expect(issues[0].message.contains("not a Flatpak app id"))
        #expect(issues[1].message.contains("path inside the sandbox"))
        #expect(FlatpakAppID.isValid("org.gnome.TextEditor") && FlatpakAppID.isValid("org.example.my-app"))
        #expect(!FlatpakAppID.isValid("org.my-example.app") && !FlatpakAppID.isValid("org..app") && !FlatpakAppID.isValid("org.example.app."))
    }

    @Test func warnsAboutSharedSchemesAndWhitelistedAppsNotOnTheDevice() throws {
        let text = device(#"""
            {"id":"a.mail1","executable":"/bin/m1","handles":["mailto"]},
            {"id":"a.mail2","executable":"/bin/m2","handles":["MAILTO"]},
            {"id":"a.notes","executable":"/bin/n","appConnect":true,
             "policy":{"auth":"authorized","openIn":"whitelist","openInWhitelist":["a.mail1","a.ghost"]}}
            """#)
        let checked = try PolicyDocument.parse(text)
        #expect(checked.warnings.map(\.path) == ["$.apps[1].handles", "$.apps[2].policy.openInWhitelist"])
        #expect(checked.warnings[1].message.contains("a.ghost"))
    }

    @Test func anAppDocumentIsNotADevice() {
        #expect(throws: PolicyDocumentError.self) {
            try DeviceRegistry.parse(try packageFile("examples/policies/lockdown.json"))
        }
        #expect(throws: PolicyDocumentError.self) {
            try AppPolicyDocument.parse(try packageFile("examples/device-default.json"))
        }
    }

    @Test func roundTripsThroughItsCanonicalText() throws {
        let checked = try PolicyDocument.parse(try packageFile("examples/device-default.json"))
        #expect(try PolicyDocument.parse(checked.document.jsonText).document == checked.document)
    }
}

/// The shipped examples and schemas.
@Suite struct ExamplesAndSchemaTests {
    static let examples = ["examples/policies/authorized.json", "examples/policies/whitelist.json",
                           "examples/policies/secureCopy.json", "examples/policies/lockdown.json", "examples/policies/managedData.json",
                           "examples/policies/warn.json", "examples/device-default.json", "examples/device-desktop.json"]

    @Test func everyExampleIsListedHere() throws {
        let found = try FileManager.default.subpathsOfDirectory(atPath: packageRoot.appendingPathComponent("examples").path)
            .filter { $0.hasSuffix(".json") }.map { "examples/" + $0 }
        #expect(Set(found) == Set(Self.examples))
    }

    @Test(arguments: examples)
    func everyExamplePassesCheckWithoutWarnings(path: String) throws {
        let checked = try PolicyDocument.parse(try packageFile(path))
        #expect(checked.warnings.isEmpty, "\(checked.warnings)")
        let summary = PolicySummary.render(checked)
        #expect(summary.contains("valid"))
        #expect(summary.split(separator: "\n").count <= 30, "one screen")
    }

    @Test func theDesktopExampleRegistersAFlatpakByItsAppID() throws {
        let (registry, _) = try DeviceRegistry.parse(try packageFile("examples/device-desktop.json"))
        #expect(registry.app(forFlatpak: "org.acme.Viewer")?.executable == "/app/bin/acme-viewer")
        #expect(registry["com.acme.notes"]?.isFlatpak == false)
        #expect(registry.nativeMail.ids == ["org.gnome.Evolution"])
        let summary = PolicySummary.render(try PolicyDocument.parse(try packageFile("examples/device-desktop.json")))
        #expect(summary.contains("Flatpak, /app/bin/acme-viewer in its sandbox"))
    }

    @Test func theDemoDeviceMatchesTheDemoScenario() throws {
        // The demo's start line and the example device describe the same apps.
        let (registry, _) = try DeviceRegistry.parse(try packageFile("examples/device-default.json"))
        let others = registry.deviceApps(excluding: "com.acme.notes")
        #expect(others["com.acme.viewer"]?.isAuthorizedAppConnectApp == true)
        #expect(others["com.apple.mobilemail"]?.schemes == ["mailto"])
        #expect(others["org.example.sheets"]?.schemes == ["sheets"])
    }

    /// The schema's enums are the parser's tables, so the two cannot drift apart.
    @Test func schemaEnumsMatchTheParser() throws {
        let schema = try StrictJSONParser.parse(try packageFile("docs/policy.schema.json"), limits: .standard)
        let fields = try #require(schema["$defs"]?["policy"]?["properties"])
        func enumNames(_ field: String) -> [String] {
            guard case .array(let items)? = fields[field]?["enum"] else { return [] }
            return items.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        #expect(enumNames("auth") == PolicyNames.auth.map(\.0))
        #expect(enumNames("openIn") == PolicyNames.openIn.map(\.0))
        #expect(enumNames("pasteboard") == PolicyNames.pasteboard.map(\.0))
        #expect(enumNames("print") == PolicyNames.print.map(\.0))
        #expect(enumNames("secureFileIO") == PolicyNames.secureFileIO.map(\.0))
        #expect(enumNames("logLevel") == PolicyNames.logLevel.map(\.0))
        #expect(enumNames("dragAndDrop") == PolicyNames.dragAndDrop.map(\.0))
        #expect(enumNames("notifications") == PolicyNames.notifications.map(\.0))
        #expect(enumNames("openFrom") == PolicyNames.openFrom.map(\.0))
        #expect(enumNames("pasteIn") == PolicyNames.pasteIn.map(\.0))
        guard case .object(let members) = fields else { return }
        #expect(members.map(\.key) == PolicyField.allCases.map(\.rawValue))
        let device = try StrictJSONParser.parse(try packageFile("docs/device.schema.json"), limits: .standard)
        guard case .object(let appFields)? = device["$defs"]?["app"]?["properties"] else {
            Issue.record("no app properties in the device schema")
            return
        }
        #expect(appFields.map(\.key) == DocumentValidator.appEntryFields)
    }
}

@Suite struct SummaryTests {
    @Test func saysWhatAWhitelistPolicyAllowsAndBlocks() throws {
        let summary = PolicySummary.render(try PolicyDocument.parse(try packageFile("examples/policies/whitelist.json")))
        #expect(summary.contains("+ Open In to 3 apps, matched exactly: com.acme.viewer, com.apple.UIKit.activity.Mail, com.apple.mobilemail"))
        #expect(summary.contains("+ native mail: both mail ids are whitelisted"))
        #expect(summary.contains("- print"))
        #expect(summary.contains("copy, encrypted"))
    }

    @Test func anUnauthorizedUserBlocksEverythingAndSaysSo() throws {
        let summary = PolicySummary.render(try PolicyDocument.parse(appDocument(#"{"openIn":"authorized"}"#)))
        #expect(summary.contains("BLOCKS EVERY TRANSFER"))
        #expect(summary.contains("not set, so at the most restrictive value: auth unauthorized"))
        #expect(summary.contains("! $.policy.auth: not set"))
    }

    @Test func aDeviceSummaryFitsOneScreen() throws {
        let apps = (0..<200).map { #"{"id":"app.n\#($0)","executable":"/bin/app\#($0)"}"# }.joined(separator: ",")
        let summary = PolicySummary.render(try PolicyDocument.parse(#"{"format":"sharebroker.device","version":1,"apps":[\#(apps)]}"#))
        #expect(summary.contains("… and 180 more apps"))
        #expect(summary.split(separator: "\n").count < 30)
    }
}
