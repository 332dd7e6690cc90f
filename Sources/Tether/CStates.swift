import CTether
import TetherCore
import TetherRuntime

// The state functions of include/tether.h.

@inline(__always)
private func stateCall(_ fn: StaticString, _ s: tether_state_t, _ body: () throws(TetherError) -> Void) -> Int32 {
    call(fn, .state, s.id, body)
}

/// A write whose value is made from C arguments first (a bad argument is
/// reported before the state is touched).
@inline(__always)
private func setValue(_ s: tether_state_t, _ fn: StaticString, _ make: () throws(TetherError) -> Value) -> Int32 {
    stateCall(fn, s) { () throws(TetherError) in try Runtimes.writeState(s.id, .set(try make())) }
}

// MARK: Creating and freeing

@_cdecl("tether_state_new")
public func tether_state_new(_ rt: tether_runtime_t, _ initial: OpaquePointer?, _ flags: UInt32,
                             _ out: UnsafeMutablePointer<tether_state_t>?) -> Int32 {
    newState(rt, flags, out, "tether_state_new") { initial.map { valuePointer($0).pointee } ?? .null }
}

@_cdecl("tether_state_new_int")
public func tether_state_new_int(_ rt: tether_runtime_t, _ v: Int64, _ flags: UInt32,
                                 _ out: UnsafeMutablePointer<tether_state_t>?) -> Int32 {
    newState(rt, flags, out, "tether_state_new_int") { .int(v) }
}

@_cdecl("tether_state_new_double")
public func tether_state_new_double(_ rt: tether_runtime_t, _ v: Double, _ flags: UInt32,
                                    _ out: UnsafeMutablePointer<tether_state_t>?) -> Int32 {
    newState(rt, flags, out, "tether_state_new_double") { .double(v) }
}

@_cdecl("tether_state_new_bool")
public func tether_state_new_bool(_ rt: tether_runtime_t, _ v: Bool, _ flags: UInt32,
                                  _ out: UnsafeMutablePointer<tether_state_t>?) -> Int32 {
    newState(rt, flags, out, "tether_state_new_bool") { .bool(v) }
}

@_cdecl("tether_state_new_string")
public func tether_state_new_string(_ rt: tether_runtime_t, _ str: UnsafePointer<CChar>?, _ len: Int, _ flags: UInt32,
                                    _ out: UnsafeMutablePointer<tether_state_t>?) -> Int32 {
    newState(rt, flags, out, "tether_state_new_string") { () throws(TetherError) in try stringValue(str, len, "str") }
}

@_cdecl("tether_state_new_json")
public func tether_state_new_json(_ rt: tether_runtime_t, _ json: UnsafePointer<CChar>?, _ len: Int, _ flags: UInt32,
                                  _ out: UnsafeMutablePointer<tether_state_t>?) -> Int32 {
    newState(rt, flags, out, "tether_state_new_json") { () throws(TetherError) in try jsonValue(json, len, "json") }
}

@inline(__always)
private func newState(_ rt: tether_runtime_t, _ flags: UInt32, _ out: UnsafeMutablePointer<tether_state_t>?,
                      _ fn: StaticString, _ make: () throws(TetherError) -> Value) -> Int32 {
    guard let out else { return nullOut(fn) }
    guard flags & ~UInt32(TETHER_STATE_LOCK_TYPE) == 0 else {
        return fail(.invalidArgument, "\(fn): unknown state flags 0x\(String(flags, radix: 16))")
    }
    let value: Value
    do { value = try make() } catch { return fail(fn, error) }
    return call(fn, .runtime, rt.id) { () throws(TetherError) in
        out.pointee = tether_state_t(id: try Runtimes.newState(in: rt.id, value, typeLocked: flags & UInt32(TETHER_STATE_LOCK_TYPE) != 0))
    }
}

@_cdecl("tether_state_free")
public func tether_state_free(_ s: tether_state_t) -> Int32 {
    stateCall("tether_state_free", s) { () throws(TetherError) in try Runtimes.freeState(s.id) }
}

// MARK: Reading

@_cdecl("tether_state_type")
public func tether_state_type(_ s: tether_state_t, _ out: UnsafeMutablePointer<tether_type_t>?) -> Int32 {
    guard let out else { return nullOut("tether_state_type") }
    return stateCall("tether_state_type", s) { () throws(TetherError) in
        out.pointee = tether_type_t(UInt32(try Runtimes.readScalar(state: s.id).type.rawValue))
    }
}

@_cdecl("tether_state_revision")
public func tether_state_revision(_ s: tether_state_t, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let out else { return nullOut("tether_state_revision") }
    return stateCall("tether_state_revision", s) { () throws(TetherError) in out.pointee = try Runtimes.stateRevision(s.id) }
}

