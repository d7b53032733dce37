/// `Codable` values as JSON, without Foundation: the agent protocol's message bodies
/// (`ShareBrokerAgentProtocol.AgentMessage`), so that the C library, which speaks that protocol,
/// does not carry Foundation and its ICU data (docs/ARCHITECTURE.md).
///
/// Encoding writes one line with object keys sorted (deterministic bytes, as `JSONEncoder` with
/// `.sortedKeys`); `nil` optionals are left out, integers are written exactly, non-finite floating
/// point values are refused. Decoding reads through ``StrictJSONParser`` (duplicate keys, invalid
/// UTF-8 and anything over `limits` are refused before any value is built) and, like
/// `JSONDecoder`, ignores members the type does not know; a number decodes as an integer type only
/// when its literal is an exact integer that fits.
package enum JSONCoding {
    /// `value` as compact JSON text, keys sorted.
    /// - Throws: `EncodingError.invalidValue` for a non-finite `Double` or `Float`.
    package static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let root = EncodingNode()
        try value.encode(to: NodeEncoder(node: root, codingPath: []))
        return Array(JSONWriter.compact(root.json).utf8)
    }

    /// Decodes `bytes` as `T`.
    /// - Throws: ``PolicyDocumentError`` when the bytes are not JSON within `limits`;
    ///   `DecodingError` when the JSON does not have the shape of `T`.
    package static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], limits: PolicyDocumentLimits) throws -> T {
        let json = try StrictJSONParser.parse(bytes, limits: limits)
        return try T(from: ValueDecoder(value: json, codingPath: []))
    }
}

// MARK: Encoding

/// A value being encoded: containers are filled in place, so a nested container handed out
/// earlier still writes into its parent.
private final class EncodingNode {
    enum Storage {
        case empty
        case value(JSONValue)
        case object([String: EncodingNode])
        case array([EncodingNode])
    }

    var storage: Storage = .empty

    init() {}

    init(_ value: JSONValue) { storage = .value(value) }

    /// The finished value; members sorted by key. A value that encoded nothing is `{}`, as with
    /// `JSONEncoder`.
    var json: JSONValue {
        switch storage {
        case .empty: return .object([])
        case .value(let value): return value
        case .object(let members):
            return .object(members.sorted { $0.key < $1.key }.map { JSONMember(key: $0.key, value: $0.value.json) })
        case .array(let items): return .array(items.map(\.json))
        }
    }

    /// Makes this node an object (keeping the members it has) and stores `child` under `key`.
    func set(_ key: String, _ child: EncodingNode) {
        var members: [String: EncodingNode] = [:]
        if case .object(let existing) = storage { members = existing }
        members[key] = child
        storage = .object(members)
    }

    /// Makes this node an array (keeping its items) and appends `child`.
    func append(_ child: EncodingNode) {
        var items: [EncodingNode] = []
        if case .array(let existing) = storage { items = existing }
        items.append(child)
        storage = .array(items)
    }

    /// Makes this node an empty object unless it already is one.
    func becomeObject() {
        if case .object = storage { return }
        storage = .object([:])
    }

    /// Makes this node an empty array unless it already is one.
    func becomeArray() {
        if case .array = storage { return }
        storage = .array([])
    }

    var count: Int {
        if case .array(let items) = storage { return items.count }
        return 0
    }
}

/// The JSON text of a scalar the single-value container receives.
private enum Scalar {
    static func integer<T: BinaryInteger>(_ value: T) -> JSONValue { .number(String(value)) }

    static func floating<T: BinaryFloatingPoint & LosslessStringConvertible>(_ value: T, _ path: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(
                codingPath: path, debugDescription: "\(value) is not a JSON number: encode only finite values"))
        }
        return .number(String(value))
    }
}

private struct NodeEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.becomeObject()
        return KeyedEncodingContainer(KeyedNodeEncoder<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.becomeArray()
        return UnkeyedNodeEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleNodeEncoder(node: node, codingPath: codingPath)
    }
}

