// GraphDelivery.swift — taking queued calls out of the graph in rounds, and preparing one observer call (Delivery).

/// Taking queued calls out of the graph, in rounds.
///
/// A round is what was queued when it started, called in registration order.
/// Calls queued by writes made during a round (from callbacks or from other
/// threads) form the next round; `round`+1 is the depth a callback's own
/// writes get, which is how feedback loops are cut after `maxRounds`.
/// Queue entries are observer indexes, or derived indexes (effects and
/// trackings) tagged with `NodeRef.derivedBit`.
/// One observer call, filled in place by `beginDelivery(_:into:)`: it is
/// over 128 bytes, and returning it by value cost a memcpy per copy (two
/// per call; profiled).
public struct Delivery {
    public var observerIndex: Int = 0
    /// Borrowed: the observer's `running` count keeps its sink in its
    /// record until `endDelivery` (a retained copy cost a retain and a
    /// release per call).
    @usableFromInline var sinkRef: Unmanaged<ObserverSink>? = nil
    public var sink: ObserverSink? { sinkRef?.takeUnretainedValue() }

    /// Calls the sink with the change, without retaining the sink.
    @inline(__always)
    public mutating func deliver() {
        let sink = sinkRef.unsafelyUnwrapped
        withUnsafePointer(to: &change) { change in sink._withUnsafeGuaranteedRef { $0.deliver(at: change) } }
    }
    public var change = Change(observer: ObserverID(index: 0, generation: 0), state: nil,
                                             computed: nil, path: nil, oldValue: nil, newValue: nil,
                                             revision: 0, isInitial: false, cause: Cause())
    public internal(set) var round: UInt32 = 0

    public init() {}

    /// Drops what the last call held by reference (a string or composite
    /// value, a path, a transaction's metadata), so a `Delivery` kept for
    /// the next call does not keep them alive; scalars stay (nothing held).
    public mutating func forgetReferences() {
        if change.oldValue.isTrivial && change.newValue.isTrivial && change.path == nil && change.cause.meta == nil {
            return
        }
        change.oldValue = nil
        change.newValue = nil
        change.path = nil
        change.cause = Cause()
    }

}

extension Graph {
    public var hasSyncWork: Bool { !syncQueue.isEmpty }
    public var hasLoopWork: Bool { !loopQueue.isEmpty }

    /// True once after the loop queue became non-empty: the owner should wake
    /// its loop then, and only then (wake-ups are coalesced per loop turn).
    /// Whether `takeLoopWakeRequest` would return true (without taking it).
    public var wantsLoopWake: Bool { loopWakeRequested }

    public func takeLoopWakeRequest() -> Bool {
        let r = loopWakeRequested
        loopWakeRequested = false
        return r
    }

    /// Moves the queued calls into `batch` (cleared first), in delivery order.
    /// Swapping buffers keeps both queues' capacity, so steady state allocates nothing.
    public func takeBatch(_ queue: DeliveryQueue, into batch: IndexQueue) {
        batch.removeAll()
        switch queue {
        case .sync: batch.swapContents(with: syncQueue)
        case .loop: batch.swapContents(with: loopQueue)
        }
        epoch &+= 1
        if batch.count > 1 {
            batch.sort { sequence(of: $0) }
        }
    }

    /// The SYNC queue's one entry when it holds one effect's (or
    /// tracking's) and nothing else: a write to a state one effect reads,
    /// the common case, runs it without the drain's rounds
    /// (`Engine.runOnlySyncEffect`).
    public var onlySyncEffect: UInt32? {
        guard syncQueue.count == 1 else { return nil }
        let entry = syncQueue[0]
        return Graph.isEffectEntry(entry) ? entry : nil
    }

    /// `takeBatch(.sync, ...)` for a queue that holds one entry, which the
    /// caller runs itself: the queue emptied, a new epoch begun.
    public func takeOnlySync() {
        syncQueue.removeAll()
        epoch &+= 1
    }

    @inline(__always)
    func sequence(of entry: UInt32) -> UInt64 {
        NodeRef.isDerived(entry) ? derived[NodeRef.index(entry)].sequence : observers[Int(entry)].sequence
    }

