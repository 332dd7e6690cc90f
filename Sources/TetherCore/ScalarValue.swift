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

extension Value {
    /// This value as a typed getter sees it.
    @inline(__always)
    public var scalar: ScalarValue {
        switch self {
        case .null: .null
        case let .bool(b): .bool(b)
        case let .int(i): .int(i)
        case let .double(d): .double(d)
        default: .other(type)
        }
    }
}

extension Graph {
    /// `read(_:tracked:)` for a typed getter: the state's value as a scalar,
    /// not copied out.
    public func readScalar(_ id: StateID, tracked: Bool = false) throws(TetherError) -> ScalarValue {
        let i = try resolve(id)
        if tracked { track(NodeRef.state(i), version: states[i].version) }
        return states[i].value.scalar
    }

    /// `readComputed(_:tracked:)` for a typed getter.
    public func readComputedScalar(_ id: DerivedID, tracked: Bool = false) throws(TetherError) -> ScalarValue {
        derived[try upToDate(id, tracked: tracked)].value.scalar
    }
}
