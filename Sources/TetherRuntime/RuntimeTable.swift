import CTether
import TetherCore

/// One place a runtime can live. Slots are made once and never freed, so a
/// thread holding a stale handle can always lock the slot it names and find
/// out, under that lock, that its runtime is gone. The slot's lock is the
/// runtime's graph lock: one lock per call on the hot path.
@usableFromInline final class RuntimeSlot {
    @usableFromInline let lock = Lock()
    let index: Int
    var runtime: Engine? {
        didSet {
            fastRuntime = runtime.map { .passUnretained($0) }
            // The typed getters' and setters' plain path (PlainAccess.swift):
            // a thread-safe runtime's graph, reached under the slot's lock, or
            // a single-threaded one's, reached by its owner thread.
            let graph = runtime.map { Unmanaged.passUnretained($0.graph as Graph).toOpaque() }
            let single = runtime.map { $0.owner != 0 } ?? false
            tether_internal_set_slot_graph(Int32(index), single ? nil : graph)
            tether_internal_set_slot_single_graph(Int32(index), single ? graph : nil)
        }
    }
    /// The same reference, read on the hot path without a refcount round
    /// trip: `runtime` keeps it alive, and it is only read under `lock`
    /// (or, for a single-threaded runtime, by its owner thread: the slot's
    /// owner is kept in tether_internal_slot_owners, atomically).
    @usableFromInline var fastRuntime: Unmanaged<Engine>?
    /// Outlives each runtime in the slot, so ids are never reissued by the next one.
    var generations = GenerationCounter()

    init(index: Int) {
        self.index = index
    }
}

@usableFromInline enum RuntimeTable {
    /// Made on first use (the first runtime), and published by address in
    /// tether_internal_slot_objects for the lookups: reading one there costs
    /// no retain (they are never freed) and no swift_once.
    static let slots: [RuntimeSlot] = {
        let slots = (0..<HandleCodec.maxRuntimes).map { RuntimeSlot(index: $0) }
        for (i, slot) in slots.enumerated() {
            tether_internal_set_slot_lock(Int32(i), slot.lock.raw)
            tether_internal_set_slot_object(Int32(i), Unmanaged.passUnretained(slot).toOpaque())
        }
        return slots
    }()
    private static let freeLock = Lock()
    private static var freeSlots: [Int] = Array((0..<HandleCodec.maxRuntimes).reversed())

    static func allocate() -> Int? {
        _ = slots  // published before any handle can exist
        freeLock.lock()
        defer { freeLock.unlock() }
        return freeSlots.popLast()
    }

    static func release(_ slot: Int) {
        freeLock.lock()
        // Reuse the least recently freed slot last, so a stale handle keeps
        // pointing at an empty slot for as long as possible.
        freeSlots.insert(slot, at: 0)
        freeLock.unlock()
    }

    /// Finds the live runtime a handle names and returns it with its lock
    /// held, or nil (lock not held) when the handle is stale or of another kind.
    @inline(__always)
    static func acquire(_ id: UInt64, _ kind: HandleKind) -> Engine? {
        locked(id, kind)?.takeUnretainedValue()
    }

    /// `acquire` for the hot paths: runs `body` with the runtime borrowed
    /// (no retain and release of it: profiled, a refcount round trip per
    /// read inside a compute callback), its lock held; `body` unlocks it.
    /// `stale` gives the result when the handle names no live runtime.
    @inline(__always)
    static func withAcquired(_ id: UInt64, _ kind: HandleKind, stale: () -> Int32,
                             _ body: (Engine) -> Int32) -> Int32 {
        guard let runtime = locked(id, kind) else { return stale() }
        return runtime._withUnsafeGuaranteedRef(body)
    }

    @inlinable @inline(__always)
    static func locked(_ id: UInt64, _ kind: HandleKind) -> Unmanaged<Engine>? {
        let h = HandleCodec.decode(id)
        guard h.kind == kind.rawValue, h.slot < HandleCodec.maxRuntimes else { return nil }
        guard let object = tether_internal_slot_object(Int32(h.slot)) else { return nil }
        return Unmanaged<RuntimeSlot>.fromOpaque(object)._withUnsafeGuaranteedRef { slot -> Unmanaged<Engine>? in
            if tether_internal_slot_owner(Int32(h.slot)) != 0 { return lockedSingleThreaded(slot, h, kind) }
            slot.lock.lock()
            guard let runtime = slot.fastRuntime, live(runtime, h, kind) else {
                slot.lock.unlock()
                tether_internal_set_wrong_thread(0)  // stale, not another thread's
                return nil
            }
            return runtime
        }
    }

    @inlinable @inline(__always)
    static func live(_ runtime: Unmanaged<Engine>, _ h: DecodedHandle, _ kind: HandleKind) -> Bool {
        runtime._withUnsafeGuaranteedRef {
            !$0.dead && (kind != .runtime || (h.generation == $0.generation && h.index == 0))
        }
    }

    /// `locked` for a TETHER_RUNTIME_SINGLE_THREAD runtime: no lock, but
    /// only on its owner thread (others get nil and TETHER_ETHREAD).
    @inlinable @inline(__always)
    static func lockedSingleThreaded(_ slot: RuntimeSlot, _ h: DecodedHandle,
                                             _ kind: HandleKind) -> Unmanaged<Engine>? {
        guard tether_internal_slot_owner(Int32(h.slot)) == Engine.currentThread else {
            tether_internal_set_wrong_thread(1)
            return nil
        }
        guard let runtime = slot.fastRuntime, live(runtime, h, kind) else { return nil }
        return runtime
    }
}
