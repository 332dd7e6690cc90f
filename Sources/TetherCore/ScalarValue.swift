// ScalarValue.swift — the typed getters' view of a value, and the scalar reads and stores that avoid copying a Value.

/// What a typed getter (`tether_*_get_int` and the like) needs of a value:
/// the scalar itself, or only the type of anything else (for the error).
///
/// A trivial type: taken from a value stored in the graph without copying
/// the `Value`, whose copy and destroy go through its outlined value
/// witnesses (~35 instructions per read, profiled) even for an int.
public enum ScalarValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case other(ValueType)

    public var type: ValueType {
        switch self {
        case .null: .null
        case .bool: .bool
        case .int: .int
        case .double: .double
        case let .other(type): type
        }
    }
}

extension ScalarValue {
    /// Value equality (`Value ==`) for two scalars: a NaN equals a NaN, as
    /// a write of NaN over NaN is no change. `.other` never equals: the
    /// values it stands for must be compared whole.
    @inlinable @inline(__always)
    public func sameValue(as other: ScalarValue) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b || (a.isNaN && b.isNaN)
        default: return false
        }
    }
}

extension Value {
    /// This value as a typed getter sees it. Ints first, by one compare:
    /// the switch alone is a jump table (profiled: ~10 instructions a read).
    @inlinable @inline(__always)
    public var scalar: ScalarValue {
        if case let .int(i) = self { return .int(i) }
        switch self {
        case .null: return .null
        case let .bool(b): return .bool(b)
        case let .int(i): return .int(i)
        case let .double(d): return .double(d)
        default: return .other(type)
        }
    }
}

extension Graph {
    /// `read(_:tracked:)` for a typed getter: the state's value as a scalar,
    /// not copied out. Inlined into the typed getters of the C face (a
    /// call, its frame and a second switch on the result before: ~30 of
    /// `tether_state_get_int`'s 131 instructions).
    @inlinable @inline(__always)
    public final func readScalar(_ id: StateID, tracked: Bool = false) throws(TetherError) -> ScalarValue {
        let i = try resolve(id)
        if tracked { track(NodeRef.state(i), version: states[i].version) }
        return states[i].value.scalar
    }

    /// `readComputed(_:tracked:)` for a typed getter.
    public func readComputedScalar(_ id: DerivedID, tracked: Bool = false) throws(TetherError) -> ScalarValue {
        derived[try upToDate(id, tracked: tracked)].value.scalar
    }
}

extension UnsafeMutablePointer where Pointee == Value {
    /// Stores a scalar over the value here. When that value is a scalar too
    /// there is nothing to release, so it is overwritten without the call to
    /// Value's outlined destroy (~16 instructions a store, twice per C
    /// recompute: profiled). A `ScalarValue` argument, not a `Value`: the
    /// new value is built here, so it is not a copy of the caller's.
    @inlinable @inline(__always)
    public func storeScalar(_ new: ScalarValue) {
        let value = Value(trivial: new)
        if case .other = pointee.scalar { pointee = value } else { initialize(to: value) }
    }
}

extension Optional where Wrapped == Value {
    /// The scalar held here, or nil when this is nil or a composite. Read
    /// in place: matching on the stored tag copies nothing, where binding
    /// the `Value` would go through its outlined copy (profiled: the copies
    /// and destroys of old and new values were a third of a SYNC delivery).
    @inline(__always)
    var storedScalar: ScalarValue? {
        switch self {
        case .some(.null): .null
        case let .some(.bool(b)): .bool(b)
        case let .some(.int(n)): .int(n)
        case let .some(.double(x)): .double(x)
        default: nil
        }
    }

    /// Nil or a scalar: storage holding it needs no release.
    @inline(__always)
    var isTrivial: Bool {
        switch self {
        case .none, .some(.null), .some(.bool), .some(.int), .some(.double): true
        default: false
        }
    }
}

extension Value {
    /// The value of a scalar (not `.other`).
    @inlinable @inline(__always)
    package init(trivial scalar: ScalarValue) {
        switch scalar {
        case .null: self = .null
        case let .bool(b): self = .bool(b)
        case let .int(n): self = .int(n)
        case let .double(x): self = .double(x)
        case .other: preconditionFailure("Value(trivial:) takes scalars only")
        }
    }
}

extension UnsafeMutablePointer where Pointee == Value? {
    /// `storeScalar` for an optional value: a scalar (or nil) stored here;
    /// over nil or a scalar (`isTrivial`) without `Value`'s outlined
    /// witnesses, as there is nothing to release.
    @inline(__always)
    func storeScalar(_ new: ScalarValue?) {
        let value = new.map { Value(trivial: $0) }
        if pointee.isTrivial { initialize(to: value) } else { pointee = value }
    }
}
