import CTether
import TetherCore

// The binding functions of include/tether.h, except tether_binding_bind
// (CTransformBindings.swift). Records live in Runtime.bindings.

@inline(never)
private func bindingError(_ fn: String, _ id: UInt64, _ error: TetherError) -> Int32 {
    let message = error.code == .stale && error.message.hasPrefix("state handle")
        ? "the binding's source state was freed" : error.message
    return fail(TetherError(error.code, "\(fn)(binding \(hex(id))): \(message)"))
}

/// The runtime (with `lock` held) and record a binding handle names, or nil
/// (lock released, error reported through `code`).
private func acquireBinding(_ id: UInt64, _ fn: String, _ code: inout Int32) -> (Runtime, BindingRecord)? {
    guard let runtime = RuntimeTable.acquire(id, .binding) else {
        code = staleHandle("binding", id)
        return nil
    }
    let h = HandleCodec.decode(id)
    guard let record = runtime.bindings.get(h.index, h.generation) else {
        runtime.lock.unlock()
        code = staleHandle("binding", id)
        return nil
    }
    if let link = record.transform, link.ended {
        runtime.lock.unlock()
        code = fail(.stale, "\(fn)(binding \(hex(id))): the binding ended when one of its states was freed")
        return nil
    }
    return (runtime, record)
}

/// Stores a new record and writes its handle. `lock` held.
private func insertBinding(_ runtime: Runtime, _ record: BindingRecord, _ fn: String,
                           _ out: UnsafeMutablePointer<tether_binding_t>) -> Int32 {
    let generation = runtime.graph.takeGeneration()
    guard let index = runtime.bindings.insert(record, generation: generation) else {
        return fail(.noMemory, "\(fn): too many live bindings (limit \(Graph.maxNodes))")
    }
    out.pointee = tether_binding_t(id: HandleCodec.encode(slot: runtime.slotIndex, kind: .binding,
                                                          index: index, generation: generation))
    runtime.adopt(out.pointee.id)
    return 0
}

// MARK: Making bindings

@_cdecl("tether_state_binding")
public func tether_state_binding(_ s: tether_state_t, _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_state_binding: out is NULL") }
    guard let runtime = RuntimeTable.acquire(s.id, .state) else { return staleHandle("state", s.id) }
    defer { runtime.lock.unlock() }
    let h = HandleCodec.decode(s.id)
    let state = StateID(index: h.index, generation: h.generation)
    guard runtime.graph.isLive(state) else { return staleHandle("state", s.id) }
    return insertBinding(runtime, BindingRecord(source: .state(state), steps: [], ownsSource: false),
                         "tether_state_binding", out)
}

private func project(_ b: tether_binding_t, _ step: BindingStep, _ fn: String,
                     _ out: UnsafeMutablePointer<tether_binding_t>) -> Int32 {
    var code: Int32 = 0
    guard let (runtime, record) = acquireBinding(b.id, fn, &code) else { return code }
    defer { runtime.lock.unlock() }
    guard record.sourceIsLive(runtime.graph) else {
        return fail(.stale, "\(fn)(binding \(hex(b.id))): the binding's source was freed")
    }
    // A projection of a transform binding is a projection of its target.
    return insertBinding(runtime, record.projected(step), fn, out)
}

@_cdecl("tether_binding_project")
public func tether_binding_project(_ b: tether_binding_t, _ path: UnsafePointer<CChar>?,
                                   _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_binding_project: out is NULL") }
    let step: JSONPointer
    do { step = try pointer(path) } catch {
        return fail(TetherError(error.code, "tether_binding_project: \(error.message)"))
    }
    return project(b, .pointer(step), "tether_binding_project", out)
}

@_cdecl("tether_binding_index")
public func tether_binding_index(_ b: tether_binding_t, _ index: Int,
                                 _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_binding_index: out is NULL") }
    guard index >= 0 else {
        return fail(.outOfRange, "tether_binding_index: index \(UInt(bitPattern: index)) is beyond any array")
    }
    return project(b, .index(index), "tether_binding_index", out)
}

