import CTether
import TetherCore

// Bindings (SwiftUI's Binding for handles): of a state, projected by path or
// index, custom get/set, constant. Records live in Engine.bindings; the
// transform bindings between two states are in EngineTransformBindings.swift.

extension Runtimes {
    /// The engine (lock held) and record a binding handle names.
    package static func acquireBinding(_ id: UInt64) throws(TetherError) -> (Engine, BindingRecord) {
        let engine = try acquire(id, .binding)
        let h = HandleCodec.decode(id)
        guard let record = engine.bindings.get(h.index, h.generation) else {
            engine.lock.unlock()
            throw staleError(.binding, id)
        }
        if let link = record.transform, link.ended {
            engine.lock.unlock()
            throw TetherError(.stale, "the binding ended when one of its states was freed")
        }
        return (engine, record)
    }

    /// A source state freed under a binding reads as that, not as a stale state handle.
    private static func bindingSourceError(_ error: TetherError) -> TetherError {
        error.code == .stale && error.message.hasPrefix("state handle")
            ? TetherError(.stale, "the binding's source state was freed") : error
    }

    // MARK: Making bindings

    /// `$state`: a binding of the whole state.
    package static func stateBinding(_ s: UInt64) throws(TetherError) -> UInt64 {
        let engine = try acquire(s, .state)
        defer { engine.lock.unlock() }
        let state = stateID(s)
        guard engine.graph.isLive(state) else { throw staleError(.state, s) }
        return try engine.insertBinding(BindingRecord(source: .state(state), steps: [], ownsSource: false))
    }

    /// `$user.name`, `$list[3]`: a binding of a part of another's value.
    package static func project(_ b: UInt64, _ step: BindingStep) throws(TetherError) -> UInt64 {
        let (engine, record) = try acquireBinding(b)
        defer { engine.lock.unlock() }
        guard record.sourceIsLive(engine.graph) else { throw TetherError(.stale, "the binding's source was freed") }
        // A projection of a transform binding is a projection of its target.
        return try engine.insertBinding(record.projected(step))
    }

    /// `Binding(get:set:)` from C: get is a computed's compute function;
    /// set is called on writes. On error nothing is kept (destroy is not called).
    package static func newCustomBinding(in rt: UInt64, get: @escaping ComputeFunction, setter: CustomSetter,
                                         userData: UnsafeMutableRawPointer?) throws(TetherError) -> UInt64 {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        var created = false
        let body = DerivedBody(computeFunction: get, userData: userData, isBindingGet: true,
                               release: { if created { setter.release() } })
        let computed = try engine.graph.createDerived(.computed, body: body)
        let record = BindingRecord(source: .custom(computed, setter), steps: [], ownsSource: true)
        do {
            let handle = try engine.insertBinding(record)
            created = true
            return handle
        } catch {
            _ = try? engine.graph.freeDerived(computed, .computed)  // never ran
            throw error
        }
    }

    /// `Binding.constant`: reads give `value`, writes are refused.
    package static func newConstantBinding(in rt: UInt64, _ value: Value) throws(TetherError) -> UInt64 {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        let state = try engine.graph.createState(value, typeLocked: true)
        do {
            return try engine.insertBinding(BindingRecord(source: .constant(state), steps: [], ownsSource: true))
        } catch {
            _ = try? engine.graph.freeState(state)
            throw error
        }
    }

    // MARK: Freeing

    /// Frees a binding, the observers registered through it, and what it
    /// owns (a constant's state, a custom binding's get computed).
    package static func freeBinding(_ b: UInt64) throws(TetherError) {
        let engine = try acquire(b, .binding)
        let h = HandleCodec.decode(b)
        guard let record = engine.bindings.remove(h.index, h.generation) else {
            engine.lock.unlock()
            throw staleError(.binding, b)
        }
        var sinks: [ObserverSink] = []
        var observers = record.observers
        if let link = record.transform {
            observers += link.observers
            link.observers = []  // removed here: the link's releases need not remove them again
        }
        for o in observers {
            if let sink = try? engine.graph.removeObserver(o) { sinks.append(sink) }
        }
        var ownedComputed: DerivedID?
        var setter: CustomSetter?
        if record.ownsSource {
            switch record.source {
            case let .constant(state):
                if let released = try? engine.graph.freeState(state) { sinks += released }
            case let .custom(computed, owner):
                ownedComputed = computed
                setter = owner
            case .state:
                break
            }
        }
        engine.lock.unlock()
        for sink in sinks { sink.runRelease() }
        if let computed = ownedComputed {
            // Its destroy runs as a callback, like any computed's.
            try? freeDerived(HandleCodec.derived(engine.slotIndex, .computed, computed), .computed)
        }
        setter?.release()  // destroy runs now, or when a running get or set returns
    }

    // MARK: Reading and writing

