import CTether
import TetherCore
import TetherRuntime

// Batches and untracked sections (include/tether.h).

// Both have a plain path (PlainAccess.swift) and a full one out of line.

@_cdecl("tether_batch_begin")
public func tether_batch_begin(_ rt: tether_runtime_t) -> Int32 {
    Runtimes.plainBatch(rt.id, { $0.plainBatchBegin($1) }, held: batchBeginHeld, full: batchBeginFull)
}

/// A begin the plain path declined (a handle of another runtime in the
/// slot): let go, then the full path reports.
@inline(never)
private func batchBeginHeld(_ slot: Int32, _ id: UInt64) -> Int32 {
    Runtimes.releaseSlot(slot)
    return batchBeginFull(id, nil)
}

@inline(never)
private func batchBeginFull(_ id: UInt64, _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    if let wake { tether_internal_lock_wake(wake) }
    return call("tether_batch_begin", .runtime, id) { () throws(TetherError) in try Runtimes.beginBatch(id) }
}

@_cdecl("tether_batch_end")
public func tether_batch_end(_ rt: tether_runtime_t) -> Int32 {
    Runtimes.plainBatch(rt.id, { $0.plainBatchEnd($1) }, held: batchEndHeld, full: batchEndFull)
}

/// The outermost batch's end with work owed, on the access the plain path took.
@inline(never)
private func batchEndHeld(_ slot: Int32, _ id: UInt64) -> Int32 {
    Runtimes.endBatchHeld(slot, id) ? 0 : batchEndFull(id, nil)
}

@inline(never)
private func batchEndFull(_ id: UInt64, _ wake: UnsafeMutablePointer<tether_internal_lock_t>?) -> Int32 {
    if let wake { tether_internal_lock_wake(wake) }
    return call("tether_batch_end", .runtime, id) { () throws(TetherError) in try Runtimes.endBatch(id) }
}

@_cdecl("tether_untracked_begin")
public func tether_untracked_begin(_ rt: tether_runtime_t) -> Int32 {
    call("tether_untracked_begin", .runtime, rt.id) { () throws(TetherError) in try Runtimes.beginUntracked(rt.id) }
}

@_cdecl("tether_untracked_end")
public func tether_untracked_end(_ rt: tether_runtime_t) -> Int32 {
    call("tether_untracked_end", .runtime, rt.id) { () throws(TetherError) in try Runtimes.endUntracked(rt.id) }
}
