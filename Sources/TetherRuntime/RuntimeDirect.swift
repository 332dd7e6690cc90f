import TetherCore

/// Making the SYNC calls a write left to its writer (the direct call,
/// GraphDirect.swift): pinned under the lock by the write, made without it.
extension Engine {
    /// After a write from outside callbacks that left its SYNC calls to the
    /// writer, `lock` held: makes them if nothing else is owed first and no
    /// other thread is delivering; otherwise queues them as the write would
    /// have and delivers the queue as any SYNC write does. Returns with
    /// `lock` released.
    @usableFromInline @inline(__always)
    func deliverDirectWrite() {
        if !graph.hasSyncWork && deliveryLock.tryTake() {
            deliverDirectLocked()
            return
        }
        graph.scheduleDirectCall()
        // Queued: delivered as any SYNC write's calls (a direct call is
        // only recorded outside callbacks and batches).
        if graph.hasSyncWork { deliverSyncLocked() } else { lock.unlock() }
    }

    /// The SYNC calls a write left to its writer, made in the observers'
    /// order with one prepared change. Entered holding `lock` and
    /// `deliveryLock`; returns with both released. Pins the runtime only if
    /// a callback freed it (see `deliverSyncLocked`).
    @usableFromInline
    func deliverDirectLocked() {
        if drainDirect() {
            unlockBoth()
        } else {
            unlockDelivery(finishingTeardown: true)
        }
    }

    /// Returns as `drainLocked` does: true with `lock` held when nothing
    /// is owed any more, false with it released when the runtime died.
    ///
    /// The calls share one callback context, entered once: they have the
    /// same round and cause (`recordDirectCall` filled them once), and
    /// entering and leaving per call was ~25 of a notification's 183
    /// instructions (profiled). They are made without `lock`, released once
    /// for all of them: between calls this thread reads only the call's
    /// words (a removal races the call for its word) and `directStop`,
    /// which whatever needs this thread to look sets (SYNC work queued,
    /// releases deferred, the runtime freed); it then takes `lock` and
    /// decides as a drain does. A lock pair per call was ~15 instructions
    /// and two atomic ones (docs/performance.md, "Pinned calls").
    @inline(__always)
    private func drainDirect() -> Bool {
        let delivery = graph.directDelivery
        let count = graph.directCallCount
        // Writes made inside get the next round; see Graph.maxRounds. A
        // direct call is owed only to a write from outside this runtime's
        // callbacks, so the context is pushed, never replaced; its cause is
        // the write's wave, without metadata (`recordDirectCall`).
        assert(!DeliveryContext.isDelivering(id))
        guard DeliveryContext.push(id, round: delivery.pointee.round &+ 1, wave: delivery.pointee.change.cause.wave) else {
            // Nesting too deep: every call ends without being made, as a
            // refused entry ends a queued one (tested here, not per call).
            graph.endDirectCall()
            return graph.hasSyncWork ? drainLocked(includeLoop: false) : true
        }
        lock.unlock()
        var k = 0
        while k < count {
            var removedDuring = false
            if graph.claimDirectCall(k) {
                graph.makeDirectCall(k)
                removedDuring = graph.finishDirectCall(k)
            }
            k += 1
            if removedDuring || graph.directCallStopped {
                lock.lock()
                if let done = lookBetweenDirectCalls(k, count, removedDuring: removedDuring) {
                    return done
                }
                lock.unlock()
            }
        }
        lock.lock()
        DeliveryContext.pop()
        graph.endDirectCall()
        // Calls the callbacks queued (their writes, INITIAL calls). The
        // direct call left nothing held in `delivery` (scalars only).
        return graph.hasSyncWork ? drainLocked(includeLoop: false) : true
    }

    /// `lock` held, after the call before the `k`th: releases an observer
    /// removed during that call, runs deferred releases, and stops the
    /// direct calls when the runtime died or SYNC work was queued (the
    /// calls still owed become the rest of the current round, and the
    /// queue takes over). Nil to go on (`lock` still held); else
    /// `drainDirect`'s answer.
    private func lookBetweenDirectCalls(_ k: Int, _ count: Int, removedDuring: Bool) -> Bool? {
        if removedDuring, let released = graph.endRemovedDirectCall(k - 1) {
            lock.unlock()
            runReleases(sinks: [released], bodies: [])
            lock.lock()
        }
        graph.resumeDirectCalls()
        runDeferredReleases()
        if dead {
            DeliveryContext.pop()
            graph.endDirectCall()
            lock.unlock()
            return false
        }
        if k < count && graph.directCallInterrupted {
            DeliveryContext.pop()
            graph.scheduleRemainingDirect(from: k, into: batch)
            return drainLocked(includeLoop: false, continuing: true)
        }
        return nil
    }
}
