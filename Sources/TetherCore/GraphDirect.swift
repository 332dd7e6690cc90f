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
/// `pinnedAt`: no removal frees its sink without asking the owner's
/// progress). The owner makes the calls without the lock; before each it
/// stores which call it claims (`directCurrent`) and then loads one stop
/// word (`directStop`). Whatever needs it to look under the lock sets that
/// word, under the lock: SYNC work queued, releases deferred, the runtime
/// freed, and a removal of an observer the calls owe. A removal stores the
/// stop word and then loads `directCurrent` (Dekker's handshake: at least
/// one of the two sees the other's store), so `tether_observer_remove`'s
/// contract holds:
///
/// - an observer the owner has not claimed yet is freed at once (its
///   destroy runs) and skipped: the stop word stays set until the owner
///   passes it (`directSkips`);
/// - the one it claimed is freed by the owner when that call ends, or at
///   once if the owner, looking first, skips it (a removal during the
///   call, or between the claim and the call);
/// - one already called is freed at once.
///
/// What the removal did is kept per target (`DirectRemoval`), under the
/// lock, and read by the owner only under it.
///
/// **Asymmetric fences.** The handshake needs a store-load fence on each
/// side. The owner's side runs for every call and a removal's almost
/// never, so the owner's is a compiler barrier and a removal from another
/// thread pays for both with `membarrier(2)`, which makes every running
/// thread of the process execute a full fence (`fenceAgainstDirectCaller`;
/// liburcu does the same). Per call the owner then does one store and one
/// load, against a compare-and-swap and an exchange before (~12% of a
/// notification's time among 1,000 observers: the locked instructions
/// stall on the walk's cache misses; docs/performance.md, "Asymmetric
/// fences"). Where `membarrier` is missing, or under ThreadSanitizer (which
/// does not model it), both sides use sequentially consistent operations
/// instead (`asymmetricFences` false).
import Synchronization

@usableFromInline
struct DirectCall {
    var state: Int
    var revision: UInt64
    var round: UInt32
}

/// An observer the direct call owes a call: its id and its sink, borrowed
/// (the pin keeps the sink in its record until a removal drops it).
public struct DirectTarget {
    @usableFromInline var index: UInt32
    @usableFromInline var generation: UInt32
    @usableFromInline var sink: Unmanaged<ObserverSink>
}

/// What a removal did to a target of the direct call (under the lock).
@usableFromInline
enum DirectRemoval: UInt8 {
    case none
    /// Freed before the owner claimed it: the owner must skip it (and
    /// counts it off `directSkips`).
    case skip
    /// Freed at once, its call made (or it was skipped): nothing owed.
    case freed
    /// Removed after the owner claimed it: the owner frees it after the
    /// call, or instead of it (`endRemovedDirectCall`).
    case whileClaimed
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

