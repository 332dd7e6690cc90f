import CTether
import TetherCore

// States: create, read, write, free. Every function names its state by
// handle and is callable from any thread, including from callbacks.

extension Runtimes {
    @inlinable @inline(__always)
    static func stateID(_ id: UInt64) -> StateID {
        let h = HandleCodec.decode(id)
        return StateID(index: h.index, generation: h.generation)
    }

    /// A new state in the runtime `runtime` names, owned by the scope this
    /// thread entered there (if any).
    @inlinable @inline(__always)
    package static func newState(in runtime: UInt64, _ value: Value, typeLocked: Bool) throws(TetherError) -> UInt64 {
        try withAcquired(runtime, .runtime) { engine in
            defer { engine.lock.unlock() }
            do throws(TetherError) {
                let id = HandleCodec.state(engine.slotIndex, try engine.graph.createState(value, typeLocked: typeLocked))
                engine.adopt(id)
                return .success(id)
            } catch {
                return .failure(error)
            }
        }
    }

    /// Frees a state; its observers end with it (their destroy functions run
    /// here, on this thread, after the lock is released).
    package static func freeState(_ s: UInt64) throws(TetherError) {
        let engine = try acquire(s, .state)
        if engine.graph.validatingDepth > 0 && DeliveryContext.isDelivering(engine.id) {
            engine.lock.unlock()
            throw TetherError(.busy, "a validator must not free states (it may only accept or reject)")
        }
        let mirror = engine.graph.isRemote(stateID(s)) ? engine.remoteMirror(stateID(s)) : nil
        let sinks: [ObserverSink]
        do {
            sinks = try engine.graph.freeState(stateID(s))
        } catch {
            engine.lock.unlock()
            throw error
        }
        engine.lock.unlock()
        if let mirror { mirror.link.unregister(mirror) }
        for sink in sinks { sink.runRelease() }
    }

    package static func stateRevision(_ s: UInt64) throws(TetherError) -> UInt64 {
        let engine = try acquire(s, .state)
        defer { engine.lock.unlock() }
        return try engine.graph.stateRevision(stateID(s))
    }

    /// The whole value as this thread sees it (its own staged value inside
    /// a transaction). A dependency when read from a compute or an effect.
    package static func readState(_ s: UInt64) throws(TetherError) -> Value {
        try borrowingLocked(s, .state) { (engine) throws(TetherError) -> Value in
            // Inside a compute callback or effect of this runtime the read is a dependency.
            let tracked = engine.graph.isEvaluating && DeliveryContext.isDelivering(engine.id)
            return tether_internal_get_contexts() != 0
                ? try engine.visibleValue(stateID(s), tracked: tracked)  // maybe staged in this thread's transaction
                : try engine.graph.read(stateID(s), tracked: tracked)
        }
    }

    /// The part of the value at `path`; the read depends on that part only
    /// (writes elsewhere in the state do not wake the reader).
    package static func readState(_ s: UInt64, at path: PointerText) throws(TetherError) -> Value {
        try borrowingLocked(s, .state) { (engine) throws(TetherError) -> Value in
            // Inside a compute callback or effect of this runtime the read is a dependency.
            let tracked = engine.graph.isEvaluating && DeliveryContext.isDelivering(engine.id)
            return tether_internal_get_contexts() != 0
                ? try engine.visibleValue(stateID(s), at: path, tracked: tracked)  // maybe staged in this thread's transaction
                : try engine.graph.read(stateID(s), at: path, tracked: tracked)
        }
    }

    /// `readState(_:at:)` for a typed getter: the scalar there, read in
    /// place when not staged (`Graph.readScalar(_:at:tracked:)`).
    package static func readStateScalar(_ s: UInt64, at path: PointerText) throws(TetherError) -> ScalarValue {
        try borrowingLocked(s, .state) { (engine) throws(TetherError) -> ScalarValue in
            let tracked = engine.graph.isEvaluating && DeliveryContext.isDelivering(engine.id)
            return tether_internal_get_contexts() != 0
                ? try engine.visibleValue(stateID(s), at: path, tracked: tracked).scalar  // maybe staged
                : try engine.graph.readScalar(stateID(s), at: path, tracked: tracked)
        }
    }

