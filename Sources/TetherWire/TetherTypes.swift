// TetherTypes.swift — the typed model of io.tether's types: ops, preconditions, descriptors, entries, changes, limits.

import TetherCore

/// A struct of the interface as Swift reads and writes it: parsed from the
/// parameters of a call or reply with errors that name the field at fault
/// (org.varlink.service.InvalidParameter, or io.tether's errors where a
/// local state would give them), and written back as a value whose JSON
/// the interface accepts. Absent optional fields are left out.
///
/// Parameters (what a call carries) are read strictly: a field the method
/// does not define is refused. Replies are read leniently: a newer daemon
/// may add fields.
public protocol WireStruct: Sendable, Equatable {
    /// `parameter` names the value in errors: "" for a call's or reply's
    /// parameters, "ops[2]" for a struct inside them.
    init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError)
    /// The struct as a JSON value (named so as not to clash with the
    /// `value` fields several structs have).
    var wireValue: Value { get }
}

extension WireStruct {
    public init(from value: Value) throws(VarlinkError) {
        try self.init(from: value, limits: .defaults, parameter: "")
    }

    public init(from value: Value, limits: Limits) throws(VarlinkError) {
        try self.init(from: value, limits: limits, parameter: "")
    }

    /// From a call's or reply's parameters.
    public init(parameters: ValueObject, limits: Limits = .defaults) throws(VarlinkError) {
        try self.init(from: .object(parameters), limits: limits, parameter: "")
    }

    /// As a call's or reply's parameters.
    public var parameters: ValueObject {
        if case .object(let object) = wireValue { return object }
        return ValueObject()
    }
}

/// io.tether's methods.
public enum TetherMethod: String, Sendable, CaseIterable {
    case get = "Get", set = "Set", remove = "Remove", transaction = "Transaction", list = "List"
    case describe = "Describe", declare = "Declare", watch = "Watch", snapshot = "Snapshot", compact = "Compact"
    case stats = "Stats", metrics = "Metrics", watchers = "Watchers"

    /// "io.tether.Get".
    public var qualifiedName: String { VarlinkError.tetherInterface + "." + rawValue }

    public init?(qualifiedName: String) {
        // Compared as bytes, no substring made: the daemon resolves every
        // call's method here (hasPrefix, dropFirst and a String made of the
        // rest were ~1.3 k instructions a call, docs/daemon-performance.md;
        // the generic UTF8View comparisons were no cheaper).
        var name = qualifiedName
        let found: TetherMethod? = name.withUTF8 { bytes in
            var prefix = TetherMethod.prefix
            let start = prefix.withUTF8 { p -> Int? in
                guard bytes.count > p.count, same(UnsafeBufferPointer(rebasing: bytes[..<p.count]), p) else { return nil }
                return p.count
            }
            guard let start else { return nil }
            let member = UnsafeBufferPointer(rebasing: bytes[start...])
            for method in TetherMethod.allCases {
                var raw = method.rawValue
                if raw.withUTF8({ same($0, member) }) { return method }
            }
            return nil
        }
        guard let found else { return nil }
        self = found
    }

    private static let prefix = VarlinkError.tetherInterface + "."

    /// Watch streams its replies and must be called with `more`.
    public var streams: Bool { self == .watch }
}

/// Whether two byte runs are equal.
private func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    for i in 0..<a.count where a[i] != b[i] { return false }
    return true
}

extension ValueType {
    /// The io.tether `ValueType` name: "null", "bool", "int", "double",
    /// "string", "bytes", "array", "object".
    public var wireName: String { description }

    public init?(wireName: String) {
        guard let type = ValueType.allCases.first(where: { $0.description == wireName }) else { return nil }
        self = type
    }
}

extension Fields {
    func optionalValueType(_ key: String) throws(VarlinkError) -> ValueType? {
        guard let value = value(key) else { return nil }
        let names = ValueType.allCases.map(\.wireName).joined(separator: ", ")
        guard case .string(let s) = value else {
            throw .invalidParameter(name(key), "must be one of \(names), not \(Message.describe(value))")
        }
        guard let type = ValueType(wireName: s) else {
            throw .invalidParameter(name(key), "\(VarlinkError.quoted(s)) is not one of \(names)")
        }
        return type
    }