    public static func isEffectEntry(_ entry: UInt32) -> Bool { NodeRef.isDerived(entry) }

    /// Prepares one observer call. Nil when the observer was removed since it
    /// was queued, or its part came back to the value it had (42 → 0 → 42).
    /// For an observer of a computed this brings the computed up to date,
    /// which may run compute callbacks through `callCompute`.
    public func beginDelivery(_ index: UInt32) -> Delivery? {
        var d = Delivery()
        return beginDelivery(index, into: &d) ? d : nil
    }

    /// `beginDelivery` filling a caller's Delivery; false when there is no call.
    public func beginDelivery(_ index: UInt32, into d: inout Delivery) -> Bool {
        let i = Int(index)
        guard i < observers.count, observers[i].pending, !observers[i].removed,
              observers[i].sink != nil else { return false }
        observers[i].pending = false
        let initial = observers[i].pendingInitial
        observers[i].pendingInitial = false
        if !initial, observers[i].path == nil, !NodeRef.isDerived(observers[i].target),
           let result = beginScalarDelivery(i, into: &d) {
            return result
        }
        var old: Value? = nil
        swap(&old, &observers[i].pendingOld)  // moved out: no retain/release pair
        let target = observers[i].target
        let path = observers[i].path
        let whole: Value?
        var state: StateID?
        var computed: DerivedID?
        if NodeRef.isDerived(target) {
            let d = NodeRef.index(target)
            // Keep the observer alive across compute callbacks that may remove it.
            observers[i].running += 1
            update(d)
            observers[i].running -= 1
            guard !observers[i].removed, derived[d].generation != 0 else {
                if observers[i].removed && observers[i].running == 0 { deferredRelease(freeObserverSlot(i)) }
                return false
            }
            whole = derived[d].flags.contains(.failed) ? nil : derived[d].value
            computed = DerivedID(index: UInt32(d), generation: derived[d].generation)
        } else {
            let s = NodeRef.index(target)
            whole = states[s].value
            state = StateID(index: UInt32(s), generation: states[s].generation)
        }
        let new: Value?
        if let path { new = whole?.valueIfPresent(at: path) } else { new = whole }
        if !initial, !observers[i].options.contains(.equal), old == new { return false }
        startCall(i, into: &d)
        takePending(i, into: &d)
        d.change.state = state
        d.change.computed = computed
        d.change.path = path
        if initial { d.change.oldValue = new } else { swap(&d.change.oldValue, &old) }
        d.change.newValue = new
        d.change.isInitial = initial
        return true
    }

    /// The part of preparing a call every kind shares: the observer is
    /// running (its removal defers the release), and `d` names it and
    /// borrows its sink.
    @inlinable @inline(__always)
    func startCall(_ i: Int, into d: inout Delivery) {
        observers[i].running += 1
        d.observerIndex = i
        d.sinkRef = borrowedSink(i)
        d.change.observer = ObserverID(index: UInt32(i), generation: observers[i].generation)
    }

    /// The round, revision and cause of observer `i`'s pending call, taken
    /// into `d`.
    @inline(__always)
    func takePending(_ i: Int, into d: inout Delivery) {
        d.round = observers[i].pendingRound
        d.change.revision = observers[i].pendingRevision
        if observers[i].pendingMeta == nil && d.change.cause.meta == nil {
            d.change.cause.wave = observers[i].pendingWave  // no refcounting
        } else {
            d.change.cause = Cause(meta: observers[i].pendingMeta, wave: observers[i].pendingWave)
            observers[i].pendingMeta = nil
        }
    }

