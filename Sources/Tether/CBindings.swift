import CTether
import TetherCore
import TetherRuntime

// The binding functions of include/tether.h, except tether_binding_bind
// (CTransformBindings.swift). The logic: TetherRuntime's EngineBindings.swift.

@inline(__always)
private func bindingCall(_ fn: StaticString, _ b: tether_binding_t, _ body: () throws(TetherError) -> Void) -> Int32 {
    call(fn, .binding, b.id, body)
}

// MARK: Making bindings

@_cdecl("tether_state_binding")
public func tether_state_binding(_ s: tether_state_t, _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    guard let out else { return nullOut("tether_state_binding") }
    return call("tether_state_binding", .state, s.id) { () throws(TetherError) in
        out.pointee = tether_binding_t(id: try Runtimes.stateBinding(s.id))
    }
}

@_cdecl("tether_binding_project")
public func tether_binding_project(_ b: tether_binding_t, _ path: UnsafePointer<CChar>?,
                                   _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    guard let out else { return nullOut("tether_binding_project") }
    let step: JSONPointer
    do { step = try pointer(path) } catch { return fail("tether_binding_project", error) }
    return bindingCall("tether_binding_project", b) { () throws(TetherError) in
        out.pointee = tether_binding_t(id: try Runtimes.project(b.id, .pointer(step)))
    }
}

@_cdecl("tether_binding_index")
public func tether_binding_index(_ b: tether_binding_t, _ index: Int,
                                 _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    guard let out else { return nullOut("tether_binding_index") }
    guard index >= 0 else {
        return fail(.outOfRange, "tether_binding_index: index \(UInt(bitPattern: index)) is beyond any array")
    }
    return bindingCall("tether_binding_index", b) { () throws(TetherError) in
        out.pointee = tether_binding_t(id: try Runtimes.project(b.id, .index(index)))
    }
}

@_cdecl("tether_binding_new_custom")
public func tether_binding_new_custom(_ rt: tether_runtime_t, _ get: tether_binding_get_fn?, _ set: tether_binding_set_fn?,
                                      _ userData: UnsafeMutableRawPointer?, _ destroy: tether_destroy_fn?,
                                      _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    guard let out else { return nullOut("tether_binding_new_custom") }
    guard let get else { return nullOut("tether_binding_new_custom", "get") }
    let setter = CustomSetter(set: set, userData: userData, destroy: destroy)
    return call("tether_binding_new_custom") { () throws(TetherError) in
        out.pointee = tether_binding_t(id: try Runtimes.newCustomBinding(in: rt.id, get: get, setter: setter, userData: userData))
    }
}

@_cdecl("tether_binding_new_constant")
public func tether_binding_new_constant(_ rt: tether_runtime_t, _ value: OpaquePointer?,
                                        _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    guard let out else { return nullOut("tether_binding_new_constant") }
    let constant = value.map { valuePointer($0).pointee } ?? .null
    return call("tether_binding_new_constant") { () throws(TetherError) in
        out.pointee = tether_binding_t(id: try Runtimes.newConstantBinding(in: rt.id, constant))
    }
}

@_cdecl("tether_binding_free")
public func tether_binding_free(_ b: tether_binding_t) -> Int32 {
    bindingCall("tether_binding_free", b) { () throws(TetherError) in try Runtimes.freeBinding(b.id) }
}

// MARK: Reading

@_cdecl("tether_binding_get")
public func tether_binding_get(_ b: tether_binding_t, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return nullOut("tether_binding_get") }
    return bindingCall("tether_binding_get", b) { () throws(TetherError) in out.pointee = newOwnedValue(try Runtimes.readBinding(b.id)) }
}

@_cdecl("tether_binding_get_bool")
public func tether_binding_get_bool(_ b: tether_binding_t, _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    guard let out else { return nullOut("tether_binding_get_bool") }
    return bindingCall("tether_binding_get_bool", b) { () throws(TetherError) in out.pointee = try Scalar.bool(Runtimes.readBinding(b.id)) }
}

@_cdecl("tether_binding_get_int")
public func tether_binding_get_int(_ b: tether_binding_t, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    guard let out else { return nullOut("tether_binding_get_int") }
    return bindingCall("tether_binding_get_int", b) { () throws(TetherError) in out.pointee = try Scalar.int(Runtimes.readBinding(b.id)) }
}

