// GraphPlainScalar.swift — the plain path of the typed getters and setters: a scalar read, and an int written to a state nothing watches.

/// A typed get or set from outside callbacks and transactions mostly meets a
/// state that is what it looks like: a live scalar of the asked type and, for
/// a write, nobody watching it. These functions do exactly that case and
/// answer nil or false for anything else, having touched nothing: the
/// caller then takes the full path (`read`, `write`), which gives every
/// error and every other case its usual treatment. Issue 16: the full path
/// costs a typed get ~100 instructions and a set ~200, most of it checks and
/// branches this case does not need.
extension Graph {
    /// The index of the live state `index`/`generation` name, or nil.
    @inlinable @inline(__always)
    final func plainIndex(_ index: UInt32, _ generation: UInt32) -> Int? {
        let i = Int(index)
        // Generation 0 marks a free slot, so a handle carrying 0 must not match it.
        guard i < states.count, generation != 0, states[i].generation == generation else { return nil }
        return i
    }

    @inlinable @inline(__always)
    public final func plainInt(_ index: UInt32, _ generation: UInt32) -> Int64? {
        guard let i = plainIndex(index, generation), case let .int(n) = states[i].value else { return nil }
        return n
    }

    @inlinable @inline(__always)
    public final func plainDouble(_ index: UInt32, _ generation: UInt32) -> Double? {
        guard let i = plainIndex(index, generation), case let .double(x) = states[i].value else { return nil }
        return x
    }

    @inlinable @inline(__always)
    public final func plainBool(_ index: UInt32, _ generation: UInt32) -> Bool? {
        guard let i = plainIndex(index, generation), case let .bool(b) = states[i].value else { return nil }
        return b
    }

    /// Writes `n` over the int of a state without observers, readers,
    /// path readers or descriptor, while no SYNC call or loop wake-up is
    /// owed: then the write is only a store, a revision and a version (the
    /// case of `writeScalar` without readers), and nothing is scheduled
    /// that the caller would have to deliver. False when that is not the
    /// case (nothing done). Round checks pass: the caller is outside callbacks.
    @inlinable @inline(__always)
    public final func writePlainInt(_ index: UInt32, _ generation: UInt32, _ n: Int64) -> Bool {
        guard let i = plainIndex(index, generation), case let .int(old) = states[i].value,
              states[i].firstObserver == noIndex, states[i].firstSub == noIndex,
              states[i].described.rawValue == 0, !states[i].pathReaders,
              !loopWakeRequested, syncQueue.isEmpty else { return false }
        if n != old {
            revisionCount &+= 1
            withUnsafeMutablePointer(to: &states[i].value) { $0.initialize(to: .int(n)) }  // nothing to release
            states[i].revision = revisionCount
            states[i].version = nextVersion
            nextVersion &+= 1
        }
        return true
    }

    /// `writePlainInt` for a state whose observers the writer may call
    /// itself (`mayCallDirectly`: all SYNC, of the whole value, none
    /// pending, nothing queued): the change is stored and the calls are
    /// left to the writer as a direct call (GraphDirect.swift), as
    /// `writeScalar` does for a write from outside callbacks. False, with
    /// nothing done, for anything else, an equal write included (observers
    /// that asked for equal writes are woken by the full path).
    public final func writeDirectInt(_ index: UInt32, _ generation: UInt32, _ n: Int64) -> Bool {
        guard let i = plainIndex(index, generation), case let .int(old) = states[i].value, n != old,
              states[i].firstObserver != noIndex, states[i].firstSub == noIndex,
              states[i].described.rawValue == 0, !states[i].pathReaders,
              !loopWakeRequested, mayCallDirectly(i) else { return false }
        revisionCount &+= 1
        withUnsafeMutablePointer(to: &states[i].value) { $0.initialize(to: .int(n)) }
        states[i].revision = revisionCount
        states[i].version = nextVersion  // no readers: bumpVersion's first case
        nextVersion &+= 1
        recordDirectCall(i, old: .int(old), new: .int(n), round: 0)
        return true
    }
}
