// ArrayGrowth.swift — reserving room for appends without losing geometric growth.

extension Array {
    /// Makes room for `extra` more elements, growing the capacity at least
    /// twofold when it must grow. `reserveCapacity(count + extra)` alone
    /// reallocates to exactly that size, so a writer that reserves before
    /// each of n small appends copies the buffer n times: a Get of an
    /// object of 80,000 string members spent 96.6% of tetherd's time in
    /// memmove there (issue 30 §4).
    @inlinable
    public mutating func reserveGrowing(_ extra: Int) {
        let needed = count + extra
        if needed > capacity { reserveCapacity(Swift.max(needed, capacity &* 2)) }
    }
}
