// ValueEncoder.swift — Encodable Swift values to Tether values, directly (no JSON text).

/// Encodes any `Encodable` as a `Value`: structs and dictionaries with
/// string keys become objects (members in encoding order), arrays arrays,
/// integers ints (an unsigned one above Int64.max is an error), floating
/// point doubles, `nil` null, and `Value` and `Bytes` themselves. Nothing
/// goes through JSON text: a typed state's write builds its value in place.
public struct ValueEncoder {
    public var userInfo: [CodingUserInfoKey: Any] = [:]

    public init() {}

    public func encode<T: Encodable>(_ value: T) throws(TetherError) -> Value {
        if let direct = value as? Value { return direct }
        let root = EncodingNode()
        do {
            try value.encode(to: ValueEncoding(node: root, codingPath: [], userInfo: userInfo))
        } catch {
            throw TetherError(codingError: error)
        }
        // A type that encoded nothing at all (an empty struct) is an empty object.
        return root.kind == nil ? .object(ValueObject()) : root.value
    }
}

/// What one encoding container is building. A class: containers handed out
/// by `container(keyedBy:)` and friends keep writing into it after they
/// return, as Codable requires.
final class EncodingNode {
    enum Kind {
        case scalar(Value)
        case object(keys: [String], nodes: [String: EncodingNode])
        case array([EncodingNode])
    }
    var kind: Kind?

    var value: Value {
        switch kind {
        case nil: return .null
        case let .scalar(v)?: return v
        case let .object(keys, nodes)?:
            var members = MemberTable()
            for key in keys { members[MemberKey(key)] = nodes[key]!.value }
            return .object(ValueObject(members))
        case let .array(items)?:
            return .array(items.map(\.value))
        }
    }

    /// The member `key` of this object node (made an object if it was not).
    func member(_ key: String) -> EncodingNode {
        var keys: [String] = [], nodes: [String: EncodingNode] = [:]
        if case let .object(k, n)? = kind { keys = k; nodes = n }
        if let existing = nodes[key] { return existing }
        let node = EncodingNode()
        keys.append(key)
        nodes[key] = node
        kind = .object(keys: keys, nodes: nodes)
        return node
    }

    func makeObject() {
        if case .object? = kind { return }
        kind = .object(keys: [], nodes: [:])
    }

    func makeArray() {
        if case .array? = kind { return }
        kind = .array([])
    }

    func appendElement() -> EncodingNode {
        var items: [EncodingNode] = []
        if case let .array(existing)? = kind { items = existing }
        let node = EncodingNode()
        items.append(node)
        kind = .array(items)
        return node
    }

    var count: Int {
        if case let .array(items)? = kind { return items.count }
        if case let .object(keys, _)? = kind { return keys.count }
        return 0
    }
}

/// A key for unkeyed positions and `super` in coding paths.
struct IndexKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue; intValue = nil }
    init(intValue: Int) { stringValue = String(intValue); self.intValue = intValue }
    static let superKey = IndexKey(stringValue: "super")
}

struct ValueEncoding: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.makeObject()
        return KeyedEncodingContainer(KeyedEncoding<Key>(node: node, codingPath: codingPath, userInfo: userInfo))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.makeArray()
        return UnkeyedEncoding(node: node, codingPath: codingPath, userInfo: userInfo)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueEncoding(node: node, codingPath: codingPath, userInfo: userInfo)
    }
}

/// Scalars and nested values into one node: the piece every container shares.
enum Scalars {
    static func int<T: BinaryInteger>(_ v: T, _ path: [any CodingKey]) throws -> Value {
        guard let i = Int64(exactly: v) else {
            throw EncodingError.invalidValue(v, .init(codingPath: path, debugDescription: "\(v) does not fit a Tether int (int64)"))
        }
        return .int(i)
    }

    static func encode<T: Encodable>(_ value: T, into node: EncodingNode, _ path: [any CodingKey],
                                     _ userInfo: [CodingUserInfoKey: Any]) throws {
        if let direct = value as? Value {
            node.kind = .scalar(direct)
            return
        }
        try value.encode(to: ValueEncoding(node: node, codingPath: path, userInfo: userInfo))
        if node.kind == nil { node.kind = .object(keys: [], nodes: [:]) }  // encoded nothing: {}
    }
}

struct KeyedEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    private func set(_ v: Value, _ key: Key) { node.member(key.stringValue).kind = .scalar(v) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ v: Bool, forKey key: Key) throws { set(.bool(v), key) }
    mutating func encode(_ v: String, forKey key: Key) throws { set(.string(v), key) }
    mutating func encode(_ v: Double, forKey key: Key) throws { set(.double(v), key) }
    mutating func encode(_ v: Float, forKey key: Key) throws { set(.double(Double(v)), key) }
    mutating func encode(_ v: Int, forKey key: Key) throws { set(.int(Int64(v)), key) }
    mutating func encode(_ v: Int8, forKey key: Key) throws { set(.int(Int64(v)), key) }
    mutating func encode(_ v: Int16, forKey key: Key) throws { set(.int(Int64(v)), key) }
    mutating func encode(_ v: Int32, forKey key: Key) throws { set(.int(Int64(v)), key) }
    mutating func encode(_ v: Int64, forKey key: Key) throws { set(.int(v), key) }
    mutating func encode(_ v: UInt, forKey key: Key) throws { set(try Scalars.int(v, codingPath + [key]), key) }
    mutating func encode(_ v: UInt8, forKey key: Key) throws { set(.int(Int64(v)), key) }
    mutating func encode(_ v: UInt16, forKey key: Key) throws { set(.int(Int64(v)), key) }
    mutating func encode(_ v: UInt32, forKey key: Key) throws { set(.int(Int64(v)), key) }
    mutating func encode(_ v: UInt64, forKey key: Key) throws { set(try Scalars.int(v, codingPath + [key]), key) }
    mutating func encode<T: Encodable>(_ v: T, forKey key: Key) throws {
        try Scalars.encode(v, into: node.member(key.stringValue), codingPath + [key], userInfo)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = node.member(key.stringValue)
        child.makeObject()
        return KeyedEncodingContainer(KeyedEncoding<NestedKey>(node: child, codingPath: codingPath + [key], userInfo: userInfo))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.member(key.stringValue)
        child.makeArray()
        return UnkeyedEncoding(node: child, codingPath: codingPath + [key], userInfo: userInfo)
    }

    mutating func superEncoder() -> any Encoder {
        ValueEncoding(node: node.member("super"), codingPath: codingPath + [IndexKey.superKey], userInfo: userInfo)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        ValueEncoding(node: node.member(key.stringValue), codingPath: codingPath + [key], userInfo: userInfo)
    }
}

