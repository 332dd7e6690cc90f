// Propagation.swift — the reactive algorithm in one place, to be read top to bottom.
//
// The model (alien-signals' system.ts and Preact signals are the shape):
//
// - Nodes. A *state* is a source: a value and a `version`. A *derived* node
//   reads: a *computed* caches a value (and a version of its own), an
//   *effect* re-runs a body, a *tracking* fires once. All of them live in
//   contiguous storage addressed by index (layouts in GraphNodes.swift).
// - Edges. One `Link` per dependency, threaded on two lists at once: the
//   reader's dependencies (`firstDep` ... `lastDep`, in the order it read
//   them) and the source's subscribers (`firstSub`, `nextSub`). A link keeps
//   the version of its source that the reader saw. A source is a `NodeRef`:
//   a state index, a derived index with the top bit set, or a path node
//   (a part of a state read by path: GraphPaths.swift) with the next bit.
// - Versions. `nextVersion` is one counter for the whole graph. A node gets
//   a new version when its value changes; a computed that recomputes to an
//   equal value keeps its version (the equality cutoff), and a state whose
//   value goes back to what it was when the delivery epoch began gets that
//   version back. "Did my input change?" is then one compare: the source's
//   version against the one on the link.
//
// The algorithm, in the order of this file:
//
// 1. Kinds and flags: what a derived node is, and what its bits mean.
// 2. Track: a read made while a node evaluates records the source on that
//    node's dependency list. A re-evaluation that reads the same sources in
//    the same order only moves a cursor over its existing links (link
//    reuse), so the steady state allocates nothing.
// 3. Push: a write gives the state a new version and marks every reader
//    downstream *stale*, queueing the effects, trackings and observers of
//    computeds it reaches. Nothing is computed during the push. Readers of
//    parts of the state are reached through the path nodes the write may
//    have changed (`wakePaths`, GraphPaths.swift), never through siblings.
// 4. Pull: a read of a stale computed (or a queued effect about to run)
//    checks its sources in the order it read them, bringing computed sources
//    up to date first, and re-evaluates only if one of them now has another
//    version. This order is what makes a diamond glitch-free.
// 5. Recompute with cutoff: run the compute with the node as the tracking
//    target; an equal result keeps the version, so readers downstream find
//    nothing changed and stop.
// 6. Unlink: links the evaluation did not reach again are stale
//    dependencies and are removed; a freed source wakes and drops its readers.
// 7. Effects: queued by the push, run by the owner's delivery loop through
//    `runDerived`, which pulls first and runs the body only if a source
//    really changed.
//
// What lives beside this file: the storage layouts and the in-place field
// accessors (GraphNodes.swift), link allocation and list splicing
// (GraphLinks.swift), the storage itself (NodeBuffer.swift), the Graph class
// and its fields such as `evalTop`, `trackTarget` and the queues
// (Graph.swift), the delivery queues (IndexQueue.swift, GraphDelivery.swift),
// observers (GraphObservers.swift), and the public API of derived nodes
// (GraphDerived.swift). docs/performance.md gives the measurements behind
// each speed trick noted here.

// MARK: - 1. Kinds and flags

/// The nodes that read: computed values, effects and one-shot trackings.
/// Their node layout is `DerivedNode` (GraphNodes.swift), their callbacks
/// a `DerivedBody` (DerivedBody.swift).
public enum DerivedKind: UInt8, Sendable {
    case computed, effect, tracking
}

