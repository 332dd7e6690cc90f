import CTether
import TetherCore

/// The plain path of the typed getters and setters (GraphPlainScalar.swift
/// says which cases it takes): from a thread without a transaction or scope
/// open (and, for a write, outside callbacks; a read may come from a
/// callback of the handle's runtime, a compute's read of its sources being
/// the hot one), straight from the handle to the graph its slot publishes
/// (tether_internal_slot_graphs), under the slot's lock taken with a
/// trylock, or without one on a single-threaded runtime's owner thread
/// (its slot publishes no lock: the owner check is paid by that runtime's
/// calls only).
///
/// Shaped for the compiler: straight-line code the C face inlines, whose
/// every call is a tail call (the full path, the callback variant, the
/// continuation on the access already taken, the wake of a lock waiter), so
/// the common case keeps no stack frame. Anything not plain (a contended
/// lock, another thread's single-threaded runtime, a stale handle, another
/// type, watchers, errors) goes on to the full path, which waits, reports
/// or delivers exactly as before. Issue 16: the full path's generic lookup,
/// callback-context scans and error plumbing were most of a typed get's
/// ~100 instructions; docs/performance.md, "The plain path".
extension Runtimes {
    /// The slot a handle of `kind` names, when a plain read may be tried:
    /// from a thread without a transaction or scope open, outside callbacks
    /// (`callbackOf` 0) or in a callback of a runtime in the handle's slot
    /// (the innermost one this thread runs: `callbackOf` is its id, and the
    /// graph takes the read, tracked, only if that runtime owns it).
    @inlinable @inline(__always)
    static func plainReadSlot(_ h: DecodedHandle, _ kind: HandleKind) -> (slot: Int32, callbackOf: UInt64)? {
        guard h.kind == kind.rawValue, tether_internal_get_contexts() == 0 else { return nil }
        let slot = Int32(truncatingIfNeeded: h.slot)
        let depth = tether_internal_get_depth()
        if depth == 0 { return (slot, 0) }
        let runtime = tether_internal_innermost_runtime(depth)
        // Another slot's runtime: not this one's callback. The same slot's
        // is checked against the graph's owner under the lock.
        guard HandleCodec.decode(runtime).slot == h.slot else { return nil }
        return (slot, runtime)
    }

