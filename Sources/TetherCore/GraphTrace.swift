// GraphTrace.swift — "why did this run": before a traced recompute or effect run, which of its sources changed.

// MobX's trace() is the model: when tracing is on (for the whole graph, or
// for chosen computeds and effects), every recompute and effect run is
// reported before it happens with the sources whose versions differ from
// those its links saw, the JSON Pointer each was read at, and the cause of
// the write that set it off. Off by default, and then free: a traced node's
// body carries `DerivedBody.traced`, which the owner's `callCompute` and
// `callBody` test (RuntimeGraph.swift) before calling the user's function,
// where the body is in hand anyway; the graph's own recompute and run are
// untouched. Both are called between `beginEvaluation` and the call, so the
// node is `evalTop` and its links are still those of its last evaluation.

/// One run about to happen, and why.
public struct TraceEvent {
    public enum Kind: Sendable { case recompute, effectRun }
    public let kind: Kind
    public let reader: DerivedID
    /// Never evaluated: no source to blame.
    public let firstRun: Bool
    /// The sources whose versions changed since the reader last read them.
    public let sources: [TraceSource]
    /// The cause of the write being applied (or of the effect's run).
    public let cause: Cause
    /// The graph's revision now.
    public let revision: UInt64
}

/// A source of a traced run that changed.
public struct TraceSource {
    /// The state read, or nil when the source is a computed (`computed`).
    public let state: StateID?
    public let computed: DerivedID?
    /// The state's descriptor name, if it has one.
    public let name: String?
    /// The JSON Pointer read ("" for the whole value).
    public let pointer: String
    /// The graph's revision when the reader last ran while traced (0: not
    /// known: its first traced run).
    public let revisionBefore: UInt64
    /// The revision of the state's latest change; for a computed source,
    /// the graph's revision now (computeds have no revision of their own).
    public let revisionAfter: UInt64
}

/// Which runs are traced.
public enum TraceMode: Sendable {
    case off
    /// Every recompute and effect run.
    case all
    /// Only the computeds and effects marked with `setTraced`.
    case marked
}

extension Graph {
    /// Turns tracing on or off; `sink` gets the events (as a callback,
    /// through `callOut`, without the owner's lock). The owner's lock held.
    /// O(derived nodes): the `traced` bits are set or cleared here.
    public func setTrace(_ mode: TraceMode, sink: ((TraceEvent) -> Void)?) {
        traceMode = sink == nil ? .off : mode
        traceSink = traceMode == .off ? nil : sink
        if traceMode == .off { traceRevisions = [:] }
        for d in 0..<derived.count where derived[d].generation != 0 {
            markTraced(d)
        }
    }

    /// Marks (or unmarks) one computed or effect for `TraceMode.marked`.
    public func setTraced(_ id: DerivedID, _ on: Bool) throws(TetherError) {
        let d = Int(id.index)
        guard d < derived.count, id.generation != 0, derived[d].generation == id.generation,
              !derived[d].flags.contains(.disposed), derived[d].kind != .tracking else {
            throw TetherError(.stale, "the computed or effect to trace was freed, or never existed")
        }
        if on { tracedNodes[UInt32(d)] = id.generation } else { tracedNodes[UInt32(d)] = nil }
        markTraced(d)
    }

    /// Sets node `d`'s `traced` bit from the mode and marks. Called for a
    /// new node too (`createDerived`, when tracing is on).
    func markTraced(_ d: Int) {
        var on = false
        if derived[d].kind != .tracking {
            switch traceMode {
            case .off: on = false
            case .all: on = true
            case .marked: on = tracedNodes[UInt32(d)] == derived[d].generation
            }
        }
        derived[d].body?.traced = on
    }

    /// For the owner's `callCompute` and `callBody` of a traced body: the
    /// report of the evaluation just begun (`evalTop`), as a callback whose
    /// reads are not the node's. False when the callback freed the node:
    /// the owner skips the call (the caller finishes the disposal).
    @inline(never)
    public final func traceEvaluation(_ kind: TraceEvent.Kind, cause: Cause) -> Bool {
        let d = evalTop
        guard d >= 0 else { return true }
        untrackedDepth += 1
        defer { untrackedDepth -= 1 }
        return traceBeforeRun(d, kind, cause: kind == .recompute ? self.cause : cause)
    }

    /// Reports derived node `d`'s run before it happens (when `d` is traced),
    /// as a callback. False when the callback freed `d`: the caller stops
    /// (its own `running` count, if any, is the caller's to finish).
    @inline(never)
    func traceBeforeRun(_ d: Int, _ kind: TraceEvent.Kind, cause: Cause) -> Bool {
        guard let sink = traceSink else { return true }
        let event = traceEvent(d, kind, cause: cause)
        derived[d].running += 1
        _ = callOut(maxRounds, cause) { sink(event) }
        derived[d].running -= 1
        if derived[d].flags.contains(.disposed) {
            if derived[d].running == 0 { finishDisposal(d) }
            return false
        }
        return true
    }

    /// Whether `d` never ran: a computed that has no version yet (a result
    /// or an error gives it one), an effect that read nothing yet (one
    /// that reads nothing never runs again).
    private func firstEvaluation(_ d: Int, _ kind: TraceEvent.Kind) -> Bool {
        kind == .recompute ? derived[d].version == 0 : derived[d].firstDep == noIndex
    }

    /// The event for `d`: its sources whose versions differ from its links'.
    private func traceEvent(_ d: Int, _ kind: TraceEvent.Kind, cause: Cause) -> TraceEvent {
        let before = traceRevisions.updateValue(revision, forKey: UInt32(d)) ?? 0
        var sources: [TraceSource] = []
        var l = derived[d].firstDep
        while l != noIndex {
            let dep = links[Int(l)].dep
            let seen = links[Int(l)].version
            l = links[Int(l)].nextDep
            if NodeRef.isDerived(dep) {
                let x = NodeRef.index(dep)
                guard derived[x].version != seen else { continue }
                sources.append(TraceSource(state: nil, computed: DerivedID(index: UInt32(x), generation: derived[x].generation),
                                           name: nil, pointer: "", revisionBefore: before, revisionAfter: revision))
            } else {
                let path = NodeRef.isPath(dep)
                let i = path ? Int(pathNodes[NodeRef.index(dep)].state) : NodeRef.index(dep)
                let current = path ? pathNodes[NodeRef.index(dep)].version : states[i].version
                guard current != seen else { continue }
                let name = states[i].described.contains(.stored) ? descriptors[UInt32(i)]?.name : nil
                sources.append(TraceSource(state: StateID(index: UInt32(i), generation: states[i].generation), computed: nil,
                                           name: name, pointer: path ? pathNodes[NodeRef.index(dep)].pointer.description : "",
                                           revisionBefore: before, revisionAfter: states[i].revision))
            }
        }
        return TraceEvent(kind: kind, reader: DerivedID(index: UInt32(d), generation: derived[d].generation),
                          firstRun: firstEvaluation(d, kind), sources: sources, cause: cause, revision: revision)
    }
}