@_cdecl("tether_state_get")
public func tether_state_get(_ s: tether_state_t, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return nullOut("tether_state_get") }
    return stateCall("tether_state_get", s) { () throws(TetherError) in out.pointee = newOwnedValue(try Runtimes.readState(s.id)) }
}

/// The full path of a typed get: wakes the waiter the plain path's release
/// found, then reads as every getter did before the plain path.
@inline(__always)
private func fullGet<T>(_ fn: StaticString, _ id: UInt64, _ out: UnsafeMutablePointer<T>?,
                        _ wake: UnsafeMutablePointer<tether_internal_lock_t>?,
                        _ convert: (ScalarValue) throws(TetherError) -> T) -> Int32 {
    if let wake { tether_internal_lock_wake(wake) }
    guard let out else { return nullOut(fn) }
    return stateCall(fn, tether_state_t(id: id)) { () throws(TetherError) in
        out.pointee = try convert(Runtimes.readScalar(state: id))
    }
}

@_cdecl("tether_state_get_bool")
public func tether_state_get_bool(_ s: tether_state_t, _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    guard let out else { return getBool(s.id, nil, nil) }
    return Runtimes.plainGet(s.id, out, { graph, h, runtime in graph.plainBool(h.index, h.generation, callbackOf: runtime) },
                             inCallback: getBoolInCallback, full: getBool)
}

/// `tether_state_get_bool` from a callback (a compute's read: tracked).
@inline(never)
private func getBoolInCallback(_ id: UInt64, _ out: UnsafeMutablePointer<Bool>) -> Int32 {
    Runtimes.plainGetInCallback(id, out, { graph, h, runtime in graph.plainBool(h.index, h.generation, callbackOf: runtime) },
                                full: getBool)
}

/// The full path of `tether_state_get_bool` (every error, conversion and
/// callback case), out of line so the plain path has no frame to set up.
/// `wake`: the lock the plain path released with a waiter to wake.
@inline(never)
private func getBool(_ id: UInt64, _ out: UnsafeMutablePointer<Bool>?,
                     _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    fullGet("tether_state_get_bool", id, out, wake, Scalar.bool)
}

@_cdecl("tether_state_get_int")
public func tether_state_get_int(_ s: tether_state_t, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    guard let out else { return getInt(s.id, nil, nil) }
    return Runtimes.plainGet(s.id, out, { graph, h, runtime in graph.plainInt(h.index, h.generation, callbackOf: runtime) },
                             inCallback: getIntInCallback, full: getInt)
}

/// `tether_state_get_int` from a callback (a compute's read: tracked).
@inline(never)
private func getIntInCallback(_ id: UInt64, _ out: UnsafeMutablePointer<Int64>) -> Int32 {
    Runtimes.plainGetInCallback(id, out, { graph, h, runtime in graph.plainInt(h.index, h.generation, callbackOf: runtime) },
                                full: getInt)
}

/// The full path of `tether_state_get_int` (every error, conversion and
/// callback case), out of line so the plain path has no frame to set up.
/// `wake`: the lock the plain path released with a waiter to wake.
@inline(never)
private func getInt(_ id: UInt64, _ out: UnsafeMutablePointer<Int64>?,
                     _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    fullGet("tether_state_get_int", id, out, wake, Scalar.int)
}

@_cdecl("tether_state_get_double")
public func tether_state_get_double(_ s: tether_state_t, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guard let out else { return getDouble(s.id, nil, nil) }
    return Runtimes.plainGet(s.id, out, { graph, h, runtime in graph.plainDouble(h.index, h.generation, callbackOf: runtime) },
                             inCallback: getDoubleInCallback, full: getDouble)
}

/// `tether_state_get_double` from a callback (a compute's read: tracked).
@inline(never)
private func getDoubleInCallback(_ id: UInt64, _ out: UnsafeMutablePointer<Double>) -> Int32 {
    Runtimes.plainGetInCallback(id, out, { graph, h, runtime in graph.plainDouble(h.index, h.generation, callbackOf: runtime) },
                                full: getDouble)
}

/// The full path of `tether_state_get_double` (every error, conversion and
/// callback case), out of line so the plain path has no frame to set up.
/// `wake`: the lock the plain path released with a waiter to wake.
@inline(never)
private func getDouble(_ id: UInt64, _ out: UnsafeMutablePointer<Double>?,
                     _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    fullGet("tether_state_get_double", id, out, wake, Scalar.double)
}

