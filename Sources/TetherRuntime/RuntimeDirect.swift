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
    /// for all of them: before each call this thread stores which call it
    /// claims and reads the stop word, which whatever needs it to look sets
    /// (a removal of one of these observers, SYNC work queued, releases
    /// deferred, the runtime freed); it then takes `lock` and decides as a
    /// drain does (GraphDirect.swift, "Pinned calls"). A lock pair per call
    /// was ~15 instructions and two atomic ones (docs/performance.md,
    /// "Pinned calls").
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
        graph.directOwner = Engine.currentThread
        lock.unlock()
        // One loop for each kind of fence, so that neither tests it per call.
        if let done = graph.asymmetricFences ? makeDirectCalls(count, asymmetric: true)
                                             : makeDirectCalls(count, asymmetric: false) {
            return done
        }
        DeliveryContext.pop()
        graph.endDirectCall()
        // Calls the callbacks queued (their writes, INITIAL calls). The
        // direct call left nothing held in `delivery` (scalars only).
        return graph.hasSyncWork ? drainLocked(includeLoop: false) : true
    }

    /// The calls of `drainDirect`, entered without `lock`. Returns nil with
    /// `lock` held when they are all made (or skipped); else, having
    /// stopped, `drainDirect`'s answer.
    @inline(__always)
    private func makeDirectCalls(_ count: Int, asymmetric: Bool) -> Bool? {
        let targets = graph.directCallTargets
        var k = 0
        while k < count {
            if !graph.claimDirectCall(k, asymmetric: asymmetric) {
                lock.lock()
                switch lookBeforeDirectCall(k, count) {
                case .done(let done): return done
                case .skip:
                    lock.unlock()
                    k += 1
                    continue
                case .call: lock.unlock()
                }
            }
            graph.makeDirectCall(k, targets)
            k += 1
        }
        lock.lock()
        // Asked to look during the last call (its observer removed, the
        // runtime freed, releases deferred).
        if graph.directCallStopped, case .done(let done) = lookBeforeDirectCall(count, count) {
            return done
        }
        return nil
    }

    private enum DirectLook {
        case call, skip
        case done(Bool)
    }

    /// `lock` held, before the `k`th call (after the last one when `k` is
    /// `count`): frees the observers of the call before and of this one
    /// if removals left that to this thread, runs deferred releases, and
    /// stops the direct calls when the runtime died or SYNC work was queued
    /// (the calls still owed become the rest of the current round, and the
    /// queue takes over). `.call` or `.skip` (the observer was removed)
    /// with `lock` still held; else `drainDirect`'s answer.
    private func lookBeforeDirectCall(_ k: Int, _ count: Int) -> DirectLook {
        var released: [ObserverSink] = []
        if k > 0, let sink = graph.endRemovedDirectCall(k - 1).release { released.append(sink) }
        var skip = false
        if k < count {
            let (skipped, sink) = graph.endRemovedDirectCall(k)
            skip = skipped
            if let sink { released.append(sink) }
        }
        // Before any window without the lock: a removal in one sets the
        // stop word again, for the next claim to see.
        graph.resumeDirectCalls()
        if !released.isEmpty {
            lock.unlock()
            runReleases(sinks: released, bodies: [])
            lock.lock()
        }
        runDeferredReleases()
        if dead {
            DeliveryContext.pop()
            graph.endDirectCall()
            lock.unlock()
            return .done(false)
        }
        if k < count && graph.directCallInterrupted {
            DeliveryContext.pop()
            graph.scheduleRemainingDirect(from: k, into: batch)
            return .done(drainLocked(includeLoop: false, continuing: true))
        }
        return skip ? .skip : .call
    }
}
