// ValueCodable.swift — Value and Bytes as Codable types.

/// A `Value` inside a Codable type is kept as is by `ValueEncoder` and
/// `ValueDecoder`; with any other coder (Foundation's JSON, a property
/// list) it is its JSON form, bytes as base64 text.
extension Value: Codable {
    public init(from decoder: any Decoder) throws {
        if let direct = decoder as? ValueDecoding {
            self = direct.value
            return
        }
        if let keyed = try? decoder.container(keyedBy: IndexKey.self) {
            var members = MemberTable()
            for key in keyed.allKeys { members[MemberKey(key.stringValue)] = try keyed.decode(Value.self, forKey: key) }
            self = .object(ValueObject(members))
            return
        }
        if var unkeyed = try? decoder.unkeyedContainer() {
            var items: [Value] = []
            while !unkeyed.isAtEnd { items.append(try unkeyed.decode(Value.self)) }
            self = .array(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let b = try? single.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? single.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? single.decode(Double.self) {
            self = .double(d)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        if let direct = encoder as? ValueEncoding {
            direct.node.kind = .scalar(self)
            return
        }
        switch self {
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case let .bool(b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case let .int(i):
            var c = encoder.singleValueContainer()
            try c.encode(i)
        case let .double(d):
            var c = encoder.singleValueContainer()
            try c.encode(d)
        case let .string(s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case let .bytes(b):
            var c = encoder.singleValueContainer()
            try c.encode(Base64.encode(b))
        case let .array(items):
            var c = encoder.unkeyedContainer()
            for item in items { try c.encode(item) }
        case let .object(object):
            var c = encoder.container(keyedBy: IndexKey.self)
            for (key, value) in object.members { try c.encode(value, forKey: IndexKey(stringValue: key.string)) }
        }
    }
}

/// Binary data for Codable types stored in Tether: a `bytes` value with
/// `ValueEncoder` (Tether's own type, no text in between), base64 text
/// with other coders. (`[UInt8]` itself encodes as an array of ints, as
/// Codable defines it; TetherCore does not import Foundation, so `Data`
/// is not special here.)
public struct Bytes: Codable, Hashable, Sendable {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(from decoder: any Decoder) throws {
        if let direct = decoder as? ValueDecoding {
            switch direct.value {
            case let .bytes(b): bytes = b
            case let .string(text):
                do { bytes = try Base64.decode(text) } catch {
                    throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
                }
            default:
                throw Checks.mismatch(Bytes.self, direct.value, decoder.codingPath, wanted: "bytes")
            }
            return
        }
        let text = try decoder.singleValueContainer().decode(String.self)
        do { bytes = try Base64.decode(text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        if let direct = encoder as? ValueEncoding {
            direct.node.kind = .scalar(.bytes(bytes))
            return
        }
        var c = encoder.singleValueContainer()
        try c.encode(Base64.encode(bytes))
    }
}
