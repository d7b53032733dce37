/// Writes ``JSONValue``s: compact (one line, for simulator lines) or pretty (two-space indent,
/// for files people read and diff). Member order is kept as given, so output is deterministic.
package enum JSONWriter {
    /// One line, no spaces.
    static func compact(_ value: JSONValue) -> String {
        var out = ""
        write(value, to: &out, indent: nil, level: 0)
        return out
    }

    /// Two-space indentation, one member or item per line, a final newline. Arrays of scalars
    /// stay on one line when short.
    static func pretty(_ value: JSONValue) -> String {
        var out = ""
        write(value, to: &out, indent: "  ", level: 0)
        return out + "\n"
    }

    private static func write(_ value: JSONValue, to out: inout String, indent: String?, level: Int) {
        switch value {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += n
        case .string(let s): out += quoted(s)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            guard let indent else {
                out += "["
                for (i, item) in items.enumerated() {
                    if i > 0 { out += "," }
                    write(item, to: &out, indent: nil, level: 0)
                }
                out += "]"
                return
            }
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += String(repeating: indent, count: level + 1)
                write(item, to: &out, indent: indent, level: level + 1)
                out += i == items.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: indent, count: level) + "]"
        case .object(let members):
            if members.isEmpty { out += "{}"; return }
            guard let indent else {
                out += "{"
                for (i, member) in members.enumerated() {
                    if i > 0 { out += "," }
                    out += quoted(member.key) + ":"
                    write(member.value, to: &out, indent: nil, level: 0)
                }
                out += "}"
                return
            }
            out += "{\n"
            for (i, member) in members.enumerated() {
                out += String(repeating: indent, count: level + 1) + quoted(member.key) + ": "
                write(member.value, to: &out, indent: indent, level: level + 1)
                out += i == members.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: indent, count: level) + "}"
        }
    }

    /// `s` as a JSON string literal: quotes, backslashes and control characters escaped.
    package static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
