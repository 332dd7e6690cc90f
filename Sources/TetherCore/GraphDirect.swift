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
///   releases the graph lock;
/// - the calls are made without the graph lock, taken once around all of
///   them rather than released and retaken around each (below).
///
/// **Pinned calls.** The write pins every observer it owes a call (its
/// `pinnedAt`: no removal frees its sink without asking the call's word)
/// and gives each a word (`DirectWord`) in `directWords`. Between calls
/// the owner reads, without the lock, only those words and `directStop`;
/// whatever needs it to look under the lock (SYNC work queued, releases
/// deferred, the runtime freed) sets `directStop`. A removal (under the
/// lock) and the owner's call race for the word with a compare-and-swap,
/// so `tether_observer_remove`'s contract holds: a removal before the call
/// wins (the call is skipped, the observer freed and its destroy run at
/// once), a removal during it waits for its end (the owner frees it then),
/// a removal after it frees it at once.
import Synchronization

@usableFromInline
struct DirectCall {
    var state: Int
    var revision: UInt64
    var round: UInt32
}

/// An observer the direct call owes a call: its id and its sink, borrowed
/// (the pin keeps the sink in its record until a removal drops it).
@usableFromInline
struct DirectTarget {
    @usableFromInline var index: UInt32
    @usableFromInline var generation: UInt32
    @usableFromInline var sink: Unmanaged<ObserverSink>
}

/// The states of a direct target's word. `pinned` → `calling` → `called`
/// by the owner; `dropped` or `removedWhileCalling` by a removal.
@usableFromInline
enum DirectWord {
    /// Not called yet.
    @usableFromInline static let pinned: UInt32 = 0
    @usableFromInline static let calling: UInt32 = 1
    @usableFromInline static let called: UInt32 = 2
    /// Removed while not being called: the removal freed it (and released
    /// the sink); the owner never touches it again.
    @usableFromInline static let dropped: UInt32 = 3
    /// Removed during its call: the owner frees it after the call and
    /// releases the sink (`endRemovedDirectCall`).
    @usableFromInline static let removedWhileCalling: UInt32 = 4
}

extension Graph {
    /// Whether the write just made left its SYNC calls to the owner.
    /// Inlined into the owner: a field load, not an accessor call per write.
    @inlinable
    public var hasDirectCall: Bool { directCall != nil }

    /// The observers the direct call owes, in order.
    @inlinable
    public var directCallCount: Int { directTargetCount }

