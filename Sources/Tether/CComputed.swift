import CTether
import TetherCore
import TetherRuntime

// The computed-value functions of include/tether.h.

@inline(__always)
private func computedCall(_ fn: StaticString, _ c: tether_computed_t, _ body: () throws(TetherError) -> Void) -> Int32 {
    call(fn, .computed, c.id, body)
}

@_cdecl("tether_computed_new")
public func tether_computed_new(_ rt: tether_runtime_t, _ fn: tether_compute_fn?, _ userData: UnsafeMutableRawPointer?,
                                _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_computed_t>?) -> Int32 {
    guard let out else { return nullOut("tether_computed_new") }
    guard let fn else { return nullOut("tether_computed_new", "fn") }
    return call("tether_computed_new") { () throws(TetherError) in
        out.pointee = tether_computed_t(id: try Runtimes.newComputed(in: rt.id, body: CComputeBody(fn, userData, destroy)))
    }
}

@_cdecl("tether_computed_new_with_equal")
public func tether_computed_new_with_equal(_ rt: tether_runtime_t, _ fn: tether_compute_fn?, _ equal: tether_equal_fn?,
                                           _ userData: UnsafeMutableRawPointer?, _ destroy: tether_destroy_fn?,
                                           _ out: UnsafeMutablePointer<tether_computed_t>?) -> Int32 {
    guard let out else { return nullOut("tether_computed_new_with_equal") }
    guard let fn else { return nullOut("tether_computed_new_with_equal", "fn") }
    let body = CComputeBody(fn, userData, destroy)
    if let equal {
        // Both values lent in place for the call, as observers get theirs.
        body.equals = { old, new in
            withUnsafePointer(to: old) { o in
                withUnsafePointer(to: new) { n in
                    equal(OpaquePointer(UnsafeRawPointer(o)), OpaquePointer(UnsafeRawPointer(n)), userData)
                }
            }
        }
    }
    return call("tether_computed_new_with_equal") { () throws(TetherError) in
        out.pointee = tether_computed_t(id: try Runtimes.newComputed(in: rt.id, body: body))
    }
}

@_cdecl("tether_computed_free")
public func tether_computed_free(_ c: tether_computed_t) -> Int32 {
    computedCall("tether_computed_free", c) { () throws(TetherError) in try Runtimes.freeDerived(c.id, .computed) }
}

@_cdecl("tether_computed_get")
public func tether_computed_get(_ c: tether_computed_t, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return nullOut("tether_computed_get") }
    return computedCall("tether_computed_get", c) { () throws(TetherError) in
        out.pointee = newOwnedValue(try Runtimes.readComputed(c.id))
    }
}

@_cdecl("tether_computed_get_path")
public func tether_computed_get_path(_ c: tether_computed_t, _ path: UnsafePointer<CChar>?,
                                     _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return nullOut("tether_computed_get_path") }
    return computedCall("tether_computed_get_path", c) { () throws(TetherError) in
        out.pointee = newOwnedValue(try Runtimes.readComputed(c.id, at: pointerText(path)))
    }
}

@_cdecl("tether_computed_get_path_bool")
public func tether_computed_get_path_bool(_ c: tether_computed_t, _ path: UnsafePointer<CChar>?,
                                          _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    computedGetPath(c, path, out, "tether_computed_get_path_bool", { (v) throws(TetherError) in try Scalar.bool(v) }) {
        if case let .bool(b) = $0 { b } else { nil }
    }
}

@_cdecl("tether_computed_get_path_int")
public func tether_computed_get_path_int(_ c: tether_computed_t, _ path: UnsafePointer<CChar>?,
                                         _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    computedGetPath(c, path, out, "tether_computed_get_path_int", { (v) throws(TetherError) in try Scalar.int(v) }) {
        if case let .int(n) = $0 { n } else { nil }
    }
}

@_cdecl("tether_computed_get_path_double")
public func tether_computed_get_path_double(_ c: tether_computed_t, _ path: UnsafePointer<CChar>?,
                                            _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    computedGetPath(c, path, out, "tether_computed_get_path_double", { (v) throws(TetherError) in try Scalar.double(v) }) {
        switch $0 {
        case let .double(x): x
        case let .int(n): Double(n)
        default: nil
        }
    }
}

/// A typed read of the part at `path`: the read of tether_computed_get_path
/// (evaluation, tracking, errors alike), of the scalar there in place of a
/// value made for the caller and freed by it. The pointer's syntax is
/// checked first, as tether_computed_get_path checks it; then the plain
/// path (`Runtimes.plainComputedGet`) reads an up-to-date computed's part
/// in place, `plain` taking the scalar found (nil: not this type), and
/// anything else goes on to the full read, `convert` wording its errors.
@inline(__always)
private func computedGetPath<T>(_ c: tether_computed_t, _ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<T>?,
                                _ fn: StaticString, _ convert: (ScalarValue) throws(TetherError) -> T,
                                plain: (ScalarValue) -> T?) -> Int32 {
    guard let out else { return nullOut(fn) }
    let text: PointerText
    do throws(TetherError) { text = try pointerText(path) } catch { return fail(fn, .computed, c.id, error) }
    return Runtimes.plainComputedGet(
        c.id, out,
        { graph, h, runtime in graph.plainComputedScalar(h.index, h.generation, at: text, callbackOf: runtime, plain) },
        held: { slot, id, out in
            computedCall(fn, tether_computed_t(id: id)) { () throws(TetherError) in
                out.pointee = try convert(Runtimes.readComputedScalarHeld(slot, id, at: text).get())
            }
        },
        full: { id, out, wake in
            if let wake { tether_internal_lock_wake(wake) }
            return computedCall(fn, tether_computed_t(id: id)) { () throws(TetherError) in
                out.unsafelyUnwrapped.pointee = try convert(try Runtimes.readComputedScalar(id, at: text))
            }
        })
}