/// The state of a derived node. alien-signals splits "maybe changed" into
/// Pending and Dirty; here one bit, `stale`, means "a source was written
/// since the last evaluation: check before trusting the value", and the
/// versions on the links decide in the pull whether it really changed.
@usableFromInline struct DerivedFlags: OptionSet, Sendable {
    @usableFromInline let rawValue: UInt8
    @usableFromInline init(rawValue: UInt8) { self.rawValue = rawValue }
    /// A source changed since the last evaluation: check before trusting the value.
    static let stale = DerivedFlags(rawValue: 1)
    /// Being evaluated now; reading it again is a cycle.
    static let computing = DerivedFlags(rawValue: 2)
    /// In a delivery queue (effects and trackings).
    static let queued = DerivedFlags(rawValue: 4)
    /// Never evaluated, or lost a source that was freed: the next read or
    /// run evaluates without checking (no link is left to check).
    static let fresh = DerivedFlags(rawValue: 8)
    /// Freed while its callback ran; finished when that call returns.
    static let disposed = DerivedFlags(rawValue: 16)
    /// Effects and trackings delivered at the end of the writer's write.
    static let sync = DerivedFlags(rawValue: 32)
    /// An effect whose cleanup is owed before its next run. (Set nowhere
    /// today: `DerivedBody.cleanupOwed` does this job.)
    static let ranOnce = DerivedFlags(rawValue: 64)
    /// A computed whose last evaluation failed: its error is in
    /// `Graph.derivedErrors` (a side table: 24 bytes per node otherwise).
    /// Every read checks its sources again, as for a stale one: the error
    /// is kept until a source changes, by a write or by being evaluated
    /// (a source refused for nesting too deep, read again from the start).
    static let failed = DerivedFlags(rawValue: 128)
}

/// A node the pull is checking (`Graph.pullIteratively`), waiting for one
/// of its sources to be brought up to date first, and the link to that
/// source.
struct PullFrame {
    let node: Int
    let link: UInt32
}

/// The evaluation a nested one interrupted: its node (-1: none), the
/// depth of the untracked section it was in, and so the node its reads
/// were recorded for (`Graph.trackTarget`), given back as it was.
struct InterruptedEvaluation {
    let node: Int
    let untracked: Int
    let trackTarget: Int
}

extension Graph {
    // MARK: - 2. Track: recording reads, reusing links

    /// Makes `d` the node reads are recorded for, tracked (an untracked
    /// section of the evaluation it interrupts resumes when
    /// `endEvaluation` gives that one back). Returns the interrupted
    /// evaluation, kept by the caller in its own frame.
    /// The three fields are stored directly, not through
    /// `untrackedDepth`'s setter, whose test cost ~6 instructions a
    /// recompute (issue 32).
    @inline(__always)
    func beginEvaluation(_ d: Int) -> InterruptedEvaluation {
        let interrupted = InterruptedEvaluation(node: evalTop, untracked: untracked, trackTarget: trackTarget)
        evalTop = d
        untracked = 0
        trackTarget = d
        return interrupted
    }

    @inline(__always)
    func endEvaluation(_ interrupted: InterruptedEvaluation) {
        evalTop = interrupted.node
        untracked = interrupted.untracked
        trackTarget = interrupted.trackTarget
    }

    /// Records that the node being evaluated read `dep` at `version`.
    /// Reading the same sources in the same order as last time only moves a
    /// cursor over the existing links and refreshes their versions.
    ///
    /// The common cases are inline in the reader: the same source as last
    /// time, at the cursor; and, past the last link, the last source read
    /// again (a loop over one source: kairo repeatedObservers reads one
    /// state 30 times, and the call to `trackMoved` for each repeat was 9%
    /// of it, profiled). The rest is `trackMoved`. `trackTarget` is one
    /// field kept beside `evalTop` and `untrackedDepth`, so a read tests
    /// one word (three loads and a multiply before; profiled).
    @inlinable @inline(__always)
    final func track(_ dep: UInt32, version: UInt64) {
        let top = trackTarget
        guard top >= 0 else { return }
        let cursor = derived[top].cursor
        if cursor != noIndex {
            if links[Int(cursor)].dep == dep {
                links[Int(cursor)].version = version
                derived[top].cursor = links[Int(cursor)].nextDep
                return
            }
        } else {
            let last = derived[top].lastDep
            if last != noIndex, links[Int(last)].dep == dep {
                links[Int(last)].version = version
                return
            }
        }
        trackMoved(dep, version: version, top: top, cursor: cursor)
    }

