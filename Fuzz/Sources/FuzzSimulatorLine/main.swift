// libFuzzer harness: the simulator's line parser and ops (`PolicySimulator.handle(line:number:)`).
// Built and run by scripts/fuzz.sh; a plain `swift build` makes it a do-nothing executable. Only
// declarations here: under libFuzzer, libFuzzer owns `main` and top-level code never runs.
//
// Each input is a fresh simulator, started with the fixed `start` line below; the input is then
// split into lines as `sharebroker simulate` splits standard input (on "\n", dropping a final
// "\r"; at most 64 lines) and each line is handled. Checked, per docs/SIMULATE.md:
// * a blank line gets no answer, every other line exactly one;
// * an answer is one line of JSON that reads back, with the right `line` number;
// * a rejected line leaves the simulated state exactly as it was (`state`, `pasteboardRaw` and
//   `serverLog` answer the same before and after it).
// Hand-overs go to a per-process folder under the temporary folder, emptied after every input.

import Foundation
import FuzzSupport
import Logging
import ShareBrokerSimulator

/// Formats every message (so the library's log statements run) and writes none.
struct DiscardingLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        _ = event.message.description
    }
}

enum SimulatorLineFuzz {
    static let startLine = #"{"op":"start","app":"com.acme.notes","#
        + #""manifest":{"MI_AC_DISABLE_SCHEME_BLOCKING":false,"TreatAllWebViewsAsUnmanaged":false},"#
        + #""implements":["configChanged","openInPolicyChanged","openInAttemptedWhenBlocked","#
        + #""openURLAttemptedWhenUnauthorized","pasteboardPolicyChanged","copyAttemptedWhenUnauthorized","#
        + #""secureServicesAvailabilityChanged"],"#
        + #""apps":[{"id":"com.acme.viewer","appConnect":true,"authorized":true},"#
        + #"{"id":"com.acme.sheets","appConnect":true,"authorized":false,"handles":["acmesheets"]},"#
        + #"{"id":"com.apple.mobilemail","handles":["mailto"]},"#
        + #"{"id":"org.example.sheets","handles":["sheets"]}]}"#
    static let maxLines = 64
    static let probes = [#"{"op":"state"}"#, #"{"op":"pasteboardRaw"}"#, #"{"op":"serverLog"}"#]

    static let outbox = NSTemporaryDirectory() + "sharebroker-fuzz-simulator-\(ProcessInfo.processInfo.processIdentifier)"

    static let quietLogging: Void = LoggingSystem.bootstrap { _ in DiscardingLogHandler() }

    /// The lines `sharebroker simulate` would read from `bytes`.
    static func lines(_ bytes: [UInt8]) -> [String] {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self)
        }
        if bytes.last == UInt8(ascii: "\n") { lines.removeLast() } // a final newline ends the last line
        return Array(lines.prefix(maxLines))
    }

    /// What the ops that only read say about the simulated state.
    static func probe(_ simulator: PolicySimulator) -> [String] {
        probes.map { simulator.handle(line: $0, number: 0)?.json.serialized() ?? "" }
    }

    static func run(_ bytes: [UInt8]) {
        _ = quietLogging
        defer { try? FileManager.default.removeItem(atPath: outbox) }
        let simulator = PolicySimulator(outboxDirectory: outbox)
        let started = simulator.handle(line: startLine, number: 0)
        fuzzRequire(started?.rejected == false, "the fixed start line was rejected: \(String(describing: started))")
        var before: [String]?
        for (index, line) in lines(bytes).enumerated() {
            let state = before ?? probe(simulator)
            let answer = simulator.handle(line: line, number: index + 1)
            before = nil
            guard let answer else {
                fuzzRequire(line.allSatisfy(\.isWhitespace), "no answer to a non-blank line")
                continue
            }
            fuzzRequire(!line.allSatisfy(\.isWhitespace), "an answer to a blank line")
            let text = answer.json.serialized()
            fuzzRequire(!text.utf8.contains(UInt8(ascii: "\n")) && !text.utf8.contains(UInt8(ascii: "\r")),
                        "an answer spans more than one line: \(text)")
            do {
                let parsed = try JSON.parse(text)
                fuzzRequire(parsed["line"] == .number(Double(index + 1)), "wrong line number in \(text)")
            } catch {
                fuzzRequire(false, "an answer is not JSON (\(error)): \(text)")
            }
            if answer.rejected {
                let after = probe(simulator)
                fuzzRequire(after == state, "a rejected line changed the state: \(line)\nbefore: \(state)\nafter: \(after)")
                before = after
            }
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSimulatorLine(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    SimulatorLineFuzz.run(FuzzInput(start, count).bytes)
    return 0
}
