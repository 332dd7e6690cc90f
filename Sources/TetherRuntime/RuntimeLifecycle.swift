import CLibUV
import CTether
import Glibc
import TetherCore

/// Creating and tearing down runtimes and their loops.
extension Engine {
    static func create(mode: Mode, externalLoop: UnsafeMutablePointer<uv_loop_t>?,
                       maxRounds: UInt32, singleThread: Bool) throws(TetherError) -> Engine {
        guard let slotIndex = RuntimeTable.allocate() else {
            throw TetherError(.noMemory, "too many runtimes alive at once (limit \(HandleCodec.maxRuntimes))")
        }
        let slot = RuntimeTable.slots[slotIndex]
        slot.lock.lock()
        let generation = slot.generations.take()
        // A single-threaded runtime's own lock, disabled: every operation is a no-op.
        let ownLock = singleThread ? Lock(disabled: true) : nil
        let graph = RuntimeGraph(lock: LockRef(ownLock ?? slot.lock),
                                 runtimeID: HandleCodec.encode(slot: slotIndex, kind: .runtime, index: 0,
                                                               generation: generation),
                                 maxRounds: maxRounds, firstGeneration: slot.generations.next)
        slot.lock.unlock()

        let loop: UnsafeMutablePointer<uv_loop_t>
        if let externalLoop {
            loop = externalLoop
        } else {
            loop = .allocate(capacity: 1)
            let rc = uv_loop_init(loop)
            guard rc == 0 else {
                loop.deallocate()
                RuntimeTable.release(slotIndex)
                throw uvError("uv_loop_init", rc)
            }
        }
        let runtime = Engine(slot: slot, slotIndex: slotIndex, generation: generation, mode: mode,
                              graph: graph, loop: loop, ownsLoop: externalLoop == nil,
                              ownLock: ownLock)
        runtime.installHooks()
        do throws(TetherError) {
            try runtime.startLoop()
        } catch {
            if runtime.ownsLoop {
                uv_loop_close(loop)
                loop.deallocate()
            }
            RuntimeTable.release(slotIndex)
            throw error
        }
        slot.lock.lock()
        slot.runtime = runtime
        if runtime.owner != 0 {
            tether_internal_set_slot_owner(Int32(slotIndex), runtime.owner)
            tether_internal_set_slot_lock(Int32(slotIndex), nil)  // the plain path: ask the owner
        }
        slot.lock.unlock()
        return runtime
    }

    private func startLoop() throws(TetherError) {
        let rc = uv_async_init(loop, async, { handle in
            Unmanaged<Engine>.fromOpaque(handle!.pointee.data).takeUnretainedValue().loopWoke()
        })
        guard rc == 0 else {
            async.deallocate()
            throw uvError("uv_async_init", rc)
        }
        async.pointee.data = Unmanaged.passRetained(self).toOpaque()  // released by the close callback
        if mode == .external {
            // A host's uv_run(UV_RUN_DEFAULT) should still return when the
            // host's own work is done: our wake-up handle must not keep it alive.
            uv_unref(UnsafeMutableRawPointer(async).assumingMemoryBound(to: uv_handle_t.self))
        }
        if mode == .host {
            // libuv registers the handle's descriptor with the backend fd only
            // inside uv_run; one turn now makes tether_runtime_fd() poll
            // readable on the first write, before the host ever ran us.
            uv_run(loop, UV_RUN_NOWAIT)
        }
        guard mode == .thread else { return }
        let arg = Unmanaged.passRetained(self).toOpaque()
        let trc = uv_thread_create(&thread, { arg in
            let runtime = Unmanaged<Engine>.fromOpaque(arg!).takeRetainedValue()
            runtime.runLoopThread()
        }, arg)
        guard trc == 0 else {
            Unmanaged<Engine>.fromOpaque(arg).release()
            asyncClosing = true
            uv_close(UnsafeMutableRawPointer(async).assumingMemoryBound(to: uv_handle_t.self), asyncClosed)
            uv_run(loop, UV_RUN_NOWAIT)
            throw uvError("uv_thread_create", trc)
        }
        loopThread = thread
    }

    private func runLoopThread() {
        // A peer that went away (tetherd, for remote states) must be an
        // EPIPE from write, not a SIGPIPE that kills the host process: the
        // signal is blocked on this thread only, the one that writes.
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        uv_run(loop, UV_RUN_DEFAULT)
        // Freed from one of its own callbacks: nobody will join this thread,
        // so it finishes the teardown itself.
        if loopThreadFinishes {
            closeOwnedLoop()
            releaseEverything()
            pthread_detach(pthread_self())
        }
    }

