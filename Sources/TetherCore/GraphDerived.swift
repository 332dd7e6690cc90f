// GraphDerived.swift — computeds, effects and trackings as objects: create, resolve, read, observe, dispose.

/// The life of a derived node around the algorithm: making it (an effect is
/// queued for its first run), resolving its handle, untracked sections, the
/// cached error of a computed, the public reads (which pull through
/// `upToDate`), a tracking's apply, disposal, and observers of a computed.
/// How a node is kept up to date is Propagation.swift.
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
        if traceMode != .off { markTraced(index) }
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
        let top = evalTop
        return top >= 0 && derived[top].kind == .computed
    }

    public var isEvaluating: Bool { evalTop >= 0 }

    // MARK: Untracked sections and cached errors

    public func beginUntracked() { untrackedDepth += 1 }

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

    // MARK: Reading a computed

    /// Whether `id` is a live computed whose cached value (or error) is
    /// current: reading it runs no callback.
    public func computedIsUpToDate(_ id: DerivedID) -> Bool {
        let i = Int(id.index)
        guard i < derived.count, id.generation != 0, derived[i].generation == id.generation,
              derived[i].kind == .computed else { return false }
        return derived[i].flags.isDisjoint(with: [.fresh, .stale, .failed, .computing, .disposed])
    }

    /// Reads a computed, bringing it up to date first.
    public func readComputed(_ id: DerivedID, tracked: Bool = false) throws(TetherError) -> Value {
        derived[try upToDate(id, tracked: tracked)].value
    }

    // MARK: A tracking's apply

    /// Runs `apply` as a tracking's evaluation: its reads become the
    /// tracking's sources. A source written meanwhile by another thread has
    /// already queued the tracking, which then fires on delivery.
    public func runApply(_ id: DerivedID, _ apply: () -> Void) throws(TetherError) {
        let d = try resolve(id, .tracking)
        derived[d].flags.remove(.fresh)
        derived[d].flags.insert(.computing)
        derived[d].cursor = derived[d].firstDep
        derived[d].running += 1
        let interrupted = beginEvaluation(d)
        _ = callOut(0, Cause()) { apply() }
        endEvaluation(interrupted)
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

    /// The part of computed `d` an observer at `path` sees now: nil while
    /// the computed has no value (never evaluated, or failed).
    func observedPart(ofComputed d: Int, _ path: JSONPointer?) -> Value? {
        if derived[d].flags.contains(.fresh) || derived[d].flags.contains(.failed) { return nil }
        guard let path else { return derived[d].value }
        return derived[d].value.valueIfPresent(at: path)
    }
}

extension Graph {
    /// Hands a body to the deferred releases (run by the owner after unlocking).
    public func pendingRelease(_ body: DerivedBody) {
        pendingBodyReleases.append(body)
    }
}

extension Graph {
    /// Registers a cleanup on a running effect: `id`, or (nil) the innermost
    /// effect this graph is running. Refused when that effect is not running
    /// (a cleanup belongs to one run).
    public func addCleanup(to id: DerivedID?, _ cleanup: @escaping () -> Void) throws(TetherError) {
        let d: Int
        if let id {
            d = try resolve(id, .effect)
        } else {
            let top = evalTop
            guard top >= 0, derived[top].kind == .effect else {
                throw TetherError(.busy, "no effect is running here: a cleanup is registered from inside an effect's run")
            }
            d = top
        }
        guard derived[d].flags.contains(.computing), let body = derived[d].body else {
            throw TetherError(.busy, "the effect is not running: a cleanup is registered from inside its run")
        }
        body.addedCleanups.append(cleanup)
    }
}

extension Graph {
    /// The body of a live computed, effect or tracking (its callbacks and
    /// what they left, such as an effect's last failure).
    public func derivedBody(_ id: DerivedID, _ kind: DerivedKind) throws(TetherError) -> DerivedBody {
        let d = try resolve(id, kind)
        guard let body = derived[d].body else {
            throw TetherError(.stale, "\(kind) handle is stale: it was freed")
        }
        return body
    }
}
