// GraphPlainScalar.swift — the plain path of the typed getters and setters: scalar reads of states and computeds, and an int written to a state nothing watches.

/// A typed get or set from outside transactions mostly meets a node that is
/// what it looks like: a live scalar of the asked type and, for a write from
/// outside callbacks, nobody watching it. These functions do exactly that
/// case and answer nil or false for anything else, having touched nothing:
/// the caller then takes the full path (`read`, `write`, or `writeHeldInt`
/// on the lock it holds), which gives every error and every other case its
/// usual treatment. Issue 16: the full path cost a typed get ~100
/// instructions and a set ~200, most of it checks this case does not need.
///
/// A read from a callback (`callbackOf`: the id of the runtime whose
/// callback the thread runs, innermost; 0 outside callbacks) is taken only
/// when that runtime owns this graph (`ownerID`: a runtime freed from its
/// own callback may see its slot reused while that callback still runs),
/// and is tracked: inside a compute callback or effect it is a dependency
/// (`track` knows whether an evaluation is running and not in an
/// untracked section), as on the full path.
extension Graph {
    /// The index of the live state `index`/`generation` name, or nil.
    @inlinable @inline(__always)
    final func plainIndex(_ index: UInt32, _ generation: UInt32) -> Int? {
        let i = Int(index)
        // A free slot's generation is one no handle carries (StateNode.freed).
        guard i < states.count, states[i].generation == generation else { return nil }
        return i
    }

    /// The value of the live state `index`/`generation` names, as `take`
    /// reads it (nil: not this type), tracked when read from a callback.
    @inlinable @inline(__always)
    final func plainState<T>(_ index: UInt32, _ generation: UInt32, callbackOf runtime: UInt64,
                             _ take: (borrowing Value) -> T?) -> T? {
        guard let i = plainIndex(index, generation), let v = take(states[i].value),
              plainTrack(NodeRef.state(i), version: states[i].version, callbackOf: runtime) else { return nil }
        return v
    }

    /// Records a plain read from a callback (`callbackOf` not 0) as a
    /// dependency; false when that callback's runtime is not this graph's
    /// owner (the full path then decides). True outside callbacks.
    @inlinable @inline(__always)
    final func plainTrack(_ dep: UInt32, version: UInt64, callbackOf runtime: UInt64) -> Bool {
        if runtime == 0 { return true }
        guard runtime == ownerID else { return false }
        track(dep, version: version)
        return true
    }

    @inlinable @inline(__always)
    public final func plainInt(_ index: UInt32, _ generation: UInt32, callbackOf runtime: UInt64) -> Int64? {
        plainState(index, generation, callbackOf: runtime) { if case let .int(n) = $0 { n } else { nil } }
    }

    @inlinable @inline(__always)
    public final func plainDouble(_ index: UInt32, _ generation: UInt32, callbackOf runtime: UInt64) -> Double? {
        plainState(index, generation, callbackOf: runtime) { if case let .double(x) = $0 { x } else { nil } }
    }

    @inlinable @inline(__always)
    public final func plainBool(_ index: UInt32, _ generation: UInt32, callbackOf runtime: UInt64) -> Bool? {
        plainState(index, generation, callbackOf: runtime) { if case let .bool(b) = $0 { b } else { nil } }
    }

    /// Whether a plain write may store over live state `i`'s value: no
    /// observers, readers, path readers or descriptor, and nothing owed to
    /// anyone (no SYNC call queued, no loop wake-up). Tested after the
    /// typed writer's own type check, in the order the checks always had.
    @inlinable @inline(__always)
    final func plainWritable(_ i: Int) -> Bool {
        states[i].firstObserver == noIndex && states[i].firstSub == noIndex
            && undescribedWithoutPathReaders(i) && !loopWakeRequested && syncQueue.isEmpty
    }

    /// Writes `n` over the int of a live, `plainWritable` int state, from outside
    /// callbacks: the write is then a store, a revision and a version
    /// (`writeScalar`'s case without readers), or nothing for an equal
    /// value. False, with nothing done, for anything else: the caller,
    /// still holding the graph, goes on with `writeHeldInt`.
    @inlinable @inline(__always)
    public final func writePlainInt(_ index: UInt32, _ generation: UInt32, _ n: Int64) -> Bool {
        guard let i = plainIndex(index, generation), case let .int(old) = states[i].value, plainWritable(i) else {
            return false
        }
        if n != old { writeUnreadInt(i, n) }
        return true
    }

