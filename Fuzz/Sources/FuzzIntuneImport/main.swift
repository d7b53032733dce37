// libFuzzer harness: Microsoft Graph app protection bodies (`IntuneImporter.importPolicy`).
// Built and run by scripts/fuzz.sh; a plain `swift build` makes it a do-nothing executable. Only
// declarations here: under libFuzzer, libFuzzer owns `main` and top-level code never runs.
//
// The whole input is the Graph body, imported twice: without an app id and with one. Checked:
// * importing never crashes, and never fails its own validation (the importer's message for a
//   native document it produced that the strict parser refuses: a bug in the importer);
// * an imported document's `jsonText` parses back to the same app document, and the report
//   renders.

import FuzzSupport
import ShareBrokerPolicyDocument

enum IntuneImportFuzz {
    static func importOnce(_ bytes: [UInt8], appID: String?) {
        let result: IntuneImport
        do {
            result = try IntuneImporter.importPolicy(bytes, appID: appID)
        } catch {
            fuzzRequire(!error.message.contains("failed its own validation"), error.message)
            return
        }
        if let appID { fuzzRequire(result.document.app == appID, "imported for \(result.document.app), not \(appID)") }
        _ = result.report
        let text = result.document.jsonText
        do {
            let again = try PolicyDocument.parse(text)
            fuzzRequire(again.document == .app(result.document), "jsonText does not parse back to the import:\n\(text)")
        } catch {
            fuzzRequire(false, "the imported document is refused: \(error)\n\(text)")
        }
    }

    static func run(_ bytes: [UInt8]) {
        importOnce(bytes, appID: nil)
        importOnce(bytes, appID: "com.acme.notes")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIntuneImport(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    IntuneImportFuzz.run(FuzzInput(start, count).bytes)
    return 0
}
