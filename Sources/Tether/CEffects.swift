import CTether
import TetherCore

// Effects and one-shot tracking (include/tether.h).

@_cdecl("tether_effect_new")
public func tether_effect_new(_ rt: tether_runtime_t, _ flags: UInt32, _ fn: tether_effect_fn?,
                              _ cleanup: tether_cleanup_fn?, _ userData: UnsafeMutableRawPointer?,
                              _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_effect_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_effect_new: out is NULL") }
    guard let fn else { return fail(.invalidArgument, "tether_effect_new: fn is NULL") }
    guard flags & ~UInt32(TETHER_EFFECT_SYNC) == 0 else {
        return fail(.invalidArgument, "tether_effect_new: unknown effect flags 0x\(String(flags, radix: 16))")
    }
    return RuntimeTable.withAcquired(rt.id, .runtime, stale: { staleHandle("runtime", rt.id) }) { runtime in
        let body = CEffectBody(fn, cleanup, userData, destroy)
        let id: DerivedID
        do throws(TetherError) {
            id = try runtime.graph.createDerived(.effect, body: body, sync: flags & UInt32(TETHER_EFFECT_SYNC) != 0)
        } catch {
            runtime.lock.unlock()
            return fail(TetherError(error.code, "tether_effect_new: \(error.message)"))
        }
        body.handle = tether_effect_t(id: HandleCodec.derived(runtime.slotIndex, .effect, id))
        out.pointee = body.handle
        runtime.adopt(out.pointee.id)
        runtime.deliverAfterChange()  // a SYNC effect's first run, before we return
        return 0
    }
}

@_cdecl("tether_effect_free")
public func tether_effect_free(_ e: tether_effect_t) -> Int32 {
    freeDerived(e.id, .effect, "tether_effect_free")
}

@_cdecl("tether_track")
public func tether_track(_ rt: tether_runtime_t, _ flags: UInt32, _ apply: tether_track_apply_fn?,
                         _ onChange: tether_track_change_fn?, _ userData: UnsafeMutableRawPointer?,
                         _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_tracking_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_track: out is NULL") }
    guard let apply else { return fail(.invalidArgument, "tether_track: apply is NULL") }
    guard let onChange else { return fail(.invalidArgument, "tether_track: on_change is NULL") }
    guard flags & ~UInt32(TETHER_EFFECT_SYNC) == 0 else {
        return fail(.invalidArgument, "tether_track: unknown flags 0x\(String(flags, radix: 16))")
    }
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    guard let owns = runtime.enterEvaluation() else { return staleHandle("runtime", rt.id) }
    let slot = runtime.slotIndex
    let handle = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
    handle.initialize(to: 0)
    let body = DerivedBody(
        run: { revision in onChange(tether_tracking_t(id: handle.pointee), revision, userData) },
        release: {
            handle.deallocate()
            destroy?(userData)
        })
    do {
        let id = try runtime.graph.createDerived(.tracking, body: body, sync: flags & UInt32(TETHER_EFFECT_SYNC) != 0)
        handle.pointee = HandleCodec.derived(slot, .tracking, id)
        out.pointee = tether_tracking_t(id: handle.pointee)
        runtime.adopt(out.pointee.id)
        try runtime.graph.runApply(id) { apply(userData) }
    } catch {
        runtime.leaveEvaluation(ownsDelivery: owns)
        if handle.pointee == 0 { handle.deallocate() }
        return fail(TetherError(error.code, "tether_track: \(error.message)"))
    }
    runtime.leaveEvaluation(ownsDelivery: owns)
    return 0
}

@_cdecl("tether_tracking_cancel")
public func tether_tracking_cancel(_ t: tether_tracking_t) -> Int32 {
    freeDerived(t.id, .tracking, "tether_tracking_cancel")
}
