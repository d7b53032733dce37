/// A strict RFC 8259 JSON parser over bytes, with every resource bounded.
///
/// Why not Foundation: on Linux, `JSONSerialization` and `JSONDecoder` do survive 100,000 levels
/// of nesting (they stop at 512), but both accept duplicate keys silently, and disagree on which
/// copy wins (`JSONSerialization` keeps the last, `JSONDecoder` the first). A policy that says
/// `"openIn":"unauthorized"` and then `"openIn":"authorized"` must be refused, not read two ways
/// by two tools. This parser also reports the JSON path and the line and column of every error,
/// and stops at the first limit of ``PolicyDocumentLimits`` exceeded, so memory stays bounded.
///
/// Accepted: exactly one JSON value, UTF-8 (a leading byte-order mark is skipped), whitespace per
/// RFC 8259. Refused with a clear message: UTF-16 or UTF-32 text, invalid UTF-8, unescaped control
/// characters, unpaired surrogate escapes, duplicate keys, trailing commas, comments, `NaN`,
/// leading zeros, data after the value, and anything over a limit.
enum StrictJSONParser {
    /// Parses `bytes` as one JSON document.
    static func parse(_ bytes: [UInt8], limits: PolicyDocumentLimits) throws(PolicyDocumentError) -> JSONValue {
        guard bytes.count <= limits.maxDocumentBytes else {
            throw PolicyDocumentError(.root, tooLarge(bytes.count, limits: limits))
        }
        let result: Result<JSONValue, PolicyDocumentError> = bytes.withUnsafeBufferPointer { buffer in
            var parser = Parser(bytes: buffer, limits: limits)
            do throws(PolicyDocumentError) {
                return .success(try parser.document())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The message for a document over ``PolicyDocumentLimits/maxDocumentBytes``.
    static func tooLarge(_ size: Int?, limits: PolicyDocumentLimits) -> String {
        let what = size.map { "the document is \($0) bytes" } ?? "the document is larger than the limit"
        return "\(what); the limit is \(limits.maxDocumentBytes) bytes (\(byteCount(limits.maxDocumentBytes))). "
            + "A policy document is a few kilobytes: check that this is the right file"
    }

    static func byteCount(_ n: Int) -> String {
        if n >= 1 << 20, n % (1 << 20) == 0 { return "\(n >> 20) MiB" }
        if n >= 1 << 10, n % (1 << 10) == 0 { return "\(n >> 10) KiB" }
        return "\(n) bytes"
    }
}

private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    let limits: PolicyDocumentLimits
    var index = 0
    var depth = 0
    var values = 0
    var path = JSONPath()

    init(bytes: UnsafeBufferPointer<UInt8>, limits: PolicyDocumentLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    // MARK: Errors

    /// An error at the current path, with the line and column of byte `offset` (default: here).
    func fail(_ message: String, at offset: Int? = nil, path: JSONPath? = nil) -> PolicyDocumentError {
        let (line, column) = location(of: offset ?? index)
        return PolicyDocumentError(path ?? self.path, "\(message) (line \(line), column \(column))")
    }

    /// Line and column (1-based; columns count characters, not bytes) of a byte offset.
    func location(of offset: Int) -> (Int, Int) {
        var line = 1
        var column = 1
        for j in 0..<min(offset, bytes.count) {
            let byte = bytes[j]
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }

    // MARK: Document

    mutating func document() throws(PolicyDocumentError) -> JSONValue {
        try sniffEncoding()
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        guard index < bytes.count else {
            throw PolicyDocumentError(.root, "the document is empty: expected a JSON object")
        }
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else {
            throw fail("unexpected data after the end of the JSON value; a document holds exactly one value", path: .root)
        }
        return value
    }

    /// Refuses UTF-16 and UTF-32 text up front with a message that says how to fix it, instead
    /// of a confusing syntax error at byte 0.
    func sniffEncoding() throws(PolicyDocumentError) {
        let n = bytes.count
        let utf16BOM = n >= 2 && ((bytes[0] == 0xFF && bytes[1] == 0xFE) || (bytes[0] == 0xFE && bytes[1] == 0xFF))
        let nulInFirstBytes = (0..<min(n, 4)).contains { bytes[$0] == 0 }
        if utf16BOM || nulInFirstBytes {
            throw PolicyDocumentError(.root, "the document is not UTF-8 (it looks like UTF-16 or UTF-32, as some Windows "
                                      + "tools write by default); save it as UTF-8")
        }
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    // MARK: Values

    mutating func parseValue() throws(PolicyDocumentError) -> JSONValue {
        values += 1
        guard values <= limits.maxValues else {
            throw fail("the document holds more than \(limits.maxValues) values; a policy document holds a few hundred")
        }
        guard index < bytes.count else { throw fail("unexpected end of the document: a value is missing") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString(isKey: false))
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw fail("unexpected \(describeByte(at: index)): expected a value (an object, array, string, number, "
                            + "true, false or null)")
        }
    }

    func describeByte(at offset: Int) -> String {
        let byte = bytes[offset]
        if byte == UInt8(ascii: "/") { return "'/' (JSON has no comments)" }
        if byte == UInt8(ascii: "'") { return "single quote (JSON strings use double quotes)" }
        if byte >= 0x21, byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x\(hex.count == 1 ? "0" : "")\(hex)"
    }

    mutating func literal(_ word: StaticString) throws(PolicyDocumentError) {
        let count = word.utf8CodeUnitCount
        let start = index
        let matches = index + count <= bytes.count && (0..<count).allSatisfy { bytes[start + $0] == word.utf8Start[$0] }
        guard matches else {
            throw fail("unexpected \(describeByte(at: index)): expected a value (did you mean \(word)? JSON literals are lower-case and unquoted)")
        }
        index += count
    }

    mutating func enter(_ open: Int) throws(PolicyDocumentError) {
        depth += 1
        guard depth <= limits.maxDepth else {
            throw fail("the document nests arrays and objects deeper than \(limits.maxDepth) levels; a policy document nests 5",
                       at: open)
        }
    }

    mutating func parseArray() throws(PolicyDocumentError) -> JSONValue {
        let open = index
        try enter(open)
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(items)
        }
        while true {
            guard items.count < limits.maxContainerCount else {
                throw fail("the array has more than \(limits.maxContainerCount) items", at: open)
            }
            path.push(.index(items.count))
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                throw fail("trailing comma before ']'")
            }
            items.append(try parseValue())
            path.pop()
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of the document: the array is not closed with ']'", at: open) }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                break
            } else {
                throw fail("unexpected \(describeByte(at: index)) in an array: expected ',' or ']'")
            }
        }
        depth -= 1
        return .array(items)
    }

    mutating func parseObject() throws(PolicyDocumentError) -> JSONValue {
        let open = index
        try enter(open)
        index += 1
        var members: [JSONMember] = []
        var seen: [String: Int] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of the document: the object is not closed with '}'", at: open) }
            guard bytes[index] == UInt8(ascii: "\"") else {
                if bytes[index] == UInt8(ascii: "}") { throw fail("trailing comma before '}'") }
                throw fail("unexpected \(describeByte(at: index)) in an object: expected a key in double quotes")
            }
            let keyOffset = index
            let key = try parseString(isKey: true)
            if let first = seen[key] {
                let (line, _) = location(of: first)
                throw fail("duplicate key \(JSONWriter.quoted(key)) (first at line \(line)): each key may appear once, "
                           + "because JSON readers disagree on which copy wins", at: keyOffset, path: path.key(key))
            }
            guard members.count < limits.maxContainerCount else {
                throw fail("the object has more than \(limits.maxContainerCount) members", at: open)
            }
            seen[key] = keyOffset
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw fail("expected ':' after the key \(JSONWriter.quoted(key))")
            }
            index += 1
            skipWhitespace()
            path.push(.key(key))
            let value = try parseValue()
            path.pop()
            members.append(JSONMember(key: key, value: value))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of the document: the object is not closed with '}'", at: open) }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                break
            } else {
                throw fail("unexpected \(describeByte(at: index)) in an object: expected ',' or '}'")
            }
        }
        depth -= 1
        return .object(members)
    }

    // MARK: Numbers

    mutating func parseNumber() throws(PolicyDocumentError) -> String {
        let start = index
        func digit(_ i: Int) -> Bool { i < bytes.count && bytes[i] >= 0x30 && bytes[i] <= 0x39 }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard digit(index) else { throw fail("a number needs digits after '-'") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if digit(index) { throw fail("numbers may not have leading zeros") }
        } else {
            while digit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digit(index) else { throw fail("a number needs digits after '.'") }
            while digit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digit(index) else { throw fail("a number needs digits in its exponent") }
            while digit(index) { index += 1 }
        }
        guard index - start <= 100 else { throw fail("the number is longer than 100 characters", at: start) }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    // MARK: Strings

    /// Parses a string at `index` (on its opening quote). Validates UTF-8 and escapes and keeps
    /// the unescaped length within ``PolicyDocumentLimits/maxStringBytes`` as it goes.
    mutating func parseString(isKey: Bool) throws(PolicyDocumentError) -> String {
        let open = index
        index += 1
        let start = index
        var unescaped: [UInt8]?
        let limit = limits.maxStringBytes
        while true {
            guard index < bytes.count else {
                throw fail("unexpected end of the document: the string is not closed with '\"'", at: open)
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") {
                if unescaped == nil { unescaped = Array(UnsafeBufferPointer(rebasing: bytes[start..<index])) }
                try parseEscape(into: &unescaped)
            } else if byte < 0x20 {
                throw fail("control character U+00\(byte < 0x10 ? "0" : "")\(String(byte, radix: 16, uppercase: true)) "
                           + "in a string must be escaped (\\n, \\t, \\u00XX)")
            } else if byte < 0x80 {
                unescaped?.append(byte)
                index += 1
            } else {
                let length = try utf8Sequence(at: index)
                unescaped?.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[index..<index + length]))
                index += length
            }
            if (unescaped?.count ?? (index - start)) > limit {
                throw fail("the \(isKey ? "key" : "string") is longer than \(limit) bytes (\(StrictJSONParser.byteCount(limit)))",
                           at: open)
            }
        }
        let text: String
        if let unescaped {
            text = String(decoding: unescaped, as: UTF8.self)
        } else {
            text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        }
        index += 1
        return text
    }

    mutating func parseEscape(into out: inout [UInt8]?) throws(PolicyDocumentError) {
        let escapeStart = index
        index += 1
        guard index < bytes.count else { throw fail("unexpected end of the document inside an escape", at: escapeStart) }
        let code = bytes[index]
        index += 1
        switch code {
        case UInt8(ascii: "\""): out?.append(0x22)
        case UInt8(ascii: "\\"): out?.append(0x5C)
        case UInt8(ascii: "/"): out?.append(0x2F)
        case UInt8(ascii: "b"): out?.append(0x08)
        case UInt8(ascii: "f"): out?.append(0x0C)
        case UInt8(ascii: "n"): out?.append(0x0A)
        case UInt8(ascii: "r"): out?.append(0x0D)
        case UInt8(ascii: "t"): out?.append(0x09)
        case UInt8(ascii: "u"):
            var value = try hex4(at: escapeStart)
            if (0xD800...0xDBFF).contains(value) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw fail("the escape \\u\(String(value, radix: 16, uppercase: true)) is an unpaired surrogate", at: escapeStart)
                }
                index += 2
                let low = try hex4(at: escapeStart)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw fail("the escape \\u\(String(value, radix: 16, uppercase: true)) is an unpaired surrogate", at: escapeStart)
                }
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(value) {
                throw fail("the escape \\u\(String(value, radix: 16, uppercase: true)) is an unpaired surrogate", at: escapeStart)
            }
            guard let scalar = Unicode.Scalar(value) else {
                throw fail("the escape is not a Unicode scalar", at: escapeStart)
            }
            out?.append(contentsOf: Array(String(Character(scalar)).utf8))
        default:
            throw fail("unknown escape '\\\(describeByte(at: index - 1))'; JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX",
                       at: escapeStart)
        }
    }

    mutating func hex4(at escapeStart: Int) throws(PolicyDocumentError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("a \\u escape needs four hex digits", at: escapeStart) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - 0x30
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - 0x61 + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - 0x41 + 10
            default: throw fail("a \\u escape needs four hex digits", at: escapeStart)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// The length of the well-formed UTF-8 sequence at `offset` (RFC 3629: no overlong forms, no
    /// surrogates, nothing above U+10FFFF), or an error naming the offending byte.
    func utf8Sequence(at offset: Int) throws(PolicyDocumentError) -> Int {
        let lead = bytes[offset]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: throw invalidUTF8(at: offset)
        }
        guard offset + length <= bytes.count else { throw invalidUTF8(at: offset) }
        guard secondRange.contains(bytes[offset + 1]) else { throw invalidUTF8(at: offset) }
        for k in 2..<length where !(0x80...0xBF).contains(bytes[offset + k]) {
            throw invalidUTF8(at: offset)
        }
        return length
    }

    func invalidUTF8(at offset: Int) -> PolicyDocumentError {
        fail("the text is not valid UTF-8 (\(describeByte(at: offset)) at byte offset \(offset)); save the file as UTF-8",
             at: offset)
    }
}
