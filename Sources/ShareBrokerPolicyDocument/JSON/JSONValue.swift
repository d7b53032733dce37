/// A JSON value as the strict parser produces it. Objects keep their members in document order
/// (the parser has already refused duplicate keys); numbers keep their literal text so that no
/// precision is lost before a validator decides what a number must be.
///
/// Not `indirect`: the arrays inside `.array` and `.object` already box their elements, and a
/// flat enum keeps a scalar at 17 bytes with no heap allocation.
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// The member `key` of an object, or `nil` (also when this is not an object).
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first(where: { $0.key == key })?.value
    }

    /// What this value is, for messages: "a string", "an object", ...
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The value as an exact integer, when its literal is one (no fraction, no exponent) and fits.
    var integer: Int? {
        guard case .number(let literal) = self else { return nil }
        return Int(literal)
    }

    /// A short rendering of the value for messages: strings quoted and cut to `limit` characters.
    func preview(limit: Int = 60) -> String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n): return n.count > limit ? String(n.prefix(limit)) + "…" : n
        case .string(let s):
            let cut = s.count > limit ? String(s.prefix(limit)) + "…" : s
            return JSONWriter.quoted(cut)
        case .array(let items): return "an array of \(items.count) item\(items.count == 1 ? "" : "s")"
        case .object(let members): return "an object of \(members.count) member\(members.count == 1 ? "" : "s")"
        }
    }
}

/// One member of a JSON object.
struct JSONMember: Sendable, Equatable {
    var key: String
    var value: JSONValue
}

/// A location inside a JSON document, rendered in the JSONPath style of error messages:
/// `$.policy.openInWhitelist[3]`, `$["@odata.type"]`.
struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    private(set) var components: [Component] = []

    /// The document root, `$`.
    static let root = JSONPath()

    /// This path extended by an object key.
    func key(_ key: String) -> JSONPath {
        var copy = self
        copy.components.append(.key(key))
        return copy
    }

    /// This path extended by an array index.
    func index(_ index: Int) -> JSONPath {
        var copy = self
        copy.components.append(.index(index))
        return copy
    }

    mutating func push(_ component: Component) { components.append(component) }
    mutating func pop() { components.removeLast() }

    /// `$` followed by each component; a long path (hostile nesting) keeps its first and last
    /// eight components around a count of the ones left out, so a message stays one line.
    var description: String {
        var out = "$"
        if components.count <= 20 {
            for component in components { Self.append(component, to: &out) }
        } else {
            for component in components.prefix(8) { Self.append(component, to: &out) }
            out += "…(\(components.count - 16) more levels)…"
            for component in components.suffix(8) { Self.append(component, to: &out) }
        }
        return out
    }

    private static func append(_ component: Component, to out: inout String) {
        switch component {
        case .index(let i):
            out += "[\(i)]"
        case .key(let key):
            if isPlainName(key) {
                out += "." + key
            } else {
                let cut = key.count > 64 ? String(key.prefix(64)) + "…" : key
                out += "[" + JSONWriter.quoted(cut) + "]"
            }
        }
    }

    /// Whether a key can be written `.key`: an ASCII letter or `_`, then letters, digits or `_`,
    /// at most 64 characters.
    private static func isPlainName(_ key: String) -> Bool {
        let bytes = key.utf8
        guard let first = bytes.first, bytes.count <= 64, isLetter(first) || first == UInt8(ascii: "_") else {
            return false
        }
        return bytes.allSatisfy { isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "$") }
    }

    private static func isLetter(_ b: UInt8) -> Bool { (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) }
}