    func valueType(_ key: String) throws(VarlinkError) -> ValueType {
        guard let type = try optionalValueType(key) else {
            throw .invalidParameter(name(key), "is required (one of \(ValueType.allCases.map(\.wireName).joined(separator: ", ")))")
        }
        return type
    }

    /// The origin of a commit: an int on the wire, the C face's uint64
    /// with the same bits.
    func optionalOrigin(_ key: String) throws(VarlinkError) -> UInt64? {
        try optionalInt(key).map { UInt64(bitPattern: $0) }
    }

    /// An array of structs, each read by `read` with its index in errors.
    func structs<T>(_ key: String, _ read: (Value, String) throws(VarlinkError) -> T) throws(VarlinkError) -> [T]? {
        guard let items = try optionalArray(key) else { return nil }
        var result: [T] = []
        result.reserveCapacity(items.count)
        for (i, item) in items.enumerated() {
            result.append(try read(item, "\(name(key))[\(i)]"))
        }
        return result
    }
}

extension ObjectBuilder {
    mutating func set(_ key: String, origin: UInt64?) {
        self[key] = origin.map { .int(Int64(bitPattern: $0)) }
    }

    mutating func set(_ key: String, _ type: ValueType?) {
        self[key] = type.map { .string($0.wireName) }
    }
}

/// What a write does at its path (io.tether `OpKind` and the value with it).
public enum Write: Sendable, Equatable {
    /// Stores the value at the path; at the root of a state that does not
    /// exist, creates it.
    case set(Value)
    /// Removes what is at the path; at the root, the state.
    case remove

    enum Kind: String, CaseIterable { case set, remove }

    /// Reads `value` and `bytes_at` for a write of this kind (`op`).
    init(_ kind: Kind, _ f: Fields) throws(VarlinkError) {
        switch kind {
        case .set:
            self = .set(try f.value("value", bytesAt: "bytes_at"))
        case .remove:
            if f.value("value") != nil {
                throw .invalidParameter(f.name("value"), "a remove carries no value")
            }
            if f.value("bytes_at") != nil {
                throw .invalidParameter(f.name("bytes_at"), "a remove carries no value")
            }
            self = .remove
        }
    }

    var kind: Kind {
        switch self {
        case .set: .set
        case .remove: .remove
        }
    }

    /// Writes `value` and `bytes_at` (for a set).
    func writeValue(into b: inout ObjectBuilder) {
        if case .set(let value) = self { b.set("value", value: value, bytesAt: "bytes_at") }
    }
}

/// One write of a Transaction.
public struct Op: WireStruct {
    public var name: String
    public var path: JSONPointer
    public var write: Write

    public init(name: String, path: JSONPointer = .root, write: Write) {
        self.name = name
        self.path = path
        self.write = write
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["op", "name", "path", "value", "bytes_at"])
        let kind = try f.enumeration("op", Write.Kind.self)
        name = try f.stateName("name", limits)
        path = try f.path("path")
        write = try Write(kind, f)
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b["op"] = .string(write.kind.rawValue)
        b.set("name", name)
        b.set("path", path)
        write.writeValue(into: &b)
        return b.value
    }
}

/// A compare-on-revision precondition: the state's `modified` must equal
/// `revision`; 0 means the state must not exist.
public struct Precondition: WireStruct {
    public var name: String
    public var revision: UInt64

    public init(name: String, revision: UInt64) {
        self.name = name
        self.revision = revision
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["name", "revision"])
        name = try f.stateName("name", limits)
        revision = try f.revision("revision")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("name", name)
        b.set("revision", revision)
        return b.value
    }
}

/// An inclusive numeric range; a nil bound is unbounded.
public struct NumericRange: WireStruct {
    public var minimum: Double?
    public var maximum: Double?

    public init(minimum: Double? = nil, maximum: Double? = nil) {
        self.minimum = minimum
        self.maximum = maximum
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["minimum", "maximum"])
        minimum = try f.optionalFloat("minimum")
        maximum = try f.optionalFloat("maximum")
        if let minimum, let maximum, minimum > maximum {
            throw .invalidParameter(f.name("maximum"), "the range is empty: maximum \(maximum) is below minimum \(minimum)")
        }
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b["minimum"] = minimum.map(Value.double)
        b["maximum"] = maximum.map(Value.double)
        return b.value
    }

    /// As TetherCore's `StateDescriptor.range` holds it: a missing bound is infinite.
    public var closedRange: ClosedRange<Double> {
        (minimum ?? -.infinity)...(maximum ?? .infinity)
    }
}

