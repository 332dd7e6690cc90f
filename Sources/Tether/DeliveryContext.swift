import CTether
import TetherCore

/// Which runtimes the current thread is running callbacks for, the round a
/// write from inside each gets, and what caused each callback. Lets a write
/// from a callback (a) skip delivering itself — the outer delivery loop
/// will, after the callback returns — (b) carry its depth, so feedback loops
/// are cut, and (c) carry its cause (transaction metadata and wave), so a
/// chain of reactions keeps the transaction that started it. The entries are
/// C thread-locals (CTether.h), read through C accessors.
enum DeliveryContext {
    /// The round a write from this thread gets for `runtime`: 0 outside its callbacks.
    @inline(__always)
    static func round(for runtime: UInt64) -> UInt32 {
        guard let d = entry(of: runtime) else { return 0 }
        return tether_internal_entry_round(UInt32(d))
    }

    /// The innermost callback entry of `runtime` on this thread.
    @inline(__always)
    static func entry(of runtime: UInt64) -> Int? {
        let depth = tether_internal_get_depth()
        if depth == 0 { return nil }
        let d = tether_internal_find_entry(runtime, depth)
        return d < 0 ? nil : Int(d)
    }

    static func isDelivering(_ runtime: UInt64) -> Bool { entry(of: runtime) != nil }

    /// What caused the callback of `runtime` this thread is running (empty
    /// outside its callbacks).
    static func cause(for runtime: UInt64) -> Cause {
        guard let d = entry(of: runtime) else { return Cause() }
        let meta = tether_internal_entry_meta(UInt32(d))
        return Cause(meta: meta.map { Unmanaged<AnyObject>.fromOpaque($0).takeUnretainedValue() },
                     wave: tether_internal_entry_wave(UInt32(d)))
    }

    @inline(__always)
    private static func opaque(_ cause: Cause) -> UnsafeRawPointer? {
        guard let meta = cause.meta else { return nil }
        return UnsafeRawPointer(Unmanaged.passUnretained(meta).toOpaque())
    }

    /// False when nesting is too deep (a chain of 16 runtimes' callbacks).
    static func push(_ runtime: UInt64, round: UInt32, _ cause: Cause) -> Bool {
        let d = tether_internal_get_depth()
        guard d < UInt32(TETHER_INTERNAL_MAX_NESTING) else { return false }
        tether_internal_set_entry(d, runtime, round, opaque(cause), cause.wave)
        tether_internal_set_depth(d + 1)
        return true
    }

    static func pop() {
        tether_internal_set_depth(tether_internal_get_depth() - 1)
    }

    /// How a callback was entered, to undo exactly that on leaving.
    enum Entry {
        case pushed
        case replaced(round: UInt32, meta: UnsafeRawPointer?, wave: UInt64)
        case refused
    }

    /// Enters a callback of `runtime` at `round`, caused by `cause` (whose
    /// metadata object the caller keeps alive until `leave`). Nested
    /// callbacks of the same runtime (a compute reading a computed that must
    /// be computed, fifty deep on a fresh chain) reuse the innermost entry,
    /// so nesting depth is limited by the stack, not by the 16 entries.
    @inline(__always)
    static func enter(_ runtime: UInt64, round: UInt32, _ cause: Cause = Cause()) -> Entry {
        let d = tether_internal_get_depth()
        if d > 0 && tether_internal_entry_runtime(d - 1) == runtime {
            let old = Entry.replaced(round: tether_internal_entry_round(d - 1),
                                     meta: tether_internal_entry_meta(d - 1),
                                     wave: tether_internal_entry_wave(d - 1))
            tether_internal_set_entry_cause(d - 1, round, opaque(cause), cause.wave)
            return old
        }
        return push(runtime, round: round, cause) ? .pushed : .refused
    }

    @inline(__always)
    static func leave(_ entry: Entry) {
        switch entry {
        case .pushed:
            pop()
        case let .replaced(round, meta, wave):
            tether_internal_set_entry_cause(tether_internal_get_depth() - 1, round, meta, wave)
        case .refused:
            break
        }
    }
}