struct UnkeyedEncoding: UnkeyedEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]
    var count: Int { node.count }

    private func append(_ v: Value) { node.appendElement().kind = .scalar(v) }
    private var nextKey: IndexKey { IndexKey(intValue: count) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ v: Bool) throws { append(.bool(v)) }
    mutating func encode(_ v: String) throws { append(.string(v)) }
    mutating func encode(_ v: Double) throws { append(.double(v)) }
    mutating func encode(_ v: Float) throws { append(.double(Double(v))) }
    mutating func encode(_ v: Int) throws { append(.int(Int64(v))) }
    mutating func encode(_ v: Int8) throws { append(.int(Int64(v))) }
    mutating func encode(_ v: Int16) throws { append(.int(Int64(v))) }
    mutating func encode(_ v: Int32) throws { append(.int(Int64(v))) }
    mutating func encode(_ v: Int64) throws { append(.int(v)) }
    mutating func encode(_ v: UInt) throws { append(try Scalars.int(v, codingPath + [nextKey])) }
    mutating func encode(_ v: UInt8) throws { append(.int(Int64(v))) }
    mutating func encode(_ v: UInt16) throws { append(.int(Int64(v))) }
    mutating func encode(_ v: UInt32) throws { append(.int(Int64(v))) }
    mutating func encode(_ v: UInt64) throws { append(try Scalars.int(v, codingPath + [nextKey])) }
    mutating func encode<T: Encodable>(_ v: T) throws {
        let path = codingPath + [nextKey]
        try Scalars.encode(v, into: node.appendElement(), path, userInfo)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = codingPath + [nextKey]
        let child = node.appendElement()
        child.makeObject()
        return KeyedEncodingContainer(KeyedEncoding<NestedKey>(node: child, codingPath: path, userInfo: userInfo))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = codingPath + [nextKey]
        let child = node.appendElement()
        child.makeArray()
        return UnkeyedEncoding(node: child, codingPath: path, userInfo: userInfo)
    }

    mutating func superEncoder() -> any Encoder {
        let path = codingPath + [nextKey]
        return ValueEncoding(node: node.appendElement(), codingPath: path, userInfo: userInfo)
    }
}

struct SingleValueEncoding: SingleValueEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    private func set(_ v: Value) { node.kind = .scalar(v) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ v: Bool) throws { set(.bool(v)) }
    mutating func encode(_ v: String) throws { set(.string(v)) }
    mutating func encode(_ v: Double) throws { set(.double(v)) }
    mutating func encode(_ v: Float) throws { set(.double(Double(v))) }
    mutating func encode(_ v: Int) throws { set(.int(Int64(v))) }
    mutating func encode(_ v: Int8) throws { set(.int(Int64(v))) }
    mutating func encode(_ v: Int16) throws { set(.int(Int64(v))) }
    mutating func encode(_ v: Int32) throws { set(.int(Int64(v))) }
    mutating func encode(_ v: Int64) throws { set(.int(v)) }
    mutating func encode(_ v: UInt) throws { set(try Scalars.int(v, codingPath)) }
    mutating func encode(_ v: UInt8) throws { set(.int(Int64(v))) }
    mutating func encode(_ v: UInt16) throws { set(.int(Int64(v))) }
    mutating func encode(_ v: UInt32) throws { set(.int(Int64(v))) }
    mutating func encode(_ v: UInt64) throws { set(try Scalars.int(v, codingPath)) }
    mutating func encode<T: Encodable>(_ v: T) throws { try Scalars.encode(v, into: node, codingPath, userInfo) }
}

extension TetherError {
    /// A Codable error (or any other) as a TetherError whose message names
    /// the place as a JSON Pointer: "at /users/3/name: …".
    public init(codingError error: any Error) {
        if let known = error as? TetherError {
            self = known
            return
        }
        func place(_ path: [any CodingKey]) -> String {
            let pointer = JSONPointer(tokens: path.map(\.stringValue)).description
            return pointer.isEmpty ? "at the root" : "at \(pointer)"
        }
        switch error {
        case let EncodingError.invalidValue(_, context):
            self.init(.outOfRange, "\(place(context.codingPath)): \(context.debugDescription)")
        case let DecodingError.typeMismatch(_, context):
            self.init(.wrongType, "\(place(context.codingPath)): \(context.debugDescription)")
        case let DecodingError.valueNotFound(_, context):
            self.init(.wrongType, "\(place(context.codingPath)): \(context.debugDescription)")
        case let DecodingError.keyNotFound(key, context):
            self.init(.notFound, "\(place(context.codingPath)): no member \"\(key.stringValue)\"")
        case let DecodingError.dataCorrupted(context):
            self.init(.outOfRange, "\(place(context.codingPath)): \(context.debugDescription)")
        default:
            self.init(.invalidArgument, String(describing: error))
        }
    }
}
