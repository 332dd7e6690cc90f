// Tracing from Swift: why each recompute and effect run happened.

extension Runtime {
    /// Reports recomputes and effect runs before they happen, with the
    /// sources that changed (`.all`: every one; `.marked`: those of
    /// computeds and effects marked with `trace(_:)`). `handler` is called
    /// as a callback (never concurrently with others; it must not write
    /// states); nil prints `RunTrace.line` on stderr. `.off` stops it.
    public func trace(_ mode: TraceMode = .all, _ handler: (@Sendable (RunTrace) -> Void)? = nil) throws(TetherError) {
        try Runtimes.setTrace(handle, mode, handler, release: nil)
    }
}

extension Computed {
    /// Marks this computed for `Runtime.trace(.marked)` (false unmarks it).
    public func trace(_ on: Bool = true) throws(TetherError) {
        try Runtimes.setTraced(handle, .computed, on)
    }
}

extension Effect {
    /// Marks this effect for `Runtime.trace(.marked)` (false unmarks it).
    public func trace(_ on: Bool = true) throws(TetherError) {
        try Runtimes.setTraced(handle, .effect, on)
    }
}