@_cdecl("tether_state_get_string")
public func tether_state_get_string(_ s: tether_state_t, _ buf: UnsafeMutablePointer<CChar>?, _ size: Int,
                                    _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    stateCall("tether_state_get_string", s) { () throws(TetherError) in
        let v = try Runtimes.readState(s.id)
        guard case let .string(str) = v else { throw Scalar.mismatch(v.type, "string") }
        try copyOutString(str, buf, size, len)
    }
}

@_cdecl("tether_state_get_bytes")
public func tether_state_get_bytes(_ s: tether_state_t, _ buf: UnsafeMutableRawPointer?, _ size: Int,
                                   _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    stateCall("tether_state_get_bytes", s) { () throws(TetherError) in
        let v = try Runtimes.readState(s.id)
        guard case let .bytes(b) = v else { throw Scalar.mismatch(v.type, "bytes") }
        try copyOut(b, buf, size, len, terminate: false)
    }
}

@_cdecl("tether_state_get_json")
public func tether_state_get_json(_ s: tether_state_t, _ flags: UInt32, _ buf: UnsafeMutablePointer<CChar>?,
                                  _ size: Int, _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    stateCall("tether_state_get_json", s) { () throws(TetherError) in
        try copyOutJSON(Runtimes.readState(s.id), flags: flags, buf, size, len)
    }
}

@_cdecl("tether_state_get_path")
public func tether_state_get_path(_ s: tether_state_t, _ path: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return nullOut("tether_state_get_path") }
    return stateCall("tether_state_get_path", s) { () throws(TetherError) in
        out.pointee = newOwnedValue(try Runtimes.readState(s.id, at: pointerText(path)))
    }
}

@_cdecl("tether_state_get_path_bool")
public func tether_state_get_path_bool(_ s: tether_state_t, _ path: UnsafePointer<CChar>?,
                                       _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    stateGetPath(s, path, out, "tether_state_get_path_bool") { (v) throws(TetherError) in try Scalar.bool(v) }
}

@_cdecl("tether_state_get_path_int")
public func tether_state_get_path_int(_ s: tether_state_t, _ path: UnsafePointer<CChar>?,
                                      _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    stateGetPath(s, path, out, "tether_state_get_path_int") { (v) throws(TetherError) in try Scalar.int(v) }
}

@_cdecl("tether_state_get_path_double")
public func tether_state_get_path_double(_ s: tether_state_t, _ path: UnsafePointer<CChar>?,
                                         _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    stateGetPath(s, path, out, "tether_state_get_path_double") { (v) throws(TetherError) in try Scalar.double(v) }
}

/// A typed read of the part at `path`: the read of tether_state_get_path
/// (tracking, transactions, remote states alike), of the scalar there in
/// place of a value made for the caller and freed by it.
@inline(__always)
private func stateGetPath<T>(_ s: tether_state_t, _ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<T>?,
                             _ fn: StaticString, _ convert: (ScalarValue) throws(TetherError) -> T) -> Int32 {
    guard let out else { return nullOut(fn) }
    return stateCall(fn, s) { () throws(TetherError) in
        out.pointee = try convert(try Runtimes.readStateScalar(s.id, at: pointerText(path)))
    }
}

// MARK: Writing

@_cdecl("tether_state_set")
public func tether_state_set(_ s: tether_state_t, _ v: OpaquePointer?) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_state_set: value is NULL") }
    return setValue(s, "tether_state_set") { valuePointer(v).pointee }
}

@_cdecl("tether_state_set_bool")
public func tether_state_set_bool(_ s: tether_state_t, _ v: Bool) -> Int32 {
    Runtimes.plainSet(s.id, v, { $0.writePlainBool($1, $2, $3) }, held: setBoolHeld, full: setBool)
}

/// `setScalarHeld` and `setScalar` of a bool: functions of their own, not
/// closures at the call (those shuffled the arguments on the plain path
/// before its tail calls: +3 instructions a write).
@inline(never)
private func setBoolHeld(_ slot: Int32, _ id: UInt64, _ v: Bool) -> Int32 {
    setScalarHeld("tether_state_set_bool", slot, id, .bool(v))
}

@inline(never)
private func setBool(_ id: UInt64, _ v: Bool, _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    setScalar("tether_state_set_bool", id, .bool(v), wake)
}

@_cdecl("tether_state_set_int")
public func tether_state_set_int(_ s: tether_state_t, _ v: Int64) -> Int32 {
    Runtimes.plainSet(s.id, v, { $0.writePlainInt($1, $2, $3) }, held: setIntHeld, full: setInt)
}

/// `setScalar` of an int (a function of its own, as `setDouble`).
@inline(never)
private func setInt(_ id: UInt64, _ v: Int64, _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    setScalar("tether_state_set_int", id, .int(v), wake)
}

