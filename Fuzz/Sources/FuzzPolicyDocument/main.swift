// libFuzzer harness: native policy documents (`PolicyDocument.parse`). Built and run by
// scripts/fuzz.sh; a plain `swift build` makes it a do-nothing executable. Only declarations
// here: under libFuzzer, libFuzzer owns `main` and top-level code never runs.
//
// The whole input is the document. Checked on every input:
// * parsing never crashes, and any error carries at least one issue;
// * a document accepted under tight limits is accepted under the standard ones, as the same
//   document (limits only ever refuse);
// * an accepted document's `jsonText` parses back to an equal document (the documented round
//   trip), and its summary renders.

import FuzzSupport
import ShareBrokerPolicyDocument

enum PolicyDocumentFuzz {
    /// Small enough that fuzz inputs reach every limit.
    static let tight = PolicyDocumentLimits(maxDocumentBytes: 2048, maxDepth: 6, maxStringBytes: 64,
                                            maxContainerCount: 12, maxValues: 200)

    static func parse(_ bytes: [UInt8], limits: PolicyDocumentLimits) -> ValidatedPolicyDocument? {
        do {
            return try PolicyDocument.parse(bytes, limits: limits)
        } catch {
            fuzzRequire(!error.issues.isEmpty, "a refusal without an issue")
            _ = error.description
            return nil
        }
    }

    static func run(_ bytes: [UInt8]) {
        let standard = parse(bytes, limits: .standard)
        let tight = parse(bytes, limits: tight)
        if let tight {
            fuzzRequire(standard?.document == tight.document,
                        "accepted under tight limits but not (or differently) under the standard ones")
        }
        guard let standard else { return }
        _ = PolicySummary.render(standard)
        let text = standard.document.jsonText
        guard let again = parse(Array(text.utf8), limits: .standard) else {
            fuzzRequire(false, "jsonText of an accepted document is refused:\n\(text)")
            return
        }
        fuzzRequire(again.document == standard.document, "jsonText does not parse back to the same document:\n\(text)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPolicyDocument(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    PolicyDocumentFuzz.run(FuzzInput(start, count).bytes)
    return 0
}