    /// How far back `trackMoved` looks among this evaluation's links for a
    /// source read already: far enough for reads that alternate between a
    /// few sources, short enough to cost little when the source is new.
    static let repeatWindow = 4

    /// A read that is not the next link: a source read earlier in this
    /// evaluation, or a new dependency, linked in before the cursor.
    @usableFromInline @inline(never)
    final func trackMoved(_ dep: UInt32, version: UInt64, top: Int, cursor: UInt32) {
        // The links before the cursor are this evaluation's reads. A source
        // read again among the last few (a loop over one source, or reads
        // alternating between two: kairo unstable reads head, c1, head, c1,
        // ... 20 times) keeps its one edge. Without this, the alternation
        // made a link per read and, once the branch switched, unlinked and
        // relinked all 40 on every evaluation (profiled).
        let previous = cursor != noIndex ? links[Int(cursor)].prevDep : derived[top].lastDep
        var seen = previous
        var looked = 0
        while seen != noIndex && looked < Graph.repeatWindow {
            if links[Int(seen)].dep == dep {
                links[Int(seen)].version = version
                return
            }
            seen = links[Int(seen)].prevDep
            looked += 1
        }
        let l = allocateLink(Link(dep: dep, sub: UInt32(top), version: version, prevDep: previous,
                                  nextDep: cursor, prevSub: noIndex, nextSub: noIndex))
        if previous != noIndex { links[Int(previous)].nextDep = l } else { derived[top].firstDep = l }
        if cursor != noIndex { links[Int(cursor)].prevDep = l } else { derived[top].lastDep = l }
        linkSubscriber(l, to: dep)
    }

    // MARK: - 3. Push: a write marks, never computes

    /// A write changed state `i` (its new value is stored and its observers
    /// scheduled; `old` is the value it replaced): a new version for
    /// readers, or the epoch's starting version when the value went back to
    /// what it was then, so a batch that writes 42 -> 0 -> 42 re-runs
    /// nothing; then mark the readers. An epoch starts with every delivery
    /// round (`takeBatch`). A state without readers only takes a version.
    ///
    /// Without `path` (a whole-value write) readers by path are all woken;
    /// with it (a write below the root) readers of other parts of the state
    /// are not (GraphPaths.swift).
    @inline(__always)
    func bumpVersion(_ i: Int, old: Value, round: UInt32, at path: JSONPointer? = nil) {
        guard states[i].firstSub != noIndex || states[i].pathReaders else {
            states[i].version = nextVersion
            nextVersion &+= 1
            return
        }
        takeVersion(i, old: old)
        propagate(fromState: i, round: round)
        if states[i].pathReaders { wakePaths(i, at: path, round: round) }
    }

    /// `bumpVersion` for a commit's operations on one state.
    func bumpVersion(_ i: Int, old: Value, round: UInt32, ops: [WriteOp]) {
        guard states[i].firstSub != noIndex || states[i].pathReaders else {
            states[i].version = nextVersion
            nextVersion &+= 1
            return
        }
        takeVersion(i, old: old)
        propagate(fromState: i, round: round)
        if states[i].pathReaders { wakePaths(i, ops: ops, round: round) }
    }

    /// `bumpVersion` for a write at `path` made in place (`Graph.mutate`):
    /// the state has readers, no observers, and its epoch base is already
    /// this epoch's, so the value the write replaced is not needed.
    func bumpVersionInEpoch(_ i: Int, round: UInt32, at path: JSONPointer) {
        let b = Int(states[i].base)
        if states[i].value == bases[b].value {
            states[i].version = bases[b].version
        } else {
            states[i].version = nextVersion
            nextVersion &+= 1
        }
        propagate(fromState: i, round: round)
        if states[i].pathReaders { wakePaths(i, at: path, round: round) }
    }