    /// `writePlainInt` for a double over a double: nothing is written for an
    /// equal double (a NaN over a NaN, -0.0 over 0.0: `ScalarValue.sameValue`,
    /// as `writeScalar` compares). The caller goes on with `writeHeldScalar`
    /// when this declines.
    @inlinable @inline(__always)
    public final func writePlainDouble(_ index: UInt32, _ generation: UInt32, _ x: Double) -> Bool {
        guard let i = plainIndex(index, generation), case let .double(old) = states[i].value, plainWritable(i) else {
            return false
        }
        if !ScalarValue.double(x).sameValue(as: .double(old)) {
            takeUnreadRevision(i)
            // A double's payload is its bits where an int's are (the
            // case, and so the tag, stays: StateNodeLayoutTests).
            storeIntPayload(i, Int64(bitPattern: x.bitPattern))
        }
        return true
    }

    /// `writePlainInt` for a bool over a bool.
    @inlinable @inline(__always)
    public final func writePlainBool(_ index: UInt32, _ generation: UInt32, _ b: Bool) -> Bool {
        guard let i = plainIndex(index, generation), case let .bool(old) = states[i].value, plainWritable(i) else {
            return false
        }
        if b != old {
            takeUnreadRevision(i)
            withUnsafeMutablePointer(to: &states[i].value) { $0.initialize(to: .bool(b)) }  // nothing to release
        }
        return true
    }

    /// A new int in state `i`, which no computed reads: the write's
    /// revision, the node's version, the payload (the plain write's and
    /// `writeDirectInt`'s whole write).
    @inlinable @inline(__always)
    final func writeUnreadInt(_ i: Int, _ n: Int64) {
        takeUnreadRevision(i)
        // Last: a store through a raw pointer may alias anything, so the
        // node's address was loaded again for the stores after it.
        storeIntPayload(i, n)
    }

    /// A write's revision and the node's new version, for state `i`, which
    /// no computed reads (so no epoch to compare with, nobody to mark).
    @inlinable @inline(__always)
    final func takeUnreadRevision(_ i: Int) {
        // Locals, not the fields again: each reload was an instruction.
        let revision = revisionCount &+ 1, version = nextVersion
        revisionCount = revision
        states[i].revision = revision
        states[i].version = version
        nextVersion = version &+ 1
    }

    /// `described` empty and `pathReaders` false, in one 16-bit load: the
    /// two bytes are adjacent in the node (StateNodeLayoutTests pins it).
    /// The plain write tests both on every call; one load and compare
    /// instead of two was two of its ~84 instructions.
    @inlinable @inline(__always)
    final func undescribedWithoutPathReaders(_ i: Int) -> Bool {
        let node = UnsafeRawPointer(states.base.unsafelyUnwrapped + i)
        let offset = MemoryLayout<StateNode>.offset(of: \StateNode.described).unsafelyUnwrapped
        return node.load(fromByteOffset: offset, as: UInt16.self) == 0
    }

    /// Writes `n` over the int state `i` holds: only the payload, an int
    /// `Value`'s first eight bytes (StateNodeLayoutTests pins it), since the
    /// case and so the tag stay the same; storing the whole `.int(n)` also
    /// stored the tag and the unused payload word (two instructions of the
    /// plain write). Nothing to release: the old value is an int.
    @inlinable @inline(__always)
    final func storeIntPayload(_ i: Int, _ n: Int64) {
        let node = UnsafeMutableRawPointer(states.base.unsafelyUnwrapped + i)
        let offset = MemoryLayout<StateNode>.offset(of: \StateNode.value).unsafelyUnwrapped
        node.storeBytes(of: n, toByteOffset: offset, as: Int64.self)
    }

    /// The int write `writePlainInt` left (observers, readers, something
    /// owed): `writeScalar`, as `write` calls it for a write from outside
    /// callbacks (`directCalls`: the writer may make the SYNC calls itself,
    /// which it may not while another writer's direct call is being made).
    /// True when it wrote (the caller then finishes the write:
    /// `Engine.finishWrite`); false, with nothing done, for what only the
    /// full write handles (a descriptor, another type, a stale handle).
    public final func writeHeldInt(_ id: StateID, _ n: Int64, directCalls: Bool) -> Bool {
        writeHeldScalar(id, .int(n), directCalls: directCalls)
    }