    /// The part of the source the binding names (a dependency when read
    /// from a compute or an effect).
    package static func readBinding(_ b: UInt64) throws(TetherError) -> Value {
        let (engine, record) = try acquireBinding(b)
        switch record.source {
        case let .state(state), let .constant(state):
            do {
                let tracked = engine.graph.isEvaluating && DeliveryContext.isDelivering(engine.id)
                // A projection depends on its part only.
                let value = try record.part(of: engine.visibleValue(state, dependingOn: record.path, tracked: tracked))
                engine.lock.unlock()
                return value
            } catch {
                engine.lock.unlock()
                throw bindingSourceError(error)
            }
        case let .custom(computed, _):
            guard let owns = engine.enterEvaluation() else { throw staleError(.binding, b) }
            do {
                let tracked = engine.graph.isEvaluating && !owns
                let value = try record.part(of: engine.graph.readComputed(computed, tracked: tracked))
                engine.leaveEvaluation(ownsDelivery: owns)
                return value
            } catch {
                engine.leaveEvaluation(ownsDelivery: owns)
                throw bindingSourceError(error)
            }
        }
    }

    /// Writes through the binding: into the state's part, or to a custom
    /// binding's set callback (through a projection: the whole new value).
    package static func writeBinding(_ b: UInt64, _ value: Value) throws(TetherError) {
        let (engine, record) = try acquireBinding(b)
        switch record.source {
        case .constant:
            engine.lock.unlock()
            throw TetherError(.readOnly, "a constant binding cannot be written")
        case let .state(state):
            let hasIndex = record.steps.contains { if case .index = $0 { return true } else { return false } }
            let outcome = engine.write(state, .put(value, at: record.path),
                                       check: hasIndex ? { (v) throws(TetherError) in try record.checkWritable(into: v) } : nil)
            if case let .failed(error) = outcome { throw bindingSourceError(error) }
        case let .custom(computed, setter):
            guard let set = setter.set else {
                engine.lock.unlock()
                throw TetherError(.readOnly, "the custom binding has no set callback")
            }
            var whole = value
            if !record.path.isRoot {
                // Through a projection: the new whole value is the current one
                // with this part replaced.
                guard let owns = engine.enterEvaluation() else { throw staleError(.binding, b) }
                do {
                    whole = try engine.graph.readComputed(computed, tracked: false)
                    try record.checkWritable(into: whole)
                    try whole.set(value, at: record.path)
                } catch {
                    engine.leaveEvaluation(ownsDelivery: owns)
                    throw bindingSourceError(error)
                }
                engine.leaveEvaluation(ownsDelivery: owns)
                let again = try acquire(b, .binding)
                precondition(again === engine)
            }
            let cause = engine.writeCause(engine.threadContext())
            let failuresBefore = tether_internal_error_count()
            setter.hold()
            defer { setter.release() }
            let result = engine.callOut(cause) { () -> Int32 in
                var borrowed = whole
                return withUnsafeMutablePointer(to: &borrowed) {
                    set(OpaquePointer($0), TransactionMeta.info(of: cause), setter.userData)
                }
            }
            guard let result else {
                throw TetherError(.outOfRange, "the set callback could not run (runtime freed, or callbacks nested too deep)")
            }
            if result == 0 { return }
            let why = tether_internal_error_count() != failuresBefore
                ? String(cString: tether_last_error()) : String(cString: tether_strerror(result))
            throw TetherError(ErrorCode(rawValue: result) ?? .invalidArgument, "its set callback returned \(result): \(why)")
        }
    }

    /// Observes the binding's part at `path` (relative to it). `makeSink`
    /// gets the slot, the full path, and whether the change may name the
    /// state (not a constant's private one).
    package static func observe(binding b: UInt64, path relative: JSONPointer, options: ObserverOptions,
                                makeSink: (Int, JSONPointer, Bool) -> ObserverSink) throws(TetherError) -> UInt64 {
        let (engine, record) = try acquireBinding(b)
        let full = JSONPointer(tokens: record.path.tokens + relative.tokens)
        switch record.source {
        case let .state(state), let .constant(state):
            var isConstant = false
            if case .constant = record.source { isConstant = true }
            let handle: UInt64
            do {
                let id = try engine.graph.observe(state, path: full, options: options,
                                                  sink: makeSink(engine.slotIndex, full, !isConstant))
                record.noteObserver(id, engine.graph)
                handle = HandleCodec.observer(engine.slotIndex, id)
            } catch {
                engine.lock.unlock()
                throw bindingSourceError(error)
            }
            engine.adopt(handle)
            engine.deliverAfterChange()
            return handle
        case let .custom(computed, _):
            guard let owns = engine.enterEvaluation() else { throw staleError(.binding, b) }
            let handle: UInt64
            do {
                let id = try engine.graph.observe(computed, path: full, options: options,
                                                  sink: makeSink(engine.slotIndex, full, true))
                record.noteObserver(id, engine.graph)
                handle = HandleCodec.observer(engine.slotIndex, id)
            } catch {
                engine.leaveEvaluation(ownsDelivery: owns)
                throw bindingSourceError(error)
            }
            engine.adopt(handle)
            engine.leaveEvaluation(ownsDelivery: owns)
            return handle
        }
    }
}

extension Engine {
    /// Stores a new record; its handle. `lock` held.
    package func insertBinding(_ record: BindingRecord) throws(TetherError) -> UInt64 {
        let generation = graph.takeGeneration()
        guard let index = bindings.insert(record, generation: generation) else {
            throw TetherError(.noMemory, "too many live bindings (limit \(Graph.maxNodes))")
        }
        let handle = HandleCodec.encode(slot: slotIndex, kind: .binding, index: index, generation: generation)
        adopt(handle)
        return handle
    }
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
