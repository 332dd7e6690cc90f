/// Computed values, effects and trackings: creation, the push phase that
/// only marks, the lazy pull phase that re-evaluates what is read, and
/// disposal.
extension Graph {
    // MARK: Creating and resolving

    public func createDerived(_ kind: DerivedKind, body: DerivedBody, sync: Bool = false) throws(TetherError) -> DerivedID {
        let generation = generations.take()
        var flags: DerivedFlags = [.fresh]
        if sync { flags.insert(.sync) }
        // The node is built in each branch, not once before: a shared local
        // was copied in and destroyed (a value-witness copy per node).
        let index: Int
        if firstFreeDerived != noIndex {
            index = Int(firstFreeDerived)
            firstFreeDerived = derived[index].nextFree
            derived[index] = DerivedNode(
                generation: generation, kind: kind, flags: flags, value: .null, version: 0,
                body: body, firstDep: noIndex, lastDep: noIndex, firstSub: noIndex, lastSub: noIndex,
                cursor: noIndex, firstObserver: noIndex, lastObserver: noIndex, sequence: nextSequence,
                pendingRound: 0, pendingRevision: revision, running: 0, nextFree: noIndex)
        } else {
            guard derived.count < Graph.maxNodes else {
                throw TetherError(.noMemory, "too many live computeds, effects and trackings (limit \(Graph.maxNodes))")
            }
            index = derived.count
            derived.append(DerivedNode(
                generation: generation, kind: kind, flags: flags, value: .null, version: 0,
                body: body, firstDep: noIndex, lastDep: noIndex, firstSub: noIndex, lastSub: noIndex,
                cursor: noIndex, firstObserver: noIndex, lastObserver: noIndex, sequence: nextSequence,
                pendingRound: 0, pendingRevision: revision, running: 0, nextFree: noIndex))
        }
        nextSequence &+= 1
        liveDerived += 1
        if kind == .effect { enqueueDerived(index, round: 0) }  // its first run
        return DerivedID(index: UInt32(index), generation: generation)
    }

    @inline(__always)
    func resolve(_ id: DerivedID, _ kind: DerivedKind) throws(TetherError) -> Int {
        let i = Int(id.index)
        guard i < derived.count, id.generation != 0, derived[i].generation == id.generation,
              derived[i].kind == kind, !derived[i].flags.contains(.disposed) else {
            throw Graph.staleDerived(kind)
        }
        return i
    }

    @inline(never)
    static func staleDerived(_ kind: DerivedKind) -> TetherError {
        TetherError(.stale, "\(kind) handle is stale: it was freed\(kind == .tracking ? " or has fired" : ""), or never existed")
    }

    /// True while a compute callback runs on the evaluating thread: writes
    /// are refused there (a computed must not have side effects).
    public var isEvaluatingComputed: Bool {
        guard let top = evalStack.last?.node else { return false }
        return derived[top].kind == .computed
    }

    public var isEvaluating: Bool { evalStack.count > 0 }

    public func beginUntracked() { untrackedDepth += 1 }

    /// Pushes `d` as the node reads are recorded for; untracked sections of
    /// the frame it interrupts resume when `endEvaluation` pops it.
    @inline(__always)
    func beginEvaluation(_ d: Int) {
        evalStack.append((d, untrackedDepth))
        untrackedDepth = 0  // sets trackTarget
    }

    @inline(__always)
    func endEvaluation() {
        untrackedDepth = evalStack.popLast()!.savedUntracked  // sets trackTarget
    }

    public func endUntracked() throws(TetherError) {
        guard untrackedDepth > 0 else {
            throw TetherError(.invalidArgument, "tether_untracked_end without a matching tether_untracked_begin")
        }
        untrackedDepth -= 1
    }

    /// The error the computed's last evaluation cached, if it failed.
    func error(of d: Int) -> TetherError? {
        derived[d].flags.contains(.failed) ? derivedErrors[UInt32(d)] : nil
    }

    func setError(_ d: Int, _ error: TetherError?) {
        if let error {
            derivedErrors[UInt32(d)] = error
            derived[d].flags.insert(.failed)
        } else if derived[d].flags.contains(.failed) {
            derivedErrors[UInt32(d)] = nil
            derived[d].flags.remove(.failed)
        }
    }

    // MARK: Push: mark, never compute

    func propagate(fromState s: Int, round: UInt32) {
        propagate(from: NodeRef.state(s), round: round)
    }

    /// Marks every reader downstream of `ref` stale, iteratively (no
    /// recursion, so depth is not limited by the stack), and queues the
    /// effects, trackings and computed observers it reaches. A node already
    /// stale was reached before and so were its readers: stop there.
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

    func observedPart(ofComputed d: Int, _ path: JSONPointer?) -> Value? {
        if derived[d].flags.contains(.fresh) || derived[d].flags.contains(.failed) { return nil }
        guard let path else { return derived[d].value }
        return derived[d].value.valueIfPresent(at: path)
    }

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