private struct SingleNodeEncoder: SingleValueEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.storage = .value(.null) }
    mutating func encode(_ value: Bool) throws { node.storage = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { node.storage = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { node.storage = .value(try Scalar.floating(value, codingPath)) }
    mutating func encode(_ value: Float) throws { node.storage = .value(try Scalar.floating(value, codingPath)) }
    mutating func encode(_ value: Int) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode(_ value: Int8) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode(_ value: Int16) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode(_ value: Int32) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode(_ value: Int64) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode(_ value: UInt) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode(_ value: UInt8) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode(_ value: UInt16) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode(_ value: UInt32) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode(_ value: UInt64) throws { node.storage = .value(Scalar.integer(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try value.encode(to: NodeEncoder(node: node, codingPath: codingPath))
    }
}

private struct KeyedNodeEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    /// Every value goes through its own `encode(to:)` into a child node; scalars end in
    /// ``SingleNodeEncoder``.
    private func put<T: Encodable>(_ value: T, _ key: Key) throws {
        let child = EncodingNode()
        try value.encode(to: NodeEncoder(node: child, codingPath: codingPath + [key]))
        node.set(key.stringValue, child)
    }

    mutating func encodeNil(forKey key: Key) throws { node.set(key.stringValue, EncodingNode(.null)) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: String, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try put(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try put(value, key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try put(value, key) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = EncodingNode()
        child.becomeObject()
        node.set(key.stringValue, child)
        return KeyedEncodingContainer(KeyedNodeEncoder<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = EncodingNode()
        child.becomeArray()
        node.set(key.stringValue, child)
        return UnkeyedNodeEncoder(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: "super") }

    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key.stringValue) }

    private func superEncoder(named name: String) -> any Encoder {
        let child = EncodingNode()
        node.set(name, child)
        return NodeEncoder(node: child, codingPath: codingPath + [IndexKey(name)])
    }
}

private struct UnkeyedNodeEncoder: UnkeyedEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var count: Int { node.count }

    private func put<T: Encodable>(_ value: T) throws {
        let child = EncodingNode()
        try value.encode(to: NodeEncoder(node: child, codingPath: codingPath + [IndexKey(count)]))
        node.append(child)
    }

    mutating func encodeNil() throws { node.append(EncodingNode(.null)) }
    mutating func encode(_ value: Bool) throws { try put(value) }
    mutating func encode(_ value: String) throws { try put(value) }
    mutating func encode(_ value: Double) throws { try put(value) }
    mutating func encode(_ value: Float) throws { try put(value) }
    mutating func encode(_ value: Int) throws { try put(value) }
    mutating func encode(_ value: Int8) throws { try put(value) }
    mutating func encode(_ value: Int16) throws { try put(value) }
    mutating func encode(_ value: Int32) throws { try put(value) }
    mutating func encode(_ value: Int64) throws { try put(value) }
    mutating func encode(_ value: UInt) throws { try put(value) }
    mutating func encode(_ value: UInt8) throws { try put(value) }
    mutating func encode(_ value: UInt16) throws { try put(value) }
    mutating func encode(_ value: UInt32) throws { try put(value) }
    mutating func encode(_ value: UInt64) throws { try put(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try put(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = EncodingNode()
        child.becomeObject()
        let path = codingPath + [IndexKey(count)]
        node.append(child)
        return KeyedEncodingContainer(KeyedNodeEncoder<NestedKey>(node: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = EncodingNode()
        child.becomeArray()
        let path = codingPath + [IndexKey(count)]
        node.append(child)
        return UnkeyedNodeEncoder(node: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let child = EncodingNode()
        let path = codingPath + [IndexKey(count)]
        node.append(child)
        return NodeEncoder(node: child, codingPath: path)
    }
}

/// A coding-path entry for an array index or a `super` member.
private struct IndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init(_ name: String) {
        stringValue = name
        intValue = nil
    }

    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(intValue) }
}

// MARK: Decoding

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw DecodingError.typeMismatch([String: JSONValue].self, DecodingError.Context(
                codingPath: codingPath, debugDescription: "expected an object, found \(value.kindName)"))
        }
        var byKey: [String: JSONValue] = [:]
        for member in members { byKey[member.key] = member.value }
        return KeyedDecodingContainer(KeyedValueDecoder<Key>(members: byKey, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else {
            throw DecodingError.typeMismatch([JSONValue].self, DecodingError.Context(
                codingPath: codingPath, debugDescription: "expected an array, found \(value.kindName)"))
        }
        return UnkeyedValueDecoder(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueDecoder(value: value, codingPath: codingPath)
    }
}

private struct SingleValueDecoder: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    private func mismatch<T>(_ type: T.Type, _ expected: String) -> DecodingError {
        DecodingError.typeMismatch(type, DecodingError.Context(
            codingPath: codingPath, debugDescription: "expected \(expected), found \(value.kindName)"))
    }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard case .number(let literal) = value else { throw mismatch(type, "an integer") }
        guard let integer = T(literal) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: codingPath, debugDescription: "\(literal) is not an integer that fits \(T.self)"))
        }
        return integer
    }

    private func floating<T: BinaryFloatingPoint & LosslessStringConvertible>(_ type: T.Type) throws -> T {
        guard case .number(let literal) = value, let number = T(literal), number.isFinite else {
            throw mismatch(type, "a finite number")
        }
        return number
    }

    func decodeNil() -> Bool { value == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let b) = value else { throw mismatch(type, "a boolean") }
        return b
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let s) = value else { throw mismatch(type, "a string") }
        return s
    }

    func decode(_ type: Double.Type) throws -> Double { try floating(type) }
    func decode(_ type: Float.Type) throws -> Float { try floating(type) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try T(from: ValueDecoder(value: value, codingPath: codingPath))
    }
}

private struct KeyedValueDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(
                codingPath: codingPath, debugDescription: "the member \"\(key.stringValue)\" is missing"))
        }
        return value
    }

    /// Every value goes through its own `init(from:)`; scalars end in ``SingleValueDecoder``.
    private func take<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        try T(from: ValueDecoder(value: member(key), codingPath: codingPath + [key]))
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try take(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try take(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try take(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try take(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try take(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try take(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try take(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try take(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try take(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try take(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try take(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try take(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try take(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try take(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try take(type, key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type,
                                               forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: member(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: members["super"] ?? .null, codingPath: codingPath + [IndexKey("super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedValueDecoder: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(items: [JSONValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next<T>(_ type: T.Type) throws -> (JSONValue, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, DecodingError.Context(
                codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "the array has no more items"))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], codingPath + [IndexKey(currentIndex)])
    }

    private mutating func take<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, path) = try next(type)
        return try T(from: ValueDecoder(value: value, codingPath: path))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try take(type) }
    mutating func decode(_ type: String.Type) throws -> String { try take(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try take(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try take(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try take(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try take(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try take(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try take(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try take(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try take(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try take(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try take(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try take(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try take(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try take(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (value, path) = try next([String: JSONValue].self)
        return try ValueDecoder(value: value, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (value, path) = try next([JSONValue].self)
        return try ValueDecoder(value: value, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (value, path) = try next(JSONValue.self)
        return ValueDecoder(value: value, codingPath: path)
    }
}
