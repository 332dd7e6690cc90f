import CTether
import TetherCore

/// Which runtimes the current thread is running callbacks for, the round a
/// write from inside each gets, and what caused each callback. Lets a write
/// from a callback (a) skip delivering itself — the outer delivery loop
/// will, after the callback returns — (b) carry its depth, so feedback loops
/// are cut, and (c) carry its cause (transaction metadata and wave), so a
/// chain of reactions keeps the transaction that started it. The entries are
/// C thread-locals (CTether.h), read through C accessors.
@usableFromInline enum DeliveryContext {
    /// The round a write from this thread gets for `runtime`: 0 outside its callbacks.
    @inlinable @inline(__always)
    static func round(for runtime: UInt64) -> UInt32 {
        guard let d = entry(of: runtime) else { return 0 }
        return tether_internal_entry_round(UInt32(d))
    }

    /// The innermost callback entry of `runtime` on this thread.
    @inlinable @inline(__always)
    static func entry(of runtime: UInt64) -> Int? {
        let depth = tether_internal_get_depth()
        if depth == 0 { return nil }
        let d = tether_internal_find_entry(runtime, depth)
        return d < 0 ? nil : Int(d)
    }

    @inlinable static func isDelivering(_ runtime: UInt64) -> Bool { entry(of: runtime) != nil }

    /// What caused the callback of `runtime` this thread is running (empty
    /// outside its callbacks).
    @usableFromInline
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

    /// How a callback was entered, to undo exactly that on leaving.
    struct Entry {
        let saved: tether_internal_entry_saved_t
        /// Nesting too deep (a chain of 16 runtimes' callbacks): do not call.
        var refused: Bool { saved.how == TETHER_INTERNAL_REFUSED }
    }

    /// Enters a callback of `runtime` at `round`, caused by `cause` (whose
    /// metadata object the caller keeps alive until `leave`). Nested
    /// callbacks of the same runtime (a compute reading a computed that must
    /// be computed, fifty deep on a fresh chain) reuse the innermost entry,
    /// so nesting depth is limited by the stack, not by the 16 entries.
    @inline(__always)
    static func enter(_ runtime: UInt64, round: UInt32, _ cause: Cause = Cause()) -> Entry {
        Entry(saved: tether_internal_enter(runtime, round, opaque(cause), cause.wave))
    }

    /// `enter` for a caller that knows this thread is not in a callback of
    /// `runtime` (innermost or not: then `enter` would push too), with a
    /// cause of `wave` and no metadata (a write from outside transactions).
    /// False, with nothing entered, when nesting is too deep; `pop` undoes
    /// a true.
    @inline(__always)
    static func push(_ runtime: UInt64, round: UInt32, wave: UInt64) -> Bool {
        tether_internal_push(runtime, round, nil, wave) != 0
    }

    @inline(__always)
    static func pop() { tether_internal_pop() }

    @inline(__always)
    static func leave(_ entry: Entry) {
        tether_internal_leave(entry.saved)
    }
}
