import CTether
import Glibc
import TetherCore

// Computeds, effects and one-shot trackings: nodes whose bodies (C
// functions or Swift closures, DerivedBody) the engine calls as callbacks.

extension Runtimes {
    /// A new computed: lazy, evaluated on first read.
    package static func newComputed(in runtime: UInt64, body: DerivedBody) throws(TetherError) -> UInt64 {
        let engine = try acquire(runtime, .runtime)
        defer { engine.lock.unlock() }
        let id = try engine.graph.createDerived(.computed, body: body)
        let handle = HandleCodec.derived(engine.slotIndex, .computed, id)
        engine.adopt(handle)
        return handle
    }

    /// A new effect. `created` gets its handle before the first run (a SYNC
    /// effect runs before this returns; a loop one on the loop thread).
    package static func newEffect(in runtime: UInt64, sync: Bool, body: DerivedBody,
                                  created: (UInt64) -> Void) throws(TetherError) -> UInt64 {
        let handle = try makeEffect(in: runtime, sync: sync, body: body, created: created)
        // A fallible SYNC effect whose first run failed (it ran before
        // makeEffect returned) subscribes to nothing: it is freed, without
        // its destroy (the caller keeps what it gave), and its error is the
        // creation's. Preact's rule.
        if body.creatorWaitsForFirstRun {
            body.creatorWaitsForFirstRun = false  // the run was deferred (created inside a callback)
        } else if sync && body.reportsToCreator && body.ownerHandle == handle,
                  // Under the graph lock: another thread may run it again meanwhile.
                  let failure = (try? effectFailure(handle)) ?? nil {
            body.releaseAbandoned = true
            try? freeDerived(handle, .effect)
            throw failure
        }
        return handle
    }

    private static func makeEffect(in runtime: UInt64, sync: Bool, body: DerivedBody,
                                   created: (UInt64) -> Void) throws(TetherError) -> UInt64 {
        try withAcquired(runtime, .runtime) { engine in
            let id: DerivedID
            do throws(TetherError) {
                id = try engine.graph.createDerived(.effect, body: body, sync: sync)
            } catch {
                engine.lock.unlock()
                return .failure(error)
            }
            let handle = HandleCodec.derived(engine.slotIndex, .effect, id)
            body.ownerHandle = handle
            // Run now (SYNC, outside callbacks): the creator learns a failure.
            body.creatorWaitsForFirstRun = sync && body.reportsToCreator && !DeliveryContext.isDelivering(engine.id)
            created(handle)
            engine.adopt(handle)
            engine.deliverAfterChange()  // a SYNC effect's first run, before we return
            return .success(handle)
        }
    }

    /// withObservationTracking: runs `apply` now, recording what it reads,
    /// and `body`'s run (its on-change) once when any of that changes.
    /// `created` gets the handle before `apply` runs.
    package static func track(in runtime: UInt64, sync: Bool, body: DerivedBody,
                              created: (UInt64) -> Void, apply: () -> Void) throws(TetherError) -> UInt64 {
        let engine = try acquire(runtime, .runtime)
        guard let owns = engine.enterEvaluation() else { throw staleError(.runtime, runtime) }
        let handle: UInt64
        do {
            let id = try engine.graph.createDerived(.tracking, body: body, sync: sync)
            handle = HandleCodec.derived(engine.slotIndex, .tracking, id)
            created(handle)
            engine.adopt(handle)
            try engine.graph.runApply(id, apply)
        } catch {
            engine.leaveEvaluation(ownsDelivery: owns)
            throw error
        }
        engine.leaveEvaluation(ownsDelivery: owns)
        return handle
    }

    /// Frees a computed, effect or tracking: its cleanup and release run as
    /// callbacks (under the delivery lock), never concurrently with others.
    package static func freeDerived(_ id: UInt64, _ kind: HandleKind) throws(TetherError) {
        if kind == .effect { try freeOwnedScope(ofEffect: id) }
        let engine = try acquire(id, kind)
        guard let owns = engine.enterEvaluation() else { throw staleError(kind, id) }
        let coreKind: DerivedKind = kind == .computed ? .computed : kind == .effect ? .effect : .tracking
        let body: DerivedBody?
        do {
            body = try engine.graph.freeDerived(HandleCodec.derivedID(id), coreKind)
        } catch {
            engine.leaveEvaluation(ownsDelivery: owns)
            throw error
        }
        if let body { engine.graph.pendingRelease(body) }
        engine.leaveEvaluation(ownsDelivery: owns)
    }