@_cdecl("tether_binding_new_custom")
public func tether_binding_new_custom(_ rt: tether_runtime_t, _ get: tether_binding_get_fn?, _ set: tether_binding_set_fn?,
                                      _ userData: UnsafeMutableRawPointer?, _ destroy: tether_destroy_fn?,
                                      _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    let fn = "tether_binding_new_custom"
    guard let out else { return fail(.invalidArgument, "\(fn): out is NULL") }
    guard let get else { return fail(.invalidArgument, "\(fn): get is NULL") }
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    defer { runtime.lock.unlock() }
    let setter = CustomSetter(set: set, userData: userData, destroy: destroy)
    var created = false
    let body = DerivedBody(computeFunction: get, userData: userData, isBindingGet: true,
                           release: { if created { setter.release() } })
    let computed: DerivedID
    do { computed = try runtime.graph.createDerived(.computed, body: body) } catch {
        return fail(TetherError(error.code, "\(fn): \(error.message)"))
    }
    let record = BindingRecord(source: .custom(computed, setter), steps: [], ownsSource: true)
    let code = insertBinding(runtime, record, fn, out)
    if code != 0 {
        _ = try? runtime.graph.freeDerived(computed, .computed)  // never ran; on error destroy is not called
        return code
    }
    created = true
    return 0
}

@_cdecl("tether_binding_new_constant")
public func tether_binding_new_constant(_ rt: tether_runtime_t, _ value: OpaquePointer?,
                                        _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    let fn = "tether_binding_new_constant"
    guard let out else { return fail(.invalidArgument, "\(fn): out is NULL") }
    let constant = value.map { valuePointer($0).pointee } ?? .null
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    defer { runtime.lock.unlock() }
    let state: StateID
    do { state = try runtime.graph.createState(constant, typeLocked: true) } catch {
        return fail(TetherError(error.code, "\(fn): \(error.message)"))
    }
    let code = insertBinding(runtime, BindingRecord(source: .constant(state), steps: [], ownsSource: true), fn, out)
    if code != 0 { _ = try? runtime.graph.freeState(state) }
    return code
}

// MARK: Freeing

@_cdecl("tether_binding_free")
public func tether_binding_free(_ b: tether_binding_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(b.id, .binding) else { return staleHandle("binding", b.id) }
    let h = HandleCodec.decode(b.id)
    guard let record = runtime.bindings.remove(h.index, h.generation) else {
        runtime.lock.unlock()
        return staleHandle("binding", b.id)
    }
    var sinks: [ObserverSink] = []
    var observers = record.observers
    if let link = record.transform {
        observers += link.observers
        link.observers = []  // removed here: the link's releases need not remove them again
    }
    for o in observers {
        if let sink = try? runtime.graph.removeObserver(o) { sinks.append(sink) }
    }
    var ownedComputed: DerivedID?
    var setter: CustomSetter?
    if record.ownsSource {
        switch record.source {
        case let .constant(state):
            if let released = try? runtime.graph.freeState(state) { sinks += released }
        case let .custom(computed, owner):
            ownedComputed = computed
            setter = owner
        case .state:
            break
        }
    }
    runtime.lock.unlock()
    for sink in sinks { sink.runRelease() }
    if let computed = ownedComputed {
        // Its destroy runs as a callback, like any computed's.
        _ = freeDerived(HandleCodec.derived(runtime.slotIndex, .computed, computed), .computed, "tether_binding_free")
    }
    setter?.release()  // destroy runs now, or when a running get or set returns
    return 0
}

// MARK: Reading

