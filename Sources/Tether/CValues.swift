import CTether
import TetherCore

// The value functions of include/tether.h: owned `Value`s behind opaque pointers.

/// Runs `body` and stores its result as a new owned value in *out.
@inline(__always)
private func produce(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ fn: StaticString,
                     _ body: () throws(TetherError) -> Value) -> Int32 {
    guard let out else { return fail(.invalidArgument, "\(fn): out is NULL") }
    do {
        out.pointee = newOwnedValue(try body())
        return 0
    } catch {
        return fail(error)
    }
}

/// Runs `body` on a borrowed value, mapping a NULL value and errors.
@inline(__always)
private func inspect(_ v: OpaquePointer?, _ fn: StaticString,
                     _ body: (Value) throws(TetherError) -> Void) -> Int32 {
    guard let v else { return fail(.invalidArgument, "\(fn): value is NULL") }
    do {
        try body(valuePointer(v).pointee)
        return 0
    } catch {
        return fail(TetherError(error.code, "\(fn): \(error.message)"))
    }
}

@inline(__always)
private func modify(_ v: OpaquePointer?, _ fn: StaticString,
                    _ body: (inout Value) throws(TetherError) -> Void) -> Int32 {
    guard let v else { return fail(.invalidArgument, "\(fn): value is NULL") }
    do {
        try body(&valuePointer(v).pointee)
        return 0
    } catch {
        return fail(TetherError(error.code, "\(fn): \(error.message)"))
    }
}

@_cdecl("tether_value_new_null")
public func tether_value_new_null(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    produce(out, "tether_value_new_null") { .null }
}

@_cdecl("tether_value_new_bool")
public func tether_value_new_bool(_ b: Bool, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    produce(out, "tether_value_new_bool") { .bool(b) }
}

@_cdecl("tether_value_new_int")
public func tether_value_new_int(_ i: Int64, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    produce(out, "tether_value_new_int") { .int(i) }
}

@_cdecl("tether_value_new_double")
public func tether_value_new_double(_ d: Double, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    produce(out, "tether_value_new_double") { .double(d) }
}

@_cdecl("tether_value_new_string")
public func tether_value_new_string(_ str: UnsafePointer<CChar>?, _ len: Int,
                                    _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    produce(out, "tether_value_new_string") { () throws(TetherError) in try stringValue(str, len, "tether_value_new_string: str") }
}

@_cdecl("tether_value_new_bytes")
public func tether_value_new_bytes(_ data: UnsafeRawPointer?, _ len: Int,
                                   _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    produce(out, "tether_value_new_bytes") { () throws(TetherError) in try bytesValue(data, len, "tether_value_new_bytes: data") }
}

@_cdecl("tether_value_new_array")
public func tether_value_new_array(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    produce(out, "tether_value_new_array") { .array([]) }
}

@_cdecl("tether_value_new_object")
public func tether_value_new_object(_ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    produce(out, "tether_value_new_object") { .object(ValueObject()) }
}

@_cdecl("tether_value_from_json")
public func tether_value_from_json(_ json: UnsafePointer<CChar>?, _ len: Int,
                                   _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    produce(out, "tether_value_from_json") { () throws(TetherError) in try jsonValue(json, len, "tether_value_from_json: json") }
}

@_cdecl("tether_value_copy")
public func tether_value_copy(_ v: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_value_copy: value is NULL") }
    return produce(out, "tether_value_copy") { valuePointer(v).pointee }
}

@_cdecl("tether_value_free")
public func tether_value_free(_ v: OpaquePointer?) {
    guard let v else { return }
    freeOwnedValue(v)
}

@_cdecl("tether_value_type")
public func tether_value_type(_ v: OpaquePointer?) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_value_type: value is NULL") }
    return valuePointer(v).pointee.type.rawValue
}

@_cdecl("tether_value_equal")
public func tether_value_equal(_ a: OpaquePointer?, _ b: OpaquePointer?) -> Int32 {
    guard let a, let b else { return fail(.invalidArgument, "tether_value_equal: a value is NULL") }
    return valuePointer(a).pointee == valuePointer(b).pointee ? 1 : 0
}

/// A typed read's common case, the value holding the asked type (an
/// observer reading the value it was lent), read in place without a frame:
/// `take` answers nil for anything else, which goes to `full` (out of line),
/// with NULLs and every error. The full path alone cost a SYNC notification
/// ~35 instructions (profiled: its frame and the switch on the value).
@inline(__always)
private func readInPlace<T>(_ v: OpaquePointer?, _ out: UnsafeMutablePointer<T>?,
                            _ take: (borrowing Value) -> T?,
                            full: (OpaquePointer?, UnsafeMutablePointer<T>?) -> Int32) -> Int32 {
    if let v, let out, let x = take(valuePointer(v).pointee) {
        out.pointee = x
        return 0
    }
    return full(v, out)
}

