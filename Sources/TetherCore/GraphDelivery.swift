/// Taking queued observer calls out of the graph, in rounds.
///
/// A round is what was queued when it started, called in registration order.
/// Calls queued by writes made during a round (from callbacks or from other
/// threads) form the next round; `Change.round`+1 is the depth a callback's
/// own writes get, which is how feedback loops are cut after `maxRounds`.
public struct Delivery {
    public let observerIndex: Int
    public let sink: ObserverSink
    public let change: Change
    public let round: UInt32
}

extension Graph {
    public var hasSyncWork: Bool { !syncQueue.isEmpty }
    public var hasLoopWork: Bool { !loopQueue.isEmpty }

    /// True once after the loop queue became non-empty: the owner should wake
    /// its loop then, and only then (wake-ups are coalesced per loop turn).
    public func takeLoopWakeRequest() -> Bool {
        let r = loopWakeRequested
        loopWakeRequested = false
        return r
    }

    /// Moves the queued calls into `batch` (cleared first), in delivery order.
    /// Swapping buffers keeps both arrays' capacity, so steady state allocates nothing.
    public func takeBatch(_ queue: DeliveryQueue, into batch: inout [UInt32]) {
        batch.removeAll(keepingCapacity: true)
        switch queue {
        case .sync: swap(&batch, &syncQueue)
        case .loop: swap(&batch, &loopQueue)
        }
        if batch.count > 1 {
            batch.sort { observers[Int($0)].sequence < observers[Int($1)].sequence }
        }
    }

    /// Prepares one call. Nil when the observer was removed since it was
    /// queued, or its part came back to the value it had (42 → 0 → 42).
    public func beginDelivery(_ index: UInt32) -> Delivery? {
        let i = Int(index)
        guard i < observers.count, observers[i].pending, !observers[i].removed,
              let sink = observers[i].sink else { return nil }
        observers[i].pending = false
        let initial = observers[i].pendingInitial
        observers[i].pendingInitial = false
        let old = observers[i].pendingOld
        observers[i].pendingOld = nil
        let s = Int(observers[i].state)
        let path = observers[i].path
        let new: Value?
        if let path { new = states[s].value.valueIfPresent(at: path) } else { new = states[s].value }
        if !initial, !observers[i].options.contains(.equal), old == new { return nil }
        observers[i].running += 1
        let change = Change(
            observer: ObserverID(index: UInt32(i), generation: observers[i].generation),
            state: StateID(index: UInt32(s), generation: states[s].generation),
            path: path, oldValue: initial ? new : old, newValue: new,
            revision: observers[i].pendingRevision, isInitial: initial)
        return Delivery(observerIndex: i, sink: sink, change: change, round: observers[i].pendingRound)
    }

    /// Ends a call. Returns the sink to release when the observer was removed
    /// while its call ran.
    public func endDelivery(_ d: Delivery) -> ObserverSink? {
        let i = d.observerIndex
        observers[i].running -= 1
        if observers[i].removed && observers[i].running == 0 && observers[i].sink != nil {
            return freeObserverSlot(i)
        }
        return nil
    }

    /// Empties the graph (runtime teardown). Returns every sink still held,
    /// for the owner to release once, outside its lock.
    public func releaseAll() -> [ObserverSink] {
        var sinks: [ObserverSink] = []
        for i in observers.indices {
            if let sink = observers[i].sink { sinks.append(sink) }
        }
        observers.destroy()
        states.destroy()
        syncQueue = []
        loopQueue = []
        firstFreeState = noIndex
        firstFreeObserver = noIndex
        liveStates = 0
        liveObservers = 0
        return sinks
    }
}
