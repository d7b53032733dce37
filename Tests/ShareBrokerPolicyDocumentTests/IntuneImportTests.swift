import Foundation
import ShareBroker
@testable import ShareBrokerPolicyDocument
import Testing

/// Importing Microsoft Graph app protection bodies.
@Suite struct IntuneImportTests {
    func importing(_ name: String, app: String? = nil) throws -> IntuneImport {
        try IntuneImporter.importPolicy(try fixture(name), appID: app)
    }

    func refusal(_ bytes: [UInt8], app: String? = nil) -> String {
        do {
            _ = try IntuneImporter.importPolicy(bytes, appID: app)
            Issue.record("expected the import to be refused")
            return ""
        } catch {
            return error.message
        }
    }

    /// Every field of the input appears in the report exactly once, in input order.
    func expectEveryFieldReported(_ result: IntuneImport, _ name: String) throws {
        let json = try StrictJSONParser.parse(try fixture(name), limits: .standard)
        guard case .object(let members) = json else { return }
        #expect(result.fields.map(\.field) == members.map(\.key))
        #expect(members.allSatisfy { m in result.report.contains("\(m.key) = ") })
    }

    @Test func inboundPasteInNotificationsAndTheCharacterExceptionAreMapped() throws {
        let tenant = try importing("graph-ios-tenant-export.json", app: "com.acme.notes")
        let t = tenant.document.policy
        #expect(t.openFrom == .authorized)
        #expect(t.pasteboard == .secureCopy && t.pasteIn == .anyApp, "managedAppsWithPasteIn")
        #expect(t.clipboardExceptionLength == 0)
        #expect(t.notifications == .blockOrgData)
        for field in ["allowedInboundDataTransferSources", "allowedOutboundClipboardSharingLevel",
                      "allowedOutboundClipboardSharingExceptionLength", "notificationRestriction"] {
            #expect(tenant.fields.first { $0.field == field }?.status == .mapped, "\(field)")
        }
        #expect(tenant.document.jsonText.contains(#""version": 2"#), "the new fields need a version 2 document")

        let android = try importing("graph-android-export.json")
        let a = android.document.policy
        #expect(a.openFrom == .allAppConnectApps)
        #expect(a.pasteboard == .unauthorized && a.pasteIn == .managedApps, "blocked")
        #expect(a.clipboardExceptionLength == 40)
        #expect(a.notifications == .block, "absent: the most restrictive")
        #expect(android.unsourced.contains { $0.hasPrefix("notifications block") })

        #expect(a.offline == OfflinePolicy(accessCheckSeconds: 43_200, wipeSeconds: 2_592_000), "PT12H and P30D")
        #expect(android.fields.first { $0.field == "periodOfflineBeforeAccessCheck" }?.status == .mapped)
        #expect(t.offline?.accessCheckSeconds == 43_200)

        let odd = try importing("graph-ios-odd.json", app: "com.acme.notes")
        #expect(odd.document.policy.openFrom == .unauthorized)
        #expect(odd.document.policy.clipboardExceptionLength == 0, "70000 is out of range: no exception")
        #expect(odd.warnings.contains { $0.contains("70000 is outside 0...65535") })
    }

    /// Imports a body of the given top-level fields (iOS) for com.acme.notes.
    func importingFields(_ fields: String) throws -> IntuneImport {
        let body = ##"{"@odata.type":"#microsoft.graph.iosManagedAppProtection","## + fields + "}"
        return try IntuneImporter.importPolicy(Array(body.utf8), appID: "com.acme.notes")
    }

