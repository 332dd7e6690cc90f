import OrderedCollections

/// A Tether value: what a state holds. Structural equality; JSON in and out.
///
/// Scalars are stored inline (no allocation to write an int or a double);
/// composites are copy-on-write, so handing a value to a callback or keeping
/// the old value of a write costs a reference count, not a deep copy.
public enum Value: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    case array([Value])
    case object(ValueObject)

    public var type: ValueType {
        switch self {
        case .null: .null
        case .bool: .bool
        case .int: .int
        case .double: .double
        case .string: .string
        case .bytes: .bytes
        case .array: .array
        case .object: .object
        }
    }
}

/// The kinds of value; raw values are `TETHER_TYPE_*` of include/tether.h.
public enum ValueType: Int32, Sendable, CaseIterable, CustomStringConvertible {
    case null = 0, bool, int, double, string, bytes, array, object

    public var description: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .bytes: "bytes"
        case .array: "array"
        case .object: "object"
        }
    }
}

extension Value: Equatable {
    /// Structural equality. Two differences from Swift's defaults, both so that
    /// "writing an equal value wakes nobody" means what a user expects:
    /// every NaN equals every NaN (a NaN written twice is not a change), and
    /// objects compare as unordered maps (RFC 8259: member order carries no
    /// meaning). An int never equals a double: the types differ.
    public static func == (lhs: Value, rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b || (a.isNaN && b.isNaN)
        case let (.string(a), .string(b)): return a == b
        case let (.bytes(a), .bytes(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)): return a == b
        default: return false
        }
    }
}

/// A JSON object: members keep insertion order (so JSON output is stable and
/// matches what was written) but equality ignores order.
public struct ValueObject: Sendable, Equatable {
    public var members: OrderedDictionary<String, Value>

    public init() { members = [:] }
    public init(_ members: OrderedDictionary<String, Value>) { self.members = members }

    public var count: Int { members.count }

    public subscript(key: String) -> Value? {
        get { members[key] }
        set { members[key] = newValue }
    }

    public static func == (lhs: ValueObject, rhs: ValueObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for (key, value) in lhs.members {
            guard let other = rhs.members[key], other == value else { return false }
        }
        return true
    }
}
