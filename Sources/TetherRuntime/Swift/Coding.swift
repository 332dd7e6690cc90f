/// Moving Swift values in and out of Tether's JSON values. Scalars and
/// `Value` itself skip the Codable machinery (a typed state of `Int` reads
/// as cheaply as `tether_state_get_int`); everything else goes through
/// `ValueEncoder` / `ValueDecoder`, which build values directly, without
/// JSON text in between.
enum Coding {
    @inline(__always)
    static func encode<T: Encodable>(_ v: T) throws(TetherError) -> Value {
        if T.self == Int.self { return .int(Int64(unsafeBitCast(v, to: Int.self))) }
        if T.self == Int64.self { return .int(unsafeBitCast(v, to: Int64.self)) }
        if T.self == Double.self { return .double(unsafeBitCast(v, to: Double.self)) }
        if T.self == Bool.self { return .bool(unsafeBitCast(v, to: Bool.self)) }
        if T.self == String.self { return .string(v as! String) }
        if T.self == Value.self { return v as! Value }
        do { return try ValueEncoder().encode(v) } catch { throw TetherError.from(error) }
    }

    @inline(__always)
    static func decode<T: Decodable>(_ type: T.Type, from value: Value) throws(TetherError) -> T {
        if T.self == Value.self { return value as! T }
        do { return try ValueDecoder().decode(T.self, from: value) } catch { throw TetherError.from(error) }
    }

    /// A scalar read straight from the node, when T is one.
    @inline(__always)
    static func decodeScalar<T: Decodable>(_ type: T.Type, _ read: () throws(TetherError) -> ScalarValue) throws(TetherError) -> T? {
        if T.self == Int.self {
            guard case let .int(i) = try read() else { return nil }
            guard let fits = Int(exactly: i) else { return nil }
            return unsafeBitCast(fits, to: T.self)
        }
        if T.self == Int64.self {
            guard case let .int(i) = try read() else { return nil }
            return unsafeBitCast(i, to: T.self)
        }
        if T.self == Double.self {
            switch try read() {
            case let .double(d): return unsafeBitCast(d, to: T.self)
            case let .int(i): return unsafeBitCast(Double(i), to: T.self)
            default: return nil
            }
        }
        if T.self == Bool.self {
            guard case let .bool(b) = try read() else { return nil }
            return unsafeBitCast(b, to: T.self)
        }
        return nil
    }

    static func isScalar<T>(_ type: T.Type) -> Bool {
        T.self == Int.self || T.self == Int64.self || T.self == Double.self || T.self == Bool.self
    }
}