    @Test func issue31InvalidTimerValuesAreSaidSoAndZeroNeverMeansNoLimit() throws {
        // A negative duration of a supported field is an invalid value, not an unsupported field.
        let negative = try importingFields(#""periodOfflineBeforeAccessCheck":"-PT1H""#)
        let line = try #require(negative.fields.first { $0.field == "periodOfflineBeforeAccessCheck" })
        #expect(line.status == .invalidValue)
        #expect(negative.report.contains("invalid value"))
        #expect(negative.document.policy.offline?.accessCheckSeconds == 43_200, "Intune's default")
        // PT0S (the strictest input) never becomes "no limit" (the loosest).
        let zero = try importingFields(#""periodOfflineBeforeAccessCheck":"PT0S","periodOfflineBeforeWipeIsEnforced":"P0D""#)
        #expect(zero.document.policy.offline?.accessCheckSeconds == 43_200)
        #expect(zero.document.policy.offline?.wipeSeconds == 7_776_000)
        #expect(zero.fields.allSatisfy { $0.status == .invalidValue || $0.field == "@odata.type" })
        #expect(zero.warnings.contains { $0.hasPrefix("periodOfflineBeforeAccessCheck: \"PT0S\" is zero") })
        #expect(!zero.report.contains("(no limit)"))
        // The report says what the document holds: a year of access check is cut to the 90-day wipe.
        let year = try importingFields(#""periodOfflineBeforeAccessCheck":"P1Y""#)
        #expect(year.document.policy.offline?.accessCheckSeconds == 7_776_000)
        let yearLine = try #require(year.fields.first { $0.field == "periodOfflineBeforeAccessCheck" })
        #expect(yearLine.detail.contains("offlineAccessCheckSeconds 7776000"))
        #expect(!yearLine.detail.contains("31536000"))
        // The clipboard exception out of range is an invalid value too.
        let exception = try importingFields(#""allowedOutboundClipboardSharingExceptionLength":-3"#)
        #expect(exception.fields.first { $0.field == "allowedOutboundClipboardSharingExceptionLength" }?.status == .invalidValue)
    }

    @Test func theGraphV1ExampleNeedsAnAppAndMapsItsTransferFields() throws {
        #expect(refusal(try fixture("graph-ios-v1-example.json")).contains("give the bundle id of the app"))
        let result = try importing("graph-ios-v1-example.json", app: "com.acme.notes")
        #expect(result.platform == .iOS)
        #expect(result.policyName == "Policy display name")
        let p = result.document.policy
        #expect(p.openIn == .allAppConnectApps)
        #expect(p.dragAndDrop == .appConnectApps)
        #expect(p.pasteboard == .secureCopy)
        #expect(p.print == .unauthorized)
        #expect(p.managedBrowserRequired == true)
        #expect(p.secureFileIO == .required)
        #expect(p.auth == .authorized)
        try expectEveryFieldReported(result, "graph-ios-v1-example.json")
        let status = Dictionary(result.fields.map { ($0.field, $0.status) }, uniquingKeysWith: { a, _ in a })
        #expect(status["allowedOutboundDataTransferDestinations"] == .mapped)
        #expect(status["allowedOutboundClipboardSharingLevel"] == .mapped)
        #expect(status["printBlocked"] == .mapped)
        #expect(status["saveAsBlocked"] == .notSupported)
        #expect(status["dataBackupBlocked"] == .notSupported)
        #expect(status["contactSyncBlocked"] == .notSupported)
        #expect(status["pinRequired"] == .notSupported)
        // The documented example's generated durations are negative: warned about, never fatal.
        #expect(result.warnings.contains { $0.hasPrefix("periodOfflineBeforeAccessCheck: \"-PT17.1357909S\" is a negative duration") })
        #expect(result.warnings.contains { $0.hasPrefix("periodOfflineBeforeWipeIsEnforced: \"-PT3M22.1587532S\"") })
        #expect(result.warnings.contains { $0.contains("managed or custom browser") } == false,
                "the browser is configured and required: no contradiction")
    }

    @Test func aTenantExportWithSeveralAppsNeedsAChoice() throws {
        let message = refusal(try fixture("graph-ios-tenant-export.json"))
        #expect(message.contains("the policy targets 3 apps (com.acme.notes, com.acme.viewer, com.microsoft.office.outlook)"))
        let result = try importing("graph-ios-tenant-export.json", app: "com.acme.viewer")
        #expect(result.document.app == "com.acme.viewer")
        #expect(result.document.policy.config == [ServerConfigKey.disableSchemeBlocking: "true"])
        #expect(result.document.description?.contains("iOS - Finance - Level 2 enterprise data protection") == true)
        try expectEveryFieldReported(result, "graph-ios-tenant-export.json")
        let exempted = try #require(result.fields.first { $0.field == "exemptedAppProtocols" })
        #expect(exempted.status == .approximated)
        #expect(exempted.detail.contains("mailto -> config MI_AC_DISABLE_SCHEME_BLOCKING"))
        #expect(exempted.detail.contains("not supported: tel, telprompt, skype"))
        #expect(result.warnings.contains("2 fields unknown to this importer, left out: messagingRedirectAppUrlScheme, "
                                         + "copilotAssistantConfiguration"))
        let offline = try #require(result.fields.first { $0.field == "periodOfflineBeforeAccessCheck" })
        #expect(offline.detail.hasPrefix("12 hours"))
        #expect(result.fields.first { $0.field == "pinRequiredInsteadOfBiometricTimeout" }?.detail.hasPrefix("12 hours") == true,
                "PT720M is 12 hours")
        #expect(result.fields.first { $0.field == "periodOfflineBeforeWipeIsEnforced" }?.detail.hasPrefix("90 days") == true)
        #expect(result.fields.first { $0.field == "periodBeforePinReset" }?.detail.hasPrefix("zero") == true)
        #expect(result.fields.first { $0.field == "maximumRequiredOsVersion" }?.status == .notSupported)
        #expect(result.fields.first { $0.field == "@odata.context" }?.detail == "Graph metadata")
        // An app the policy does not target is allowed, with a warning.
        let other = try importing("graph-ios-tenant-export.json", app: "com.example.other")
        #expect(other.warnings.contains { $0.hasPrefix("the Intune policy does not target com.example.other") })
    }

