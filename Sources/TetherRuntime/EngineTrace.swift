import CTether
import Glibc
import TetherCore

// "Why did this run" (GraphTrace.swift in TetherCore): the runtime's face of
// it. Events leave the graph as TraceEvent; here they become a `RunTrace`
// (handles as the C face spells them, the transaction's tag and origin) for
// the handler set with `setTrace`, or one line on stderr by default.

/// A traced run, as handlers see it (C: tether_trace_event_t).
public struct RunTrace: Sendable {
    public enum Kind: Sendable { case recompute, effectRun }
    public struct Source: Sendable {
        /// The handle of the state (tether_state_t) or computed
        /// (tether_computed_t) that changed.
        public let handle: UInt64
        public let isComputed: Bool
        /// The state's descriptor name, if it has one.
        public let name: String?
        /// The JSON Pointer read ("" for the whole value).
        public let pointer: String
        /// The runtime revision when the reader last ran while traced (0:
        /// its first traced run).
        public let revisionBefore: UInt64
        /// The revision of the state's latest change (a computed source: the
        /// runtime revision now).
        public let revisionAfter: UInt64
    }
    public let kind: Kind
    /// The computed's or effect's handle.
    public let reader: UInt64
    /// Its first evaluation (or it lost a source that was freed): nothing to blame.
    public let firstRun: Bool
    /// The sources that changed since it last ran.
    public let sources: [Source]
    /// The tag and origin of the transaction whose write set it off (nil,
    /// 0: none).
    public let tag: String?
    public let origin: UInt64
    /// The runtime revision now.
    public let revision: UInt64

    /// The default report: one line, as printed on stderr.
    public var line: String {
        let what = kind == .recompute ? "computed \(hexHandle(reader)) recomputed" : "effect \(hexHandle(reader)) ran"
        var text = "tether: trace: \(what) at revision \(revision)"
        if firstRun {
            text += ": first run"
        } else if sources.isEmpty {
            text += ": no source changed since its last check"
        } else {
            text += ": " + sources.map { s in
                var name = s.isComputed ? "computed \(hexHandle(s.handle))" : "state \(hexHandle(s.handle))"
                if let n = s.name { name = "state '\(n)' \(hexHandle(s.handle))" }
                let at = s.pointer.isEmpty ? "" : " at \(s.pointer)"
                return "\(name)\(at) changed (revision \(s.revisionBefore) -> \(s.revisionAfter))"
            }.joined(separator: ", ")
        }
        if let tag { text += "; transaction '\(tag)'" }
        if origin != 0 { text += " origin \(origin)" }
        return text
    }
}

extension Runtimes {
    /// Sets the runtime's trace (`.off` stops it; a nil handler: one line on
    /// stderr per run). The previous handler's release runs now; this
    /// one's when it is replaced or the runtime is freed.
    package static func setTrace(_ rt: UInt64, _ mode: TraceMode, _ handler: ((RunTrace) -> Void)?,
                                 release: (() -> Void)?) throws(TetherError) {
        let engine = try acquire(rt, .runtime)
        let previous = engine.traceHandlerRelease
        engine.traceHandlerRelease = mode == .off ? nil : release
        let slot = engine.slotIndex
        let id = engine.id
        let report = handler ?? { trace in
            var line = trace.line + "\n"
            line.withUTF8 { buf in _ = fwrite(buf.baseAddress, 1, buf.count, stderr) }
        }
        engine.graph.setTrace(mode, sink: mode == .off ? nil : { event in
            report(RunTrace(event, slot: slot, runtime: id))
        })
        engine.lock.unlock()
        previous?()
        if mode == .off { release?() }
    }

    /// Marks one computed or effect (`kind`) for `.marked` tracing.
    package static func setTraced(_ handle: UInt64, _ kind: HandleKind, _ on: Bool) throws(TetherError) {
        let engine = try acquire(handle, kind)
        defer { engine.lock.unlock() }
        try engine.graph.setTraced(HandleCodec.derivedID(handle), on)
    }
}

extension RunTrace {
    init(_ event: TraceEvent, slot: Int, runtime: UInt64) {
        kind = event.kind == .recompute ? .recompute : .effectRun
        reader = HandleCodec.derived(slot, event.kind == .recompute ? .computed : .effect, event.reader)
        firstRun = event.firstRun
        sources = event.sources.map { s in
            let handle = s.state.map { HandleCodec.state(slot, $0) }
                ?? HandleCodec.derived(slot, .computed, s.computed ?? DerivedID(index: 0, generation: 0))
            return Source(handle: handle, isComputed: s.state == nil, name: s.name, pointer: s.pointer,
                          revisionBefore: s.revisionBefore, revisionAfter: s.revisionAfter)
        }
        // A recompute pulled by a callback's read carries that callback's cause.
        let cause = event.cause.meta == nil ? DeliveryContext.cause(for: runtime) : event.cause
        let info = TransactionMeta.info(of: cause)
        tag = info?.pointee.tag.map { String(cString: $0) }
        origin = info?.pointee.origin ?? 0
        revision = event.revision
    }
}