/// What the daemon enforces on every write to a state (io.tether `Descriptor`).
public struct Descriptor: WireStruct {
    /// The type lock: nil accepts any type.
    public var type: ValueType?
    public var readOnly: Bool
    public var range: NumericRange?

    public init(type: ValueType? = nil, readOnly: Bool = false, range: NumericRange? = nil) {
        self.type = type
        self.readOnly = readOnly
        self.range = range
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["type", "read_only", "range"])
        type = try f.optionalValueType("type")
        readOnly = try f.optionalBool("read_only") ?? false
        if let r = f.value("range") {
            range = try NumericRange(from: r, limits: limits, parameter: f.name("range"))
        } else {
            range = nil
        }
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("type", type)
        if readOnly { b.set("read_only", true) }
        b["range"] = range?.wireValue
        return b.value
    }
}

/// One state in a List.
public struct StateInfo: WireStruct {
    public var name: String
    public var type: ValueType
    public var modified: UInt64

    public init(name: String, type: ValueType, modified: UInt64) {
        self.name = name
        self.type = type
        self.modified = modified
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        name = try f.string("name")
        type = try f.valueType("type")
        modified = try f.revision("modified")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("name", name)
        b.set("type", type)
        b.set("modified", modified)
        return b.value
    }
}

/// A state's value in a Watch snapshot (io.tether `Entry`).
public struct Entry: WireStruct {
    public var name: String
    /// The value at the watch's path; nil when the state does not exist or
    /// the path names nothing in it.
    public var value: Value?
    /// The revision of the last commit that changed the state; 0 when it
    /// does not exist.
    public var modified: UInt64

    public init(name: String, value: Value?, modified: UInt64) {
        self.name = name
        self.value = value
        self.modified = modified
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        name = try f.string("name")
        modified = try f.revision("modified")
        if try f.bool("exists") {
            let v = try f.value("value", bytesAt: "bytes_at")
            if let type = try f.optionalValueType("type"), type != v.type {
                throw .invalidParameter(f.name("type"), "says \(type.wireName), but the value is \(v.type.wireName)")
            }
            self.value = v
        } else {
            self.value = nil
        }
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("name", name)
        b.set("exists", value != nil)
        if let v = value {
            b.set("value", value: v, bytesAt: "bytes_at")
            b.set("type", v.type)
        }
        b.set("modified", modified)
        return b.value
    }
}

/// One write of a commit, as a watcher gets it (io.tether `Change`).
public struct Change: WireStruct {
    public var name: String
    /// Absolute in the state.
    public var path: JSONPointer
    public var write: Write

    public init(name: String, path: JSONPointer = .root, write: Write) {
        self.name = name
        self.path = path
        self.write = write
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        name = try f.string("name")
        let kind = try f.enumeration("op", Write.Kind.self)
        _ = try f.string("path")  // required, even for the root
        path = try f.path("path")
        write = try Write(kind, f)
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("name", name)
        b["op"] = .string(write.kind.rawValue)
        b["path"] = .string(path.description)
        write.writeValue(into: &b)
        return b.value
    }
}

extension Limits {
    /// io.tether's `Limits`, as Stats reports them.
    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("max_message", int: Int64(maxMessage))
        b.set("max_reply", int: Int64(maxReply))
        b.set("max_value", int: Int64(maxValue))
        b.set("max_ops", int: Int64(maxOps))
        b.set("max_names", int: Int64(maxNames))
        b.set("max_name_length", int: Int64(maxNameLength))
        b.set("max_list", int: Int64(maxList))
        b.set("max_depth", int: Int64(maxDepth))
        return b.value
    }

    public init(from value: Value, parameter: String = "limits") throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        func read(_ key: String) throws(VarlinkError) -> Int {
            let n = try f.revision(key)
            guard let i = Int(exactly: n) else { throw .invalidParameter(f.name(key), "is too large") }
            return i
        }
        self.init(maxMessage: try read("max_message"), maxReply: try read("max_reply"), maxValue: try read("max_value"),
                  maxOps: try read("max_ops"), maxNames: try read("max_names"),
                  maxNameLength: try read("max_name_length"), maxList: try read("max_list"),
                  maxDepth: try read("max_depth"))
    }
}
