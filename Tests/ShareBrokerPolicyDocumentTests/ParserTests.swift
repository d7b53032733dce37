import Foundation
@testable import ShareBrokerPolicyDocument
import Testing

/// The strict JSON layer, on well-formed and hostile input.
@Suite struct StrictParserTests {
    func parse(_ text: String, limits: PolicyDocumentLimits = .standard) throws(PolicyDocumentError) -> JSONValue {
        try StrictJSONParser.parse(Array(text.utf8), limits: limits)
    }

    func error(_ bytes: [UInt8], limits: PolicyDocumentLimits = .standard) -> PolicyDocumentIssue? {
        do {
            _ = try StrictJSONParser.parse(bytes, limits: limits)
            return nil
        } catch {
            return error.issues.first
        }
    }

    func error(_ text: String, limits: PolicyDocumentLimits = .standard) -> PolicyDocumentIssue? {
        error(Array(text.utf8), limits: limits)
    }

    @Test func readsEveryKindOfValueAndKeepsMemberOrder() throws {
        let value = try parse(#" {"b": [true, false, null], "a": -12.5e3, "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"} "#)
        guard case .object(let members) = value else {
            Issue.record("not an object")
            return
        }
        #expect(members.map(\.key) == ["b", "a", "s"])
        #expect(value["b"] == .array([.bool(true), .bool(false), .null]))
        #expect(value["a"] == .number("-12.5e3"))
        #expect(value["s"] == .string("x\"\\/\u{08}\u{0C}\n\r\té😀"))
    }

    @Test func skipsAUTF8ByteOrderMark() throws {
        #expect(try StrictJSONParser.parse([0xEF, 0xBB, 0xBF] + Array("{}".utf8), limits: .standard) == .object([]))
    }

    @Test func refusesDuplicateKeysNamingThePath() {
        let issue = error(#"{"policy": {"openIn": "authorized", "openIn": "unauthorized"}}"#)
        #expect(issue?.path == "$.policy.openIn")
        #expect(issue?.message.contains("duplicate key \"openIn\"") == true)
    }

    @Test(arguments: [
        (#"{"a":1,}"#, "trailing comma"),
        (#"[1,2,]"#, "trailing comma"),
        (#"{"a":1} // note"#, "unexpected data after"),
        (#"{"a": 01}"#, "leading zeros"),
        (#"{"a": NaN}"#, "expected a value"),
        (#"{"a": 'x'}"#, "single quote"),
        (#"{"a": True}"#, "expected a value"),
        (#"{"a": tru}"#, "did you mean true"),
        (#"{a: 1}"#, "expected a key in double quotes"),
        (#"{"a" 1}"#, "expected ':'"),
        (#"{"a": "\ud800"}"#, "unpaired surrogate"),
        (#"{"a": "\udc00x"}"#, "unpaired surrogate"),
        (#"{"a": "\x"}"#, "unknown escape"),
        (#"{"a": "\u12"}"#, "four hex digits"),
        ("{\"a\": \"tab\there\"}", "must be escaped"),
        (#"{"a": "open"#, "not closed"),
        (#"[1, 2"#, "not closed"),
        (#"{"a": -}"#, "digits after '-'"),
        (#"{"a": 1.}"#, "digits after '.'"),
        (#"{"a": 1e}"#, "exponent"),
        ("", "empty"),
        ("   \n ", "empty"),
        ("{} {}", "unexpected data after"),
    ])
    func refusesMalformedJSON(text: String, expected: String) {
        let issue = error(text)
        #expect(issue?.message.contains(expected) == true, "\(text): \(issue?.description ?? "accepted")")
    }

    @Test func syntaxErrorsCarryLineAndColumn() {
        let issue = error("{\n  \"policy\": {\n    \"print\": unauthorized\n  }\n}")
        #expect(issue?.path == "$.policy.print")
        #expect(issue?.message.contains("line 3, column 14") == true, "\(issue?.description ?? "")")
    }

    @Test func survives100000LevelsOfNestingWithAClearError() {
        let depth = 100_000
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let issue = error(text)
        #expect(issue?.message.contains("deeper than 64 levels") == true)
        #expect(issue.map { $0.path.count < 200 } == true, "the path of a deep error stays one short line")
        let objects = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
        #expect(error(objects)?.message.contains("deeper than 64 levels") == true)
    }

    @Test func capsArraysObjectsAndTheValueCount() {
        let big = "[" + Array(repeating: "1", count: 1_000_000).joined(separator: ",") + "]"
        #expect(error(big)?.message.contains("more than 10000 items") == true)
        let members = "{" + (0..<10_001).map { "\"k\($0)\":0" }.joined(separator: ",") + "}"
        #expect(error(members)?.message.contains("more than 10000 members") == true)
        let many = "[" + Array(repeating: "[1,1,1,1]", count: 50_000).joined(separator: ",") + "]"
        #expect(error(many, limits: PolicyDocumentLimits(maxContainerCount: 100_000))?.message
            .contains("more than 200000 values") == true)
    }

    @Test func refuses10MBStringsBeforeParsingAndLongStringsWhileParsing() {
        let tenMB = "{\"a\":\"" + String(repeating: "x", count: 10 * 1024 * 1024) + "\"}"
        let issue = error(tenMB)
        #expect(issue?.path == "$")
        #expect(issue?.message.contains("the limit is 4194304 bytes (4 MiB)") == true)
        // Under a generous document limit, the string limit still holds.
        let roomy = PolicyDocumentLimits(maxDocumentBytes: 16 * 1024 * 1024)
        let long = error(tenMB, limits: roomy)
        #expect(long?.path == "$.a")
        #expect(long?.message.contains("longer than 65536 bytes") == true)
        // The limit counts unescaped bytes: 40,000 escapes (80 KB of text) are 40 KB of string.
        let fine = "{\"k\":\"" + String(repeating: "\\n", count: 40_000) + "\"}"
        #expect(error(fine) == nil)
        let escaped = "{\"k\":\"" + String(repeating: "\\n", count: 70_000) + "\"}"
        #expect(error(escaped)?.message.contains("longer than 65536 bytes") == true)
        let key = "{\"" + String(repeating: "k", count: 70_000) + "\":1}"
        #expect(error(key)?.message.contains("the key is longer") == true)
    }

    @Test func refusesInvalidUTF8AndUTF16() {
        let cases: [[UInt8]] = [
            Array(#"{"a":""#.utf8) + [0xFF] + Array(#""}"#.utf8),           // not a UTF-8 byte at all
            Array(#"{"a":""#.utf8) + [0xC3] + Array(#""}"#.utf8),           // truncated sequence
            Array(#"{"a":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8),     // overlong '/'
            Array(#"{"a":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8), // an encoded surrogate
            Array(#"{"a":""#.utf8) + [0xF4, 0x90, 0x80, 0x80] + Array(#""}"#.utf8), // above U+10FFFF
        ]
        for bytes in cases {
            let issue = error(bytes)
            #expect(issue?.path == "$.a")
            #expect(issue?.message.contains("not valid UTF-8") == true, "\(bytes): \(issue?.description ?? "accepted")")
        }
        #expect(error([0xFF] + Array("{}".utf8))?.message.contains("unexpected byte 0xFF") == true)
        let utf16: [UInt8] = [0xFF, 0xFE] + Array("{}".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        #expect(error(utf16)?.message.contains("UTF-16") == true)
        let utf16NoBOM = Array("{}".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        #expect(error(utf16NoBOM)?.message.contains("UTF-16") == true)
    }

    @Test func pathsQuoteKeysThatAreNotPlainNames() {
        #expect(JSONPath.root.key("@odata.type").description == #"$["@odata.type"]"#)
        #expect(JSONPath.root.key("policy").key("openInWhitelist").index(3).description == "$.policy.openInWhitelist[3]")
        #expect(JSONPath.root.key("a b").description == #"$["a b"]"#)
    }

    @Test func writerOutputParsesBackToTheSameValue() throws {
        let value = JSONValue.object([
            JSONMember(key: "s", value: .string("quote \" backslash \\ newline \n control \u{01} é 😀")),
            JSONMember(key: "a", value: .array([.number("1"), .bool(false), .null, .object([])])),
        ])
        #expect(try parse(JSONWriter.compact(value)) == value)
        #expect(try parse(JSONWriter.pretty(value)) == value)
    }
}