    /// What the effect's current run created goes first (children before
    /// the parent's own cleanup, which runs when the effect is freed).
    private static func freeOwnedScope(ofEffect id: UInt64) throws(TetherError) {
        let engine = try acquire(id, .effect)
        let body = try? engine.graph.derivedBody(HandleCodec.derivedID(id), .effect)
        let scope = body?.ownedScope ?? 0
        body?.ownedScope = 0
        engine.lock.unlock()
        if scope != 0 { try? freeScope(scope) }
    }

    /// Reads a computed, evaluating it if needed (which runs compute
    /// callbacks), and returns what `read` took from the graph.
    @inlinable @inline(__always)
    package static func readComputed<T>(_ c: UInt64,
                                        _ read: (Graph, DerivedID, Bool) throws(TetherError) -> T) throws(TetherError) -> T {
        try withAcquired(c, .computed) { engine in readComputedAcquired(engine, c, read) }
    }

    /// `readComputed` on the engine already acquired (`lock` held, or a
    /// single-threaded runtime's owner thread); releases what it took.
    @inlinable @inline(__always)
    package static func readComputedAcquired<T>(_ engine: Engine, _ c: UInt64,
                                                _ read: (Graph, DerivedID, Bool) throws(TetherError) -> T) -> Result<T, TetherError> {
        // Inside a callback of this runtime (a compute reading its sources):
        // this thread already holds the delivery lock, and the frame running
        // the callback keeps the engine alive. A dependency when something
        // is being evaluated.
        if DeliveryContext.isDelivering(engine.id) {
            return readComputedLocked(engine, c, tracked: engine.graph.isEvaluating, read,
                                      leave: { engine.leaveEvaluation(ownsDelivery: false) })
        }
        // An outermost read of a computed that is up to date runs no
        // callback, so it needs neither the pin nor the delivery lock: a
        // read under the graph lock, as a state's is (profiled: a kairo
        // check read cost 287 instructions with them, 185 without).
        if engine.graph.computedIsUpToDate(HandleCodec.derivedID(c)) {
            return readComputedLocked(engine, c, tracked: false, read, leave: { engine.lock.unlock() })
        }
        // Any other outermost read may run compute callbacks: under the
        // delivery lock (taken here), which keeps the runtime alive until
        // `leaveEvaluation` (it pins the runtime when a callback freed it;
        // pinning every such read cost an atomic retain and release).
        guard let owns = engine.enterEvaluation() else { return .failure(staleError(.computed, c)) }
        return readComputedLocked(engine, c, tracked: engine.graph.isEvaluating && !owns, read,
                                  leave: { engine.leaveEvaluation(ownsDelivery: owns) })
    }

    /// `readComputed` with the lock held: reads, then `leave` releases what
    /// the caller took.
    @inlinable @inline(__always)
    static func readComputedLocked<T>(_ engine: Engine, _ c: UInt64, tracked: Bool,
                                              _ read: (Graph, DerivedID, Bool) throws(TetherError) -> T,
                                              leave: () -> Void) -> Result<T, TetherError> {
        do throws(TetherError) {
            let value = try read(engine.graph, HandleCodec.derivedID(c), tracked)
            leave()
            return .success(value)
        } catch {
            leave()
            return .failure(error)
        }
    }

    @inlinable @inline(__always)
    package static func readComputed(_ c: UInt64) throws(TetherError) -> Value {
        try readComputed(c) { (graph, id, tracked) throws(TetherError) in try graph.readComputed(id, tracked: tracked) }
    }

    /// `readComputedScalar` on a lock the caller took for `slot` (the plain
    /// path, PlainAccess.swift, which found the computed not plain).
    package static func readComputedScalarHeld(_ slot: Int32, _ c: UInt64) -> Result<ScalarValue, TetherError> {
        withHeldEngine(slot) { engine in
            readComputedAcquired(engine, c) { (graph, id, tracked) throws(TetherError) in
                try graph.readComputedScalar(id, tracked: tracked)
            }
        }
    }