@_cdecl("tether_state_set_double")
public func tether_state_set_double(_ s: tether_state_t, _ v: Double) -> Int32 {
    Runtimes.plainSet(s.id, v, { $0.writePlainDouble($1, $2, $3) }, held: setDoubleHeld, full: setDouble)
}

/// `setScalarHeld` and `setScalar` of a double: functions of their own, not
/// closures at the call (those shuffled the arguments on the plain path
/// before its tail calls: +3 instructions a write).
@inline(never)
private func setDoubleHeld(_ slot: Int32, _ id: UInt64, _ v: Double) -> Int32 {
    setScalarHeld("tether_state_set_double", slot, id, .double(v))
}

@inline(never)
private func setDouble(_ id: UInt64, _ v: Double, _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    setScalar("tether_state_set_double", id, .double(v), wake)
}

/// `tether_state_set_int` on the access its plain path took, for a state
/// the plain store does not cover (watched, read, described, another type):
/// its own, for the one-function SYNC write of an int (`finishHeld`).
@inline(never)
private func setIntHeld(_ slot: Int32, _ id: UInt64, _ v: Int64) -> Int32 {
    if case let .failed(error) = Runtimes.finishHeld(slot, id, v) {
        return fail("tether_state_set_int", .state, id, error)
    }
    return 0
}

/// `setIntHeld` for a double or a bool, written by `fn`.
@inline(__always)
private func setScalarHeld(_ fn: StaticString, _ slot: Int32, _ id: UInt64, _ v: ScalarValue) -> Int32 {
    if case let .failed(error) = Runtimes.finishHeld(slot, id, scalar: v) {
        return fail(fn, .state, id, error)
    }
    return 0
}

/// The full path of a typed write `fn` (callbacks, transactions,
/// contention, errors), inlined into each type's out-of-line `setInt`,
/// `setDouble`, `setBool`, so the plain path has no frame. `wake`: the
/// lock the plain path released with a waiter to wake.
@inline(__always)
private func setScalar(_ fn: StaticString, _ id: UInt64, _ v: ScalarValue,
                       _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    if let wake { tether_internal_lock_wake(wake) }
    return stateCall(fn, tether_state_t(id: id)) { () throws(TetherError) in
        try Runtimes.writeState(id, .set(Value(trivial: v)))
    }
}

@_cdecl("tether_state_set_string")
public func tether_state_set_string(_ s: tether_state_t, _ str: UnsafePointer<CChar>?, _ len: Int) -> Int32 {
    setValue(s, "tether_state_set_string") { () throws(TetherError) in try stringValue(str, len, "str") }
}

@_cdecl("tether_state_set_bytes")
public func tether_state_set_bytes(_ s: tether_state_t, _ data: UnsafeRawPointer?, _ len: Int) -> Int32 {
    setValue(s, "tether_state_set_bytes") { () throws(TetherError) in try bytesValue(data, len, "data") }
}

@_cdecl("tether_state_set_json")
public func tether_state_set_json(_ s: tether_state_t, _ json: UnsafePointer<CChar>?, _ len: Int) -> Int32 {
    setValue(s, "tether_state_set_json") { () throws(TetherError) in try jsonValue(json, len, "json") }
}

@_cdecl("tether_state_set_path")
public func tether_state_set_path(_ s: tether_state_t, _ path: UnsafePointer<CChar>?, _ v: OpaquePointer?) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_state_set_path: value is NULL") }
    return setPath(s, path, "tether_state_set_path") { valuePointer(v).pointee }
}

@_cdecl("tether_state_set_path_json")
public func tether_state_set_path_json(_ s: tether_state_t, _ path: UnsafePointer<CChar>?,
                                       _ json: UnsafePointer<CChar>?, _ len: Int) -> Int32 {
    setPath(s, path, "tether_state_set_path_json") { () throws(TetherError) in try jsonValue(json, len, "json") }
}

private func setPath(_ s: tether_state_t, _ path: UnsafePointer<CChar>?, _ fn: StaticString,
                     _ make: () throws(TetherError) -> Value) -> Int32 {
    stateCall(fn, s) { () throws(TetherError) in
        let where_ = try pointer(path)
        try Runtimes.writeState(s.id, .put(try make(), at: where_))
    }
}

@_cdecl("tether_state_remove_path")
public func tether_state_remove_path(_ s: tether_state_t, _ path: UnsafePointer<CChar>?) -> Int32 {
    stateCall("tether_state_remove_path", s) { () throws(TetherError) in
        try Runtimes.writeState(s.id, .remove(at: try pointer(path)))
    }
}