    /// Pins state `i`'s observers as the direct call's targets, in order:
    /// false when one does not qualify (a loop, path
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
        // Through local pointers: the stores into the targets could alias
        // the graph's fields, so reading `observers` and `directTargets`
        // through `self` reloaded both per observer (~2 instructions each).
        let records = observers.base.unsafelyUnwrapped
        var targets = directTargets
        var n = 0
        var o = states[i].firstObserver
        while o != noIndex {
            let k = Int(o)
            guard mayCallDirectly(records + k) else { return false }
            if n == directCapacity {
                growDirectTargets(keeping: n)
                targets = directTargets
            }
            let sink = UnsafeRawPointer(records + k).load(
                fromByteOffset: MemoryLayout<ObserverRecord>.offset(of: \ObserverRecord.sink).unsafelyUnwrapped,
                as: Unmanaged<ObserverSink>.self)
            (targets.unsafelyUnwrapped + n).initialize(
                to: DirectTarget(index: o, generation: records[k].generation, sink: sink))
            records[k].pinnedAt = UInt32(truncatingIfNeeded: n)
            n &+= 1
            o = records[k].next
        }
        directTargetCount = n
        return n > 0
    }

    /// Observer `k` is a SYNC observer of the whole value, not pending:
    /// `notDirect` and `pending` in one 16-bit load (three fields tested
    /// apart were ~4 instructions more an observer).
    @inline(__always)
    final func mayCallDirectly(_ k: Int) -> Bool {
        mayCallDirectly(observers.base.unsafelyUnwrapped + k)
    }

    @inline(__always)
    final func mayCallDirectly(_ record: UnsafeMutablePointer<ObserverRecord>) -> Bool {
        let offset = MemoryLayout<ObserverRecord>.offset(of: \ObserverRecord.pending).unsafelyUnwrapped
        return UnsafeRawPointer(record).load(fromByteOffset: offset, as: UInt16.self) == 0
    }

    /// Twice the room for targets, keeping the first `count` (no removal
    /// is recorded while the walk pins them: all `.none`).
    @inline(never)
    private func growDirectTargets(keeping count: Int) {
        let capacity = Swift.max(16, directCapacity * 2)
        let targets = UnsafeMutablePointer<DirectTarget>.allocate(capacity: capacity)
        let removals = UnsafeMutablePointer<DirectRemoval>.allocate(capacity: capacity)
        removals.initialize(repeating: .none, count: capacity)
        if let old = directTargets {
            targets.moveInitialize(from: old, count: count)
            old.deallocate()
        }
        directRemovals?.deallocate()  // trivial elements
        directTargets = targets
        directRemovals = removals
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
        directCurrent.store(0, ordering: .relaxed)
        directSkips = 0
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

    /// Claims the `k`th call, without the lock: true when the owner may
    /// make it now; false when it must first look under the lock
    /// (`directStop`: a removal, SYNC work, releases, the runtime freed).
    /// `asymmetric` is always `asymmetricFences`, passed as a constant so
    /// that the owner's loop is made once for each.
    @inlinable @inline(__always)
    public func claimDirectCall(_ k: Int, asymmetric: Bool) -> Bool {
        let current = UInt32(truncatingIfNeeded: k &+ 1)
        if asymmetric {
            directCurrent.store(current, ordering: .relaxed)
            // No instruction on x86-64: keeps the compiler from moving the
            // load above the store; a removal's membarrier does the rest.
            atomicMemoryFence(ordering: .acquiringAndReleasing)
            return directStop.load(ordering: .relaxed) == 0
        }
        _ = directCurrent.exchange(current, ordering: .sequentiallyConsistent)
        return directStop.load(ordering: .sequentiallyConsistent) == 0
    }

    /// The direct call's targets, read once by the owner for all its calls
    /// (they cannot move while the direct call is made).
    @inlinable
    public var directCallTargets: UnsafeMutablePointer<DirectTarget> { directTargets.unsafelyUnwrapped }

    /// Makes the `k`th call (claimed), without the lock: the shared change
    /// and the observer's id, lent to its sink.
    @inlinable @inline(__always)
    public func makeDirectCall(_ k: Int, _ targets: UnsafeMutablePointer<DirectTarget>) {
        let target = targets[k]
        let d = directDelivery
        withUnsafeMutablePointer(to: &d.pointee.change) { change in
            target.sink._withUnsafeGuaranteedRef {
                $0.deliverDirect(at: change, observer: ObserverID(index: target.index, generation: target.generation),
                                 lending: UnsafeMutableRawPointer(d + 1))
            }
        }
    }

    /// Under the lock: frees the `k`th target if a removal left that to the
    /// owner (it was removed after the owner claimed it) and returns its
    /// sink to release; whether the owner must skip its call (a removal
    /// freed it, or the owner just did). Asked after the call, and before
    /// it when the owner looks first.
    public func endRemovedDirectCall(_ k: Int) -> (skip: Bool, release: ObserverSink?) {
        let removals = directRemovals.unsafelyUnwrapped
        switch removals[k] {
        case .none, .freed:
            return (removals[k] == .freed, nil)
        case .skip:
            directSkips -= 1
            removals[k] = .freed
            return (true, nil)
        case .whileClaimed:
            removals[k] = .freed
            let i = Int(directTargets.unsafelyUnwrapped[k].index)
            observers[i].pinnedAt = noIndex
            let sink = observers[i].running == 0 && observers[i].sink != nil ? freeObserverSlot(i) : nil
            return (true, sink)
        }
    }

    /// Under the lock: whether something asked the owner to look.
    public var directCallStopped: Bool { directStop.load(ordering: .relaxed) != 0 }

    /// Under the lock, when the owner looked and goes on without it: the
    /// stop word stays set while targets a removal freed lie ahead.
    public func resumeDirectCalls() {
        if directSkips == 0 { directStop.store(0, ordering: .relaxed) }
    }

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
    /// call: true when the removal may free it now (the owner has not
    /// claimed its call, and will skip it; or has made it); false when the
    /// owner has claimed it (it frees it when the call ends). The removal's
    /// half of the handshake: the stop word, the fence, then the owner's
    /// progress.
    func dropPin(_ i: Int) -> Bool {
        let k = Int(observers[i].pinnedAt)
        directRemovalsDirty = true
        directStop.store(1, ordering: .sequentiallyConsistent)
        fenceAgainstDirectCaller()
        let current = Int(directCurrent.load(ordering: .sequentiallyConsistent))
        if k &+ 1 == current {
            directRemovals.unsafelyUnwrapped[k] = .whileClaimed
            return false
        }
        if k &+ 1 > current {
            directRemovals.unsafelyUnwrapped[k] = .skip
            directSkips += 1
        } else {
            directRemovals.unsafelyUnwrapped[k] = .freed
        }
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
            // Freed by a removal (the owner freed the one it had claimed,
            // `endRemovedDirectCall`, before handing the rest over).
            guard directRemovals.unsafelyUnwrapped[n] == .none else { continue }
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

    @usableFromInline @inline(never)
    func cleanDirectRemovals() {
        directRemovals.unsafelyUnwrapped.update(repeating: .none, count: directTargetCount)
        directRemovalsDirty = false
    }

    /// The direct call is over (made, or handed to the queue), and with
    /// it its pins. Under the lock.
    @inline(__always)
    public func endDirectCall() {
        directCall = nil
        if directRemovalsDirty { cleanDirectRemovals() }
    }
}