    @Test func androidNoneWithExemptedPackagesBecomesAWhitelist() throws {
        let result = try importing("graph-android-export.json")
        #expect(result.platform == .android)
        #expect(result.document.app == "com.acme.sales")
        let p = result.document.policy
        #expect(p.openIn == .whitelist(["com.google.android.apps.maps", "com.android.dialer"]))
        #expect(p.dragAndDrop == DragAndDropPolicy.noApps)
        #expect(p.pasteboard == .unauthorized)
        #expect(p.print == .authorized)
        #expect(p.secureFileIO == .required)
        #expect(result.warnings.isEmpty, "\(result.warnings)")
        try expectEveryFieldReported(result, "graph-android-export.json")
        #expect(result.fields.first { $0.field == "exemptedAppPackages" }?.status == .approximated)
        #expect(result.fields.first { $0.field == "allowedOutboundClipboardSharingExceptionLength" }?.status == .mapped)
    }

    @Test func oddDocumentsImportWithWarningsAndFailClosed() throws {
        let result = try importing("graph-ios-odd.json")
        #expect(result.document.app == "com.acme.notes", "the one valid bundle id among the apps")
        let p = result.document.policy
        #expect(p.openIn == .authorized)
        #expect(p.pasteboard == .unauthorized, "an unknown clipboard level falls back to the most restrictive")
        #expect(p.print == .unauthorized, "printBlocked \"yes\" is not a boolean: print stays blocked")
        #expect(p.secureFileIO == .required, "an unknown encryption type and a foreign encryptAppData leave it required")
        #expect(p.managedBrowserRequired == false)
        try expectEveryFieldReported(result, "graph-ios-odd.json")
        let w = result.warnings
        for expected in [
            "the body says iOS but has Android-only fields (encryptAppData, screenCaptureBlocked)",
            "apps[1] names no bundleId or packageId",
            #"apps[2]: "not a bundle id!" is not a bundle id"#,
            #"periodOnlineBeforeAccessCheck: "12 hours" is not an ISO 8601 duration"#,
            #"periodBeforePinReset: "-P1D" is a negative duration"#,
            "pinRequiredInsteadOfBiometricTimeout: expected an ISO 8601 duration",
            #"gracePeriodToBlockAppsDuringOffClockHours: "P" is not an ISO 8601 duration"#,
            #"allowedOutboundClipboardSharingLevel: unknown value "none""#,
            "allowedOutboundClipboardSharingExceptionLength: 70000 is outside 0...65535",
            #"printBlocked: expected true or false, got "yes""#,
            #"appDataEncryptionType: unknown value "whenDeviceUnlocked""#,
            "exemptedAppProtocols: expected a list of {name, value} pairs",
            "1 field unknown to this importer, left out: vendorExtension",
            "filterOpenInToOnlyManagedApps is true but allowedOutboundDataTransferDestinations is allApps",
            "disableProtectionOfManagedOutboundOpenInData is true",
            "protectInboundDataFromUnknownSources is true",
            "a managed or custom browser is configured but managedBrowserToOpenLinksRequired is not true",
            "periodOfflineBeforeWipeIsEnforced (12 hours) is not longer than periodOfflineBeforeAccessCheck (90 days)",
        ] {
            #expect(w.contains { $0.hasPrefix(expected) }, "missing warning: \(expected)")
        }
        #expect(result.fields.first { $0.field == "encryptAppData" }?.detail == "an Android-only field in an iOS body; ignored")
        #expect(result.unsourced.contains { $0.hasPrefix("pasteboard unauthorized: the most restrictive value") })
    }

    @Test func everyImportPassesTheStrictCheck() throws {
        for (name, app) in [("graph-ios-v1-example.json", "com.acme.notes"), ("graph-ios-tenant-export.json", "com.acme.notes"),
                            ("graph-android-export.json", nil), ("graph-ios-odd.json", nil)] {
            let result = try importing(name, app: app)
            let checked = try PolicyDocument.parse(result.document.jsonText)
            #expect(checked.document == .app(result.document))
            #expect(checked.warnings.isEmpty, "\(name): \(checked.warnings)")
            #expect(result.document.policy.unsetFields.isEmpty, "an import sets every field explicitly")
        }
    }