    /// `beginDelivery` for the common call: a whole state whose old and new
    /// values are scalars, not the first call. Nil when that is not the
    /// case (the general path takes it); otherwise the same outcome and the
    /// same `Delivery`, but the values are compared as scalars and stored
    /// in place, without a `Value` copy or destroy (profiled: ~100 of a
    /// SYNC delivery's 300 instructions in `beginDelivery`).
    @inline(__always)
    func beginScalarDelivery(_ i: Int, into d: inout Delivery) -> Bool? {
        let s = NodeRef.index(observers[i].target)
        let new = states[s].value.scalar
        if case .other = new { return nil }
        guard let old = observers[i].pendingOld.storedScalar else { return nil }
        withUnsafeMutablePointer(to: &observers[i].pendingOld) { $0.storeScalar(nil) }
        if !observers[i].options.contains(.equal), old.sameValue(as: new) { return false }
        startCall(i, into: &d)
        takePending(i, into: &d)
        d.change.state = StateID(index: UInt32(s), generation: states[s].generation)
        d.change.computed = nil
        if d.change.path != nil { d.change.path = nil }
        withUnsafeMutablePointer(to: &d.change.oldValue) { $0.storeScalar(old) }
        withUnsafeMutablePointer(to: &d.change.newValue) { $0.storeScalar(new) }
        d.change.isInitial = false
        return true
    }

    /// Observer `i`'s sink, read without a retain (see `Delivery.sinkRef`).
    @inlinable @inline(__always)
    func borrowedSink(_ i: Int) -> Unmanaged<ObserverSink>? {
        observers.unretained(i, at: MemoryLayout<ObserverRecord>.offset(of: \ObserverRecord.sink).unsafelyUnwrapped,
                             as: ObserverSink.self)
    }

    /// Ends a call. Returns the sink to release when the observer was removed
    /// while its call ran.
    public func endDelivery(_ d: borrowing Delivery) -> ObserverSink? {
        endDelivery(observer: d.observerIndex)
    }

    /// `endDelivery` by the call's observer index: the owner's loop passes
    /// just that (passing its `Delivery` across the module boundary copied
    /// the whole struct, a memcpy per call; profiled).
    @inlinable @inline(__always)
    public func endDelivery(observer i: Int) -> ObserverSink? {
        observers[i].running -= 1
        if observers[i].removed && observers[i].running == 0 && observers[i].sink != nil {
            return freeObserverSlot(i)
        }
        return nil
    }

    /// Empties the graph (runtime teardown). Returns every sink and body
    /// still held, for the owner to release once, outside its lock.
    public func releaseAll() -> (sinks: [ObserverSink], bodies: [DerivedBody]) {
        // Moved out of the nodes (`take`), not copied: a copy cost each a
        // retain here and a release when the nodes are destroyed below
        // (profiled on S.js createComputations, with the array's growth:
        // ~58 instructions an effect).
        var sinks: [ObserverSink] = []
        sinks.reserveCapacity(observers.count)
        for i in observers.indices {
            if let sink = observers[i].sink.take() { sinks.append(sink) }
        }
        var bodies: [DerivedBody] = []
        bodies.reserveCapacity(derived.count + pendingBodyReleases.count)
        for d in derived.indices {
            if let body = derived[d].body.take() { bodies.append(body) }
        }
        for descriptor in descriptors.values {
            if let validator = descriptor.validator { sinks.append(validator.releaser) }
        }
        descriptors = [:]
        derivedCauses = [:]
        derivedErrors = [:]
        sinks.append(contentsOf: pendingSinkReleases)
        bodies.append(contentsOf: pendingBodyReleases)
        pendingSinkReleases = []
        pendingBodyReleases = []
        observers.destroy()
        states.destroy()
        derived.destroy()
        links.destroy()
        bases.destroy()
        firstFreeBase = noIndex
        syncQueue.removeAll()
        loopQueue.removeAll()
        directCall = nil
        directTargetCount = 0
        firstFreeState = noIndex
        firstFreeObserver = noIndex
        firstFreeDerived = noIndex
        firstFreeLink = noIndex
        liveStates = 0
        liveObservers = 0
        liveDerived = 0
        return (sinks, bodies)
    }

    /// Releases found while the lock is held go here; the owner runs them
    /// after unlocking (`takeDeferredReleases`).
    func deferredRelease(_ sink: ObserverSink?) {
        if let sink { pendingSinkReleases.append(sink) }
    }


    public func takeDeferredReleases() -> (sinks: [ObserverSink], bodies: [DerivedBody]) {
        defer {
            pendingSinkReleases.removeAll()
            pendingBodyReleases.removeAll()
        }
        return (pendingSinkReleases, pendingBodyReleases)
    }
}
