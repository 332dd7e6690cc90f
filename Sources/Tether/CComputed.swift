import CTether
import TetherCore

// The computed-value functions of include/tether.h.

@_cdecl("tether_computed_new")
public func tether_computed_new(_ rt: tether_runtime_t, _ fn: tether_compute_fn?, _ userData: UnsafeMutableRawPointer?,
                                _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_computed_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_computed_new: out is NULL") }
    guard let fn else { return fail(.invalidArgument, "tether_computed_new: fn is NULL") }
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    defer { runtime.lock.unlock() }
    let body = CComputeBody(fn, userData, destroy)
    do {
        let id = try runtime.graph.createDerived(.computed, body: body)
        out.pointee = tether_computed_t(id: HandleCodec.derived(runtime.slotIndex, .computed, id))
        runtime.adopt(out.pointee.id)
        return 0
    } catch {
        return fail(TetherError(error.code, "tether_computed_new: \(error.message)"))
    }
}

@_cdecl("tether_computed_free")
public func tether_computed_free(_ c: tether_computed_t) -> Int32 {
    freeDerived(c.id, .computed, "tether_computed_free")
}

/// Frees a computed, effect or tracking: its cleanup and destroy run as
/// callbacks (under the delivery lock), never concurrently with others.
func freeDerived(_ id: UInt64, _ kind: HandleKind, _ fn: String) -> Int32 {
    guard let runtime = RuntimeTable.acquire(id, kind) else { return staleHandle("\(kind)", id) }
    guard let owns = runtime.enterEvaluation() else { return staleHandle("\(kind)", id) }
    let coreKind: DerivedKind = kind == .computed ? .computed : kind == .effect ? .effect : .tracking
    let body: DerivedBody?
    do {
        body = try runtime.graph.freeDerived(HandleCodec.derivedID(id), coreKind)
    } catch {
        runtime.leaveEvaluation(ownsDelivery: owns)
        return fail(TetherError(error.code, "\(fn)(\(hex(id))): \(error.message)"))
    }
    if let body { runtime.graph.pendingRelease(body) }
    runtime.leaveEvaluation(ownsDelivery: owns)
    return 0
}

/// Reads a computed (evaluating it if needed) and hands the value to `body`
/// outside every lock.
private func readComputed(_ c: tether_computed_t, _ fn: StaticString, _ body: (Value) throws(TetherError) -> Void) -> Int32 {
    readComputed(c, fn, { (graph, id, tracked) throws(TetherError) in try graph.readComputed(id, tracked: tracked) }, body)
}

/// A typed getter's read: the value as a scalar, never copied out.
@inline(__always)
private func readScalar(_ c: tether_computed_t, _ fn: StaticString, _ body: (ScalarValue) throws(TetherError) -> Void) -> Int32 {
    readComputed(c, fn, { (graph, id, tracked) throws(TetherError) in try graph.readComputedScalar(id, tracked: tracked) }, body)
}

@inline(__always)
private func readComputed<T>(_ c: tether_computed_t, _ fn: StaticString,
                             _ read: (Graph, DerivedID, Bool) throws(TetherError) -> T,
                             _ body: (T) throws(TetherError) -> Void) -> Int32 {
    RuntimeTable.withAcquired(c.id, .computed, stale: { staleHandle("computed", c.id) }) { runtime in
        // Inside a callback of this runtime (a compute reading its sources):
        // this thread already holds the delivery lock, and the frame running
        // the callback keeps the runtime alive. A dependency when something
        // is being evaluated.
        if DeliveryContext.isDelivering(runtime.id) {
            return readComputedLocked(runtime, tracked: runtime.graph.isEvaluating,
                                      leave: { runtime.leaveEvaluation(ownsDelivery: false) }, c, fn, read, body)
        }
        // An outermost read of a computed that is up to date runs no
        // callback, so it needs neither the pin nor the delivery lock: a
        // read under the graph lock, as a state's is (profiled: a kairo
        // check read cost 287 instructions with them, 185 without).
        if runtime.graph.computedIsUpToDate(HandleCodec.derivedID(c.id)) {
            return readComputedLocked(runtime, tracked: false, leave: { runtime.lock.unlock() }, c, fn, read, body)
        }
        // Any other outermost read may run compute callbacks: pinned, and
        // under the delivery lock (taken here).
        return runtime.pinned {
            guard let owns = runtime.enterEvaluation() else { return staleHandle("computed", c.id) }
            return readComputedLocked(runtime, tracked: runtime.graph.isEvaluating && !owns,
                                      leave: { runtime.leaveEvaluation(ownsDelivery: owns) }, c, fn, read, body)
        }
    }
}