    /// The state's new version, or the epoch's starting one (see above).
    @inline(__always)
    private func takeVersion(_ i: Int, old: Value) {
        let b = epochBase(of: i)
        if bases[b].epoch != epoch {
            bases[b].epoch = epoch
            bases[b].value = old
            bases[b].version = states[i].version
        }
        if states[i].value == bases[b].value {
            states[i].version = bases[b].version
        } else {
            states[i].version = nextVersion
            nextVersion &+= 1
        }
    }

    func propagate(fromState s: Int, round: UInt32) {
        propagate(from: NodeRef.state(s), round: round)
    }

    /// Marks every reader downstream of `ref` stale, iteratively (no
    /// recursion, so depth is not limited by the stack), and queues the
    /// effects, trackings and computed observers it reaches (an observer of
    /// a computed is queued with the part it saw, the old value; whether it
    /// really changed is found when the call is prepared, by a pull). A
    /// node already stale was reached before and so were its readers: stop
    /// there.
    ///
    /// Depth first along the subscriber links: a computed's readers are
    /// entered at once, and the stack keeps only the sibling link to resume
    /// from, so a chain uses no stack at all (pushing every reader of every
    /// node cost ~80 instructions a node; profiled).
    func propagate(from ref: UInt32, round: UInt32) {
        propagateStack.removeAll()
        var link = firstSubscriber(of: ref)
        while true {
            while link != noIndex {
                let d = Int(links[Int(link)].sub)
                let next = links[Int(link)].nextSub
                if !derived[d].flags.contains(.stale) {
                    derived[d].flags.insert(.stale)
                    if derived[d].kind == .computed {
                        var o = derived[d].firstObserver
                        while o != noIndex {
                            let i = Int(o)
                            o = observers[i].next
                            enqueue(i, old: observedPart(ofComputed: d, observers[i].path), round: round)
                        }
                        let readers = derived[d].firstSub
                        if readers != noIndex {
                            if next != noIndex { propagateStack.append(Int(next)) }
                            link = readers
                            continue
                        }
                    } else {
                        enqueueDerived(d, round: round)
                    }
                }
                link = next
            }
            guard let resume = propagateStack.popLast() else { return }
            link = UInt32(resume)
        }
    }

    // MARK: - 4. Pull: bring a node up to date

    /// Re-evaluates a computed if, and only if, something it read changed —
    /// checking its sources first, in the order they were read, so a diamond
    /// recomputes each node once and never sees a half-updated graph.
    @inline(__always)
    func update(_ d: Int) {
        // Most reads find the node clean: no call (the recursive body below
        // saves and restores a dozen registers, profiled at 35 instructions).
        let flags = derived[d].flags
        if flags.isDisjoint(with: [.fresh, .stale, .failed]) || flags.contains(.computing) { return }
        updateNeeded(d)
    }

    /// The pull proper: a fresh node is evaluated; a stale one is checked
    /// (`dependenciesChanged`) and evaluated only if a source changed.
    ///
    /// It recurses once per level of a chain (`dependenciesChanged` ->
    /// here), the cheapest shape for the shallow graphs most reads meet,
    /// down to `recursivePullDepth` levels; below that it goes on without
    /// recursion (`pullIteratively`). A 50-deep recursion cost the kairo
    /// chain ~12% of its time with fewer instructions (the returns of a
    /// recursion deeper than the processor's return predictor miss), while
    /// the iterative pull throughout cost the shallow cases 1–8% more
    /// instructions and 3–5% more time (issue 16, sixth round). Depth is
    /// then bounded by the heap, not the thread's stack: the pull used to
    /// fail reads of deep chains with TETHER_ERANGE when the stack ran low.
    @inline(never)
    private func updateNeeded(_ d: Int) {
        let flags = derived[d].flags
        if !flags.contains(.fresh) {
            guard !flags.isDisjoint(with: [.stale, .failed]) else { return }
            let depth = pullDepth
            if depth >= Graph.recursivePullDepth { return pullIteratively(d) }
            // Checking counts as computing: a source that reads this node
            // back while we check it is a cycle, not a stale cached value.
            pullDepth = depth &+ 1
            derived[d].flags.insert(.computing)
            let changed = dependenciesChanged(d)
            pullDepth = depth
            guard changed else {
                derived[d].flags.remove([.computing, .stale])
                return
            }
        }
        // One call site of the two, inlined: the recompute's frame was the
        // pull's second (its saved registers ~14 instructions a level).
        recompute(d)
    }

