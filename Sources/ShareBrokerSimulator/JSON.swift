import Foundation

/// A JSON value as the simulator reads and writes it. Objects written keep their member order,
/// so every result line starts with `line` and `op`.
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.number(a), .number(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(serialized())
    }

    /// The member `key` of an object (the last one when repeated), or `nil`.
    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.0 == key })?.1
    }

    /// Parses one JSON text. Throws a message fit for an error line.
    public static func parse(_ text: String) throws(SimulatorError) -> JSON {
        do {
            return try JSONDecoder().decode(JSON.self, from: Data(text.utf8))
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw SimulatorError("the line is not valid JSON")
        }
    }

    /// The compact one-line text of this value.
    public func serialized() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n):
            if n.rounded() == n, abs(n) < 1e15 { out += String(Int64(n)) } else { out += String(n) }
        case .string(let s): JSON.writeString(s, to: &out)
        case .array(let a):
            out += "["
            for (i, e) in a.enumerated() {
                if i > 0 { out += "," }
                e.write(to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, (k, v)) in o.enumerated() {
                if i > 0 { out += "," }
                JSON.writeString(k, to: &out)
                out += ":"
                v.write(to: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                        + String(scalar.value, radix: 16)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

extension JSON: Decodable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        guard decoder.codingPath.count < 64 else { throw SimulatorError("the line nests JSON deeper than 64 levels") }
        if let container = try? decoder.container(keyedBy: Key.self) {
            var members: [(String, JSON)] = []
            for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                members.append((key.stringValue, try container.decode(JSON.self, forKey: key)))
            }
            self = .object(members)
        } else if var container = try? decoder.unkeyedContainer() {
            var items: [JSON] = []
            while !container.isAtEnd { items.append(try container.decode(JSON.self)) }
            self = .array(items)
        } else {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let b = try? container.decode(Bool.self) {
                self = .bool(b)
            } else if let n = try? container.decode(Double.self) {
                self = .number(n)
            } else {
                self = .string(try container.decode(String.self))
            }
        }
    }
}

/// One clear sentence naming the field or rule a simulator line broke.
public struct SimulatorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The sentence.
    public let message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Typed access to the members of one input object, with errors that name the field.
struct Fields {
    let object: JSON

    init(_ object: JSON) throws(SimulatorError) {
        guard case .object = object else { throw SimulatorError("each line must be a JSON object") }
        self.object = object
    }

    func has(_ key: String) -> Bool { object[key] != nil }

    func string(_ key: String) throws(SimulatorError) -> String? {
        guard let value = object[key] else { return nil }
        guard case .string(let s) = value else { throw SimulatorError("field '\(key)' must be a string") }
        return s
    }

    /// A string, or `nil` when the field is absent or `null` (fields where "none" is a value).
    func optionalString(_ key: String) throws(SimulatorError) -> String? {
        if object[key] == .null { return nil }
        return try string(key)
    }

    /// An app id: a string that is not empty.
    func appID(_ key: String) throws(SimulatorError) -> String? {
        guard let id = try string(key) else { return nil }
        guard !id.isEmpty else { throw SimulatorError("field '\(key)' must be an app id, not empty") }
        return id
    }

    func requiredString(_ key: String) throws(SimulatorError) -> String {
        guard let s = try string(key) else { throw SimulatorError("missing required field '\(key)'") }
        return s
    }

    func bool(_ key: String) throws(SimulatorError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard case .bool(let b) = value else { throw SimulatorError("field '\(key)' must be true or false") }
        return b
    }

    /// A whole number in `range`.
    func integer(_ key: String, in range: ClosedRange<Int>) throws(SimulatorError) -> Int? {
        guard let value = object[key] else { return nil }
        guard case .number(let d) = value, d.rounded() == d, d >= Double(range.lowerBound), d <= Double(range.upperBound) else {
            throw SimulatorError("field '\(key)' must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(d)
    }

    func strings(_ key: String) throws(SimulatorError) -> [String]? {
        guard let value = object[key] else { return nil }
        guard case .array(let items) = value else { throw SimulatorError("field '\(key)' must be an array of strings") }
        var out: [String] = []
        for item in items {
            guard case .string(let s) = item else { throw SimulatorError("field '\(key)' must be an array of strings") }
            out.append(s)
        }
        return out
    }

    func object(_ key: String) throws(SimulatorError) -> Fields? {
        guard let value = object[key] else { return nil }
        guard case .object = value else { throw SimulatorError("field '\(key)' must be an object") }
        return try Fields(value)
    }

    func stringMap(_ key: String) throws(SimulatorError) -> [String: String]? {
        guard let value = object[key] else { return nil }
        guard case .object(let members) = value else { throw SimulatorError("field '\(key)' must be an object of strings") }
        var out: [String: String] = [:]
        for (k, v) in members {
            guard case .string(let s) = v else {
                throw SimulatorError("field '\(key).\(k)' must be a string (config values are strings)")
            }
            out[k] = s
        }
        return out
    }

    /// A string field whose value must be one of `allowed` (a table of names to values).
    func choice<T>(_ key: String, _ allowed: [(String, T)]) throws(SimulatorError) -> T? {
        guard let s = try string(key) else { return nil }
        if let hit = allowed.first(where: { $0.0 == s }) { return hit.1 }
        throw SimulatorError("field '\(key)' must be one of \(allowed.map(\.0).joined(separator: ", ")); got '\(s)'")
    }

    /// ``choice(_:_:)-([(String,T)])`` with the values written as a literal.
    func choice<T>(_ key: String, _ allowed: KeyValuePairs<String, T>) throws(SimulatorError) -> T? {
        try choice(key, allowed.map { ($0.key, $0.value) })
    }
}