/// Reads the part of the source a binding names and hands it to `body`
/// outside every lock.
private func readBinding(_ b: tether_binding_t, _ fn: String, _ body: (Value) throws(TetherError) -> Void) -> Int32 {
    var code: Int32 = 0
    guard let (runtime, record) = acquireBinding(b.id, fn, &code) else { return code }
    let value: Value
    switch record.source {
    case let .state(state), let .constant(state):
        do {
            // Inside a compute callback or effect the read is a dependency.
            let tracked = runtime.graph.isEvaluating && DeliveryContext.isDelivering(runtime.id)
            value = try record.part(of: runtime.visibleValue(state, tracked: tracked))
        } catch {
            runtime.lock.unlock()
            return bindingError(fn, b.id, error)
        }
        runtime.lock.unlock()
    case let .custom(computed, _):
        guard let owns = runtime.enterEvaluation() else { return staleHandle("binding", b.id) }
        do {
            let tracked = runtime.graph.isEvaluating && !owns
            value = try record.part(of: runtime.graph.readComputed(computed, tracked: tracked))
        } catch {
            runtime.leaveEvaluation(ownsDelivery: owns)
            return bindingError(fn, b.id, error)
        }
        runtime.leaveEvaluation(ownsDelivery: owns)
    }
    do { try body(value) } catch { return bindingError(fn, b.id, error) }
    return 0
}

@_cdecl("tether_binding_get")
public func tether_binding_get(_ b: tether_binding_t, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_binding_get: out is NULL") }
    return readBinding(b, "tether_binding_get") { v in out.pointee = newOwnedValue(v) }
}

@_cdecl("tether_binding_get_bool")
public func tether_binding_get_bool(_ b: tether_binding_t, _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_binding_get_bool: out is NULL") }
    return readBinding(b, "tether_binding_get_bool") { (v) throws(TetherError) in out.pointee = try Scalar.bool(v) }
}

@_cdecl("tether_binding_get_int")
public func tether_binding_get_int(_ b: tether_binding_t, _ out: UnsafeMutablePointer<Int64>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_binding_get_int: out is NULL") }
    return readBinding(b, "tether_binding_get_int") { (v) throws(TetherError) in out.pointee = try Scalar.int(v) }
}

@_cdecl("tether_binding_get_double")
public func tether_binding_get_double(_ b: tether_binding_t, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_binding_get_double: out is NULL") }
    return readBinding(b, "tether_binding_get_double") { (v) throws(TetherError) in out.pointee = try Scalar.double(v) }
}

@_cdecl("tether_binding_get_string")
public func tether_binding_get_string(_ b: tether_binding_t, _ buf: UnsafeMutablePointer<CChar>?, _ size: Int,
                                      _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    readBinding(b, "tether_binding_get_string") { (v) throws(TetherError) in
        guard case let .string(str) = v else { throw Scalar.mismatch(v.type, "string") }
        try copyOutString(str, buf, size, len)
    }
}

@_cdecl("tether_binding_get_json")
public func tether_binding_get_json(_ b: tether_binding_t, _ flags: UInt32, _ buf: UnsafeMutablePointer<CChar>?,
                                    _ size: Int, _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    readBinding(b, "tether_binding_get_json") { (v) throws(TetherError) in try copyOutJSON(v, flags: flags, buf, size, len) }
}

// MARK: Writing