    /// Levels of recursion in the pull before it goes on iteratively: well
    /// within a return predictor's 16–32 entries with the callbacks' frames.
    static let recursivePullDepth = 12

    /// Whether any source of `d` now has another version than when `d` read
    /// it. A computed source is brought up to date first (the recursion of
    /// the pull), so its version is final when compared.
    func dependenciesChanged(_ d: Int) -> Bool {
        var l = derived[d].firstDep
        while true {
            let x = scanSources(&l)
            if x < 0 { return x == Graph.sourceChanged }
            updateNeeded(x)
            if derived[x].version != links[Int(l)].version { return true }
            l = links[Int(l)].nextDep
        }
    }

    /// `scanSources`' answers besides a source's index.
    static let sourceChanged = -2, sourcesUnchanged = -1

    /// Scans the sources from link `l` on, in the order they were read:
    /// `sourceChanged` at the first whose version is not the one its link
    /// saw, `sourcesUnchanged` at the end of the list, or the index of a
    /// stale, fresh or failed computed source (not being computed), to
    /// bring up to date before comparing it (`l` is then its link).
    @inline(__always)
    private func scanSources(_ l: inout UInt32) -> Int {
        while l != noIndex {
            let dep = links[Int(l)].dep
            let current: UInt64
            if NodeRef.isDerived(dep) {
                let x = NodeRef.index(dep)
                let flags = derived[x].flags
                if !flags.isDisjoint(with: [.fresh, .stale, .failed]) && !flags.contains(.computing) { return x }
                current = derived[x].version
            } else if NodeRef.isPath(dep) {
                current = pathNodes[NodeRef.index(dep)].version
            } else {
                current = states[NodeRef.index(dep)].version
            }
            if current != links[Int(l)].version { return Graph.sourceChanged }
            l = links[Int(l)].nextDep
        }
        return Graph.sourcesUnchanged
    }

    /// `updateNeeded` of the stale computed `d` without recursion: before a
    /// stale or fresh source is brought up to date, the node being checked
    /// goes on `pullStack` with its link to that source; when the source is
    /// done (recomputed, or found unchanged and cleared), the node resumes
    /// at that link, comparing the source's version there. A compute
    /// callback that reads another computed pulls again, nested above
    /// these frames, which it leaves as it found them (pulls never run on
    /// two threads at once: those that may call out hold the delivery
    /// lock).
    @inline(never)
    private func pullIteratively(_ d: Int) {
        let base = pullStack.count
        var node = d
        derived[d].flags.insert(.computing)
        var l = derived[d].firstDep
        var changed = false
        while true {
            if !changed {
                let x = scanSources(&l)
                if x >= 0 {
                    pullStack.append(PullFrame(node: node, link: l))
                    node = x
                    if derived[x].flags.contains(.fresh) {
                        changed = true  // never evaluated: nothing to check
                    } else {
                        derived[x].flags.insert(.computing)
                        l = derived[x].firstDep
                    }
                    continue
                }
                changed = x == Graph.sourceChanged
            }
            if changed {
                recompute(node)
            } else {
                derived[node].flags.remove([.computing, .stale])
            }
            if pullStack.count == base { return }
            // The node below resumes at its link to the one just done.
            let done = node
            let reader = pullStack.count - 1
            node = pullStack[reader].node
            l = pullStack[reader].link
            pullStack.removeLast()
            changed = derived[done].version != links[Int(l)].version
            if !changed { l = links[Int(l)].nextDep }
        }
    }