    /// `writeHeldInt` for any scalar (`tether_state_set_double`'s).
    @inline(__always)
    public final func writeHeldScalar(_ id: StateID, _ v: ScalarValue, directCalls: Bool) -> Bool {
        guard let i = plainIndex(id.index, id.generation) else { return false }
        return writeScalar(i, v, round: 0, directCalls: directCalls) != nil
    }
}

extension Graph {
    /// fresh, stale, computing, disposed, failed (Propagation.swift): a
    /// literal mask, inlined into the C face.
    @usableFromInline static var notPlainComputed: UInt8 { 1 | 2 | 8 | 16 | 128 }

    /// A typed read of a computed that is up to date (nothing to check or
    /// evaluate: not fresh, stale, being computed, freed or failed) and
    /// holds what `take` reads (nil: not this type); `callbackOf` as for
    /// `plainInt`. Nil, with nothing done, for anything else, or while the
    /// graph has releases or a loop wake-up owed (the full read's leave does
    /// those): the caller takes the full read, which evaluates, reports or
    /// finishes them.
    @inlinable @inline(__always)
    final func plainComputed<T>(_ index: UInt32, _ generation: UInt32, callbackOf runtime: UInt64,
                                _ take: (borrowing Value) -> T?) -> T? {
        let d = Int(index)
        guard d < derived.count, generation != 0, derived[d].generation == generation,
              derived[d].kind == .computed,
              derived[d].flags.rawValue & Graph.notPlainComputed == 0,
              let v = take(derived[d].value), !hasDeferredReleases, !loopWakeRequested,
              plainTrack(NodeRef.derived(d), version: derived[d].version, callbackOf: runtime) else { return nil }
        return v
    }

    @inlinable @inline(__always)
    public final func plainComputedInt(_ index: UInt32, _ generation: UInt32, callbackOf runtime: UInt64) -> Int64? {
        plainComputed(index, generation, callbackOf: runtime) { if case let .int(n) = $0 { n } else { nil } }
    }

    @inlinable @inline(__always)
    public final func plainComputedBool(_ index: UInt32, _ generation: UInt32, callbackOf runtime: UInt64) -> Bool? {
        plainComputed(index, generation, callbackOf: runtime) { if case let .bool(b) = $0 { b } else { nil } }
    }

    /// The scalar at `path` in an up-to-date computed's value, as `take`
    /// reads it, walked in place (`Value.scalarIfFound(at:)`): nil, with
    /// nothing done, when the path names no scalar (escapes, a missing
    /// part, a composite) as for anything `plainComputed` declines; the
    /// full read then reports.
    @inlinable @inline(__always)
    public final func plainComputedScalar<T>(_ index: UInt32, _ generation: UInt32, at path: PointerText,
                                             callbackOf runtime: UInt64, _ take: (ScalarValue) -> T?) -> T? {
        plainComputed(index, generation, callbackOf: runtime) { v in v.scalarIfFound(at: path).flatMap(take) }
    }

    /// A double, or an int read as one (as the typed getter converts it).
    @inlinable @inline(__always)
    public final func plainComputedDouble(_ index: UInt32, _ generation: UInt32, callbackOf runtime: UInt64) -> Double? {
        plainComputed(index, generation, callbackOf: runtime) {
            switch $0 {
            case let .double(x): x
            case let .int(n): Double(n)
            default: nil
            }
        }
    }
}

extension Graph {
    /// tether_batch_begin on the plain path: one more open batch, for the
    /// runtime `runtime` (its handle id) when it owns this graph. False,
    /// with nothing done, otherwise: the full path then reports.
    @inlinable @inline(__always)
    public final func plainBatchBegin(_ runtime: UInt64) -> Bool {
        guard runtime == ownerID else { return false }
        batchDepth += 1
        return true
    }

    /// tether_batch_end on the plain path: an inner batch ends, or the
    /// outermost one with nothing held back (nothing to deliver, no loop
    /// to wake). False, with nothing done, for anything else (no batch
    /// open, work owed, another runtime): the caller goes on with the
    /// batch's end on the lock it holds, or the full path.
    @inlinable @inline(__always)
    public final func plainBatchEnd(_ runtime: UInt64) -> Bool {
        let depth = batchDepth
        guard runtime == ownerID, depth > 1 || (depth == 1 && syncQueue.isEmpty && loopQueue.isEmpty) else {
            return false
        }
        batchDepth = depth &- 1
        return true
    }
}