    // MARK: Pull: bring a node up to date

    /// Re-evaluates a computed if, and only if, something it read changed —
    /// checking its sources first, in the order they were read, so a diamond
    /// recomputes each node once and never sees a half-updated graph.
    @inline(__always)
    func update(_ d: Int) {
        // Most reads find the node clean: no call (the recursive body below
        // saves and restores a dozen registers, profiled at 35 instructions).
        let flags = derived[d].flags
        if flags.isDisjoint(with: [.fresh, .stale]) || flags.contains(.computing) { return }
        updateNeeded(d)
    }

    @inline(never)
    private func updateNeeded(_ d: Int) {
        let flags = derived[d].flags
        if flags.contains(.fresh) { recompute(d); return }
        guard flags.contains(.stale) else { return }
        // Checking counts as computing: a source that reads this node back
        // while we check it is a cycle, not a stale cached value.
        pullDepth += 1
        defer { pullDepth -= 1 }
        if pullDepth & 255 == 0 && stackIsLow() {
            setError(d, TetherError(.outOfRange,
                "computed #\(d): dependency chain too deep for this thread's stack"))
            derived[d].version = nextVersion
            nextVersion &+= 1
            return  // stays stale: a read from a shallower point retries
        }
        derived[d].flags.insert(.computing)
        let changed = dependenciesChanged(d)
        derived[d].flags.remove(.computing)
        if changed {
            recompute(d)
        } else {
            derived[d].flags.remove(.stale)
        }
    }

    /// Whether any source of `d` now has another version than when `d` read it.
    func dependenciesChanged(_ d: Int) -> Bool {
        var l = derived[d].firstDep
        while l != noIndex {
            let dep = links[Int(l)].dep
            let current: UInt64
            if NodeRef.isDerived(dep) {
                let x = NodeRef.index(dep)
                update(x)
                current = derived[x].version
            } else {
                current = states[NodeRef.index(dep)].version
            }
            if current != links[Int(l)].version { return true }
            l = links[Int(l)].nextDep
        }
        return false
    }

