import CTether
import TetherCore
import TetherRuntime

// Effects and one-shot tracking (include/tether.h).

@_cdecl("tether_effect_new")
public func tether_effect_new(_ rt: tether_runtime_t, _ flags: UInt32, _ fn: tether_effect_fn?,
                              _ cleanup: tether_cleanup_fn?, _ userData: UnsafeMutableRawPointer?,
                              _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_effect_t>?) -> Int32 {
    guard let out else { return nullOut("tether_effect_new") }
    guard let fn else { return nullOut("tether_effect_new", "fn") }
    guard flags & ~UInt32(TETHER_EFFECT_SYNC) == 0 else {
        return fail(.invalidArgument, "tether_effect_new: unknown effect flags 0x\(String(flags, radix: 16))")
    }
    let body = CEffectBody(fn, cleanup, userData, destroy)
    return call("tether_effect_new") { () throws(TetherError) in
        out.pointee = tether_effect_t(id: try Runtimes.newEffect(in: rt.id, sync: flags & UInt32(TETHER_EFFECT_SYNC) != 0,
                                                               body: body, created: { _ in }))
    }
}

@_cdecl("tether_effect_new_fallible")
public func tether_effect_new_fallible(_ rt: tether_runtime_t, _ flags: UInt32, _ fn: tether_effect_try_fn?,
                                       _ cleanup: tether_cleanup_fn?, _ userData: UnsafeMutableRawPointer?,
                                       _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_effect_t>?) -> Int32 {
    guard let out else { return nullOut("tether_effect_new_fallible") }
    guard let fn else { return nullOut("tether_effect_new_fallible", "fn") }
    guard flags & ~UInt32(TETHER_EFFECT_SYNC) == 0 else {
        return fail(.invalidArgument, "tether_effect_new_fallible: unknown effect flags 0x\(String(flags, radix: 16))")
    }
    let body = CEffectBody(nil, fallible: fn, cleanup, userData, destroy)
    return call("tether_effect_new_fallible") { () throws(TetherError) in
        out.pointee = tether_effect_t(id: try Runtimes.newEffect(in: rt.id, sync: flags & UInt32(TETHER_EFFECT_SYNC) != 0,
                                                                 body: body, created: { _ in }))
    }
}

@_cdecl("tether_effect_last_error")
public func tether_effect_last_error(_ e: tether_effect_t, _ code: UnsafeMutablePointer<Int32>?,
                                     _ buf: UnsafeMutablePointer<CChar>?, _ size: Int,
                                     _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let code else { return nullOut("tether_effect_last_error", "code") }
    return call("tether_effect_last_error", .effect, e.id) { () throws(TetherError) in
        let failure = try Runtimes.effectFailure(e.id)
        try copyOutString(failure?.message ?? "", buf, size, len)
        code.pointee = failure?.code.rawValue ?? 0
    }
}

@_cdecl("tether_runtime_on_effect_error")
public func tether_runtime_on_effect_error(_ rt: tether_runtime_t, _ fn: tether_effect_error_fn?,
                                           _ userData: UnsafeMutableRawPointer?, _ destroy: tether_destroy_fn?) -> Int32 {
    call("tether_runtime_on_effect_error", .runtime, rt.id) { () throws(TetherError) in
        guard let fn else {
            try Runtimes.setEffectErrorHandler(rt.id, nil, release: destroy.map { d in { d(userData) } })
            return
        }
        try Runtimes.setEffectErrorHandler(rt.id, { effect, failure in
            var message = failure.message
            message.withUTF8 { bytes in
                // NUL-terminated for C: the message's bytes plus a 0.
                let text = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
                defer { text.deallocate() }
                bytes.withMemoryRebound(to: CChar.self) { text.update(from: $0.baseAddress!, count: bytes.count) }
                text[bytes.count] = 0
                fn(tether_effect_t(id: effect), failure.code.rawValue, text, userData)
            }
        }, release: destroy.map { d in { d(userData) } })
    }
}

@_cdecl("tether_effect_on_cleanup")
public func tether_effect_on_cleanup(_ e: tether_effect_t, _ fn: tether_cleanup_fn?, _ userData: UnsafeMutableRawPointer?) -> Int32 {
    guard let fn else { return nullOut("tether_effect_on_cleanup", "fn") }
    return call("tether_effect_on_cleanup", .effect, e.id) { () throws(TetherError) in
        try Runtimes.addCleanup(toEffect: e.id) { fn(userData) }
    }
}

@_cdecl("tether_effect_free")
public func tether_effect_free(_ e: tether_effect_t) -> Int32 {
    call("tether_effect_free", .effect, e.id) { () throws(TetherError) in try Runtimes.freeDerived(e.id, .effect) }
}

@_cdecl("tether_track")
public func tether_track(_ rt: tether_runtime_t, _ flags: UInt32, _ apply: tether_track_apply_fn?,
                         _ onChange: tether_track_change_fn?, _ userData: UnsafeMutableRawPointer?,
                         _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_tracking_t>?) -> Int32 {
    guard let out else { return nullOut("tether_track") }
    guard let apply else { return nullOut("tether_track", "apply") }
    guard let onChange else { return nullOut("tether_track", "on_change") }
    guard flags & ~UInt32(TETHER_EFFECT_SYNC) == 0 else {
        return fail(.invalidArgument, "tether_track: unknown flags 0x\(String(flags, radix: 16))")
    }
    // The handle on_change reports, known once the node exists; freed with
    // the body (or here, when the node was never made).
    let handle = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
    handle.initialize(to: 0)
    let body = DerivedBody(
        run: { revision in onChange(tether_tracking_t(id: handle.pointee), revision, userData) },
        release: {
            handle.deallocate()
            destroy?(userData)
        })
    let code = call("tether_track") { () throws(TetherError) in
        out.pointee = tether_tracking_t(id: try Runtimes.track(in: rt.id, sync: flags & UInt32(TETHER_EFFECT_SYNC) != 0, body: body,
                                                            created: { handle.pointee = $0 }, apply: { apply(userData) }))
    }
    if code != 0 && handle.pointee == 0 { handle.deallocate() }
    return code
}

@_cdecl("tether_tracking_cancel")
public func tether_tracking_cancel(_ t: tether_tracking_t) -> Int32 {
    call("tether_tracking_cancel", .tracking, t.id) { () throws(TetherError) in try Runtimes.freeDerived(t.id, .tracking) }
}
