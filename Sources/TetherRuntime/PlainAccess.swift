import CTether
import TetherCore

/// The plain path of the typed getters and setters (GraphPlainScalar.swift
/// says which case it is): from a thread outside every callback, transaction
/// and scope, straight from the handle to the graph (published per slot:
/// tether_internal_slot_graphs) under the slot's lock, or without one on a
/// single-threaded runtime's owner thread. It calls nothing: a contended
/// lock, another thread's single-threaded runtime, a stale handle, another
/// type, watchers, every error: all return "not taken" having touched
/// nothing, and the C face then takes the full path, which waits, reports
/// or delivers as usual. Straight-line code the C face inlines, so the
/// common case needs no stack frame (issue 16: the full path's generic
/// lookup, callback-context scans and error plumbing were most of a typed
/// get's ~100 instructions).
extension Runtimes {
    /// The slot a state handle names, when the plain path may be tried.
    @inlinable @inline(__always)
    static func plainSlot(_ h: DecodedHandle) -> Int32? {
        guard h.kind == HandleKind.state.rawValue, tether_internal_thread_busy() == 0 else { return nil }
        return Int32(truncatingIfNeeded: h.slot)
    }

    /// Takes the right to touch the slot's graph: its lock if it is free
    /// (returned, to release), or nothing on a single-threaded runtime's
    /// owner thread (.some(nil)). nil: not now.
    @inlinable @inline(__always)
    static func plainAccess(_ slot: Int32) -> UnsafeMutablePointer<tether_internal_lock_t>?? {
        let owner = tether_internal_slot_owner(slot)
        if owner == 0 {
            guard let lock = tether_internal_slot_lock(slot), tether_internal_trylock(lock) != 0 else { return nil }
            return .some(lock)
        }
        return owner == Engine.currentThread ? .some(nil) : nil
    }

    /// `read` of the slot's graph under `plainAccess`; nil when it is not taken.
    @inlinable @inline(__always)
    static func plainRead<T>(_ id: UInt64, _ read: (Graph, DecodedHandle) -> T?) -> T? {
        let h = HandleCodec.decode(id)
        guard let slot = plainSlot(h), let access = plainAccess(slot) else { return nil }
        var result: T? = nil
        if let graph = tether_internal_slot_graph(slot) {
            result = Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef { read($0, h) }
        }
        if let lock = access { tether_internal_unlock(lock) }
        return result
    }

    @inlinable @inline(__always)
    package static func plainInt(state id: UInt64) -> Int64? {
        plainRead(id) { graph, h in graph.plainInt(h.index, h.generation) }
    }

    @inlinable @inline(__always)
    package static func plainDouble(state id: UInt64) -> Double? {
        plainRead(id) { graph, h in graph.plainDouble(h.index, h.generation) }
    }

    @inlinable @inline(__always)
    package static func plainBool(state id: UInt64) -> Bool? {
        plainRead(id) { graph, h in graph.plainBool(h.index, h.generation) }
    }

    /// A typed int write: done by the plain path, or done with the lock the
    /// plain path took (when the state has watchers: `writeHeld`), or
    /// declined before anything was taken.
    @inlinable @inline(__always)
    package static func writeInt(state id: UInt64, _ n: Int64) -> PlainWrite {
        let h = HandleCodec.decode(id)
        guard let slot = plainSlot(h), let access = plainAccess(slot) else { return .declined }
        if let graph = tether_internal_slot_graph(slot) {
            if Unmanaged<Graph>.fromOpaque(graph)._withUnsafeGuaranteedRef({ $0.writePlainInt(h.index, h.generation, n) }) {
                if let lock = access { tether_internal_unlock(lock) }
                return .written
            }
            // Watched (or stale, or another type): the full write, on the
            // access already held, rather than letting go and starting over.
            return writeHeld(slot, StateID(index: h.index, generation: h.generation), n)
        }
        if let lock = access { tether_internal_unlock(lock) }
        return .declined
    }

    /// `Engine.write` of the int `n` for a plain-path writer that holds the
    /// runtime's access (`plainAccess`) and found its graph; releases it.
    @usableFromInline @inline(never)
    static func writeHeld(_ slot: Int32, _ s: StateID, _ n: Int64) -> PlainWrite {
        // A published graph means a live runtime in the slot (set and cleared together).
        let runtimeSlot = Unmanaged<RuntimeSlot>.fromOpaque(tether_internal_slot_object(slot).unsafelyUnwrapped)
        return runtimeSlot._withUnsafeGuaranteedRef { slot in
            slot.fastRuntime.unsafelyUnwrapped._withUnsafeGuaranteedRef { engine -> PlainWrite in
                // Watched by SYNC observers only: their calls made here, directly.
                if engine.graph.writeDirectInt(s.index, s.generation, n) {
                    engine.deliverDirectWrite()
                    return .written
                }
                if case let .failed(error) = engine.write(s, .set(.int(n))) { return .failed(error) }
                return .written
            }
        }
    }
}

/// What a plain-path write did.
@usableFromInline package enum PlainWrite {
    case written
    /// Nothing taken or touched: the caller takes the full path.
    case declined
    case failed(TetherError)
}
