/// An ISO 8601 duration as Graph writes them (`PT12H`, `P90D`, `PT720M`, `-PT17.1357909S`,
/// `P0D`), read leniently enough for real exports and strictly enough to tell garbage apart.
///
/// Grammar: an optional sign, `P`, then any of `nY nM nW nD` in that order, then optionally `T`
/// and any of `nH nM nS` in that order, at least one component in all; numbers may have a
/// fraction (`.` or `,`). Years count 365 days and months 30, so conversions are approximate.
struct ISODuration: Sendable, Hashable {
    /// The text as given.
    let text: String
    /// Whether it had a leading `-`.
    let negative: Bool
    /// The magnitude in seconds (years and months approximated).
    let seconds: Double

    /// Reads `text`, or says why it is not a duration.
    static func parse(_ text: String) -> Result<ISODuration, DurationError> {
        var chars = Array(text.utf8)
        guard chars.count <= 64 else { return .failure(DurationError("longer than 64 characters")) }
        var negative = false
        if let first = chars.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            chars.removeFirst()
        }
        guard chars.first == UInt8(ascii: "P") else {
            return .failure(DurationError("it must start with 'P', as in PT12H or P90D"))
        }
        var i = 1
        var inTime = false
        var seconds = 0.0
        var components = 0
        let dateUnits: [UInt8: Double] = [UInt8(ascii: "Y"): 365 * 86_400, UInt8(ascii: "M"): 30 * 86_400,
                                          UInt8(ascii: "W"): 7 * 86_400, UInt8(ascii: "D"): 86_400]
        let timeUnits: [UInt8: Double] = [UInt8(ascii: "H"): 3_600, UInt8(ascii: "M"): 60, UInt8(ascii: "S"): 1]
        let dateOrder: [UInt8] = Array("YMWD".utf8)
        let timeOrder: [UInt8] = Array("HMS".utf8)
        var lastRank = -1
        while i < chars.count {
            if chars[i] == UInt8(ascii: "T") {
                guard !inTime else { return .failure(DurationError("'T' appears twice")) }
                inTime = true
                lastRank = -1
                i += 1
                guard i < chars.count else { return .failure(DurationError("'T' must be followed by hours, minutes or seconds")) }
                continue
            }
            let start = i
            while i < chars.count, (chars[i] >= 0x30 && chars[i] <= 0x39) || chars[i] == UInt8(ascii: ".")
                    || chars[i] == UInt8(ascii: ",") {
                i += 1
            }
            guard i > start, i < chars.count else {
                return .failure(DurationError("expected a number followed by a unit (Y, M, W, D, or after T: H, M, S)"))
            }
            let digits = String(decoding: chars[start..<i], as: UTF8.self).replacingAll(",", with: ".")
            guard digits.count <= 20, let number = Double(digits) else {
                return .failure(DurationError("\(digits) is not a number"))
            }
            let unit = chars[i]
            let order = inTime ? timeOrder : dateOrder
            guard let rank = order.firstIndex(of: unit), let scale = (inTime ? timeUnits : dateUnits)[unit] else {
                let allowed = inTime ? "H, M or S" : "Y, M, W or D (put hours, minutes and seconds after 'T')"
                return .failure(DurationError("unexpected unit '\(Character(Unicode.Scalar(unit)))'; expected \(allowed)"))
            }
            guard rank > lastRank else { return .failure(DurationError("units are out of order or repeated")) }
            lastRank = rank
            seconds += number * scale
            components += 1
            i += 1
        }
        guard components > 0 else { return .failure(DurationError("no components after 'P'")) }
        guard seconds.isFinite, seconds < 1e12 else { return .failure(DurationError("far too long")) }
        return .success(ISODuration(text: text, negative: negative, seconds: seconds))
    }

    /// The magnitude for people: "12 hours", "90 days", "3 minutes 22 seconds".
    var humanReadable: String {
        if seconds == 0 { return "zero" }
        var rest = seconds
        var parts: [String] = []
        for (unit, size) in [("day", 86_400.0), ("hour", 3_600.0), ("minute", 60.0)] where rest >= size {
            let n = (rest / size).rounded(.down)
            parts.append("\(Int(n)) \(unit)\(n == 1 ? "" : "s")")
            rest -= n * size
        }
        if rest > 0.0005 {
            let rounded = (rest * 1000).rounded() / 1000
            let text = rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
            parts.append("\(text) second\(rounded == 1 ? "" : "s")")
        }
        return (negative ? "minus " : "") + parts.prefix(3).joined(separator: " ")
    }
}

/// Why a text is not an ISO 8601 duration.
struct DurationError: Error, Sendable, Hashable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
