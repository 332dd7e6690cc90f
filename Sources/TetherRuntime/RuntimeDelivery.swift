import CLibUV
import CTether
import TetherCore

/// Running queued observer calls: by the writer for SYNC observers, by the
/// loop thread for the rest, one thread at a time (`deliveryLock`).
extension Engine {
    /// Runs queued calls round by round until none are owed. The caller holds
    /// `deliveryLock` AND `lock`. Returns true with `lock` still held when it
    /// found nothing left (so the caller can publish "idle" atomically with
    /// that finding), false with `lock` released when the runtime died.
    /// Each call costs one unlock/lock pair around it, nothing more: the end
    /// of one call and the start of the next share a critical section.
    /// `continuing`: `batch` already holds the rest of the current round
    /// (calls a direct call handed back), run before anything else.
    func drainLocked(includeLoop: Bool, continuing: Bool = false) -> Bool {
        let idle = drainRounds(includeLoop: includeLoop, continuing: continuing)
        // The last call's values are not kept alive until the next drain.
        drainDelivery.pointee.forgetReferences()
        return idle
    }

    private func drainRounds(includeLoop: Bool, continuing: Bool) -> Bool {
        let delivery = drainDelivery
        var haveBatch = continuing
        while true {
            if haveBatch {
                haveBatch = false
            } else if dead {
                lock.unlock()
                return false
            } else if graph.batchDepth > 0 {
                return true  // held back until the outermost batch ends
            } else if graph.hasSyncWork {
                graph.takeBatch(.sync, into: batch)
            } else if includeLoop && graph.hasLoopWork {
                graph.takeBatch(.loop, into: batch)
            } else {
                return true
            }
            var k = 0
            while k < batch.count {
                let entry = batch[k]
                k += 1
                if Graph.isEffectEntry(entry) {
                    graph.runDerived(entry)  // its callbacks go through the gate
                } else if graph.beginDelivery(entry, into: &delivery.pointee) {
                    call(delivery) { run(&$0) }
                }
                runDeferredReleases()
                if dead { lock.unlock(); return false }
            }
        }
    }

    /// Makes the call `delivery` holds (begun, `lock` held) outside the
    /// lock, with `make` (`run`, which enters the callback context, or the
    /// bare call when the caller entered it), then ends it, releasing the
    /// sink if the observer was removed during the call. Returns with
    /// `lock` held.
    @inline(__always)
    private func call(_ delivery: UnsafeMutablePointer<Delivery>, _ make: (inout Delivery) -> Void) {
        lock.unlock()
        make(&delivery.pointee)
        lock.lock()
        if let released = graph.endDelivery(observer: delivery.pointee.observerIndex) {
            lock.unlock()
            runReleases(sinks: [released], bodies: [])
            lock.lock()
        }
    }

    /// Runs the releases the graph deferred while `lock` was held, outside
    /// it. Returns with `lock` held.
    @inline(__always)
    func runDeferredReleases() {
        guard graph.hasDeferredReleases else { return }
        let (sinks, bodies) = graph.takeDeferredReleases()
        lock.unlock()
        runReleases(sinks: sinks, bodies: bodies)
        lock.lock()
    }

    /// Lets go of the delivery lock and `lock`, both held: the common end
    /// of a drain or an evaluation. Nothing touches the runtime after, so
    /// the caller may hold it borrowed (pinning every drain cost an atomic
    /// retain and release per SYNC write: profiled, ~58 of set+notify's 967
    /// instructions).
    @inline(__always)
    func unlockBoth() {
        let wake = deliveryLock.release()
        lock.unlock()
        if wake { deliveryLock.wake() }
    }

    /// Lets go of the delivery lock when `lock` is not held (the runtime
    /// died during the drain, or releases ran after it): `lock` is taken
    /// for it, the delivery lock's guard. When a callback asked for the
    /// runtime's teardown it is finished here, pinned first: the teardown
    /// may drop the last reference while this frame still runs.
    func unlockDelivery(finishingTeardown: Bool) {
        guard finishingTeardown else {
            lock.lock()
            unlockBoth()
            return
        }
        let kept = Unmanaged.passUnretained(self).retain()
        lock.lock()
        unlockBoth()
        kept._withUnsafeGuaranteedRef { $0.finishTeardownIfOwed() }
        kept.release()
    }

    /// Destroy functions and cleanups found during delivery run while this
    /// thread holds the delivery lock, so they count as callbacks: a write
    /// they make is delivered by the loop already running, not by a nested
    /// one that would wait on the lock this thread holds.
    func runReleases(sinks: [ObserverSink], bodies: [DerivedBody]) {
        let entry = DeliveryContext.enter(id, round: 0)
        for sink in sinks { sink.runRelease() }
        for body in bodies { body.finish() }
        DeliveryContext.leave(entry)
    }

