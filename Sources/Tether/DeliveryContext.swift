import CTether

/// Which runtimes the current thread is running callbacks for, and the round
/// a write from inside each gets. Lets a write from a callback (a) skip
/// delivering itself — the outer delivery loop will, after the callback
/// returns — and (b) carry its depth, so feedback loops are cut.
enum DeliveryContext {
    /// The round a write from this thread gets for `runtime`: 0 outside its callbacks.
    @inline(__always)
    static func round(for runtime: UInt64) -> UInt32 {
        var i = Int(tether_internal_get_depth())
        if i == 0 { return 0 }
        let tls = tether_internal_tls()!
        return withUnsafeBytes(of: &tls.pointee.runtime) { ids in
            withUnsafeBytes(of: &tls.pointee.round) { rounds in
                while i > 0 {
                    i -= 1
                    if ids.load(fromByteOffset: i * 8, as: UInt64.self) == runtime {
                        return rounds.load(fromByteOffset: i * 4, as: UInt32.self)
                    }
                }
                return 0
            }
        }
    }

    static func isDelivering(_ runtime: UInt64) -> Bool {
        var i = Int(tether_internal_get_depth())
        if i == 0 { return false }
        let tls = tether_internal_tls()!
        return withUnsafeBytes(of: &tls.pointee.runtime) { ids in
            while i > 0 {
                i -= 1
                if ids.load(fromByteOffset: i * 8, as: UInt64.self) == runtime { return true }
            }
            return false
        }
    }

    /// False when nesting is too deep (a chain of 16 runtimes' callbacks).
    static func push(_ runtime: UInt64, round: UInt32) -> Bool {
        let tls = tether_internal_tls()!
        let d = Int(tether_internal_get_depth())
        guard d < Int(TETHER_INTERNAL_MAX_NESTING) else { return false }
        withUnsafeMutableBytes(of: &tls.pointee.runtime) { $0.storeBytes(of: runtime, toByteOffset: d * 8, as: UInt64.self) }
        withUnsafeMutableBytes(of: &tls.pointee.round) { $0.storeBytes(of: round, toByteOffset: d * 4, as: UInt32.self) }
        tether_internal_set_depth(UInt32(d + 1))
        return true
    }

    static func pop() {
        tether_internal_set_depth(tether_internal_get_depth() - 1)
    }

    /// How a callback was entered, to undo exactly that on leaving.
    enum Entry {
        case pushed, replaced(UInt32), refused
    }

    /// Enters a callback of `runtime` at `round`. Nested callbacks of the
    /// same runtime (a compute reading a computed that must be computed,
    /// fifty deep on a fresh chain) reuse the innermost entry, so nesting
    /// depth is limited by the stack, not by the 16 entries.
    @inline(__always)
    static func enter(_ runtime: UInt64, round: UInt32) -> Entry {
        let d = Int(tether_internal_get_depth())
        if d > 0 {
            let tls = tether_internal_tls()!
            let top = withUnsafeBytes(of: &tls.pointee.runtime) { $0.load(fromByteOffset: (d - 1) * 8, as: UInt64.self) }
            if top == runtime {
                let old = withUnsafeBytes(of: &tls.pointee.round) { $0.load(fromByteOffset: (d - 1) * 4, as: UInt32.self) }
                withUnsafeMutableBytes(of: &tls.pointee.round) { $0.storeBytes(of: round, toByteOffset: (d - 1) * 4, as: UInt32.self) }
                return .replaced(old)
            }
        }
        return push(runtime, round: round) ? .pushed : .refused
    }

    @inline(__always)
    static func leave(_ entry: Entry) {
        switch entry {
        case .pushed:
            pop()
        case let .replaced(old):
            let tls = tether_internal_tls()!
            let d = Int(tether_internal_get_depth())
            withUnsafeMutableBytes(of: &tls.pointee.round) { $0.storeBytes(of: old, toByteOffset: (d - 1) * 4, as: UInt32.self) }
        case .refused:
            break
        }
    }
}