    /// A typed get of a state, shaped so its common case needs no stack
    /// frame: every call it makes is its last act (a tail call), so no
    /// register must survive one. `read` takes the value from the graph,
    /// tracked when the get comes from a callback of the state's runtime
    /// (`plainReadSlot`; `track`'s common case is inline too); `full` is
    /// the full path, given the lock to wake first when this one's release
    /// found a waiter. The value is stored under the lock; `*out` is the
    /// caller's.
    @inlinable @inline(__always)
    package static func plainGet<T>(_ id: UInt64, _ out: UnsafeMutablePointer<T>,
                                    _ read: (Graph, DecodedHandle, UInt64) -> T?,
                                    inCallback: (UInt64, UnsafeMutablePointer<T>) -> Int32,
                                    full: (UInt64, UnsafeMutablePointer<T>, UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32) -> Int32 {
        let h = HandleCodec.decode(id)
        guard h.kind == HandleKind.state.rawValue else { return full(id, out, nil) }
        // From a callback: `inCallback`, a function of its own, since a
        // tracked read may call out of line (`trackMoved`) and would give
        // this one a frame.
        if tether_internal_thread_busy() != 0 { return inCallback(id, out) }
        return plainGet(id, h, out, read, callbackOf: 0, full: full)
    }

    /// `plainGet` of handle `id`, decoded as `h`, from outside callbacks or
    /// (`callbackOf`: `plainReadSlot`) from one.
    @inlinable @inline(__always)
    package static func plainGet<T>(_ id: UInt64, _ h: DecodedHandle, _ out: UnsafeMutablePointer<T>,
                                    _ read: (Graph, DecodedHandle, UInt64) -> T?, callbackOf: UInt64,
                                    full: (UInt64, UnsafeMutablePointer<T>, UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32) -> Int32 {
        let slot = Int32(truncatingIfNeeded: h.slot)
        guard let lock = tether_internal_slot_lock(slot) else {
            // A single-threaded runtime: no lock, on its owner thread only.
            guard tether_internal_slot_owner(slot) == Engine.currentThread,
                  let graph = tether_internal_slot_single_graph(slot),
                  let v = Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef({ read($0, h, callbackOf) }) else {
                return full(id, out, nil)
            }
            out.pointee = v
            return 0
        }
        guard tether_internal_trylock(lock) != 0 else {
            return full(id, out, nil)  // contended: the full path waits
        }
        var found = false
        if let graph = tether_internal_slot_graph(slot),
           let v = Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef({ read($0, h, callbackOf) }) {
            out.pointee = v
            found = true
        }
        if tether_internal_release(lock) != 0 {
            return found ? tether_internal_lock_wake_ok(lock) : full(id, out, lock)
        }
        return found ? 0 : full(id, out, nil)
    }

    /// `plainGet` from a callback: tracked when it is a callback of the
    /// state's runtime, else the full path.
    @inlinable @inline(__always)
    package static func plainGetInCallback<T>(_ id: UInt64, _ out: UnsafeMutablePointer<T>,
                                              _ read: (Graph, DecodedHandle, UInt64) -> T?,
                                              full: (UInt64, UnsafeMutablePointer<T>, UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32) -> Int32 {
        let h = HandleCodec.decode(id)
        guard let (_, runtime) = plainReadSlot(h, .state) else { return full(id, out, nil) }
        return plainGet(id, h, out, read, callbackOf: runtime, full: full)
    }

    /// A computed's scalar, shaped as `plainGet`: read by the plain path
    /// (`read`, GraphPlainScalar.swift's `plainComputed`) when it is up to
    /// date, from outside callbacks or from a callback of its runtime
    /// (tracked then); else `held` on the access taken (the full read
    /// continues there: evaluation, errors), or `full` when nothing was
    /// taken.
    @inlinable @inline(__always)
    package static func plainComputedGet<T>(_ id: UInt64, _ out: UnsafeMutablePointer<T>,
                                            _ read: (Graph, DecodedHandle, UInt64) -> T?,
                                            held: (Int32, UInt64, UnsafeMutablePointer<T>) -> Int32,
                                            full: (UInt64, UnsafeMutablePointer<T>?,
                                                   UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32) -> Int32 {
        let h = HandleCodec.decode(id)
        guard let (slot, runtime) = plainReadSlot(h, .computed) else { return full(id, out, nil) }
        guard let lock = tether_internal_slot_lock(slot) else {
            guard tether_internal_slot_owner(slot) == Engine.currentThread,
                  let graph = tether_internal_slot_single_graph(slot) else { return full(id, out, nil) }
            guard let v = Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef({ read($0, h, runtime) }) else {
                return held(slot, id, out)
            }
            out.pointee = v
            return 0
        }
        guard tether_internal_trylock(lock) != 0 else {
            return full(id, out, nil)  // contended: the full path waits
        }
        guard let graph = tether_internal_slot_graph(slot) else {
            return full(id, out, tether_internal_release(lock) != 0 ? lock : nil)
        }
        guard let v = Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef({ read($0, h, runtime) }) else {
            return held(slot, id, out)
        }
        out.pointee = v
        return tether_internal_release(lock) != 0 ? tether_internal_lock_wake_ok(lock) : 0
    }

    /// A typed scalar write, shaped as `plainGet` (its calls are tail
    /// calls): the plain store `write` (`Graph.writePlainInt`, `_Double`,
    /// `_Bool`: the graph, the handle's index and generation, the value),
    /// or `held` on the access
    /// taken (the lock, or a single-threaded runtime's owner thread), or
    /// `full` (given the lock to wake first when this one's release found
    /// a waiter) when nothing was taken.
    @inlinable @inline(__always)
    package static func plainSet<T>(_ id: UInt64, _ n: T, _ write: (Graph, UInt32, UInt32, T) -> Bool,
                                    held: (Int32, UInt64, T) -> Int32,
                                    full: (UInt64, T, UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32) -> Int32 {
        let h = HandleCodec.decode(id)
        guard h.kind == HandleKind.state.rawValue, tether_internal_thread_busy() == 0 else { return full(id, n, nil) }
        let slot = Int32(truncatingIfNeeded: h.slot)
        guard let lock = tether_internal_slot_lock(slot) else {
            guard tether_internal_slot_owner(slot) == Engine.currentThread,
                  let graph = tether_internal_slot_single_graph(slot) else { return full(id, n, nil) }
            if Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef({ write($0, h.index, h.generation, n) }) {
                return 0
            }
            return held(slot, id, n)
        }
        guard tether_internal_trylock(lock) != 0 else {
            return full(id, n, nil)  // contended: the full path waits
        }
        guard let graph = tether_internal_slot_graph(slot) else {
            return full(id, n, tether_internal_release(lock) != 0 ? lock : nil)
        }
        if Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef({ write($0, h.index, h.generation, n) }) {
            return tether_internal_release(lock) != 0 ? tether_internal_lock_wake_ok(lock) : 0
        }
        return held(slot, id, n)
    }

    /// tether_batch_begin's and tether_batch_end's plain path, shaped as
    /// `plainSet`: `plain` (`Graph.plainBatchBegin` / `plainBatchEnd`, given
    /// the runtime's handle id) on the graph the handle's slot publishes,
    /// under the slot's lock taken with a trylock (or on a single-threaded
    /// runtime's owner thread); when it declines, `held` on the access
    /// taken (the end's delivery, or letting go for the full path to
    /// report); `full` when nothing was taken. Every write of the kairo and
    /// S.js update cases is its own batch: the full lookup and error
    /// plumbing were ~70 of the ~100 instructions a begin cost (issue 16,
    /// sixth round).
    @inlinable @inline(__always)
    package static func plainBatch(_ id: UInt64, _ plain: (Graph, UInt64) -> Bool,
                                   held: (Int32, UInt64) -> Int32,
                                   full: (UInt64, UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32) -> Int32 {
        let h = HandleCodec.decode(id)
        guard h.kind == HandleKind.runtime.rawValue else { return full(id, nil) }
        let slot = Int32(truncatingIfNeeded: h.slot)
        guard let lock = tether_internal_slot_lock(slot) else {
            guard tether_internal_slot_owner(slot) == Engine.currentThread,
                  let graph = tether_internal_slot_single_graph(slot) else { return full(id, nil) }
            if Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef({ plain($0, id) }) { return 0 }
            return held(slot, id)
        }
        guard tether_internal_trylock(lock) != 0 else { return full(id, nil) }
        guard let graph = tether_internal_slot_graph(slot) else {
            return full(id, tether_internal_release(lock) != 0 ? lock : nil)
        }
        if Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef({ plain($0, id) }) {
            return tether_internal_release(lock) != 0 ? tether_internal_lock_wake_ok(lock) : 0
        }
        return held(slot, id)
    }

    /// `body` on the engine of `slot`, whose access a plain path holds (its
    /// lock, or a single-threaded runtime's owner thread): a published
    /// graph means a live runtime in the slot (set and cleared together),
    /// and the access keeps it so, so it is used without a reference count.
    @inlinable @inline(__always)
    package static func withHeldEngine<R>(_ slot: Int32, _ body: (Engine) -> R) -> R {
        let runtimeSlot = Unmanaged<RuntimeSlot>.fromOpaque(tether_internal_slot_object(slot).unsafelyUnwrapped)
        let engine = runtimeSlot._withUnsafeGuaranteedRef { $0.fastRuntime.unsafelyUnwrapped }
        return engine._withUnsafeGuaranteedRef(body)
    }

    /// Lets go of the access a plain path took on `slot`: its lock,
    /// released (a waiter woken), or nothing on a single-threaded runtime's
    /// owner thread (its slot publishes no lock).
    @inlinable @inline(__always)
    package static func releaseSlot(_ slot: Int32) {
        if let lock = tether_internal_slot_lock(slot), tether_internal_release(lock) != 0 {
            tether_internal_lock_wake(lock)
        }
    }

    /// The end of a batch the plain path did not finish, on the access it
    /// holds (the slot's lock, or a single-threaded runtime's owner
    /// thread): `endBatchAcquired`, which lets go of the access, when the
    /// slot's runtime is `id`'s and a batch is open. False after letting go
    /// of the access otherwise (a stale handle, no batch open): the
    /// caller's full path then reports. A Bool, not the full path's Result:
    /// moving a Result with its error through two frames cost ~20
    /// instructions a batched write.
    package static func endBatchHeld(_ slot: Int32, _ id: UInt64) -> Bool {
        withHeldEngine(slot) { engine -> Bool in
            guard engine.id == id, engine.graph.batchDepth > 0 else {
                engine.lock.unlock()
                return false
            }
            _ = endBatchAcquired(engine)  // succeeds: a batch is open
            return true
        }
    }

    /// The rest of a plain-path int write, on the access the writer holds
    /// (released here): `Graph.writeHeldInt` and what any write does after
    /// it, or, when that declined, the full write, rather than letting go
    /// and starting over.
    @inlinable @inline(__always)
    package static func finishHeld(_ slot: Int32, _ id: UInt64, _ n: Int64) -> PlainWrite {
        withHeldEngine(slot) { engine -> PlainWrite in
            // The common SYNC write (`Graph.writeDirectInt`): taken only
            // with the delivery lock, which its calls need; declined, that
            // lock goes back untouched (no waiter can have marked it: that
            // takes the graph lock, held here).
            let h = HandleCodec.decode(id)
            if engine.graph.mayWriteDirect(h.index) && engine.deliveryLock.tryTake() {
                if engine.graph.writeDirectInt(h.index, h.generation, n) {
                    engine.deliverDirectLocked()
                    return .written
                }
                _ = engine.deliveryLock.release()
            }
            // As `Engine.write`: the calls are this writer's to make only
            // if no other writer's direct call is being made (that one's
            // owner makes or hands back its calls; taking them crashed
            // its loop: sync_direct_threads_chain_per_observer, TSan).
            let direct = !engine.graph.hasDirectCall
            guard engine.graph.writeHeldInt(stateID(id), n, directCalls: direct) else {
                return writeHeldDeclined(engine, id, n)
            }
            engine.finishWrite(delivering: false, direct: direct)
            return .written
        }
    }

    /// The full write of what `writeHeldInt` declined, on the lock still
    /// held: out of line, so the common case above keeps a small frame
    /// (inlined, its registers cost ~30 instructions a write: profiled).
    @usableFromInline @inline(never)
    static func writeHeldDeclined(_ engine: Engine, _ id: UInt64, _ n: Int64) -> PlainWrite {
        writeHeldDeclined(engine, id, .int(n))
    }

    @usableFromInline @inline(never)
    static func writeHeldDeclined(_ engine: Engine, _ id: UInt64, _ v: Value) -> PlainWrite {
        if case let .failed(error) = engine.write(stateID(id), .set(v)) { return .failed(error) }
        return .written
    }

    /// `finishHeld` of a double or a bool, on the access the writer holds
    /// (released here): `Graph.writeHeldScalar` and what any write does
    /// after it (its SYNC calls, made by this writer when `writeScalar`
    /// recorded them as a direct call), or the full write when that
    /// declined. The int's one-function SYNC write (`writeDirectInt`) has
    /// no twin here: these writes with observers go the way of
    /// `writeScalar`.
    package static func finishHeld(_ slot: Int32, _ id: UInt64, scalar v: ScalarValue) -> PlainWrite {
        withHeldEngine(slot) { engine -> PlainWrite in
            let direct = !engine.graph.hasDirectCall  // as `finishHeld` of an int
            guard engine.graph.writeHeldScalar(stateID(id), v, directCalls: direct) else {
                return writeHeldDeclined(engine, id, Value(trivial: v))
            }
            engine.finishWrite(delivering: false, direct: direct)
            return .written
        }
    }
}

/// What `finishHeld` did.
@frozen @usableFromInline package enum PlainWrite {
    case written
    case failed(TetherError)
}
