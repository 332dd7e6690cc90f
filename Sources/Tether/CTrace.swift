import CTether
import Glibc
import TetherCore
import TetherRuntime

// Tracing: tether_runtime_trace, tether_computed_trace, tether_effect_trace.

@_cdecl("tether_runtime_trace")
public func tether_runtime_trace(_ rt: tether_runtime_t, _ mode: UInt32, _ fn: tether_trace_fn?,
                                 _ userData: UnsafeMutableRawPointer?, _ destroy: tether_destroy_fn?) -> Int32 {
    let traceMode: TraceMode
    switch mode {
    case UInt32(TETHER_TRACE_OFF): traceMode = .off
    case UInt32(TETHER_TRACE_ALL): traceMode = .all
    case UInt32(TETHER_TRACE_MARKED): traceMode = .marked
    default: return fail(.invalidArgument, "tether_runtime_trace: unknown mode \(mode)")
    }
    return call("tether_runtime_trace", .runtime, rt.id) { () throws(TetherError) in
        let release = destroy.map { d in { d(userData) } }
        guard let fn else {
            try Runtimes.setTrace(rt.id, traceMode, nil, release: release)
            return
        }
        try Runtimes.setTrace(rt.id, traceMode, { trace in callTrace(fn, trace, userData) }, release: release)
    }
}

@_cdecl("tether_computed_trace")
public func tether_computed_trace(_ c: tether_computed_t, _ on: Bool) -> Int32 {
    call("tether_computed_trace", .computed, c.id) { () throws(TetherError) in try Runtimes.setTraced(c.id, .computed, on) }
}

@_cdecl("tether_effect_trace")
public func tether_effect_trace(_ e: tether_effect_t, _ on: Bool) -> Int32 {
    call("tether_effect_trace", .effect, e.id) { () throws(TetherError) in try Runtimes.setTraced(e.id, .effect, on) }
}

/// Hands `trace` to a C trace function: every string copied to C for the
/// call and freed after it (the event is borrowed by the callback).
private func callTrace(_ fn: tether_trace_fn, _ trace: RunTrace, _ userData: UnsafeMutableRawPointer?) {
    var strings: [UnsafeMutablePointer<CChar>] = []
    defer { for s in strings { free(s) } }
    func c(_ text: String) -> UnsafePointer<CChar> {
        let copy = strdup(text)!
        strings.append(copy)
        return UnsafePointer(copy)
    }
    let sources = trace.sources.map { s in
        tether_trace_source_t(handle: s.handle, is_computed: s.isComputed, name: s.name.map { c($0) },
                              pointer: c(s.pointer), revision_before: s.revisionBefore, revision_after: s.revisionAfter)
    }
    sources.withUnsafeBufferPointer { list in
        var event = tether_trace_event_t(
            kind: trace.kind == .recompute ? TETHER_TRACE_RECOMPUTE : TETHER_TRACE_EFFECT_RUN,
            reader: trace.reader, first_run: trace.firstRun, source_count: list.count,
            sources: list.baseAddress, tag: trace.tag.map { c($0) }, origin: trace.origin, revision: trace.revision)
        fn(&event, userData)
    }
}