    @Test func refusesWhatIsNotAnAppProtectionBody() throws {
        #expect(refusal(Array("not json".utf8)).hasPrefix("the input is not valid JSON"))
        #expect(refusal(Array("[1]".utf8)).contains("got an array"))
        #expect(refusal(Array(##"{"@odata.type":"#microsoft.graph.windowsManagedAppProtection"}"##.utf8))
            .contains("this importer reads #microsoft.graph.iosManagedAppProtection"))
        #expect(refusal(Array(#"{"@odata.context":"x","value":[{},{}]}"#.utf8)).contains("a Graph collection of 2 policies"))
        #expect(refusal(Array(#"{"displayName":"just a name"}"#.utf8)).contains("not a Graph managed app protection body"))
        #expect(refusal(Array(#"{"@odata.type":7}"#.utf8)).contains("must be a string"))
        #expect(refusal(Array(#"{"printBlocked":true}"#.utf8), app: "not an id!").contains("is not a bundle id"))
    }

    @Test func withoutODataTypeThePlatformComesFromItsFields() throws {
        let body = #"{"printBlocked":false,"encryptAppData":false,"allowedOutboundDataTransferDestinations":"allApps"}"#
        let result = try IntuneImporter.importPolicy(Array(body.utf8), appID: "com.acme.notes")
        #expect(result.platform == .android)
        #expect(result.document.policy.secureFileIO == .optional)
        #expect(result.warnings.contains { $0.hasPrefix("no \"@odata.type\": read as androidManagedAppProtection") })
    }

    @Test func fieldOrderDoesNotChangeTheResult() throws {
        let a = ##"{"@odata.type":"#microsoft.graph.androidManagedAppProtection","allowedOutboundDataTransferDestinations":"none","exemptedAppPackages":[{"name":"x","value":"com.x"}]}"##
        let b = ##"{"exemptedAppPackages":[{"name":"x","value":"com.x"}],"allowedOutboundDataTransferDestinations":"none","@odata.type":"#microsoft.graph.androidManagedAppProtection"}"##
        let ra = try IntuneImporter.importPolicy(Array(a.utf8), appID: "com.acme.notes")
        let rb = try IntuneImporter.importPolicy(Array(b.utf8), appID: "com.acme.notes")
        #expect(ra.document == rb.document)
        #expect(ra.document.policy.openIn == .whitelist(["com.x"]))
    }

    /// Corrupting realistic bodies byte by byte never crashes the importer: it imports or refuses.
    @Test func mutatedBodiesNeverCrash() throws {
        var generator = SplitMix64(seed: 0x5EED)
        let alphabet = Array("{}[]\",:-0e\\".utf8)
        for name in ["graph-ios-tenant-export.json", "graph-android-export.json", "graph-ios-odd.json"] {
            let original = try fixture(name)
            for _ in 0..<150 {
                var bytes = original
                for _ in 0..<Int(generator.next() % 4 + 1) {
                    let at = Int(generator.next() % UInt64(bytes.count))
                    switch generator.next() % 3 {
                    case 0: bytes[at] = UInt8(truncatingIfNeeded: generator.next())
                    case 1: bytes.remove(at: at)
                    default: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: at)
                    }
                }
                _ = try? IntuneImporter.importPolicy(bytes, appID: "com.acme.notes")
            }
        }
    }
}

@Suite struct ISODurationTests {
    @Test(arguments: [
        ("PT12H", 43_200, false), ("P90D", 7_776_000, false), ("PT30M", 1_800, false), ("PT720M", 43_200, false),
        ("P0D", 0, false), ("PT0S", 0, false), ("-P1D", 86_400, true), ("-PT17.1357909S", 17.1357909, true),
        ("P1W", 604_800, false), ("P1Y2M3DT4H5M6S", 31_536_000 + 5_184_000 + 259_200 + 14_400 + 300 + 6, false),
        ("PT1,5H", 5_400, false), ("+PT1M", 60, false),
    ] as [(String, Double, Bool)])
    func readsGraphDurations(text: String, seconds: Double, negative: Bool) throws {
        let d = try ISODuration.parse(text).get()
        #expect(abs(d.seconds - seconds) < 1e-6)
        #expect(d.negative == negative)
    }

    @Test(arguments: ["", "P", "PT", "12 hours", "PT-5M", "P1H", "PT1D", "P1D1D", "PT5S5M", "P1DT", "PTT1H", "P1.2.3D",
                      "P99999999999999999999D", String(repeating: "P1D", count: 30)])
    func refusesGarbage(text: String) {
        #expect(throws: DurationError.self) { try ISODuration.parse(text).get() }
    }

    @Test func readsForPeople() throws {
        #expect(try ISODuration.parse("PT3M22.1587532S").get().humanReadable == "3 minutes 22.159 seconds")
        #expect(try ISODuration.parse("P90D").get().humanReadable == "90 days")
        #expect(try ISODuration.parse("-P1D").get().humanReadable == "minus 1 day")
    }
}

/// A small deterministic generator, so the mutation test is the same on every run.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