    /// Records the call the write owes state `i`'s observers instead of
    /// queuing it, when the write may leave its calls to the owner: every
    /// observer is a SYNC observer of the whole value not already pending,
    /// no SYNC call is queued (it would have to be ordered with these), no
    /// batch is open and no other direct call is being made. The owner
    /// allows it (`write`'s `directCalls`) only for writes from outside its
    /// callbacks. Records and pins the observers (`pinDirectTargets`) and
    /// the change, once, in `directDelivery`; false, with nothing recorded,
    /// when not allowed. `directDelivery` holds only scalars, so the values
    /// are stored without releasing what they replace.
    func recordDirectCall(_ i: Int, old: ScalarValue, new: ScalarValue, round: UInt32) -> Bool {
        guard directCall == nil, batchDepth == 0, syncQueue.isEmpty, pinDirectTargets(of: i) else { return false }
        withUnsafeMutablePointer(to: &directDelivery.pointee.change.oldValue) { oldValue in
            withUnsafeMutablePointer(to: &directDelivery.pointee.change.newValue) { newValue in
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
        startDirectCall(i, round: round)
        return true
    }

    /// The common SYNC write in one function: an int written over a
    /// different int (the typed setter), from outside callbacks, to a live
    /// state without readers, descriptor or path readers whose observers
    /// all qualify for a direct call (`recordDirectCall`), while nothing is
    /// owed (no SYNC call queued, no loop wake-up, no batch). The owner has
    /// taken the delivery lock (so no other direct call is being made) and
    /// makes the calls. False, with nothing written, for anything else: the
    /// owner then lets go of the delivery lock and writes as before
    /// (`writeHeldInt`). One function instead of `writeHeldInt`,
    /// `writeScalar`, `recordDirectCall` and `bumpVersion`, each checking
    /// again what the one before knew (issue 16, item 1 of "Next").
    public final func writeDirectInt(_ index: UInt32, _ generation: UInt32, _ n: Int64) -> Bool {
        assert(directCall == nil)
        guard let i = plainIndex(index, generation), case let .int(old) = states[i].value, old != n,
              states[i].firstSub == noIndex, undescribedWithoutPathReaders(i), !loopWakeRequested,
              batchDepth == 0, syncQueue.isEmpty, pinDirectTargets(of: i) else { return false }
        writeUnreadInt(i, n)
        withUnsafeMutablePointer(to: &directDelivery.pointee.change.oldValue) { $0.initialize(to: .int(old)) }
        withUnsafeMutablePointer(to: &directDelivery.pointee.change.newValue) { $0.initialize(to: .int(n)) }
        startDirectCall(i, round: 0)
        return true
    }

    /// Whether `writeDirectInt` may take a write to state `index`: it has
    /// observers and no readers. Inlined into the owner before it takes the
    /// delivery lock and calls out, so a write it cannot take (to a state
    /// read by computeds: the chain's) pays two loads, not the call, its
    /// frame and the lock (+58 instructions a chain write without it).
    @inlinable @inline(__always)
    public final func mayWriteDirect(_ index: UInt32) -> Bool {
        let i = Int(index)
        return i < states.count && states[i].firstSub == noIndex && states[i].firstObserver != noIndex
    }

    /// Pins state `i`'s observers as the direct call's targets, in order,
    /// each with its word: false when one does not qualify (a loop, path
    /// or pending observer) or there is none. One walk that checks as it
    /// records (checking first and recording after walked the list twice,
    /// ~8 instructions an observer), into storage written in place (an
    /// append per target checked its buffer and count each time). A pin
    /// is only `pinnedAt`, which a removal believes while the call is being
    /// made and its target there names the observer (`isPinned`), so a
    /// failed walk leaves nothing to undo and nothing unpins: a count in
    /// `running` taken and dropped per observer was ~15 instructions a
    /// notification.
    @inline(__always)
    final func pinDirectTargets(of i: Int) -> Bool {
        var n = 0
        var o = states[i].firstObserver
        while o != noIndex {
            let k = Int(o)
            guard mayCallDirectly(k) else { return false }
            if n == directCapacity { growDirectTargets(keeping: n) }
            directWords.unsafelyUnwrapped[n].store(DirectWord.pinned, ordering: .relaxed)
            (directTargets.unsafelyUnwrapped + n).initialize(
                to: DirectTarget(index: o, generation: observers[k].generation, sink: borrowedSink(k).unsafelyUnwrapped))
            observers[k].pinnedAt = UInt32(truncatingIfNeeded: n)
            n &+= 1
            o = observers[k].next
        }
        directTargetCount = n
        return n > 0
    }

    /// Observer `k` is a SYNC observer of the whole value, not pending:
    /// `notDirect` and `pending` in one 16-bit load (three fields tested
    /// apart were ~4 instructions more an observer).
    @inline(__always)
    final func mayCallDirectly(_ k: Int) -> Bool {
        let record = UnsafeRawPointer(observers.base.unsafelyUnwrapped + k)
        let offset = MemoryLayout<ObserverRecord>.offset(of: \ObserverRecord.pending).unsafelyUnwrapped
        return record.load(fromByteOffset: offset, as: UInt16.self) == 0
    }

    /// Twice the room for targets and words, keeping the first `count`
    /// targets (words are all `pinned` when the walk reaches them).
    @inline(never)
    private func growDirectTargets(keeping count: Int) {
        let capacity = Swift.max(16, directCapacity * 2)
        let targets = UnsafeMutablePointer<DirectTarget>.allocate(capacity: capacity)
        let words = UnsafeMutablePointer<Atomic<UInt32>>.allocate(capacity: capacity)
        for n in 0..<capacity { (words + n).initialize(to: Atomic(DirectWord.pinned)) }
        if let old = directTargets {
            targets.moveInitialize(from: old, count: count)
            old.deallocate()
        }
        if let old = directWords {
            old.deinitialize(count: directCapacity)
            old.deallocate()
        }
        directTargets = targets
        directWords = words
        directCapacity = capacity
    }

    /// What every call of the direct call shares but its values, filled
    /// once at the write. The fields no direct call sets (computed, path,
    /// metadata, INITIAL) keep the values `Delivery()` gave them: nothing
    /// else writes `directDelivery` (~10 instructions a write).
    @inline(__always)
    final func startDirectCall(_ i: Int, round: UInt32) {
        let d = directDelivery
        assert(d.pointee.change.computed == nil && d.pointee.change.path == nil
               && d.pointee.change.cause.meta == nil && !d.pointee.change.isInitial)
        directStop.store(0, ordering: .relaxed)
        directCall = DirectCall(state: i, revision: revisionCount, round: round)
        d.pointee.round = round
        d.pointee.change.state = StateID(index: UInt32(truncatingIfNeeded: i), generation: states[i].generation)
        d.pointee.change.revision = revisionCount
        d.pointee.change.cause.wave = revisionCount  // a write from outside callbacks starts its wave
    }

    /// Queues the recorded call as the write would have (the owner cannot
    /// make it now: SYNC work was queued after it, or another thread is
    /// delivering).
    public func scheduleDirectCall() {
        guard let call = directCall else { return }
        endDirectCall()
        // The old value the queue needs is the one the call would have
        // reported (a scalar).
        let old = directDelivery.pointee.change.oldValue.unsafelyUnwrapped
        scheduleChanged(call.state, old: old, writtenPath: .root, round: call.round)
    }

    /// Claims the `k`th call, without the lock: false when that observer
    /// was removed since the write (the removal dropped its pin).
    @inlinable @inline(__always)
    public func claimDirectCall(_ k: Int) -> Bool {
        directWords.unsafelyUnwrapped[k].compareExchange(
            expected: DirectWord.pinned, desired: DirectWord.calling, ordering: .acquiring).exchanged
    }

    /// Makes the `k`th call (claimed), without the lock: the shared change
    /// with this observer's id, lent to its sink.
    @inlinable @inline(__always)
    public func makeDirectCall(_ k: Int) {
        let target = directTargets.unsafelyUnwrapped[k]
        let d = directDelivery
        d.pointee.change.observer = ObserverID(index: target.index, generation: target.generation)
        withUnsafePointer(to: &d.pointee.change) { change in
            target.sink._withUnsafeGuaranteedRef { $0.deliverDirect(at: change) }
        }
    }

    /// Ends the `k`th call, without the lock: true when the observer was
    /// removed during it (the owner then takes the lock for
    /// `endRemovedDirectCall`).
    @inlinable @inline(__always)
    public func finishDirectCall(_ k: Int) -> Bool {
        directWords.unsafelyUnwrapped[k].exchange(DirectWord.called, ordering: .acquiringAndReleasing)
            == DirectWord.removedWhileCalling
    }

    /// Under the lock, after the `k`th call of an observer removed during
    /// it: frees it; returns the sink to release (the removal left it).
    public func endRemovedDirectCall(_ k: Int) -> ObserverSink? {
        directWords.unsafelyUnwrapped[k].store(DirectWord.dropped, ordering: .relaxed)
        let i = Int(directTargets.unsafelyUnwrapped[k].index)
        observers[i].pinnedAt = noIndex
        return observers[i].running == 0 && observers[i].sink != nil ? freeObserverSlot(i) : nil
    }

    /// Whether the owner must take the lock and look before the next call
    /// (read without the lock).
    @inlinable @inline(__always)
    public var directCallStopped: Bool { directStop.load(ordering: .relaxed) != 0 }

    /// Under the lock, when the owner looked and goes on without it.
    public func resumeDirectCalls() { directStop.store(0, ordering: .relaxed) }

    /// Under the lock: the owner must look before its next direct call.
    public func interruptDirectCall() { directStop.store(1, ordering: .relaxed) }

    /// Whether observer `i` is pinned by the direct call being made (its
    /// `pinnedAt` may be left from an earlier call: believed only when the
    /// target there names it).
    @inline(__always)
    func isPinned(_ i: Int) -> Bool {
        let at = Int(observers[i].pinnedAt)
        return at != Int(noIndex) && directCall != nil && at < directTargetCount
            && directTargets.unsafelyUnwrapped[at].index == UInt32(truncatingIfNeeded: i)
    }

    /// A removal (under the lock) of observer `i`, pinned by the direct
    /// call: true when its call is not running (not made yet, or made), so
    /// the removal may free it now; false when it is running (the owner
    /// frees it when the call ends).
    func dropPin(_ i: Int) -> Bool {
        let word = directWords.unsafelyUnwrapped + Int(observers[i].pinnedAt)
        var seen = word.pointee.load(ordering: .acquiring)
        while true {
            assert(seen == DirectWord.pinned || seen == DirectWord.called || seen == DirectWord.calling)
            let next = seen == DirectWord.calling ? DirectWord.removedWhileCalling : DirectWord.dropped
            let (exchanged, original) = word.pointee.compareExchange(
                expected: seen, desired: next, ordering: .acquiringAndReleasing)
            if exchanged { break }
            seen = original
        }
        if seen == DirectWord.calling { return false }
        observers[i].pinnedAt = noIndex
        return true
    }

    /// Whether something queued SYNC work since the direct call's write:
    /// then the calls still owed go back to the queue, which orders and
    /// coalesces them with it. (Other writes change nothing the calls
    /// report: their values and revision were fixed at the write.) A
    /// queued call without a write counts (an equal write waking an
    /// observer that asked for equal writes, an INITIAL call): the queue
    /// would have coalesced it with a call still owed here.
    @inline(__always)
    public var directCallInterrupted: Bool {
        !syncQueue.isEmpty
    }

    /// The calls from the `k`th on, as the queue would hold them had the
    /// write queued them: pending with the write's old value (the first old
    /// value, which a later write's coalescing keeps), in the current
    /// round; put into `batch` (emptied first) in order, for the owner's
    /// drain to run before anything queued since. An observer a later write
    /// already queued keeps that write's revision and cause, as coalescing
    /// would, and its entry in the queue, which finds it no longer pending.
    /// Ends the direct call.
    public func scheduleRemainingDirect(from k: Int, into batch: IndexQueue) {
        let call = directCall.unsafelyUnwrapped
        batch.removeAll()
        for n in k..<directTargetCount {
            let target = directTargets.unsafelyUnwrapped[n]
            let i = Int(target.index)
            guard directWords.unsafelyUnwrapped[n].load(ordering: .relaxed) != DirectWord.dropped else { continue }
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

    /// The direct call is over (made, or handed to the queue), and with
    /// it its pins. Under the lock.
    @inline(__always)
    public func endDirectCall() {
        directCall = nil
    }
}