private func writeBinding(_ b: tether_binding_t, _ fn: String, _ make: () throws(TetherError) -> Value) -> Int32 {
    let value: Value
    do { value = try make() } catch { return bindingError(fn, b.id, error) }
    var code: Int32 = 0
    guard let (runtime, record) = acquireBinding(b.id, fn, &code) else { return code }
    switch record.source {
    case .constant:
        runtime.lock.unlock()
        return fail(.readOnly, "\(fn)(binding \(hex(b.id))): a constant binding cannot be written")
    case let .state(state):
        let hasIndex = record.steps.contains { if case .index = $0 { return true } else { return false } }
        let outcome = runtime.write(state, .put(value, at: record.path),
                                    check: hasIndex ? { (v) throws(TetherError) in try record.checkWritable(into: v) } : nil)
        if case let .failed(error) = outcome { return bindingError(fn, b.id, error) }
        return 0
    case let .custom(computed, setter):
        guard let set = setter.set else {
            runtime.lock.unlock()
            return fail(.readOnly, "\(fn)(binding \(hex(b.id))): the custom binding has no set callback")
        }
        var whole = value
        if !record.path.isRoot {
            // Through a projection: the new whole value is the current one
            // with this part replaced.
            guard let owns = runtime.enterEvaluation() else { return staleHandle("binding", b.id) }
            do {
                whole = try runtime.graph.readComputed(computed, tracked: false)
                try record.checkWritable(into: whole)
                try whole.set(value, at: record.path)
            } catch {
                runtime.leaveEvaluation(ownsDelivery: owns)
                return bindingError(fn, b.id, error)
            }
            runtime.leaveEvaluation(ownsDelivery: owns)
            guard let again = RuntimeTable.acquire(b.id, .binding) else { return staleHandle("binding", b.id) }
            precondition(again === runtime)
        }
        let cause = runtime.writeCause(runtime.threadContext())
        let failuresBefore = tether_internal_error_count()
        setter.hold()
        defer { setter.release() }
        let result = runtime.callOut(cause) { () -> Int32 in
            var borrowed = whole
            return withUnsafeMutablePointer(to: &borrowed) {
                set(OpaquePointer($0), TransactionMeta.info(of: cause), setter.userData)
            }
        }
        guard let result else {
            return fail(.outOfRange, "\(fn)(binding \(hex(b.id))): the set callback could not run (runtime freed, or callbacks nested too deep)")
        }
        if result == 0 { return 0 }
        let why = tether_internal_error_count() != failuresBefore
            ? String(cString: tether_last_error()) : String(cString: tether_strerror(result))
        return fail(TetherError(ErrorCode(rawValue: result) ?? .invalidArgument,
                                "\(fn)(binding \(hex(b.id))): its set callback returned \(result): \(why)"))
    }
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
    let name = "tether_binding_observe"
    var code: Int32 = 0
    guard let relative = observeArguments(name, out, fn, flags, path, &code),
          let out, let fn else { return code }
    guard let (runtime, record) = acquireBinding(b.id, name, &code) else { return code }
    let full = JSONPointer(tokens: record.path.tokens + relative.tokens)
    let options = ObserverOptions(rawValue: flags)
    switch record.source {
    case let .state(state), let .constant(state):
        var isConstant = false
        if case .constant = record.source { isConstant = true }
        let sink = makeSink(slot: runtime.slotIndex, fn: fn, userData: userData, destroy: destroy,
                            path: full.isRoot ? nil : full, binding: b.id, showState: !isConstant)
        do {
            let id = try runtime.graph.observe(state, path: full, options: options, sink: sink)
            record.noteObserver(id, runtime.graph)
            out.pointee = tether_observer_t(id: HandleCodec.observer(runtime.slotIndex, id))
        } catch {
            runtime.lock.unlock()
            return bindingError(name, b.id, error)
        }
        runtime.adopt(out.pointee.id)
        runtime.deliverAfterChange()
    case let .custom(computed, _):
        guard let owns = runtime.enterEvaluation() else { return staleHandle("binding", b.id) }
        let sink = makeSink(slot: runtime.slotIndex, fn: fn, userData: userData, destroy: destroy,
                            path: full.isRoot ? nil : full, binding: b.id)
        do {
            let id = try runtime.graph.observe(computed, path: full, options: options, sink: sink)
            record.noteObserver(id, runtime.graph)
            out.pointee = tether_observer_t(id: HandleCodec.observer(runtime.slotIndex, id))
        } catch {
            runtime.leaveEvaluation(ownsDelivery: owns)
            return bindingError(name, b.id, error)
        }
        runtime.adopt(out.pointee.id)
        runtime.leaveEvaluation(ownsDelivery: owns)
    }
    return 0
}

extension BindingRecord {
    /// Remembers an observer registered through this binding, dropping
    /// entries of observers already removed now and then so the list does
    /// not grow with churn. `lock` held.
    func noteObserver(_ id: ObserverID, _ graph: Graph) {
        if observers.count >= 16 && observers.count & (observers.count - 1) == 0 {
            observers.removeAll { !graph.isLive($0) }
        }
        observers.append(id)
    }
}
