import CTether
import TetherCore

// Batches and untracked sections (include/tether.h).

// Both borrow the runtime (no retain and release of it per call; profiled
// on the S.js update cases, which batch every write): the delivery that
// ending a batch may run pins the runtime itself (`deliverSyncLocked`).
@_cdecl("tether_batch_begin")
public func tether_batch_begin(_ rt: tether_runtime_t) -> Int32 {
    RuntimeTable.withAcquired(rt.id, .runtime, stale: { staleHandle("runtime", rt.id) }) { runtime in
        runtime.graph.batchDepth += 1
        runtime.lock.unlock()
        return 0
    }
}

@_cdecl("tether_batch_end")
public func tether_batch_end(_ rt: tether_runtime_t) -> Int32 {
    RuntimeTable.withAcquired(rt.id, .runtime, stale: { staleHandle("runtime", rt.id) }) { runtime in
        guard runtime.graph.batchDepth > 0 else {
            runtime.lock.unlock()
            return fail(.invalidArgument, "tether_batch_end without a matching tether_batch_begin")
        }
        runtime.graph.batchDepth -= 1
        guard runtime.graph.batchDepth == 0 else {
            runtime.lock.unlock()
            return 0
        }
        // The outermost batch ended: release what it held back.
        if runtime.graph.hasLoopWork && !runtime.asyncClosing {
            _ = runtime.graph.takeLoopWakeRequest()
            runtime.wakeLoop()
        }
        if runtime.graph.hasSyncWork && !DeliveryContext.isDelivering(runtime.id) {
            runtime.deliverSyncLocked()
        } else {
            runtime.lock.unlock()
        }
        return 0
    }
}

@_cdecl("tether_untracked_begin")
public func tether_untracked_begin(_ rt: tether_runtime_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    runtime.graph.beginUntracked()
    runtime.lock.unlock()
    return 0
}

@_cdecl("tether_untracked_end")
public func tether_untracked_end(_ rt: tether_runtime_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    defer { runtime.lock.unlock() }
    do { try runtime.graph.endUntracked() } catch { return fail(error) }
    return 0
}
