// Value.swift — the Value type: JSON-like values, structural equality, nesting depth.

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
    // One reference (ValueObject keeps its members in a class, copied on
    // write): a member table inline is 24 bytes, which made every
    // Value (and every state node) 8 bytes bigger than the rest needs.
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
    /// Structural equality. Three differences from Swift's defaults, both so that
    /// "writing an equal value wakes nobody" means what a user expects:
    /// every NaN equals every NaN (a NaN written twice is not a change), and
    /// objects compare as unordered maps (RFC 8259: member order carries no
    /// meaning), and strings compare byte for byte, without Unicode
    /// normalisation. An int never equals a double: the types differ.
    @inline(__always)
    public static func == (lhs: Value, rhs: Value) -> Bool {
        // Ints, the common case of derived values, without the call into
        // the full comparison (and its copies of both operands).
        if case let .int(a) = lhs, case let .int(b) = rhs { return a == b }
        return equal(lhs, rhs)
    }

    @inline(never)
    static func equal(_ lhs: Value, _ rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b || (a.isNaN && b.isNaN)
        // Byte-exact, as JSON compares strings: Swift's == would treat
        // "é" and "e\u{301}" (canonically equivalent) as one value.
        case let (.string(a), .string(b)): return MemberKey.sameBytes(a, b)
        case let (.bytes(a), .bytes(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)): return a == b
        default: return false
        }
    }
}

/// A JSON object: members keep insertion order (so JSON output is stable and
/// matches what was written) but equality ignores order.
///
/// The members live in a class instance, copied on write, so a `Value`
/// holding an object is one reference. (An `indirect` case did that too, but
/// its box is immutable: every member set on an object built in place, as a
/// compute callback does with tether_value_object_set, allocated a new box;
/// profiled on kairo mux.)
public struct ValueObject: Sendable, Equatable {
    private final class Storage: @unchecked Sendable {
        // Mutated only through `members`' _modify, after a uniqueness check.
        var members: MemberTable
        init(_ members: MemberTable) { self.members = members }

        /// The same members, in any order; cheapest for the same names in
        /// the same order (a computed that rebuilds its object the same way
        /// each run, whose cutoff compares it with the last one): position
        /// by position, by name only from the first name out of place.
        /// Lookups throughout were ~2,600 of kairo molBench's ~130,000
        /// instructions an iteration (profiled). A method of the storage,
        /// so the tables are read in place: copied into locals, each
        /// comparison retained and released their six arrays.
        func sameMembers(as other: Storage) -> Bool {
            let n = members.count
            guard n == other.members.count else { return false }
            var p = 0
            while p < n && members.keys[p] == other.members.keys[p] {
                guard members.values[p] == other.members.values[p] else { return false }
                p += 1
            }
            // Names before p are at the same places in both, and names are
            // unique, so each remaining one is found among the rest of other's.
            while p < n {
                guard let q = other.members.position(of: members.keys[p]),
                      members.values[p] == other.members.values[q] else { return false }
                p += 1
            }
            return true
        }
    }

    private var storage: Storage

    public var members: MemberTable {
        _read { yield storage.members }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.members) }
            yield &storage.members
        }
    }

    public init() { storage = Storage(MemberTable()) }
    public init(_ members: MemberTable) { storage = Storage(members) }

    public var count: Int { members.count }

    public subscript(key: String) -> Value? {
        get { members[MemberKey(key)] }
        set { members[MemberKey(key)] = newValue }
    }

    /// Unordered (`Storage.sameMembers`).
    public static func == (lhs: ValueObject, rhs: ValueObject) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.sameMembers(as: rhs.storage)
    }
}

extension Value {
    /// The deepest nesting a value may have, the same as the JSON parser's
    /// limit. Freeing, comparing and copying values recurse through their
    /// nesting, so an unbounded depth (one level per write is enough to get
    /// there) would end in a stack overflow; inserts check against this.
    public static let maxNesting = 512

    /// Levels of arrays and objects: 0 for a scalar, 1 for a flat array.
    /// (Loops, not `map(\.nestingDepth)`: a key path applied per element
    /// went through swift_getAtKeyPath, ~700 instructions per member;
    /// profiled at 4% of kairo molBench, which appends small objects.)
    public var nestingDepth: Int {
        var deepest = 0
        switch self {
        case let .array(a):
            for item in a { deepest = Swift.max(deepest, item.nestingDepth) }
        case let .object(o):
            for item in o.members.values { deepest = Swift.max(deepest, item.nestingDepth) }
        default:
            return 0
        }
        return 1 + deepest
    }

    /// Throws when putting `item` `levels` containers deep would nest deeper
    /// than `maxNesting`. Scalars cost nothing to check.
    public static func checkNesting(of item: Value, under levels: Int) throws(TetherError) {
        switch item {
        case .array, .object:
            let depth = levels + item.nestingDepth
            if depth > maxNesting {
                throw TetherError(.outOfRange, "the result would nest \(depth) levels deep; the limit is \(maxNesting)")
            }
        default:
            return
        }
    }
}