    private func recompute(_ d: Int) {
        // Borrowed: the node keeps its body until the call below returns
        // (`running` defers a disposal), so no retain and release of it.
        guard let bodyRef = borrowedBody(d) else { return }
        derived[d].flags.remove([.stale, .fresh])
        derived[d].flags.insert(.computing)
        derived[d].cursor = derived[d].firstDep
        derived[d].running += 1
        beginEvaluation(d)
        var result = Value.null
        var failure: TetherError?
        // A compute callback must not write: its round is past the limit.
        if !bodyRef._withUnsafeGuaranteedRef({ callCompute($0, &result, &failure) }) {
            failure = TetherError(.outOfRange,
                "computed #\(d): callbacks nested too deep for this thread's stack (a long chain computed for the first time from its far end); read it from its start first")
        }
        endEvaluation()
        derived[d].running -= 1
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
            }
        } else if derived[d].flags.contains(.failed) || !cachedValue(of: d, equals: result) {
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

    /// Where node `d` keeps its cached value.
    @inline(__always)
    private func cachedValueSlot(_ d: Int) -> UnsafeMutablePointer<Value> {
        derived.address(d, at: MemoryLayout<DerivedNode>.offset(of: \DerivedNode.value).unsafelyUnwrapped, as: Value.self)
    }

    /// Whether `d`'s cached value equals `new`. Scalars are compared where
    /// they lie: `derived[d].value != new` copied the cached value out and
    /// destroyed the copy (two value-witness calls per recompute, profiled).
    @inline(__always)
    private func cachedValue(of d: Int, equals new: Value) -> Bool {
        let old = derived[d].value.scalar
        if case .other = old { return derived[d].value == new }
        return old.sameValue(as: new.scalar)
    }

    /// The body of derived node `d`, read without a retain (the caller must
    /// keep the node from releasing it while in use).
    @inline(__always)
    private func borrowedBody(_ d: Int) -> Unmanaged<DerivedBody>? {
        derived.unretained(d, at: MemoryLayout<DerivedNode>.offset(of: \DerivedNode.body).unsafelyUnwrapped,
                           as: DerivedBody.self)
    }

    /// Whether `id` is a live computed whose cached value (or error) is
    /// current: reading it runs no callback.
    public func computedIsUpToDate(_ id: DerivedID) -> Bool {
        let i = Int(id.index)
        guard i < derived.count, id.generation != 0, derived[i].generation == id.generation,
              derived[i].kind == .computed else { return false }
        return derived[i].flags.isDisjoint(with: [.fresh, .stale, .computing, .disposed])
    }

    /// Reads a computed, bringing it up to date first.
    public func readComputed(_ id: DerivedID, tracked: Bool = false) throws(TetherError) -> Value {
        derived[try upToDate(id, tracked: tracked)].value
    }

    /// Brings a computed up to date and records the read; returns its index,
    /// or throws its cached error.
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

    // MARK: Running effects and trackings

    /// Runs a queued effect or tracking if a source really changed. Called
    /// by the owner's delivery loop with its lock held; callbacks go
    /// through `callOut`.
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

    private func runEffect(_ d: Int, _ body: DerivedBody, round: UInt32) {
        derived[d].running += 1
        if body.cleanupOwed {
            body.cleanupOwed = false
            if body.hasCleanup { _ = callOut(round &+ 1, Cause()) { body.runCleanup() } }
            if derived[d].flags.contains(.disposed) {
                derived[d].running -= 1
                if derived[d].running == 0 { finishDisposal(d) }
                return
            }
        }
        derived[d].flags.remove([.stale, .fresh])
        derived[d].flags.insert(.computing)
        derived[d].cursor = derived[d].firstDep
        beginEvaluation(d)
        let rev = derived[d].pendingRevision
        let why = takeCause(d)
        // Its writes are one round deeper, so an effect that keeps waking
        // itself reaches maxRounds and is refused (TETHER_ELOOP).
        _ = callBody(body, rev, round &+ 1, why)
        endEvaluation()
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

    /// Runs `apply` as a tracking's evaluation: its reads become the
    /// tracking's sources. A source written meanwhile by another thread has
    /// already queued the tracking, which then fires on delivery.
    public func runApply(_ id: DerivedID, _ apply: () -> Void) throws(TetherError) {
        let d = try resolve(id, .tracking)
        derived[d].flags.remove(.fresh)
        derived[d].flags.insert(.computing)
        derived[d].cursor = derived[d].firstDep
        derived[d].running += 1
        beginEvaluation(d)
        _ = callOut(0, Cause()) { apply() }
        endEvaluation()
        derived[d].running -= 1
        derived[d].flags.remove(.computing)
        if derived[d].flags.contains(.disposed) {
            if derived[d].running == 0 { finishDisposal(d) }
            return
        }
        trimDependencies(d)
    }

    // MARK: Disposal

    /// Frees a computed, effect or tracking. Returns its body for the owner
    /// to `finish()` outside the lock (cleanup owed, then destroy), or nil
    /// when a callback of it is running: the runner finishes it then.
    public func freeDerived(_ id: DerivedID, _ kind: DerivedKind) throws(TetherError) -> DerivedBody? {
        let d = try resolve(id, kind)
        if derived[d].running > 0 {
            derived[d].flags.insert(.disposed)
            derived[d].flags.remove(.queued)
            return nil
        }
        return dispose(d)
    }

    /// Disposal found by a runner (a node freed during its own callback):
    /// the body goes to the deferred releases the owner runs after unlocking.
    func finishDisposal(_ d: Int) {
        if let body = dispose(d) { pendingBodyReleases.append(body) }
    }

    private func dispose(_ d: Int) -> DerivedBody? {
        unlinkDependencies(d)
        if derived[d].kind == .computed {
            unlinkSubscribers(of: NodeRef.derived(d))
            var o = derived[d].firstObserver
            while o != noIndex {
                let next = observers[Int(o)].next
                deferredRelease(detachObserver(Int(o)))
                o = next
            }
        }
        let body = derived[d].body
        derived[d].body = nil
        if hasDerivedCauses { derivedCauses[UInt32(d)] = nil }
        setError(d, nil)
        derived[d].generation = 0
        derived[d].flags = []
        derived[d].value = .null
        derived[d].firstObserver = noIndex
        derived[d].lastObserver = noIndex
        derived[d].nextFree = firstFreeDerived
        firstFreeDerived = UInt32(d)
        liveDerived -= 1
        return body
    }

    // MARK: Observing a computed

    /// Registers an observer of a computed, evaluating it first so it is
    /// subscribed to its sources (callbacks may run through `callCompute`).
    public func observe(_ id: DerivedID, path: JSONPointer?, options: ObserverOptions,
                        sink: ObserverSink) throws(TetherError) -> ObserverID {
        let d = try resolve(id, .computed)
        if derived[d].flags.contains(.computing) {
            throw TetherError(.cycle, "computed #\(d) cannot be observed from its own compute callback")
        }
        update(d)
        guard derived[d].generation == id.generation, !derived[d].flags.contains(.disposed) else {
            throw TetherError(.stale, "the computed was freed while it was being computed")
        }
        return try attachObserver(to: NodeRef.derived(d), path: path, options: options, sink: sink)
    }
}

extension Graph {
    /// Hands a body to the deferred releases (run by the owner after unlocking).
    public func pendingRelease(_ body: DerivedBody) {
        pendingBodyReleases.append(body)
    }
}