/// `readComputed` with the runtime's lock held: reads, then `leave`
/// releases what the caller took, then `body` gets the value outside every
/// lock.
@inline(__always)
private func readComputedLocked<T>(_ runtime: Runtime, tracked: Bool, leave: () -> Void, _ c: tether_computed_t,
                                   _ fn: StaticString,
                                   _ read: (Graph, DerivedID, Bool) throws(TetherError) -> T,
                                   _ body: (T) throws(TetherError) -> Void) -> Int32 {
    let value: T
    do throws(TetherError) {
        value = try read(runtime.graph, HandleCodec.derivedID(c.id), tracked)
    } catch {
        leave()
        return fail(TetherError(error.code, "\(fn)(computed \(hex(c.id))): \(error.message)"))
    }
    leave()
    do throws(TetherError) { try body(value) } catch { return fail(TetherError(error.code, "\(fn)(computed \(hex(c.id))): \(error.message)")) }
    return 0
}

@_cdecl("tether_computed_get")
public func tether_computed_get(_ c: tether_computed_t, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_computed_get: out is NULL") }
    return readComputed(c, "tether_computed_get") { v in out.pointee = newOwnedValue(v) }
}

@_cdecl("tether_computed_get_path")
public func tether_computed_get_path(_ c: tether_computed_t, _ path: UnsafePointer<CChar>?,
                                     _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_computed_get_path: out is NULL") }
    let jsonPath: PointerText
    do { jsonPath = try pointerText(path) } catch {
        return fail(TetherError(error.code, "tether_computed_get_path(computed \(hex(c.id))): \(error.message)"))
    }
    return readComputed(c, "tether_computed_get_path", { (graph, id, tracked) throws(TetherError) in
        try graph.readComputed(id, at: jsonPath, tracked: tracked)
    }) { v in out.pointee = newOwnedValue(v) }
}

@_cdecl("tether_computed_get_bool")
public func tether_computed_get_bool(_ c: tether_computed_t, _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_computed_get_bool: out is NULL") }
    return readScalar(c, "tether_computed_get_bool") { (v) throws(TetherError) in out.pointee = try Scalar.bool(v) }
}

@_cdecl("tether_computed_get_int")
public func tether_computed_get_int(_ c: tether_computed_t, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_computed_get_int: out is NULL") }
    return readScalar(c, "tether_computed_get_int") { (v) throws(TetherError) in out.pointee = try Scalar.int(v) }
}

@_cdecl("tether_computed_get_double")
public func tether_computed_get_double(_ c: tether_computed_t, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_computed_get_double: out is NULL") }
    return readScalar(c, "tether_computed_get_double") { (v) throws(TetherError) in out.pointee = try Scalar.double(v) }
}

@_cdecl("tether_computed_get_json")
public func tether_computed_get_json(_ c: tether_computed_t, _ flags: UInt32, _ buf: UnsafeMutablePointer<CChar>?,
                                     _ size: Int, _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    readComputed(c, "tether_computed_get_json") { (v) throws(TetherError) in try copyOutJSON(v, flags: flags, buf, size, len) }
}

@_cdecl("tether_computed_observe")
public func tether_computed_observe(_ c: tether_computed_t, _ path: UnsafePointer<CChar>?, _ flags: UInt32,
                                    _ fn: tether_observer_fn?, _ userData: UnsafeMutableRawPointer?,
                                    _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_observer_t>?) -> Int32 {
    var code: Int32 = 0
    guard let observed = observeArguments("tether_computed_observe", out, fn, flags, path, &code),
          let out, let fn else { return code }
    guard let runtime = RuntimeTable.acquire(c.id, .computed) else { return staleHandle("computed", c.id) }
    guard let owns = runtime.enterEvaluation() else { return staleHandle("computed", c.id) }
    let sink = makeSink(slot: runtime.slotIndex, fn: fn, userData: userData, destroy: destroy,
                        path: observed.isRoot ? nil : observed)
    do {
        let id = try runtime.graph.observe(HandleCodec.derivedID(c.id), path: observed,
                                           options: ObserverOptions(rawValue: flags), sink: sink)
        out.pointee = tether_observer_t(id: HandleCodec.observer(runtime.slotIndex, id))
        runtime.adopt(out.pointee.id)
    } catch {
        runtime.leaveEvaluation(ownsDelivery: owns)
        return fail(TetherError(error.code, "tether_computed_observe(computed \(hex(c.id))): \(error.message)"))
    }
    runtime.leaveEvaluation(ownsDelivery: owns)
    return 0
}
