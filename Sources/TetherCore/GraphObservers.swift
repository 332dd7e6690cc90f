// GraphObservers.swift — observers: registration, removal, which ones a write wakes, queueing their calls.
import Synchronization

/// Observer registration, removal and scheduling.
extension Graph {
    public func observe(_ id: StateID, path: JSONPointer?, options: ObserverOptions,
                        sink: ObserverSink) throws(TetherError) -> ObserverID {
        let s = try resolve(id)
        return try attachObserver(to: NodeRef.state(s), path: path, options: options, sink: sink)
    }

    /// Registers an observer on a state or a computed (`target`), at the end
    /// of that node's observer list, and queues its INITIAL call.
    func attachObserver(to target: UInt32, path: JSONPointer?, options: ObserverOptions,
                        sink: ObserverSink) throws(TetherError) -> ObserverID {
        let isDerived = NodeRef.isDerived(target)
        let n = NodeRef.index(target)
        let last = isDerived ? derived[n].lastObserver : states[n].lastObserver
        let generation = generations.take()
        let path = (path?.isRoot ?? true) ? nil : path
        let record = ObserverRecord(
            generation: generation, target: target, prev: last, next: noIndex,
            nextFree: noIndex, options: options, path: path, sequence: nextSequence, sink: sink,
            pending: false, notDirect: !options.contains(.sync) || path != nil,
            pendingInitial: false, pendingOld: nil, pendingRevision: 0,
            pendingRound: 0, running: 0, removed: false)
        let index = try insertObserver(record)
        sink.attached(to: self, as: ObserverID(index: index, generation: generation),
                      state: isDerived ? nil : StateID(index: UInt32(n), generation: states[n].generation),
                      computed: isDerived ? DerivedID(index: UInt32(n), generation: derived[n].generation) : nil)
        nextSequence &+= 1
        if last != noIndex {
            observers[Int(last)].next = index
        } else if isDerived {
            derived[n].firstObserver = index
        } else {
            states[n].firstObserver = index
        }
        if isDerived { derived[n].lastObserver = index } else { states[n].lastObserver = index }
        liveObservers += 1
        if options.contains(.initial) {
            let current = isDerived ? observedPart(ofComputed: n, path)
                                    : states[n].value.valueIfPresent(at: path ?? .root)
            enqueue(Int(index), old: current, round: 0)
            observers[Int(index)].pendingInitial = true
        }
        return ObserverID(index: index, generation: generation)
    }

    func insertObserver(_ record: ObserverRecord) throws(TetherError) -> UInt32 {
        if firstFreeObserver != noIndex {
            let index = firstFreeObserver
            firstFreeObserver = observers[Int(index)].nextFree
            observers[Int(index)] = record
            return index
        }
        guard observers.count < Graph.maxNodes else {
            throw TetherError(.noMemory, "too many live observers (limit \(Graph.maxNodes))")
        }
        observers.append(record)
        return UInt32(observers.count - 1)
    }

    @inline(__always)
    func resolve(_ id: ObserverID) -> Int? {
        let i = Int(id.index)
        guard i < observers.count, id.generation != 0, observers[i].generation == id.generation,
              !observers[i].removed else { return nil }
        return i
    }

    /// Removes an observer. Returns its sink for the caller to release
    /// outside the lock, or nil when a call of it is running (then `finish`
    /// releases it) — or throws `.stale` when it is not a live observer.
    public func removeObserver(_ id: ObserverID) throws(TetherError) -> ObserverSink? {
        guard let i = resolve(id) else {
            throw TetherError(.stale, "observer handle is stale: already removed, its state or runtime was freed, or it never existed")
        }
        return detachObserver(i)
    }

