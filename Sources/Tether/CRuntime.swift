import CLibUV
import CTether
import TetherCore
import TetherRuntime

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
    let fn: StaticString = "tether_runtime_new"
    guard let out else { return nullOut(fn) }
    var options = tether_runtime_options_t()
    tether_runtime_options_init(&options)
    if let opts { options = opts.pointee }
    let reservedClear = withUnsafeBytes(of: options.reserved) { $0.allSatisfy { $0 == 0 } }
    guard reservedClear else {
        return fail(.invalidArgument, "\(fn): options.reserved must be zero (call tether_runtime_options_init first)")
    }
    let loop: LoopMode
    switch options.mode {
    case TETHER_LOOP_THREAD: loop = .thread
    case TETHER_LOOP_HOST: loop = .host
    case TETHER_LOOP_EXTERNAL:
        guard let given = options.loop else {
            return fail(.invalidArgument, "\(fn): TETHER_LOOP_EXTERNAL needs options.loop (the host's uv_loop_t)")
        }
        loop = .external(UnsafeMutableRawPointer(given).assumingMemoryBound(to: uv_loop_t.self))
    default: return fail(.invalidArgument, "\(fn): unknown loop mode \(options.mode.rawValue)")
    }
    if options.mode != TETHER_LOOP_EXTERNAL && options.loop != nil {
        return fail(.invalidArgument, "\(fn): options.loop is only for TETHER_LOOP_EXTERNAL")
    }
    guard options.flags & ~UInt32(TETHER_RUNTIME_SINGLE_THREAD) == 0 else {
        return fail(.invalidArgument, "\(fn): unknown runtime flags 0x\(String(options.flags, radix: 16))")
    }
    let singleThread = options.flags & UInt32(TETHER_RUNTIME_SINGLE_THREAD) != 0
    if singleThread && options.mode == TETHER_LOOP_THREAD {
        return fail(.invalidArgument, "\(fn): TETHER_RUNTIME_SINGLE_THREAD needs TETHER_LOOP_HOST or TETHER_LOOP_EXTERNAL (its one thread must also run its loop)")
    }
    let rounds = options.max_rounds == 0 ? 100 : UInt32(options.max_rounds)
    return call(fn) { () throws(TetherError) in
        out.pointee = tether_runtime_t(id: try Runtimes.newRuntime(loop: loop, maxRounds: rounds, singleThread: singleThread))
    }
}

@_cdecl("tether_runtime_free")
public func tether_runtime_free(_ rt: tether_runtime_t) -> Int32 {
    call("tether_runtime_free", .runtime, rt.id) { () throws(TetherError) in try Runtimes.freeRuntime(rt.id) }
}

@_cdecl("tether_runtime_flush")
public func tether_runtime_flush(_ rt: tether_runtime_t) -> Int32 {
    call("tether_runtime_flush", .runtime, rt.id) { () throws(TetherError) in try Runtimes.flush(rt.id) }
}

@_cdecl("tether_runtime_run")
public func tether_runtime_run(_ rt: tether_runtime_t) -> Int32 {
    call("tether_runtime_run", .runtime, rt.id) { () throws(TetherError) in try Runtimes.runOnce(rt.id) }
}

@_cdecl("tether_runtime_fd")
public func tether_runtime_fd(_ rt: tether_runtime_t, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    guard let out else { return nullOut("tether_runtime_fd") }
    return call("tether_runtime_fd", .runtime, rt.id) { () throws(TetherError) in out.pointee = try Runtimes.backendFD(rt.id) }
}

@_cdecl("tether_runtime_revision")
public func tether_runtime_revision(_ rt: tether_runtime_t, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let out else { return nullOut("tether_runtime_revision") }
    return call("tether_runtime_revision", .runtime, rt.id) { () throws(TetherError) in out.pointee = try Runtimes.revision(rt.id) }
}

@_cdecl("tether_runtime_graph_dot")
public func tether_runtime_graph_dot(_ rt: tether_runtime_t, _ buf: UnsafeMutablePointer<CChar>?, _ size: Int,
                                     _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    call("tether_runtime_graph_dot", .runtime, rt.id) { () throws(TetherError) in
        try copyOutString(try Runtimes.graphDOT(rt.id), buf, size, len)
    }
}