@_cdecl("tether_value_get_bool")
public func tether_value_get_bool(_ v: OpaquePointer?, _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    readInPlace(v, out, { if case let .bool(b) = $0 { b } else { nil } }, full: valueGetBool)
}

@inline(never)
private func valueGetBool(_ v: OpaquePointer?, _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_value_get_bool: out is NULL") }
    return inspect(v, "tether_value_get_bool") { (v) throws(TetherError) in out.pointee = try Scalar.bool(v) }
}

@_cdecl("tether_value_get_int")
public func tether_value_get_int(_ v: OpaquePointer?, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    readInPlace(v, out, { if case let .int(n) = $0 { n } else { nil } }, full: valueGetInt)
}

@inline(never)
private func valueGetInt(_ v: OpaquePointer?, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_value_get_int: out is NULL") }
    return inspect(v, "tether_value_get_int") { (v) throws(TetherError) in out.pointee = try Scalar.int(v) }
}

@_cdecl("tether_value_get_double")
public func tether_value_get_double(_ v: OpaquePointer?, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    readInPlace(v, out, { if case let .double(x) = $0 { x } else { nil } }, full: valueGetDouble)
}

@inline(never)
private func valueGetDouble(_ v: OpaquePointer?, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_value_get_double: out is NULL") }
    return inspect(v, "tether_value_get_double") { (v) throws(TetherError) in out.pointee = try Scalar.double(v) }
}

@_cdecl("tether_value_get_string")
public func tether_value_get_string(_ v: OpaquePointer?, _ buf: UnsafeMutablePointer<CChar>?, _ size: Int,
                                    _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    inspect(v, "tether_value_get_string") { (v) throws(TetherError) in
        guard case let .string(s) = v else { throw Scalar.mismatch(v.type, "string") }
        try copyOutString(s, buf, size, len)
    }
}

@_cdecl("tether_value_get_bytes")
public func tether_value_get_bytes(_ v: OpaquePointer?, _ buf: UnsafeMutableRawPointer?, _ size: Int,
                                   _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    inspect(v, "tether_value_get_bytes") { (v) throws(TetherError) in
        guard case let .bytes(b) = v else { throw Scalar.mismatch(v.type, "bytes") }
        try copyOut(b, buf, size, len, terminate: false)
    }
}

@_cdecl("tether_value_length")
public func tether_value_length(_ v: OpaquePointer?, _ out: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_value_length: out is NULL") }
    return inspect(v, "tether_value_length") { (v) throws(TetherError) in
        switch v {
        case let .array(a): out.pointee = a.count
        case let .object(o): out.pointee = o.count
        case let .string(s): out.pointee = s.utf8.count
        case let .bytes(b): out.pointee = b.count
        default: throw TetherError(.wrongType, "a \(v.type) has no length")
        }
    }
}

@_cdecl("tether_value_object_key")
public func tether_value_object_key(_ v: OpaquePointer?, _ index: Int, _ buf: UnsafeMutablePointer<CChar>?,
                                    _ size: Int, _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    inspect(v, "tether_value_object_key") { (v) throws(TetherError) in
        guard case let .object(o) = v else { throw Scalar.mismatch(v.type, "object") }
        guard index >= 0, index < o.count else {
            throw TetherError(.outOfRange, "index \(index) is past the object's \(o.count) members")
        }
        try copyOutString(o.members.keys[index].string, buf, size, len)
    }
}

@_cdecl("tether_value_get_path")
public func tether_value_get_path(_ v: OpaquePointer?, _ path: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_value_get_path: value is NULL") }
    return produce(out, "tether_value_get_path") { () throws(TetherError) in
        try valuePointer(v).pointee.value(at: try pointerText(path))
    }
}

@_cdecl("tether_value_set_path")
public func tether_value_set_path(_ v: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ item: OpaquePointer?) -> Int32 {
    guard let item else { return fail(.invalidArgument, "tether_value_set_path: item is NULL") }
    let newValue = valuePointer(item).pointee
    return modify(v, "tether_value_set_path") { (v) throws(TetherError) in
        let p = try pointer(path)
        try Value.checkNesting(of: newValue, under: p.tokens.count)
        try v.set(newValue, at: p)
    }
}

