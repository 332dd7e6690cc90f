import CLibUV
import CTether
import TetherCore

// The runtime functions of include/tether.h.

@_cdecl("tether_runtime_options_init")
public func tether_runtime_options_init(_ opts: UnsafeMutablePointer<tether_runtime_options_t>?) {
    guard let opts else { return }
    opts.pointee = tether_runtime_options_t()
    opts.pointee.mode = TETHER_LOOP_THREAD
    opts.pointee.max_rounds = 0
}

@_cdecl("tether_runtime_new")
public func tether_runtime_new(_ opts: UnsafePointer<tether_runtime_options_t>?,
                               _ out: UnsafeMutablePointer<tether_runtime_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_runtime_new: out is NULL") }
    var options = tether_runtime_options_t()
    tether_runtime_options_init(&options)
    if let opts { options = opts.pointee }
    let reservedClear = withUnsafeBytes(of: options.reserved) { $0.allSatisfy { $0 == 0 } }
    guard reservedClear else {
        return fail(.invalidArgument, "tether_runtime_new: options.reserved must be zero (call tether_runtime_options_init first)")
    }
    let mode: Runtime.Mode
    switch options.mode {
    case TETHER_LOOP_THREAD: mode = .thread
    case TETHER_LOOP_HOST: mode = .host
    case TETHER_LOOP_EXTERNAL: mode = .external
    default: return fail(.invalidArgument, "tether_runtime_new: unknown loop mode \(options.mode.rawValue)")
    }
    var external: UnsafeMutablePointer<uv_loop_t>?
    if mode == .external {
        guard let loop = options.loop else {
            return fail(.invalidArgument, "tether_runtime_new: TETHER_LOOP_EXTERNAL needs options.loop (the host's uv_loop_t)")
        }
        external = UnsafeMutableRawPointer(loop).assumingMemoryBound(to: uv_loop_t.self)
    } else if options.loop != nil {
        return fail(.invalidArgument, "tether_runtime_new: options.loop is only for TETHER_LOOP_EXTERNAL")
    }
    guard options.flags & ~UInt32(TETHER_RUNTIME_SINGLE_THREAD) == 0 else {
        return fail(.invalidArgument, "tether_runtime_new: unknown runtime flags 0x\(String(options.flags, radix: 16))")
    }
    let singleThread = options.flags & UInt32(TETHER_RUNTIME_SINGLE_THREAD) != 0
    if singleThread && mode == .thread {
        return fail(.invalidArgument, "tether_runtime_new: TETHER_RUNTIME_SINGLE_THREAD needs TETHER_LOOP_HOST or TETHER_LOOP_EXTERNAL (its one thread must also run its loop)")
    }
    let rounds = options.max_rounds == 0 ? 100 : UInt32(options.max_rounds)
    do {
        let runtime = try Runtime.create(mode: mode, externalLoop: external, maxRounds: rounds,
                                         singleThread: singleThread)
        out.pointee = tether_runtime_t(id: runtime.id)
        return 0
    } catch {
        return fail(error)
    }
}

@_cdecl("tether_runtime_free")
public func tether_runtime_free(_ rt: tether_runtime_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    if runtime.mode != .thread && !runtime.onLoopThread {
        runtime.lock.unlock()
        return fail(.wrongThread, "tether_runtime_free: a TETHER_LOOP_HOST or TETHER_LOOP_EXTERNAL runtime must be freed on its loop thread")
    }
    runtime.markDead()
    let deferred = DeliveryContext.isDelivering(runtime.id)
    if deferred {
        runtime.teardownPending = true
        runtime.teardownOwner = uv_thread_self()
    }
    runtime.lock.unlock()
    if !deferred { runtime.teardownNow() }
    return 0
}

@_cdecl("tether_runtime_flush")
public func tether_runtime_flush(_ rt: tether_runtime_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    return runtime.flush()
}

@_cdecl("tether_runtime_run")
public func tether_runtime_run(_ rt: tether_runtime_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    guard runtime.mode == .host else {
        runtime.lock.unlock()
        return fail(.invalidArgument, "tether_runtime_run: only a TETHER_LOOP_HOST runtime is run by the host")
    }
    guard !DeliveryContext.isDelivering(runtime.id), !runtime.insideRun else {
        runtime.lock.unlock()
        return fail(.busy, "tether_runtime_run called from inside one of the runtime's own callbacks")
    }
    runtime.loopThread = uv_thread_self()
    runtime.insideRun = true
    runtime.lock.unlock()
    uv_run(runtime.loop, UV_RUN_NOWAIT)
    runtime.lock.lock()
    runtime.insideRun = false
    let finishLoop = runtime.dead
    runtime.lock.unlock()
    if finishLoop { runtime.closeOwnedLoop() }  // freed by one of the callbacks just run
    return 0
}

@_cdecl("tether_runtime_fd")
public func tether_runtime_fd(_ rt: tether_runtime_t, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_runtime_fd: out is NULL") }
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    defer { runtime.lock.unlock() }
    guard runtime.mode == .host else {
        return fail(.invalidArgument, "tether_runtime_fd: only a TETHER_LOOP_HOST runtime has a descriptor for the host to poll")
    }
    out.pointee = uv_backend_fd(runtime.loop)
    return 0
}

@_cdecl("tether_runtime_revision")
public func tether_runtime_revision(_ rt: tether_runtime_t, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_runtime_revision: out is NULL") }
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    out.pointee = runtime.graph.revision
    runtime.lock.unlock()
    return 0
}
