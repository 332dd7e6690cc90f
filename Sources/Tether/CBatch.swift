import CTether
import TetherCore
import TetherRuntime

// Batches and untracked sections (include/tether.h).

@_cdecl("tether_batch_begin")
public func tether_batch_begin(_ rt: tether_runtime_t) -> Int32 {
    call("tether_batch_begin", .runtime, rt.id) { () throws(TetherError) in try Runtimes.beginBatch(rt.id) }
}

@_cdecl("tether_batch_end")
public func tether_batch_end(_ rt: tether_runtime_t) -> Int32 {
    call("tether_batch_end", .runtime, rt.id) { () throws(TetherError) in try Runtimes.endBatch(rt.id) }
}

@_cdecl("tether_untracked_begin")
public func tether_untracked_begin(_ rt: tether_runtime_t) -> Int32 {
    call("tether_untracked_begin", .runtime, rt.id) { () throws(TetherError) in try Runtimes.beginUntracked(rt.id) }
}

@_cdecl("tether_untracked_end")
public func tether_untracked_end(_ rt: tether_runtime_t) -> Int32 {
    call("tether_untracked_end", .runtime, rt.id) { () throws(TetherError) in try Runtimes.endUntracked(rt.id) }
}