    /// `readComputedScalar(_:at:)` on a lock the caller took for `slot`
    /// (the plain path of a typed path read, which found the computed not
    /// plain or no scalar of its type at `path`). Its own function, not an
    /// optional path on the one above: the branch and the optional argument
    /// cost that one's callers (lazy reads of stale computeds) ~12
    /// instructions a read.
    package static func readComputedScalarHeld(_ slot: Int32, _ c: UInt64, at path: PointerText) -> Result<ScalarValue, TetherError> {
        withHeldEngine(slot) { engine in
            readComputedAcquired(engine, c) { (graph, id, tracked) throws(TetherError) in
                try graph.readComputedScalar(id, at: path, tracked: tracked)
            }
        }
    }

    @inlinable @inline(__always)
    package static func readComputedScalar(_ c: UInt64) throws(TetherError) -> ScalarValue {
        try readComputed(c) { (graph, id, tracked) throws(TetherError) in try graph.readComputedScalar(id, tracked: tracked) }
    }

    package static func readComputed(_ c: UInt64, at path: PointerText) throws(TetherError) -> Value {
        try readComputed(c) { (graph, id, tracked) throws(TetherError) in try graph.readComputed(id, at: path, tracked: tracked) }
    }

    /// `readComputed(_:at:)` for a typed getter: the scalar there, read in
    /// place (`Graph.readComputedScalar(_:at:tracked:)`).
    package static func readComputedScalar(_ c: UInt64, at path: PointerText) throws(TetherError) -> ScalarValue {
        try readComputed(c) { (graph, id, tracked) throws(TetherError) in
            try graph.readComputedScalar(id, at: path, tracked: tracked)
        }
    }
}

extension Runtimes {
    /// Registers a cleanup on the effect `effect` while it runs (Solid's
    /// `onCleanup`, Vue's `onWatcherCleanup`): cleanups run newest first,
    /// before the effect's own cleanup, before its next run and on free.
    package static func addCleanup(toEffect effect: UInt64, _ cleanup: @escaping () -> Void) throws(TetherError) {
        let engine = try acquire(effect, .effect)
        defer { engine.lock.unlock() }
        try engine.graph.addCleanup(to: HandleCodec.derivedID(effect), cleanup)
    }

    /// `addCleanup` on the innermost effect of the runtime `rt` running on
    /// this thread.
    package static func addCleanup(inRuntime rt: UInt64, _ cleanup: @escaping () -> Void) throws(TetherError) {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        guard DeliveryContext.isDelivering(engine.id) else {
            throw TetherError(.busy, "no effect is running on this thread: a cleanup is registered from inside an effect's run")
        }
        try engine.graph.addCleanup(to: nil, cleanup)
    }
}

extension Engine {
    /// The default report of a failed effect run: one line on stderr (a
    /// failure must not pass unseen; a host that wants otherwise sets a
    /// handler).
    static func printEffectFailure(_ effect: UInt64, _ failure: TetherError) {
        var line = "tether: effect \(hexHandle(effect)) failed: \(failure.message)\n"
        line.withUTF8 { buf in _ = fwrite(buf.baseAddress, 1, buf.count, stderr) }
    }
}

extension Runtimes {
    /// Sets where failed effect runs of the runtime are reported (nil: the
    /// default, a line on stderr). The previous handler's release runs now;
    /// this one's when it is replaced or the runtime is freed.
    package static func setEffectErrorHandler(_ rt: UInt64, _ handler: ((UInt64, TetherError) -> Void)?,
                                              release: (() -> Void)?) throws(TetherError) {
        let engine = try acquire(rt, .runtime)
        let previous = engine.effectErrorHandlerRelease
        engine.effectErrorHandler = handler
        engine.effectErrorHandlerRelease = release
        engine.lock.unlock()
        previous?()
    }

    /// The error the effect's last run failed with, nil when it succeeded.
    package static func effectFailure(_ e: UInt64) throws(TetherError) -> TetherError? {
        let engine = try acquire(e, .effect)
        defer { engine.lock.unlock() }
        return try engine.graph.derivedBody(HandleCodec.derivedID(e), .effect).failure
    }
}
