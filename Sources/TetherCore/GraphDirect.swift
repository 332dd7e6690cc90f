// GraphDirect.swift — SYNC observers called by the write itself: the queue skipped for the common case.

/// The common SYNC write — from outside every callback, of a scalar, to a
/// state whose observers all take the whole value synchronously, queuing
/// nothing else — does not queue its calls. The write leaves a `DirectCall`
/// (its old and new value, once) and the list of observers it owes a call,
/// and the owner calls them in list order (registration order), which is
/// what the queue would have done:
///
/// - no pending flag, stored old value, queue entry or sort per observer
///   (profiled: ~300 of a SYNC notification's ~430 instructions were that
///   bookkeeping and the per-call record built from it);
/// - the moment anything is written or queued while the calls run (a
///   callback's write, another thread's), the calls not made yet become
///   ordinary pending calls of the current round (`scheduleRemainingDirect`)
///   and the queue takes over, so coalescing, rounds and ordering stay
///   exactly the queue's;
/// - the owner must hold the delivery lock from the write on, and makes
///   the calls or hands them to the queue (`scheduleDirectCall`) before it
///   releases the graph lock.
@usableFromInline
struct DirectCall {
    var state: Int
    var revision: UInt64
    var round: UInt32
}

extension Graph {
    /// Whether the write just made left its SYNC calls to the owner.
    /// Inlined into the owner: a field load, not an accessor call per write.
    @inlinable
    public var hasDirectCall: Bool { directCall != nil }

    /// The observers the direct call owes, in order.
    public var directCallCount: Int { directTargets.count }

    /// Records the call the write owes state `i`'s observers instead of
    /// queuing it, when the write may leave its calls to the owner: every
    /// observer is a SYNC observer of the whole value not already pending,
    /// no SYNC call is queued (it would have to be ordered with these), no
    /// batch is open and no other direct call is being made. The owner
    /// allows it (`write`'s `directCalls`) only for writes from outside its
    /// callbacks. Records the list of observers (index and generation, so a
    /// removal or a reused slot is seen) and the change, once, in
    /// `directDelivery`; false, with nothing recorded, when not allowed.
    /// One walk of the list that checks as it records: checking first and
    /// recording after walked it twice (~8 instructions an observer).
    ///
    /// `directDelivery` holds only scalars, so they are stored without
    /// releasing what they replace.
    func recordDirectCall(_ i: Int, old: ScalarValue, new: ScalarValue, round: UInt32) -> Bool {
        guard directCall == nil, batchDepth == 0, syncQueue.isEmpty else { return false }
        directTargets.removeAll()
        var o = states[i].firstObserver
        while o != noIndex {
            let k = Int(o)
            guard observers[k].options.contains(.sync), observers[k].path == nil, !observers[k].pending else {
                directTargets.removeAll()
                return false
            }
            directTargets.append((index: o, generation: observers[k].generation))
            o = observers[k].next
        }
        directCall = DirectCall(state: i, revision: revision, round: round)
        // What every call shares, filled here once rather than read back
        // from `directCall` by the owner (profiled: ~25 instructions a write).
        let d = directDelivery
        d.pointee.round = round
        d.pointee.change.state = StateID(index: UInt32(i), generation: states[i].generation)
        d.pointee.change.computed = nil
        if d.pointee.change.path != nil { d.pointee.change.path = nil }
        withUnsafeMutablePointer(to: &d.pointee.change.oldValue) { oldValue in
            withUnsafeMutablePointer(to: &d.pointee.change.newValue) { newValue in
                // Two ints (the typed write) without `Value(trivial:)`'s
                // switch on each; a `Value` passed in instead was an
                // outlined copy each (profiled).
                if case let .int(a) = old, case let .int(b) = new {
                    oldValue.initialize(to: .int(a))
                    newValue.initialize(to: .int(b))
                } else {
                    oldValue.initialize(to: Value(trivial: old))
                    newValue.initialize(to: Value(trivial: new))
                }
            }
        }
        d.pointee.change.revision = revision
        d.pointee.change.isInitial = false
        if d.pointee.change.cause.meta != nil { d.pointee.change.cause = Cause() }
        d.pointee.change.cause.wave = revision  // a write from outside callbacks starts its wave
        return true
    }

    /// Queues the recorded call as the write would have (the owner cannot
    /// make it now: SYNC work was queued after it, or another thread is
    /// delivering).
    public func scheduleDirectCall() {
        guard let call = directCall else { return }
        directCall = nil
        // The old value the queue needs is the one the call would have
        // reported (a scalar).
        let old = directDelivery.pointee.change.oldValue.unsafelyUnwrapped
        scheduleChanged(call.state, old: old, writtenPath: .root, round: call.round)
    }

    /// Starts the `k`th call: false when that observer was removed since
    /// the write (or its slot reused). Ended by `endDelivery(observer:)`.
    @inlinable @inline(__always)
    public func beginDirectCall(_ k: Int, into d: inout Delivery) -> Bool {
        let target = directTargets[k]
        let i = Int(target.index)
        guard observers[i].generation == target.generation, !observers[i].removed,
              observers[i].sink != nil else { return false }
        startCall(i, into: &d)
        return true
    }

    /// Whether something was written or queued since the direct call's
    /// write: then the calls still owed go back to the queue. A queued call
    /// without a write counts (an equal write waking an observer that asked
    /// for equal writes, an INITIAL call): the queue would have coalesced it
    /// with a call still owed here.
    @inline(__always)
    public var directCallInterrupted: Bool {
        revision != directCall.unsafelyUnwrapped.revision || !syncQueue.isEmpty
    }

    /// The calls from the `k`th on, as the queue would hold them had the
    /// write queued them: pending with the write's old value (the first old
    /// value, which a later write's coalescing keeps), in the current
    /// round; put into `batch` (emptied first) in order, for the owner's
    /// drain to run before anything queued since. An observer a later write
    /// already queued keeps that write's revision and cause, as coalescing
    /// would, and its entry in the queue, which finds it no longer pending.
    public func scheduleRemainingDirect(from k: Int, into batch: IndexQueue) {
        let call = directCall.unsafelyUnwrapped
        batch.removeAll()
        for n in k..<directTargets.count {
            let target = directTargets[n]
            let i = Int(target.index)
            guard observers[i].generation == target.generation, !observers[i].removed,
                  observers[i].sink != nil else { continue }
            if observers[i].pending {
                observers[i].pendingRound = min(observers[i].pendingRound, call.round)
            } else {
                observers[i].pending = true
                observers[i].pendingRevision = call.revision
                observers[i].pendingWave = call.revision
                observers[i].pendingMeta = nil
                observers[i].pendingRound = call.round
            }
            observers[i].pendingOld = directDelivery.pointee.change.oldValue.unsafelyUnwrapped
            batch.append(target.index)
        }
        endDirectCall()
    }

    /// The direct call is over (made, or handed to the queue).
    @inline(__always)
    public func endDirectCall() {
        directCall = nil
    }
}