    /// A read of a computed: pull it up to date, then track the read.
    /// Returns its index, or throws its cached error.
    @inline(__always)
    func upToDate(_ id: DerivedID, tracked: Bool) throws(TetherError) -> Int {
        let d = try resolve(id, .computed)
        if derived[d].flags.contains(.computing) {
            // Recorded all the same: when the cycle is broken (a branch
            // changes), the reader is re-evaluated and can recover.
            if tracked { track(NodeRef.derived(d), version: derived[d].version) }
            throw TetherError(.cycle, "computed #\(d) is part of a dependency cycle: it was read while it was being computed")
        }
        update(d)
        guard derived[d].generation == id.generation, !derived[d].flags.contains(.disposed) else {
            throw TetherError(.stale, "the computed was freed while it was being computed")
        }
        if tracked { track(NodeRef.derived(d), version: derived[d].version) }
        if derived[d].flags.contains(.failed), let error = error(of: d) { throw error }
        return d
    }

    // MARK: - 5. Recompute, with the equality cutoff

    /// Runs the compute with `d` as the tracking target, the cursor at its
    /// first link (so reads in the same order reuse the links), then drops
    /// the links not read again. A new version only when the result (or the
    /// error) differs from the cached one.
    @inline(__always)
    private func recompute(_ d: Int) {
        // Borrowed: the node keeps its body until the call below returns
        // (`running` defers a disposal), so no retain and release of it.
        guard let bodyRef = borrowedBody(d) else {
            derived[d].flags.remove(.computing)  // as the pull marked it
            return
        }
        derived[d].flags.remove([.stale, .fresh])
        derived[d].flags.insert(.computing)
        derived[d].cursor = derived[d].firstDep
        // Wrapping: one evaluation of a node at a time (a second is a
        // cycle), so the count cannot overflow; the checks cost ~2 a
        // recompute (issue 32).
        derived[d].running &+= 1
        let interrupted = beginEvaluation(d)
        var result = Value.null
        var failure: TetherError?
        // A compute callback must not write: its round is past the limit.
        let refused = !bodyRef._withUnsafeGuaranteedRef({ callCompute($0, &result, &failure) })
        if refused {
            failure = TetherError(.outOfRange,
                "computed #\(d): callbacks nested too deep for this thread's stack (a long chain computed for the first time from its far end); read it from its start first")
        }
        endEvaluation(interrupted)
        derived[d].running &-= 1
        derived[d].flags.remove(.computing)
        if derived[d].flags.contains(.disposed) {
            if derived[d].running == 0 { finishDisposal(d) }
            return
        }
        trimDependencies(d)
        if let failure {
            if error(of: d) != failure {
                setError(d, failure)
                derived[d].value = .null
                derived[d].version = nextVersion
                nextVersion &+= 1
                keepSelfReadsCurrent(d)
            }
            // Not evaluated: the next read tries again, and its readers,
            // failed with it, find its version changed then (a failed node
            // checks its sources on every read).
            if refused { derived[d].flags.insert(.fresh) }
        } else if derived[d].flags.contains(.failed) || !unchanged(d, bodyRef, result) {
            setError(d, nil)
            // Moved in, not copied; a scalar it replaces has nothing to
            // release, so it is overwritten without Value's outlined destroy.
            let slot = cachedValueSlot(d)
            if case .other = slot.pointee.scalar {
                slot.pointee = consume result
            } else {
                slot.initialize(to: consume result)
            }
            derived[d].version = nextVersion
            nextVersion &+= 1
        }
    }

    /// A computed that read itself (a cycle: the read failed) recorded its
    /// version from before the failure that changed it; that link is given
    /// the new one, so the check every read of a failed node makes does not
    /// take the node's own failure for a changed source.
    private func keepSelfReadsCurrent(_ d: Int) {
        let me = NodeRef.derived(d)
        var l = derived[d].firstDep
        while l != noIndex {
            if links[Int(l)].dep == me { links[Int(l)].version = derived[d].version }
            l = links[Int(l)].nextDep
        }
    }

