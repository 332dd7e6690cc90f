// ValueDecoder.swift — Tether values to Decodable Swift values, directly (no JSON text).

/// Decodes a `Value` as any `Decodable`: the inverse of `ValueEncoder`.
/// Integers are range-checked ("300 does not fit UInt8"), a double decodes
/// as an integer only when it is whole, an int decodes as a double; a
/// missing member or a type mismatch is a `TetherError` naming the place as
/// a JSON Pointer (`.notFound`, `.wrongType`).
public struct ValueDecoder {
    public var userInfo: [CodingUserInfoKey: Any] = [:]

    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: Value) throws(TetherError) -> T {
        if T.self == Value.self { return value as! T }
        do {
            return try T(from: ValueDecoding(value: value, codingPath: [], userInfo: userInfo))
        } catch {
            throw TetherError(codingError: error)
        }
    }
}

struct ValueDecoding: Decoder {
    let value: Value
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case let .object(object) = value else {
            throw Checks.mismatch([String: Value].self, value, codingPath, wanted: "an object")
        }
        return KeyedDecodingContainer(KeyedDecoding<Key>(object: object, codingPath: codingPath, userInfo: userInfo))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case let .array(items) = value else {
            throw Checks.mismatch([Value].self, value, codingPath, wanted: "an array")
        }
        return UnkeyedDecoding(items: items, codingPath: codingPath, userInfo: userInfo)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueDecoding(value: value, codingPath: codingPath, userInfo: userInfo)
    }
}

/// The conversions every container shares.
enum Checks {
    static func mismatch(_ type: Any.Type, _ value: Value, _ path: [any CodingKey], wanted: String) -> DecodingError {
        let article = [.int, .array, .object].contains(value.type) ? "an" : "a"
        return DecodingError.typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(wanted), found \(article) \(value.type)"))
    }

    static func bool(_ v: Value, _ path: [any CodingKey]) throws -> Bool {
        if case let .bool(b) = v { return b }
        throw mismatch(Bool.self, v, path, wanted: "a bool")
    }

    static func string(_ v: Value, _ path: [any CodingKey]) throws -> String {
        if case let .string(s) = v { return s }
        throw mismatch(String.self, v, path, wanted: "a string")
    }

    static func double(_ v: Value, _ path: [any CodingKey]) throws -> Double {
        switch v {
        case let .double(d): return d
        case let .int(i): return Double(i)
        default: throw mismatch(Double.self, v, path, wanted: "a number")
        }
    }

    static func integer<T: FixedWidthInteger>(_ type: T.Type, _ v: Value, _ path: [any CodingKey]) throws -> T {
        switch v {
        case let .int(i):
            if let fits = T(exactly: i) { return fits }
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "value \(i) does not fit \(T.self)"))
        case let .double(d):
            if let fits = T(exactly: d) { return fits }
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "value \(d) is not a whole number that fits \(T.self)"))
        default:
            throw mismatch(T.self, v, path, wanted: "an integer")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ v: Value, _ path: [any CodingKey],
                                     _ userInfo: [CodingUserInfoKey: Any]) throws -> T {
        if T.self == Value.self { return v as! T }
        return try T(from: ValueDecoding(value: v, codingPath: path, userInfo: userInfo))
    }
}

struct KeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: ValueObject
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    var allKeys: [Key] { object.members.compactMap { Key(stringValue: $0.key.string) } }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func member(_ key: Key) throws -> Value {
        guard let v = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no member \"\(key.stringValue)\""))
        }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try member(key) { return true }
        return false
    }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Checks.bool(member(key), codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try Checks.string(member(key), codingPath + [key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try Checks.double(member(key), codingPath + [key]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try Checks.double(member(key), codingPath + [key])) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Checks.integer(Int.self, member(key), codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try Checks.integer(Int8.self, member(key), codingPath + [key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try Checks.integer(Int16.self, member(key), codingPath + [key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try Checks.integer(Int32.self, member(key), codingPath + [key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try Checks.integer(Int64.self, member(key), codingPath + [key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try Checks.integer(UInt.self, member(key), codingPath + [key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try Checks.integer(UInt8.self, member(key), codingPath + [key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try Checks.integer(UInt16.self, member(key), codingPath + [key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try Checks.integer(UInt32.self, member(key), codingPath + [key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try Checks.integer(UInt64.self, member(key), codingPath + [key]) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try Checks.decode(T.self, member(key), codingPath + [key], userInfo)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoding(value: member(key), codingPath: codingPath + [key], userInfo: userInfo).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoding(value: member(key), codingPath: codingPath + [key], userInfo: userInfo).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoding(value: object["super"] ?? .null, codingPath: codingPath + [IndexKey.superKey], userInfo: userInfo)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoding(value: object[key.stringValue] ?? .null, codingPath: codingPath + [key], userInfo: userInfo)
    }
}

struct UnkeyedDecoding: UnkeyedDecodingContainer {
    let items: [Value]
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]
    var currentIndex = 0

    init(items: [Value], codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any]) {
        self.items = items
        self.codingPath = codingPath
        self.userInfo = userInfo
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }
    private var path: [any CodingKey] { codingPath + [IndexKey(intValue: currentIndex)] }

    private mutating func next<T>(_ type: T.Type) throws -> Value {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "the array has only \(items.count) elements"))
        }
        defer { currentIndex += 1 }
        return items[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Value.self, .init(codingPath: path, debugDescription: "the array has only \(items.count) elements"))
        }
        if case .null = items[currentIndex] {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { let p = path; return try Checks.bool(next(type), p) }
    mutating func decode(_ type: String.Type) throws -> String { let p = path; return try Checks.string(next(type), p) }
    mutating func decode(_ type: Double.Type) throws -> Double { let p = path; return try Checks.double(next(type), p) }
    mutating func decode(_ type: Float.Type) throws -> Float { let p = path; return Float(try Checks.double(next(type), p)) }
    mutating func decode(_ type: Int.Type) throws -> Int { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let p = path; return try Checks.integer(type, next(type), p) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let p = path
        return try Checks.decode(T.self, next(type), p, userInfo)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let p = path
        return try ValueDecoding(value: next(Value.self), codingPath: p, userInfo: userInfo).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let p = path
        return try ValueDecoding(value: next(Value.self), codingPath: p, userInfo: userInfo).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let p = path
        return ValueDecoding(value: try next(Value.self), codingPath: p, userInfo: userInfo)
    }
}

struct SingleValueDecoding: SingleValueDecodingContainer {
    let value: Value
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    func decodeNil() -> Bool {
        if case .null = value { return true }
        return false
    }
    func decode(_ type: Bool.Type) throws -> Bool { try Checks.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try Checks.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try Checks.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try Checks.double(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try Checks.integer(type, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Checks.integer(type, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Checks.integer(type, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Checks.integer(type, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Checks.integer(type, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try Checks.integer(type, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Checks.integer(type, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Checks.integer(type, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Checks.integer(type, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Checks.integer(type, value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Checks.decode(T.self, value, codingPath, userInfo) }
}
