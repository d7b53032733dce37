import Foundation
import Testing

/// The built `sharebroker` tool, when this build has one (`make test` builds it first): the one
/// next to the test bundle (so a build with another `--scratch-path`, such as the sanitizer runs
/// of `make sanitize`, tests its own binary), else `.build/debug/sharebroker`.
let sharebrokerBinary: URL? = {
    let here = Bundle.main.bundleURL
    let candidates = [here.deletingLastPathComponent().appendingPathComponent("sharebroker"),
                      here.appendingPathComponent("sharebroker"),
                      packageRoot.appendingPathComponent(".build/debug/sharebroker")]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
}()

/// Runs the tool; returns its exit status, standard output and standard error.
func sharebroker(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = sharebrokerBinary
    process.arguments = arguments
    process.currentDirectoryURL = packageRoot
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

@Suite(.enabled(if: sharebrokerBinary != nil, "needs .build/debug/sharebroker (swift build --product sharebroker)"))
struct CommandLineTests {
    @Test func checkPassesEveryExample() throws {
        for path in ExamplesAndSchemaTests.examples {
            let run = try sharebroker(["policy", "check", path])
            #expect(run.status == 0, "\(path): \(run.out)\(run.err)")
            #expect(run.out.contains("valid"))
        }
    }

    @Test func checkPrintsOneErrorPerLineAndExits65() throws {
        let file = NSTemporaryDirectory() + "sharebroker-cli-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(appDocument(#"{"openIn":"unauthorized","openInWhitelist":["a.b"],"print":"maybe"}"#).utf8)
            .write(to: URL(fileURLWithPath: file))
        let run = try sharebroker(["policy", "check", file])
        #expect(run.status == 65)
        let lines = run.out.split(separator: "\n")
        #expect(lines.first?.hasSuffix("invalid, 2 errors; nothing in it applies") == true)
        #expect(lines.dropFirst().map { $0.replacingOccurrences(of: file + ": ", with: "").prefix(24) }
            == ["$.policy.openInWhitelist", "$.policy.print: unknown "])
        #expect(try sharebroker(["policy", "check", "/nonexistent/policy.json"]).status == 74)
    }

    @Test func importWritesAPolicyThatChecks() throws {
        let output = NSTemporaryDirectory() + "sharebroker-import-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let run = try sharebroker(["policy", "import", "--from", "intune",
                                   "Tests/ShareBrokerPolicyDocumentTests/Fixtures/graph-ios-tenant-export.json",
                                   "--app", "com.acme.notes", "--output", output])
        #expect(run.status == 0, "\(run.err)")
        #expect(run.out.contains("Fields of the input (76)"))
        #expect(try sharebroker(["policy", "check", output]).status == 0)
        let refused = try sharebroker(["policy", "import", "--from", "intune",
                                       "Tests/ShareBrokerPolicyDocumentTests/Fixtures/graph-ios-tenant-export.json"])
        #expect(refused.status == 65)
        #expect(refused.err.contains("choose it with --app"))
    }

    @Test func explainPrintsTheDecisionAndItsRule() throws {
        let run = try sharebroker(["explain", "--policy", "examples/policies/whitelist.json", "--",
                                   #"{"op":"openIn","document":"Q3.pdf","content":"x","target":"org.example.sheets"}"#])
        #expect(run.status == 0)
        #expect(run.out.hasPrefix("dummy: blocked: target org.example.sheets is not in the whitelist of 3 apps; "
                                  + "the whitelist is matched exactly\n"))
        let rejected = try sharebroker(["explain", "--policy", "examples/policies/whitelist.json", "--action", #"{"op":"openIn"}"#])
        #expect(rejected.status == 65)
    }
}