    /// The cutoff: whether a computed's new result leaves it unchanged, by
    /// its own `equals` (a callback, when it has one and an earlier result)
    /// or structurally.
    @inline(__always)
    private func unchanged(_ d: Int, _ body: Unmanaged<DerivedBody>, _ result: Value) -> Bool {
        if body._withUnsafeGuaranteedRef({ $0.hasCustomEquals }) && derived[d].version != 0 {
            return unchangedByCustomEquals(d, body, result)
        }
        return cachedValue(of: d, equals: result)
    }

    /// `unchanged` by the computed's own `equals`: out of line, so the
    /// common case stays small enough to inline into the pull (with the
    /// closure's load inline, the cutoff became a call: the chain +4.6%).
    @inline(never)
    private func unchangedByCustomEquals(_ d: Int, _ body: Unmanaged<DerivedBody>, _ result: Value) -> Bool {
        guard let equals = body._withUnsafeGuaranteedRef({ $0.equals }) else {
            return cachedValue(of: d, equals: result)
        }
        let old = derived[d].value
        var same = false
        // As the compute itself: a callback that must not write.
        if !callOut(maxRounds, Cause(), { same = equals(old, result) }) { return false }
        return same
    }

    // MARK: - 6. Unlink: stale dependencies and freed sources

    /// After an evaluation: the links past the cursor were not read this time.
    /// Inline: most evaluations read the same sources again, leaving none.
    @inline(__always)
    func trimDependencies(_ d: Int) {
        if derived[d].cursor != noIndex { unlinkPastCursor(d) }
    }

    @inline(never)
    private func unlinkPastCursor(_ d: Int) {
        var l = derived[d].cursor
        while l != noIndex {
            let next = links[Int(l)].nextDep
            removeLink(l)
            l = next
        }
        derived[d].cursor = noIndex
    }

    /// Drops every dependency of `d` (a tracking that fires, a disposal).
    func unlinkDependencies(_ d: Int) {
        derived[d].cursor = noIndex
        var l = derived[d].firstDep
        while l != noIndex {
            let next = links[Int(l)].nextDep
            removeLink(l)
            l = next
        }
    }

    /// A source is going away: its readers are woken and must re-evaluate
    /// (marked fresh: with the edge gone, no version could tell them), so
    /// they find the source stale when they read it again.
    func unlinkSubscribers(of ref: UInt32) {
        guard firstSubscriber(of: ref) != noIndex else { return }
        propagate(from: ref, round: 0)
        var l = firstSubscriber(of: ref)
        while l != noIndex {
            let next = links[Int(l)].nextSub
            derived[Int(links[Int(l)].sub)].flags.insert(.fresh)
            removeLink(l)
            l = next
        }
    }

    // MARK: - 7. Effects and trackings: queue, then pull and run

    /// Queues an effect or tracking reached by the push (once; a later
    /// write only lowers its round and updates its cause). The owner's
    /// delivery loop takes it out and calls `runDerived`. Nearly every write
    /// has the plain cause, so it tests two booleans kept beside `cause` and
    /// `derivedCauses` (`causeIsPlain`, `hasDerivedCauses`: reading the
    /// fields themselves retained their storage; profiled).
    func enqueueDerived(_ d: Int, round: UInt32) {
        derived[d].pendingRevision = revision
        if !causeIsPlain {
            derivedCauses[UInt32(d)] = Cause(meta: cause.meta, wave: cause.wave != 0 ? cause.wave : revision)
        } else if hasDerivedCauses {
            derivedCauses[UInt32(d)] = nil  // the latest write's cause wins
        }
        if derived[d].flags.contains(.queued) {
            derived[d].pendingRound = min(derived[d].pendingRound, round)
            return
        }
        derived[d].flags.insert(.queued)
        derived[d].pendingRound = round
        push(NodeRef.derived(d), sync: derived[d].flags.contains(.sync))
    }

