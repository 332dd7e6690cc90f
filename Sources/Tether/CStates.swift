import CTether
import TetherCore

// The state functions of include/tether.h.

@inline(__always)
private func stateID(_ id: UInt64) -> StateID {
    let h = HandleCodec.decode(id)
    return StateID(index: h.index, generation: h.generation)
}

@inline(never)
private func stateError(_ fn: StaticString, _ s: tether_state_t, _ error: TetherError) -> Int32 {
    fail(TetherError(error.code, "\(fn)(state \(hex(s.id))): \(error.message)"))
}

/// Reads the state's value under its runtime's lock (a copy is a retain at
/// most) and hands it to `body` outside the lock.
@inline(__always)
private func readState(_ s: tether_state_t, _ fn: StaticString, at path: UnsafePointer<CChar>? = nil, usePath: Bool = false,
                       _ body: (Value) throws(TetherError) -> Void) -> Int32 {
    var jsonPath: PointerText?
    if usePath {
        do { jsonPath = try pointerText(path) } catch { return stateError(fn, s, error) }
    }
    return readState(s, fn, { (graph, id, tracked) throws(TetherError) in
        // Whole-value reads skip the path walk.
        guard let jsonPath else { return try graph.read(id, tracked: tracked) }
        return try graph.read(id, at: jsonPath, tracked: tracked)
    }, staged: { (whole) throws(TetherError) in
        try jsonPath.map { (p) throws(TetherError) in try whole.value(at: p) } ?? whole
    }, body)
}

/// A typed getter's read: the value as a scalar, never copied out.
@inline(__always)
private func readScalar(_ s: tether_state_t, _ fn: StaticString,
                        _ body: (ScalarValue) throws(TetherError) -> Void) -> Int32 {
    readState(s, fn, { (graph, id, tracked) throws(TetherError) in try graph.readScalar(id, tracked: tracked) },
              staged: { $0.scalar }, body)
}

/// Reads a state with its runtime's lock held: `read` from the graph, or
/// `staged` from the value this thread's transaction sees.
@inline(__always)
private func readState<T>(_ s: tether_state_t, _ fn: StaticString,
                          _ read: (Graph, StateID, Bool) throws(TetherError) -> T,
                          staged: (Value) throws(TetherError) -> T,
                          _ body: (T) throws(TetherError) -> Void) -> Int32 {
    RuntimeTable.withAcquired(s.id, .state, stale: { staleHandle("state", s.id) }) { runtime in
        let value: T
        do throws(TetherError) {
            // Inside a compute callback or effect of this runtime the read is a dependency.
            let tracked = runtime.graph.isEvaluating && DeliveryContext.isDelivering(runtime.id)
            if tether_internal_get_contexts() != 0 {
                // This thread may have staged a value in a transaction.
                value = try staged(try runtime.visibleValue(stateID(s.id), tracked: tracked))
            } else {
                value = try read(runtime.graph, stateID(s.id), tracked)
            }
        } catch {
            runtime.lock.unlock()
            return stateError(fn, s, error)
        }
        runtime.lock.unlock()
        do throws(TetherError) { try body(value) } catch { return stateError(fn, s, error) }
        return 0
    }
}

/// Applies (or stages) a write through the runtime's one write path.
@inline(__always)
private func writeState(_ s: tether_state_t, _ fn: StaticString, _ op: WriteOp) -> Int32 {
    RuntimeTable.withAcquired(s.id, .state, stale: { staleHandle("state", s.id) }) { runtime in
        if case let .failed(error) = runtime.write(stateID(s.id), op) { return stateError(fn, s, error) }
        return 0
    }
}

@inline(__always)
private func setValue(_ s: tether_state_t, _ fn: StaticString, _ make: () throws(TetherError) -> Value) -> Int32 {
    let value: Value
    do { value = try make() } catch { return stateError(fn, s, error) }
    return writeState(s, fn, .set(value))
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
    guard let out else { return fail(.invalidArgument, "\(fn): out is NULL") }
    guard flags & ~UInt32(TETHER_STATE_LOCK_TYPE) == 0 else {
        return fail(.invalidArgument, "\(fn): unknown state flags 0x\(String(flags, radix: 16))")
    }
    let value: Value
    do { value = try make() } catch { return fail(TetherError(error.code, "\(fn): \(error.message)")) }
    return RuntimeTable.withAcquired(rt.id, .runtime, stale: { staleHandle("runtime", rt.id) }) { runtime in
        defer { runtime.lock.unlock() }
        do throws(TetherError) {
            let id = try runtime.graph.createState(value, typeLocked: flags & UInt32(TETHER_STATE_LOCK_TYPE) != 0)
            out.pointee = tether_state_t(id: HandleCodec.state(runtime.slotIndex, id))
            runtime.adopt(out.pointee.id)
            return 0
        } catch {
            return fail(TetherError(error.code, "\(fn): \(error.message)"))
        }
    }
}