    /// The graph's hooks into the C face (its callbacks go through
    /// RuntimeGraph's overrides).
    func installHooks() {
        let slot = slotIndex
        graph.stateHandleText = { id in hexHandle(HandleCodec.state(slot, id)) }
        graph.owner = self
        graph.reportEffectFailure = { [unowned(unsafe) self] effect, failure in
            self.lock.lock()
            let handler = self.effectErrorHandler
            self.lock.unlock()
            if let handler { handler(effect, failure) } else { Engine.printEffectFailure(effect, failure) }
        }
        graph.callbacksReady = { [unowned(unsafe) self] in
            DeliveryContext.isDelivering(self.id) || self.deliveryOwner == Engine.currentThread
        }
    }

    /// For a thread about to evaluate computeds (which runs compute
    /// callbacks): entered with `lock` held; makes sure this thread also
    /// holds `deliveryLock`, the lock that keeps callbacks from running
    /// concurrently. Returns nil (both locks released) if the runtime died
    /// meanwhile; otherwise whether the caller must release `deliveryLock`.
    ///
    /// The caller may hold the runtime borrowed: waiting for another
    /// thread's delivery is pinned (that thread may free the runtime
    /// meanwhile); once this thread holds the delivery lock the runtime
    /// cannot go until `leaveEvaluation`, which pins it only if a callback
    /// asked for its teardown.
    @usableFromInline
    func enterEvaluation() -> Bool? {
        if DeliveryContext.isDelivering(id) { return false }
        if deliveryLock.tryTake() { return true }
        return pinned { () -> Bool? in
            deliveryLock.take(guard: lock)
            if dead {
                unlockBoth()
                return nil
            }
            return true
        }
    }

    /// Ends `enterEvaluation`: entered with `lock` held, releases it, runs
    /// releases the evaluation left behind, then the delivery lock if owned.
    @inlinable @inline(__always)
    func leaveEvaluation(ownsDelivery: Bool) {
        if !ownsDelivery && !graph.hasDeferredReleases && !graph.wantsLoopWake {
            lock.unlock()  // a read nested in a callback: nothing else to do
            return
        }
        finishEvaluation(ownsDelivery: ownsDelivery)
    }

    @usableFromInline
    func finishEvaluation(ownsDelivery: Bool) {
        let deferred = graph.hasDeferredReleases ? graph.takeDeferredReleases() : nil
        wakeLoopIfNeeded()
        // Whether a callback asked for a teardown: read under the lock we
        // hold anyway, so the common case skips finishTeardownIfOwed's own
        // lock section (profiled on reads from outside callbacks).
        var teardownAsked = true  // the runtime died during the drain
        var held = false  // `lock`
        if ownsDelivery && graph.hasSyncWork {
            // Delivering what the evaluation queued (SYNC effects, SYNC+INITIAL observers).
            if drainLocked(includeLoop: false) {
                teardownAsked = teardownPending
                held = true
            }
        } else {
            teardownAsked = teardownPending
            held = true
        }
        if held && ownsDelivery && !teardownAsked && deferred == nil {
            unlockBoth()  // the common end: both let go in one step
            return
        }
        if held { lock.unlock() }
        if let deferred {
            runReleases(sinks: deferred.sinks, bodies: deferred.bodies)
            teardownAsked = true  // a destroy function may have freed the runtime
        }
        if ownsDelivery { unlockDelivery(finishingTeardown: teardownAsked) }
    }

    /// `inout`, not a pointer or `borrowing`: calling through the
    /// drain's pointer copied the whole `Delivery` per call (profiled).
    private func run(_ delivery: inout Delivery) {
        // Writes made inside get the next round; see Graph.maxRounds.
        let entry = DeliveryContext.enter(id, round: delivery.round &+ 1, delivery.change.cause)
        if entry.refused { return }
        delivery.deliver()
        DeliveryContext.leave(entry)
    }

    /// After a write (or a SYNC+INITIAL registration) outside this runtime's
    /// callbacks, entered with `lock` held: run the SYNC calls it owes before
    /// returning to the writer. Returns with `lock` released.
    ///
    /// Callers may hold the runtime borrowed (RuntimeTable.withAcquired),
    /// and a callback run here may free it. While this thread holds the
    /// delivery lock the runtime cannot go (another thread's free waits for
    /// that lock; a free from one of the callbacks is finished by this
    /// thread), so only `unlockDelivery` pins it, when a callback freed it.
    /// Waiting for another thread's delivery is pinned throughout: that
    /// thread may free the runtime meanwhile.
    @usableFromInline @inline(__always)
    func deliverSyncLocked() {
        guard deliveryLock.tryTake() else {
            pinned { drainSync(afterWaiting: true) }
            return
        }
        if let entry = graph.onlySyncEffect {
            runOnlySyncEffect(entry)
        } else {
            drainSync(afterWaiting: false)
        }
    }