    /// Under `lock`, from tether_runtime_free: from now on every call with a
    /// handle of this runtime fails, and flush waiters wake up.
    func markDead() {
        dead = true
        graph.interruptDirectCall()  // a direct call being made stops at its next call
        // A single-threaded runtime's `lock` is not the slot's: take that.
        if owner != 0 { slot.lock.lock() }
        slot.runtime = nil
        if owner != 0 {
            tether_internal_set_slot_owner(Int32(slotIndex), 0)
            tether_internal_set_slot_lock(Int32(slotIndex), slot.lock.raw)
        }
        slot.generations = GenerationCounter(startingAt: graph.nextGeneration)
        if owner != 0 { slot.lock.unlock() }
        idleCondition.broadcast()
        RuntimeTable.release(slotIndex)
    }

    /// tether_runtime_free from inside a callback defers the teardown to the
    /// moment the outermost callback on that thread has returned.
    func finishTeardownIfOwed() {
        lock.lock()
        var me = uv_thread_self()
        guard teardownPending, uv_thread_equal(&me, &teardownOwner) != 0,
              !DeliveryContext.isDelivering(id) else {
            lock.unlock()
            return
        }
        teardownPending = false
        lock.unlock()
        teardownNow()
    }

    /// Stops the loop and releases everything. Never called from inside one
    /// of this runtime's callbacks.
    func teardownNow() {
        switch mode {
        case .thread:
            if onLoopThread {
                loopThreadFinishes = true
                serviceRemoteLinks()  // dead: closes them, so uv_run can end
                closeAsyncIfOpen()
                return  // runLoopThread finishes once uv_run returns
            }
            lock.lock()
            if !asyncClosing { uv_async_send(async) }  // the loop thread closes it
            lock.unlock()
            uv_thread_join(&thread)
            closeOwnedLoop()
        case .host:
            closeAsyncIfOpen()
            if !insideRun { closeOwnedLoop() }  // else tether_runtime_run does, after uv_run
        case .external:
            closeAsyncIfOpen()  // the host's loop completes the close on its next turn
        }
        releaseEverything()
    }

    func closeAsyncIfOpen() {
        lock.lock()
        let close = !asyncClosing
        asyncClosing = true
        lock.unlock()
        if close { closeAsync() }
    }

    func closeAsync() {
        uv_close(UnsafeMutableRawPointer(async).assumingMemoryBound(to: uv_handle_t.self), asyncClosed)
    }

    /// Lets libuv finish closing our handle, then closes and frees our own loop.
    func closeOwnedLoop() {
        guard ownsLoop, !loopClosed else { return }
        loopClosed = true
        uv_run(loop, UV_RUN_NOWAIT)
        uv_loop_close(loop)
        loop.deallocate()
    }

    /// Waits out any thread still delivering, then frees every node and runs
    /// every destroy function once, on this thread.
    func releaseEverything() {
        lock.lock()
        deliveryLock.take(guard: lock)
        if deliveryLock.release() { deliveryLock.wake() }
        let (sinks, bodies) = graph.releaseAll()
        let bindings = self.bindings.removeAll()
        let handlerRelease = effectErrorHandlerRelease
        effectErrorHandler = nil
        effectErrorHandlerRelease = nil
        let traceRelease = traceHandlerRelease
        traceHandlerRelease = nil
        graph.setTrace(.off, sink: nil)
        contexts = [:]
        _ = scopes.removeAll()
        lock.unlock()

        for sink in sinks { sink.runRelease() }
        for body in bodies { body.finish() }
        handlerRelease?()
        traceRelease?()
        for record in bindings where record.ownsSource {
            if case let .custom(_, setter) = record.source { setter.release() }
        }
    }
}

/// The uv_close callback of a runtime's async handle: frees the handle and
/// drops the reference the handle held on its runtime.
private let asyncClosed: @convention(c) (UnsafeMutablePointer<uv_handle_t>?) -> Void = { handle in
    guard let handle else { return }
    if let data = handle.pointee.data {
        Unmanaged<Engine>.fromOpaque(data).release()
    }
    UnsafeMutableRawPointer(handle).deallocate()
}

func uvError(_ call: String, _ rc: Int32) -> TetherError {
    TetherError(.loopFailure, "\(call) failed: \(String(cString: uv_strerror(rc))) (\(rc))")
}