@_cdecl("tether_computed_get_bool")
public func tether_computed_get_bool(_ c: tether_computed_t, _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    guard let out else { return computedGetFull(c.id, out, nil) }
    return Runtimes.plainComputedGet(c.id, out, { graph, h, runtime in graph.plainComputedBool(h.index, h.generation, callbackOf: runtime) },
                                     held: computedGetHeld, full: computedGetFull)
}

@_cdecl("tether_computed_get_int")
public func tether_computed_get_int(_ c: tether_computed_t, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    guard let out else { return computedGetFull(c.id, out, nil) }
    return Runtimes.plainComputedGet(c.id, out, { graph, h, runtime in graph.plainComputedInt(h.index, h.generation, callbackOf: runtime) },
                                     held: computedGetHeld, full: computedGetFull)
}

@_cdecl("tether_computed_get_double")
public func tether_computed_get_double(_ c: tether_computed_t, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guard let out else { return computedGetFull(c.id, out, nil) }
    return Runtimes.plainComputedGet(c.id, out, { graph, h, runtime in graph.plainComputedDouble(h.index, h.generation, callbackOf: runtime) },
                                     held: computedGetHeld, full: computedGetFull)
}

/// The types the plain path reads from a computed: each names its getter
/// (for errors) and converts a scalar as that getter does.
private protocol ComputedScalar {
    static var getter: StaticString { get }
    static func from(_ v: ScalarValue) throws(TetherError) -> Self
}

extension Int64: ComputedScalar {
    static var getter: StaticString { "tether_computed_get_int" }
    static func from(_ v: ScalarValue) throws(TetherError) -> Int64 { try Scalar.int(v) }
}

extension Bool: ComputedScalar {
    static var getter: StaticString { "tether_computed_get_bool" }
    static func from(_ v: ScalarValue) throws(TetherError) -> Bool { try Scalar.bool(v) }
}

extension Double: ComputedScalar {
    static var getter: StaticString { "tether_computed_get_double" }
    static func from(_ v: ScalarValue) throws(TetherError) -> Double { try Scalar.double(v) }
}

/// A typed computed getter on the access its plain path took, for a
/// computed it found not plain (stale, failed, another type...).
@inline(never)
private func computedGetHeld<T: ComputedScalar>(_ slot: Int32, _ id: UInt64, _ out: UnsafeMutablePointer<T>) -> Int32 {
    computedCall(T.getter, tether_computed_t(id: id)) { () throws(TetherError) in
        out.pointee = try T.from(Runtimes.readComputedScalarHeld(slot, id).get())
    }
}

/// The full path of a typed computed getter (evaluation, errors, cycles).
/// `wake`: the lock the plain path released with a waiter to wake.
@inline(never)
private func computedGetFull<T: ComputedScalar>(_ id: UInt64, _ out: UnsafeMutablePointer<T>?,
                                                _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    if let wake { tether_internal_lock_wake(wake) }
    guard let out else { return nullOut(T.getter) }
    return computedCall(T.getter, tether_computed_t(id: id)) { () throws(TetherError) in
        out.pointee = try T.from(Runtimes.readComputedScalar(id))
    }
}

@_cdecl("tether_computed_get_json")
public func tether_computed_get_json(_ c: tether_computed_t, _ flags: UInt32, _ buf: UnsafeMutablePointer<CChar>?,
                                     _ size: Int, _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    computedCall("tether_computed_get_json", c) { () throws(TetherError) in
        try copyOutJSON(Runtimes.readComputed(c.id), flags: flags, buf, size, len)
    }
}

@_cdecl("tether_computed_observe")
public func tether_computed_observe(_ c: tether_computed_t, _ path: UnsafePointer<CChar>?, _ flags: UInt32,
                                    _ fn: tether_observer_fn?, _ userData: UnsafeMutableRawPointer?,
                                    _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_observer_t>?) -> Int32 {
    var code: Int32 = 0
    guard let observed = observeArguments("tether_computed_observe", out, fn, flags, path, &code),
          let out, let fn else { return code }
    return computedCall("tether_computed_observe", c) { () throws(TetherError) in
        out.pointee = tether_observer_t(id: try Runtimes.observe(computed: c.id, path: observed, options: ObserverOptions(rawValue: flags)) {
            makeSink(slot: $0, fn: fn, userData: userData, destroy: destroy, path: observed.isRoot ? nil : observed)
        })
    }
}