    /// `deliverSyncLocked` once this thread may take the delivery lock.
    private func drainSync(afterWaiting: Bool) {
        if afterWaiting { deliveryLock.take(guard: lock) }
        if drainLocked(includeLoop: false) {
            unlockBoth()
        } else {
            unlockDelivery(finishingTeardown: true)
        }
    }

    /// After a change made outside delivery (a registration with INITIAL, a
    /// write): wake the loop if it has new work and run owed SYNC calls
    /// unless a batch holds them or this thread is inside a callback (the
    /// delivery running it will). Entered with `lock` held; releases it.
    func deliverAfterChange() {
        wakeLoopIfNeeded()
        if graph.hasSyncWork && graph.batchDepth == 0 && !DeliveryContext.isDelivering(id) {
            deliverSyncLocked()
        } else {
            lock.unlock()
        }
    }

    /// The drain's one round for a SYNC queue that holds one effect's
    /// entry and nothing else (a new SYNC effect's first run; a write, or
    /// the end of a batch, that woke one effect), made without the drain's
    /// rounds: a new epoch, the run, deferred releases, then what the
    /// drain's next round would find. Entered with `lock` and the delivery
    /// lock held, the runtime alive; releases both. The drain itself cost
    /// such a write ~100 instructions more (its rounds' checks, the batch
    /// swapped out and sorted, the reset of a drain delivery the run does
    /// not use); the drain from its top after the run instead gave back
    /// half the saving.
    private func runOnlySyncEffect(_ entry: UInt32) {
        graph.takeOnlySync()
        graph.runDerived(entry)
        runDeferredReleases()
        if dead {
            lock.unlock()
            unlockDelivery(finishingTeardown: true)
        } else if graph.hasSyncWork {
            drainSync(afterWaiting: false)  // what the run queued (held back if it left a batch open)
        } else {
            unlockBoth()
        }
    }

    /// On the loop thread: run everything owed, then tell flush waiters.
    func deliverOnLoop() {
        lock.lock()
        deliveryLock.take(guard: lock)
        loopDraining = true
        drainsStarted &+= 1
        if !drainLocked(includeLoop: true) { lock.lock() }
        loopDraining = false
        drainsCompleted &+= 1
        idleCondition.broadcast()
        unlockBoth()
    }

    /// Runtime.flush. Called with `lock` held; returns with it released.
    func flushLocked() throws(TetherError) {
        if graph.batchDepth > 0 && (graph.hasLoopWork || graph.hasSyncWork) {
            lock.unlock()
            throw TetherError(.busy, "flush called while a batch is open: the deliveries it waits for are held back until the batch ends")
        }
        if DeliveryContext.isDelivering(id) {
            let owed = graph.hasLoopWork
            lock.unlock()
            if owed { throw TetherError(.busy, "flush called from inside a callback of the same runtime while loop deliveries are owed: it would wait on itself") }
            return
        }
        let cuts = feedbackCuts
        if onLoopThread && mode != .thread {
            // A host's loop thread, outside callbacks: deliver inline.
            lock.unlock()
            deliverOnLoop()
            finishTeardownIfOwed()
            lock.lock()
        } else {
            if graph.hasLoopWork || loopDraining {
                let target = loopDraining ? drainsStarted : drainsStarted &+ 1
                while drainsCompleted < target && !dead {
                    idleCondition.wait(lock)
                }
            }
        }
        if dead {
            lock.unlock()
            throw TetherError(.stale, "the runtime was freed while flush waited")
        }
        let cut = feedbackCuts != cuts
        lock.unlock()
        if cut { throw TetherError(.feedbackLoop, "a feedback loop among callbacks was cut while flushing (max_rounds reached)") }
    }

    /// The uv_async_t callback: the loop thread's only entry point.
    func loopWoke() {
        lock.lock()
        let isDead = dead
        // Read under the lock taken anyway: a runtime without remotes pays
        // no lock section of its own for them on every wake.
        var hasRemotes = !remoteLinks.isEmpty
        lock.unlock()
        if !isDead { deliverOnLoop() }
        if hasRemotes { serviceRemoteLinks() }
        finishTeardownIfOwed()
        lock.lock()
        let close = dead && !asyncClosing
        if close { asyncClosing = true }
        hasRemotes = !remoteLinks.isEmpty
        lock.unlock()
        if close {
            // Freed while this call ran: the wake the free sent dies with
            // the async handle, so the remote links close now (their
            // handles would keep uv_run, and the free's join, waiting).
            if hasRemotes { serviceRemoteLinks() }
            closeAsync()
        }
    }
}