@_cdecl("tether_state_free")
public func tether_state_free(_ s: tether_state_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(s.id, .state) else { return staleHandle("state", s.id) }
    if runtime.graph.validatingDepth > 0 && DeliveryContext.isDelivering(runtime.id) {
        runtime.lock.unlock()
        return fail(.busy, "tether_state_free(state \(hex(s.id))): a validator must not free states (it may only accept or reject)")
    }
    let sinks: [ObserverSink]
    do {
        sinks = try runtime.graph.freeState(stateID(s.id))
    } catch {
        runtime.lock.unlock()
        return stateError("tether_state_free", s, error)
    }
    runtime.lock.unlock()
    for sink in sinks { sink.runRelease() }
    return 0
}

// MARK: Reading

@_cdecl("tether_state_type")
public func tether_state_type(_ s: tether_state_t, _ out: UnsafeMutablePointer<tether_type_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_state_type: out is NULL") }
    return readState(s, "tether_state_type") { v in out.pointee = tether_type_t(UInt32(v.type.rawValue)) }
}

@_cdecl("tether_state_revision")
public func tether_state_revision(_ s: tether_state_t, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_state_revision: out is NULL") }
    guard let runtime = RuntimeTable.acquire(s.id, .state) else { return staleHandle("state", s.id) }
    defer { runtime.lock.unlock() }
    do {
        out.pointee = try runtime.graph.stateRevision(stateID(s.id))
        return 0
    } catch {
        return stateError("tether_state_revision", s, error)
    }
}

@_cdecl("tether_state_get")
public func tether_state_get(_ s: tether_state_t, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_state_get: out is NULL") }
    return readState(s, "tether_state_get") { v in out.pointee = newOwnedValue(v) }
}

@_cdecl("tether_state_get_bool")
public func tether_state_get_bool(_ s: tether_state_t, _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_state_get_bool: out is NULL") }
    return readScalar(s, "tether_state_get_bool") { (v) throws(TetherError) in out.pointee = try Scalar.bool(v) }
}

@_cdecl("tether_state_get_int")
public func tether_state_get_int(_ s: tether_state_t, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_state_get_int: out is NULL") }
    return readScalar(s, "tether_state_get_int") { (v) throws(TetherError) in out.pointee = try Scalar.int(v) }
}

@_cdecl("tether_state_get_double")
public func tether_state_get_double(_ s: tether_state_t, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_state_get_double: out is NULL") }
    return readScalar(s, "tether_state_get_double") { (v) throws(TetherError) in out.pointee = try Scalar.double(v) }
}

@_cdecl("tether_state_get_string")
public func tether_state_get_string(_ s: tether_state_t, _ buf: UnsafeMutablePointer<CChar>?, _ size: Int,
                                    _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    readState(s, "tether_state_get_string") { (v) throws(TetherError) in
        guard case let .string(str) = v else { throw Scalar.mismatch(v.type, "string") }
        try copyOutString(str, buf, size, len)
    }
}

@_cdecl("tether_state_get_bytes")
public func tether_state_get_bytes(_ s: tether_state_t, _ buf: UnsafeMutableRawPointer?, _ size: Int,
                                   _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    readState(s, "tether_state_get_bytes") { (v) throws(TetherError) in
        guard case let .bytes(b) = v else { throw Scalar.mismatch(v.type, "bytes") }
        try copyOut(b, buf, size, len, terminate: false)
    }
}

@_cdecl("tether_state_get_json")
public func tether_state_get_json(_ s: tether_state_t, _ flags: UInt32, _ buf: UnsafeMutablePointer<CChar>?,
                                  _ size: Int, _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    readState(s, "tether_state_get_json") { (v) throws(TetherError) in try copyOutJSON(v, flags: flags, buf, size, len) }
}

@_cdecl("tether_state_get_path")
public func tether_state_get_path(_ s: tether_state_t, _ path: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_state_get_path: out is NULL") }
    return readState(s, "tether_state_get_path", at: path, usePath: true) { v in out.pointee = newOwnedValue(v) }
}

// MARK: Writing

@_cdecl("tether_state_set")
public func tether_state_set(_ s: tether_state_t, _ v: OpaquePointer?) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_state_set: value is NULL") }
    return setValue(s, "tether_state_set") { valuePointer(v).pointee }
}

@_cdecl("tether_state_set_bool")
public func tether_state_set_bool(_ s: tether_state_t, _ v: Bool) -> Int32 {
    setValue(s, "tether_state_set_bool") { .bool(v) }
}

@_cdecl("tether_state_set_int")
public func tether_state_set_int(_ s: tether_state_t, _ v: Int64) -> Int32 {
    writeState(s, "tether_state_set_int", .set(.int(v)))
}

@_cdecl("tether_state_set_double")
public func tether_state_set_double(_ s: tether_state_t, _ v: Double) -> Int32 {
    setValue(s, "tether_state_set_double") { .double(v) }
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
    let value: Value
    let where_: JSONPointer
    do {
        where_ = try pointer(path)
        value = try make()
    } catch {
        return stateError(fn, s, error)
    }
    return writeState(s, fn, .put(value, at: where_))
}

@_cdecl("tether_state_remove_path")
public func tether_state_remove_path(_ s: tether_state_t, _ path: UnsafePointer<CChar>?) -> Int32 {
    let where_: JSONPointer
    do { where_ = try pointer(path) } catch { return stateError("tether_state_remove_path", s, error) }
    return writeState(s, "tether_state_remove_path", .remove(at: where_))
}