    /// `readState(_:at:)` for a parsed pointer (the Swift API).
    package static func readState(_ s: UInt64, at path: JSONPointer) throws(TetherError) -> Value {
        try borrowingLocked(s, .state) { (engine) throws(TetherError) -> Value in
            let tracked = engine.graph.isEvaluating && DeliveryContext.isDelivering(engine.id)
            return tether_internal_get_contexts() != 0
                ? try engine.visibleValue(stateID(s), at: path, tracked: tracked)
                : try engine.graph.read(stateID(s), at: path, tracked: tracked)
        }
    }

    /// A typed getter's read: the value as a scalar, never copied out.
    /// Written out rather than through a generic helper: the C face calls
    /// it across a module boundary, where a generic with closures stays
    /// unspecialized (profiled: 129 -> 244 instructions per get).
    @inlinable @inline(__always)
    package static func readScalar(state s: UInt64) throws(TetherError) -> ScalarValue {
        try borrowingLocked(s, .state) { (engine) throws(TetherError) -> ScalarValue in
            // Inside a compute callback or effect of this runtime the read is a dependency.
            let tracked = engine.graph.isEvaluating && DeliveryContext.isDelivering(engine.id)
            return tether_internal_get_contexts() != 0
                ? try engine.visibleValue(stateID(s), tracked: tracked).scalar  // maybe staged in this thread's transaction
                : try engine.graph.readScalar(stateID(s), tracked: tracked)
        }
    }

    /// Applies (or, inside a transaction, stages) a write through the one
    /// write path (RuntimeWrites.swift): SYNC observers have run when it returns.
    @inlinable @inline(__always)
    package static func writeState(_ s: UInt64, _ op: WriteOp) throws(TetherError) {
        guard let borrowed = RuntimeTable.locked(s, .state) else { throw staleError(.state, s) }
        // The error leaves through a local: a closure returning the outcome
        // stayed out of line (profiled).
        var failure: TetherError?
        borrowed._withUnsafeGuaranteedRef { engine in
            if case let .failed(error) = engine.write(stateID(s), op) { failure = error }
        }
        if let failure { throw failure }
    }

    /// `writeState`, saying whether the write changed the state: true
    /// when its revision moved past the runtime's revision from before the
    /// write (an equal value leaves it), nil when this thread's open
    /// transaction staged it (decided at commit). For a caller that must
    /// know, as the daemon does for every Set: reading the revision before
    /// and after was two more lookups and lock sections (~380 instructions,
    /// docs/daemon-performance.md).
    package static func writeStateReportingChange(_ s: UInt64, _ op: WriteOp) throws(TetherError) -> Bool? {
        guard let borrowed = RuntimeTable.locked(s, .state) else { throw staleError(.state, s) }
        var failure: TetherError?
        var changed: Bool?
        borrowed._withUnsafeGuaranteedRef { engine in
            let before = engine.graph.revision  // under the lock `locked` took
            switch engine.write(stateID(s), op, wantRevision: true) {
            case let .done(revision): changed = revision > before
            case .staged: changed = nil
            case let .failed(error): failure = error
            }
        }
        if let failure { throw failure }
        return changed
    }

    /// Runs `read` on the engine `id` names, borrowed (no retain and
    /// release of it) and under its lock, released whatever `read` does.
    @inlinable @inline(__always)
    static func borrowingLocked<T>(_ id: UInt64, _ kind: HandleKind,
                                   _ read: (Engine) throws(TetherError) -> T) throws(TetherError) -> T {
        guard let borrowed = RuntimeTable.locked(id, kind) else { throw staleError(kind, id) }
        // The error leaves through a local, not a thrown or Result return
        // from the closure: either kept the closure out of line (profiled).
        var failure: TetherError?
        let value: T? = borrowed._withUnsafeGuaranteedRef { engine in
            do throws(TetherError) {
                let v = try read(engine)
                engine.lock.unlock()
                return v
            } catch {
                engine.lock.unlock()
                failure = error
                return nil
            }
        }
        if let value { return value }
        throw failure!
    }
}