    /// Unlinks from its state, drops any pending delivery; frees the slot now
    /// unless a call is running.
    func detachObserver(_ i: Int) -> ObserverSink? {
        let target = observers[i].target
        let prev = observers[i].prev, next = observers[i].next
        if NodeRef.isDerived(target) {
            let d = NodeRef.index(target)
            if prev != noIndex { observers[Int(prev)].next = next } else { derived[d].firstObserver = next }
            if next != noIndex { observers[Int(next)].prev = prev } else { derived[d].lastObserver = prev }
        } else {
            let s = NodeRef.index(target)
            if prev != noIndex { observers[Int(prev)].next = next } else { states[s].firstObserver = next }
            if next != noIndex { observers[Int(next)].prev = prev } else { states[s].lastObserver = prev }
        }
        observers[i].removed = true
        observers[i].pending = false     // queued entries of removed observers are skipped
        observers[i].pendingOld = nil
        observers[i].pendingMeta = nil
        liveObservers -= 1
        // Pinned by the direct call being made: freed now unless its call
        // is running (the owner frees it when the call ends).
        if isPinned(i) && !dropPin(i) { return nil }
        if observers[i].running > 0 { return nil }
        return freeObserverSlot(i)
    }

    @usableFromInline
    func freeObserverSlot(_ i: Int) -> ObserverSink? {
        let sink = observers[i].sink
        observers[i].sink = nil
        observers[i].generation = 0
        observers[i].path = nil
        observers[i].nextFree = firstFreeObserver
        firstFreeObserver = UInt32(i)
        return sink
    }

    /// A changing write: wake observers of the written path, its ancestors
    /// and its descendants whose part differs — never its siblings. (A
    /// removal from an array passes the array as `writtenPath`: the elements
    /// after the removed one shift, so they are not siblings in effect.)
    func scheduleChanged(_ s: Int, old: Value, writtenPath: JSONPointer, round: UInt32) {
        var o = states[s].firstObserver
        while o != noIndex {
            let i = Int(o)
            o = observers[i].next
            guard let path = observers[i].path else {
                enqueue(i, old: old, round: round)
                continue
            }
            guard path.overlaps(writtenPath) else { continue }
            if observers[i].pending {
                enqueue(i, old: nil, round: round)  // coalesce: the first old value stays
                continue
            }
            let before = old.valueIfPresent(at: path)
            if before != states[s].value.valueIfPresent(at: path) || observers[i].options.contains(.equal) {
                enqueue(i, old: before, round: round)
            }
        }
    }

    /// An equal write wakes only observers that asked for it.
    func scheduleEqual(_ s: Int, path writtenPath: JSONPointer, round: UInt32) {
        var o = states[s].firstObserver
        while o != noIndex {
            let i = Int(o)
            o = observers[i].next
            guard observers[i].options.contains(.equal) else { continue }
            let path = observers[i].path ?? .root
            guard path.overlaps(writtenPath) else { continue }
            enqueue(i, old: states[s].value.valueIfPresent(at: path), round: round)
        }
    }

    @inline(__always)
    func enqueue(_ i: Int, old: Value?, round: UInt32) {
        observers[i].pendingRevision = revision
        // Nearly always nil on both sides: skip the retain/release pair.
        if cause.meta != nil || observers[i].pendingMeta != nil { observers[i].pendingMeta = cause.meta }
        observers[i].pendingWave = cause.wave != 0 ? cause.wave : revision
        if observers[i].pending {
            observers[i].pendingRound = min(observers[i].pendingRound, round)
            return
        }
        observers[i].pending = true
        if let scalar = old.storedScalar {
            // An int or double old value: stored without Value's witnesses.
            withUnsafeMutablePointer(to: &observers[i].pendingOld) { $0.storeScalar(scalar) }
        } else {
            observers[i].pendingOld = old
        }
        observers[i].pendingRound = round
        push(UInt32(i), sync: observers[i].options.contains(.sync))
    }

    @inline(__always)
    func push(_ entry: UInt32, sync: Bool) {
        if sync {
            syncQueue.append(entry)
            // A direct call being made must look (`directCallInterrupted`).
            directStop.store(1, ordering: .relaxed)
        } else {
            if loopQueue.isEmpty { loopWakeRequested = true }
            loopQueue.append(entry)
        }
    }
}
