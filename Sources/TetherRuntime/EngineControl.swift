import CLibUV
import TetherCore

// Runtimes: making and freeing them, running and flushing their loops,
// batches and untracked sections.

/// How a runtime's loop runs.
package enum LoopMode {
    /// On the runtime's own thread (TETHER_LOOP_THREAD).
    case thread
    /// By the host calling `run` when the backend fd polls readable.
    case host
    /// As one uv_async_t on the host's own loop.
    case external(UnsafeMutablePointer<uv_loop_t>)
}

extension Runtimes {
    /// A new runtime and its loop (started, in `.thread` mode); its handle.
    package static func newRuntime(loop: LoopMode, maxRounds: UInt32, singleThread: Bool) throws(TetherError) -> UInt64 {
        let mode: Engine.Mode
        var external: UnsafeMutablePointer<uv_loop_t>?
        switch loop {
        case .thread: mode = .thread
        case .host: mode = .host
        case let .external(l): mode = .external; external = l
        }
        if singleThread && mode == .thread {
            throw TetherError(.invalidArgument, "a single-threaded runtime needs a host or external loop (its one thread must also run its loop)")
        }
        return try Engine.create(mode: mode, externalLoop: external, maxRounds: maxRounds, singleThread: singleThread).id
    }

    /// Frees a runtime: every handle of it is stale from now on. From inside
    /// one of its callbacks the teardown finishes when that callback returns.
    package static func freeRuntime(_ rt: UInt64) throws(TetherError) {
        let engine = try acquire(rt, .runtime)
        if engine.mode != .thread && !engine.onLoopThread {
            engine.lock.unlock()
            throw TetherError(.wrongThread, "a runtime whose loop the host runs must be freed on its loop thread")
        }
        engine.markDead()
        let deferred = DeliveryContext.isDelivering(engine.id)
        if deferred {
            engine.teardownPending = true
            engine.teardownOwner = uv_thread_self()
        }
        engine.lock.unlock()
        if !deferred { engine.teardownNow() }
    }

    /// Waits until every callback owed for earlier writes has run.
    package static func flush(_ rt: UInt64) throws(TetherError) {
        let engine = try acquire(rt, .runtime)
        if !engine.remoteLinks.isEmpty && !engine.onLoopThread && !DeliveryContext.isDelivering(engine.id) {
            // Writes sent to tetherd from callbacks: their acknowledgement
            // and the changes they bring back come first.
            let links = engine.remoteLinks
            engine.lock.unlock()
            for link in links { try link.waitIdle() }  // the lock is not held here
            engine.lock.lock()
        }
        try engine.flushLocked()
    }

    /// One non-blocking turn of a host-run loop.
    package static func runOnce(_ rt: UInt64) throws(TetherError) {
        let engine = try acquire(rt, .runtime)
        guard engine.mode == .host else {
            engine.lock.unlock()
            throw TetherError(.invalidArgument, "only a runtime whose loop the host runs (TETHER_LOOP_HOST) is run by the host")
        }
        guard !DeliveryContext.isDelivering(engine.id), !engine.insideRun else {
            engine.lock.unlock()
            throw TetherError(.busy, "called from inside one of the runtime's own callbacks")
        }
        engine.loopThread = uv_thread_self()
        engine.insideRun = true
        engine.lock.unlock()
        uv_run(engine.loop, UV_RUN_NOWAIT)
        engine.lock.lock()
        engine.insideRun = false
        let finishLoop = engine.dead
        engine.lock.unlock()
        if finishLoop { engine.closeOwnedLoop() }  // freed by one of the callbacks just run
    }

    /// The descriptor a host polls before calling `runOnce`.
    package static func backendFD(_ rt: UInt64) throws(TetherError) -> Int32 {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        guard engine.mode == .host else {
            throw TetherError(.invalidArgument, "only a runtime whose loop the host runs (TETHER_LOOP_HOST) has a descriptor for the host to poll")
        }
        return uv_backend_fd(engine.loop)
    }

    /// The runtime's revision: one step per applied write or commit.
    package static func revision(_ rt: UInt64) throws(TetherError) -> UInt64 {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        return engine.graph.revision
    }

    // Batches borrow the engine (no retain and release of it per call;
    // profiled on the S.js update cases, which batch every write): the
    // delivery that ending a batch may run pins the engine itself.

    @inline(__always)
    package static func beginBatch(_ rt: UInt64) throws(TetherError) {
        try withAcquired(rt, .runtime) { engine in
            engine.graph.batchDepth += 1
            engine.lock.unlock()
            return .success(())
        }
    }

    /// Ends a batch; the outermost one releases what it held back (SYNC
    /// calls run before this returns).
    @inline(__always)
    package static func endBatch(_ rt: UInt64) throws(TetherError) {
        try withAcquired(rt, .runtime) { engine in endBatchAcquired(engine) }
    }

    /// `endBatch` on the engine acquired (its lock held, or a
    /// single-threaded runtime's owner thread); lets go of it.
    @inline(__always)
    package static func endBatchAcquired(_ engine: Engine) -> Result<Void, TetherError> {
        guard engine.graph.batchDepth > 0 else {
            engine.lock.unlock()
            return .failure(TetherError(.invalidArgument, "a batch ended that was never begun"))
        }
        engine.graph.batchDepth -= 1
        guard engine.graph.batchDepth == 0 else {
            engine.lock.unlock()
            return .success(())
        }
        if engine.graph.hasLoopWork && !engine.asyncClosing {
            _ = engine.graph.takeLoopWakeRequest()
            engine.wakeLoop()
        }
        if engine.graph.hasSyncWork && !DeliveryContext.isDelivering(engine.id) {
            engine.deliverSyncLocked()
        } else {
            engine.lock.unlock()
        }
        return .success(())
    }

    package static func beginUntracked(_ rt: UInt64) throws(TetherError) {
        let engine = try acquire(rt, .runtime)
        engine.graph.beginUntracked()
        engine.lock.unlock()
    }

    package static func endUntracked(_ rt: UInt64) throws(TetherError) {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        try engine.graph.endUntracked()
    }
}