@_cdecl("tether_value_remove_path")
public func tether_value_remove_path(_ v: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> Int32 {
    modify(v, "tether_value_remove_path") { (v) throws(TetherError) in
        let p = try pointer(path)
        guard !p.isRoot else { throw TetherError(.invalidArgument, "cannot remove the whole value (path \"\")") }
        try v.remove(at: p)
    }
}

@_cdecl("tether_value_array_append")
public func tether_value_array_append(_ v: OpaquePointer?, _ item: OpaquePointer?) -> Int32 {
    guard let item else { return fail(.invalidArgument, "tether_value_array_append: item is NULL") }
    let newValue = valuePointer(item).pointee
    return modify(v, "tether_value_array_append") { (v) throws(TetherError) in
        guard case var .array(a) = v else { throw Scalar.mismatch(v.type, "array") }
        try Value.checkNesting(of: newValue, under: 1)
        v = .null  // drop the enum's reference so the append is in place
        a.append(newValue)
        v = .array(a)
    }
}

@_cdecl("tether_value_object_set")
public func tether_value_object_set(_ v: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ len: Int,
                                    _ item: OpaquePointer?) -> Int32 {
    guard let item else { return fail(.invalidArgument, "tether_value_object_set: item is NULL") }
    let newValue = valuePointer(item).pointee
    return modify(v, "tether_value_object_set") { (v) throws(TetherError) in
        let bytes = try cBytes(key, len, "key")
        guard case var .object(o) = v else {
            _ = try String(validatingUTF8: bytes)  // a bad key is reported first
            throw Scalar.mismatch(v.type, "object")
        }
        // Set on the object's own table (unique once `v` lets go), by the
        // key's bytes: an existing member is replaced with no `String`
        // made (~180 instructions of ~940 a call, kairo molBench).
        v = .null
        do throws(TetherError) {
            try o.members.setValue(newValue, forUTF8: bytes) { (item) throws(TetherError) in
                try Value.checkNesting(of: item, under: 1)
            }
        } catch {
            v = .object(o)
            throw error
        }
        v = .object(o)
    }
}

@_cdecl("tether_value_to_json")
public func tether_value_to_json(_ v: OpaquePointer?, _ flags: UInt32, _ buf: UnsafeMutablePointer<CChar>?,
                                 _ size: Int, _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    inspect(v, "tether_value_to_json") { (v) throws(TetherError) in try copyOutJSON(v, flags: flags, buf, size, len) }
}

// In-place setters, for compute callbacks filling their result slot.

@_cdecl("tether_value_set_null")
public func tether_value_set_null(_ v: OpaquePointer?) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_value_set_null: value is NULL") }
    valuePointer(v).storeScalar(.null)
    return 0
}

@_cdecl("tether_value_set_bool")
public func tether_value_set_bool(_ v: OpaquePointer?, _ b: Bool) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_value_set_bool: value is NULL") }
    valuePointer(v).storeScalar(.bool(b))
    return 0
}

@_cdecl("tether_value_set_int")
public func tether_value_set_int(_ v: OpaquePointer?, _ i: Int64) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_value_set_int: value is NULL") }
    valuePointer(v).storeScalar(.int(i))
    return 0
}

@_cdecl("tether_value_set_double")
public func tether_value_set_double(_ v: OpaquePointer?, _ d: Double) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_value_set_double: value is NULL") }
    valuePointer(v).storeScalar(.double(d))
    return 0
}

@_cdecl("tether_value_set_string")
public func tether_value_set_string(_ v: OpaquePointer?, _ str: UnsafePointer<CChar>?, _ len: Int) -> Int32 {
    modifyValue(v, "tether_value_set_string") { (v) throws(TetherError) in v = try stringValue(str, len, "str") }
}

@_cdecl("tether_value_assign")
public func tether_value_assign(_ v: OpaquePointer?, _ src: OpaquePointer?) -> Int32 {
    guard let src else { return fail(.invalidArgument, "tether_value_assign: src is NULL") }
    let newValue = valuePointer(src).pointee
    return modifyValue(v, "tether_value_assign") { v in v = newValue }
}

private func modifyValue(_ v: OpaquePointer?, _ fn: StaticString, _ body: (inout Value) throws(TetherError) -> Void) -> Int32 {
    guard let v else { return fail(.invalidArgument, "\(fn): value is NULL") }
    do {
        try body(&valuePointer(v).pointee)
        return 0
    } catch {
        return fail(TetherError(error.code, "\(fn): \(error.message)"))
    }
}