@_cdecl("tether_binding_get_double")
public func tether_binding_get_double(_ b: tether_binding_t, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guard let out else { return nullOut("tether_binding_get_double") }
    return bindingCall("tether_binding_get_double", b) { () throws(TetherError) in out.pointee = try Scalar.double(Runtimes.readBinding(b.id)) }
}

@_cdecl("tether_binding_get_string")
public func tether_binding_get_string(_ b: tether_binding_t, _ buf: UnsafeMutablePointer<CChar>?, _ size: Int,
                                      _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    bindingCall("tether_binding_get_string", b) { () throws(TetherError) in
        let v = try Runtimes.readBinding(b.id)
        guard case let .string(str) = v else { throw Scalar.mismatch(v.type, "string") }
        try copyOutString(str, buf, size, len)
    }
}

@_cdecl("tether_binding_get_json")
public func tether_binding_get_json(_ b: tether_binding_t, _ flags: UInt32, _ buf: UnsafeMutablePointer<CChar>?,
                                    _ size: Int, _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    bindingCall("tether_binding_get_json", b) { () throws(TetherError) in
        try copyOutJSON(Runtimes.readBinding(b.id), flags: flags, buf, size, len)
    }
}

// MARK: Writing

@inline(__always)
private func writeBinding(_ b: tether_binding_t, _ fn: StaticString, _ make: () throws(TetherError) -> Value) -> Int32 {
    bindingCall(fn, b) { () throws(TetherError) in try Runtimes.writeBinding(b.id, try make()) }
}

@_cdecl("tether_binding_set")
public func tether_binding_set(_ b: tether_binding_t, _ v: OpaquePointer?) -> Int32 {
    guard let v else { return fail(.invalidArgument, "tether_binding_set: value is NULL") }
    return writeBinding(b, "tether_binding_set") { valuePointer(v).pointee }
}

@_cdecl("tether_binding_set_bool")
public func tether_binding_set_bool(_ b: tether_binding_t, _ v: Bool) -> Int32 {
    writeBinding(b, "tether_binding_set_bool") { .bool(v) }
}

@_cdecl("tether_binding_set_int")
public func tether_binding_set_int(_ b: tether_binding_t, _ v: Int64) -> Int32 {
    writeBinding(b, "tether_binding_set_int") { .int(v) }
}

@_cdecl("tether_binding_set_double")
public func tether_binding_set_double(_ b: tether_binding_t, _ v: Double) -> Int32 {
    writeBinding(b, "tether_binding_set_double") { .double(v) }
}

@_cdecl("tether_binding_set_string")
public func tether_binding_set_string(_ b: tether_binding_t, _ str: UnsafePointer<CChar>?, _ len: Int) -> Int32 {
    writeBinding(b, "tether_binding_set_string") { () throws(TetherError) in try stringValue(str, len, "str") }
}

@_cdecl("tether_binding_set_json")
public func tether_binding_set_json(_ b: tether_binding_t, _ json: UnsafePointer<CChar>?, _ len: Int) -> Int32 {
    writeBinding(b, "tether_binding_set_json") { () throws(TetherError) in try jsonValue(json, len, "json") }
}

// MARK: Observing

@_cdecl("tether_binding_observe")
public func tether_binding_observe(_ b: tether_binding_t, _ path: UnsafePointer<CChar>?, _ flags: UInt32,
                                   _ fn: tether_observer_fn?, _ userData: UnsafeMutableRawPointer?,
                                   _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_observer_t>?) -> Int32 {
    var code: Int32 = 0
    guard let relative = observeArguments("tether_binding_observe", out, fn, flags, path, &code),
          let out, let fn else { return code }
    return bindingCall("tether_binding_observe", b) { () throws(TetherError) in
        out.pointee = tether_observer_t(id: try Runtimes.observe(binding: b.id, path: relative, options: ObserverOptions(rawValue: flags)) {
            slot, full, showState in
            makeSink(slot: slot, fn: fn, userData: userData, destroy: destroy, path: full.isRoot ? nil : full,
                     binding: b.id, showState: showState)
        })
    }
}
