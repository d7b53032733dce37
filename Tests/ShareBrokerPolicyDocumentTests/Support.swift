import Foundation
import ShareBroker
@testable import ShareBrokerPolicyDocument
import ShareBrokerSimulator
import Testing

/// The package root, found from this file's path.
let packageRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The bytes of a file under the package root.
func packageFile(_ relative: String) throws -> [UInt8] {
    Array(try Data(contentsOf: packageRoot.appendingPathComponent(relative)))
}

/// The bytes of a test fixture.
func fixture(_ name: String) throws -> [UInt8] {
    try packageFile("Tests/ShareBrokerPolicyDocumentTests/Fixtures/\(name)")
}

/// The issues a document is refused with; a failed expectation when it is accepted.
func refusal(_ text: String, limits: PolicyDocumentLimits = .standard,
             sourceLocation: SourceLocation = #_sourceLocation) -> [PolicyDocumentIssue] {
    refusal(Array(text.utf8), limits: limits, sourceLocation: sourceLocation)
}

func refusal(_ bytes: [UInt8], limits: PolicyDocumentLimits = .standard,
             sourceLocation: SourceLocation = #_sourceLocation) -> [PolicyDocumentIssue] {
    do {
        let checked = try PolicyDocument.parse(bytes, limits: limits)
        Issue.record("expected the document to be refused; it was accepted as \(checked.document)",
                     sourceLocation: sourceLocation)
        return []
    } catch {
        return error.issues
    }
}

/// An app policy document around a policy body written as JSON.
func appDocument(_ policy: String, app: String = "com.acme.notes") -> String {
    #"{"format":"sharebroker.policy","version":1,"app":"\#(app)","policy":\#(policy)}"#
}

/// Runs one explanation through the real policy simulator.
func explain(_ document: PolicyDocument, app: String? = nil, device: DeviceRegistry? = nil,
             action: String) throws(PolicyExplainError) -> PolicyExplanation {
    let outbox = NSTemporaryDirectory() + "sharebroker-explain-test-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: outbox) }
    let simulator = PolicySimulator(outboxDirectory: outbox)
    return try PolicyExplainer.explain(document, app: app, device: device, action: action) {
        simulator.handle(line: $0, number: $1)?.json.serialized()
    }
}