    /// Runs a queued effect or tracking if a source really changed: the pull
    /// of an effect is `dependenciesChanged`, as for a computed (computed
    /// sources are brought up to date first), and a node whose sources all
    /// came back to the versions it saw only loses its stale mark. Called by
    /// the owner's delivery loop with its lock held; callbacks go through
    /// `callOut`.
    public func runDerived(_ entry: UInt32) {
        let d = NodeRef.index(entry)
        guard d < derived.count, derived[d].flags.contains(.queued), borrowedBody(d) != nil,
              !derived[d].flags.contains(.disposed) else { return }
        derived[d].flags.remove(.queued)
        let round = derived[d].pendingRound
        let fresh = derived[d].flags.contains(.fresh)
        if !fresh {
            derived[d].running += 1
            let changed = dependenciesChanged(d)
            derived[d].running -= 1
            if derived[d].flags.contains(.disposed) {
                if derived[d].running == 0 { finishDisposal(d) }
                return
            }
            if !changed {
                derived[d].flags.remove(.stale)
                return
            }
        }
        switch derived[d].kind {
        case .effect: runEffect(d, round: round)
        case .tracking: fire(d, round: round)
        case .computed: break
        }
    }

    private func runEffect(_ d: Int, round: UInt32) {
        // Borrowed, as in recompute: `running` keeps the node's body.
        guard let bodyRef = borrowedBody(d) else { return }
        bodyRef._withUnsafeGuaranteedRef { body in runEffect(d, body, round: round) }
    }

    /// An effect's run is an evaluation, as `recompute`: the owed cleanup,
    /// then the body with the node as the tracking target, then the trim.
    private func runEffect(_ d: Int, _ body: DerivedBody, round: UInt32) {
        derived[d].running += 1
        if body.cleanupOwed && body.ownedScope != 0 {
            // Children of the previous run go first, before its cleanup.
            effectWillRerun(body, round: round)
            if derived[d].flags.contains(.disposed) {  // a child's release freed this effect
                derived[d].running -= 1
                if derived[d].running == 0 { finishDisposal(d) }
                return
            }
        }
        if body.cleanupOwed {
            body.cleanupOwed = false
            if body.hasAnyCleanup { _ = callOut(round &+ 1, Cause()) { body.runCleanups() } }
            if derived[d].flags.contains(.disposed) {
                derived[d].running -= 1
                if derived[d].running == 0 { finishDisposal(d) }
                return
            }
        }
        derived[d].flags.remove([.stale, .fresh])
        derived[d].flags.insert(.computing)
        derived[d].cursor = derived[d].firstDep
        let interrupted = beginEvaluation(d)
        let rev = derived[d].pendingRevision
        let why = takeCause(d)
        // Its writes are one round deeper, so an effect that keeps waking
        // itself reaches maxRounds and is refused (TETHER_ELOOP).
        _ = callBody(body, rev, round &+ 1, why)
        endEvaluation(interrupted)
        derived[d].flags.remove(.computing)
        body.cleanupOwed = true
        derived[d].running -= 1
        if derived[d].flags.contains(.disposed) {
            if derived[d].running == 0 { finishDisposal(d) }
            return
        }
        trimDependencies(d)
    }

    /// The cause a queued effect or tracking runs with, handed over once.
    @inline(__always)
    private func takeCause(_ d: Int) -> Cause {
        if hasDerivedCauses, let why = derivedCauses.removeValue(forKey: UInt32(d)) { return why }
        return Cause(meta: nil, wave: derived[d].pendingRevision)
    }

    /// A tracking fires once: disarm, call on_change, end.
    private func fire(_ d: Int, round: UInt32) {
        guard let body = derived[d].body else { return }
        unlinkDependencies(d)
        derived[d].flags.insert(.disposed)  // handle is stale from now on
        derived[d].running += 1
        let rev = derived[d].pendingRevision
        let why = takeCause(d)
        _ = callBody(body, rev, round &+ 1, why)
        derived[d].running -= 1
        if derived[d].running == 0 { finishDisposal(d) }
    }
}
