import Testing
@testable import TetherCore

/// The pinned direct call (GraphDirect.swift): the owner claims each call
/// without the lock (storing its progress, then reading the stop word), a
/// removal sets the stop word and reads the owner's progress. The contract
/// this keeps: a removed observer is not called again, and its sink is
/// released at once unless the owner has claimed its call (then by the
/// owner, after the call or instead of it). A graph alone has no
/// membarrier: these run the handshake's sequentially consistent form,
/// whose steps are the same.
@Suite struct DirectPinTests {
    /// Four SYNC observers of one state, and the direct call a write left.
    private func pinnedCall() throws -> (Graph, Recorder, [ObserverID]) {
        let g = Graph()
        let r = Recorder()
        let s = try g.createState(.int(0))
        var ids: [ObserverID] = []
        for name in ["a", "b", "c", "d"] {
            ids.append(try g.observe(s, path: nil, options: [.sync], sink: r.sink(name)))
        }
        #expect(g.writeHeldInt(s, 1, directCalls: true))
        #expect(g.hasDirectCall && g.directCallCount == 4 && !g.directCallStopped)
        return (g, r, ids)
    }

    /// The owner's answer for a target no removal touched.
    private func nothingOwed(_ r: (skip: Bool, release: ObserverSink?)) -> Bool { !r.skip && r.release == nil }

    /// The owner's answer for a target a removal freed before its call.
    private func skippedOnly(_ r: (skip: Bool, release: ObserverSink?)) -> Bool { r.skip && r.release == nil }

    @Test func removalsBeforeDuringAndAfterTheirCall() throws {
        let (g, r, ids) = try pinnedCall()
        #expect(g.claimDirectCall(0, asymmetric: false))
        g.makeDirectCall(0, g.directCallTargets)
        #expect(g.claimDirectCall(1, asymmetric: false))
        // a: called, then removed: released at once.
        #expect(try g.removeObserver(ids[0]) != nil)
        // b: removed after its call was claimed: the call is made, and the
        // owner releases it when it ends.
        #expect(try g.removeObserver(ids[1]) == nil)
        #expect(throws: TetherError.self) { try g.removeObserver(ids[1]) }  // already removed
        g.makeDirectCall(1, g.directCallTargets)
        // The removals stopped the owner: it looks before the next call.
        #expect(!g.claimDirectCall(2, asymmetric: false))
        let afterB = g.endRemovedDirectCall(1)
        #expect(afterB.skip && afterB.release != nil)
        let beforeC = g.endRemovedDirectCall(2)
        #expect(!beforeC.skip && beforeC.release == nil)
        g.resumeDirectCalls()
        #expect(!g.directCallStopped)
        // d: removed before its call: released at once, never called.
        #expect(try g.removeObserver(ids[3]) != nil)
        g.makeDirectCall(2, g.directCallTargets)
        #expect(!g.claimDirectCall(3, asymmetric: false))
        #expect(nothingOwed(g.endRemovedDirectCall(2)))
        let beforeD = g.endRemovedDirectCall(3)
        #expect(beforeD.skip && beforeD.release == nil)
        g.resumeDirectCalls()
        #expect(!g.directCallStopped)
        g.endDirectCall()
        #expect(r.names == ["a", "b", "c"])
        #expect(g.liveObservers == 1)
        // A removal after the call ended does not look at its progress.
        #expect(try g.removeObserver(ids[2]) != nil)
    }

    /// A removal between the owner's claim and its call, when the owner
    /// sees the stop word first: the owner skips the call and frees it.
    @Test func aRemovalTheOwnerSeesBeforeTheCallItClaimed() throws {
        let (g, r, ids) = try pinnedCall()
        #expect(g.claimDirectCall(0, asymmetric: false))
        g.makeDirectCall(0, g.directCallTargets)
        #expect(g.claimDirectCall(1, asymmetric: false))
        #expect(try g.removeObserver(ids[1]) == nil)  // claimed: the owner frees it
        // The owner read the stop word after the removal's store (the
        // handshake allows both to see each other).
        #expect(!g.claimDirectCall(1, asymmetric: false))
        #expect(nothingOwed(g.endRemovedDirectCall(0)))
        let skipped = g.endRemovedDirectCall(1)
        #expect(skipped.skip && skipped.release != nil)
        g.resumeDirectCalls()
        for k in 2..<4 {
            #expect(g.claimDirectCall(k, asymmetric: false))
            g.makeDirectCall(k, g.directCallTargets)
        }
        g.endDirectCall()
        #expect(r.names == ["a", "c", "d"])
        #expect(g.liveObservers == 3)
    }

    /// An observer removed before the owner reaches it keeps the stop word
    /// set, whatever else the owner looked at meanwhile, until the owner
    /// has passed it: else it would call a freed observer.
    @Test func theStopWordStaysSetUntilARemovedTargetIsPassed() throws {
        let (g, r, ids) = try pinnedCall()
        #expect(g.claimDirectCall(0, asymmetric: false))
        g.makeDirectCall(0, g.directCallTargets)
        #expect(try g.removeObserver(ids[3]) != nil)  // d, not reached: freed now
        #expect(!g.claimDirectCall(1, asymmetric: false))
        #expect(nothingOwed(g.endRemovedDirectCall(0)))
        #expect(nothingOwed(g.endRemovedDirectCall(1)))
        g.resumeDirectCalls()
        #expect(g.directCallStopped)  // d lies ahead
        g.makeDirectCall(1, g.directCallTargets)
        #expect(!g.claimDirectCall(2, asymmetric: false))
        g.resumeDirectCalls()
        #expect(g.directCallStopped)
        g.makeDirectCall(2, g.directCallTargets)
        #expect(!g.claimDirectCall(3, asymmetric: false))
        #expect(skippedOnly(g.endRemovedDirectCall(3)))
        g.resumeDirectCalls()
        #expect(!g.directCallStopped)
        g.endDirectCall()
        #expect(r.names == ["a", "b", "c"])
    }

    /// Queued SYNC work and deferred releases tell the owner to look; what
    /// is still owed then goes back to the queue, without the observers
    /// removed meanwhile.
    @Test func queuedWorkStopsTheCallsAndTheRestIsQueued() throws {
        let (g, r, ids) = try pinnedCall()
        #expect(g.claimDirectCall(0, asymmetric: false))
        g.makeDirectCall(0, g.directCallTargets)
        #expect(try g.removeObserver(ids[2]) != nil)
        let other = try g.createState(.int(0))
        _ = try g.observe(other, path: nil, options: [.sync], sink: r.sink("t"))
        try g.write(other, .int(5))
        #expect(g.directCallStopped && g.directCallInterrupted)
        g.resumeDirectCalls()
        #expect(g.directCallStopped)  // c, removed, lies ahead
        let batch = IndexQueue()
        g.scheduleRemainingDirect(from: 1, into: batch)
        #expect(!g.hasDirectCall)
        #expect(batch.count == 2)  // b and d; c was removed
        for k in 0..<batch.count {
            if let d = g.beginDelivery(batch[k]) {
                d.sink?.deliver(d.change)
                _ = g.endDelivery(d)
            }
        }
        #expect(deliver(g, .sync) == 1)
        #expect(r.names == ["a", "b", "d", "t"])
        #expect(r.changes[1].old == .int(0) && r.changes[1].new == .int(1))
    }
}

/// `mayCallDirectly` reads an observer record's `pending` and `notDirect`
/// as one 16-bit word: these pin that layout and its answers.
@Suite struct ObserverLayoutTests {
    @Test func pendingAndNotDirectAreOneAlignedWord() throws {
        let pending = try #require(MemoryLayout<Graph.ObserverRecord>.offset(of: \Graph.ObserverRecord.pending))
        let notDirect = try #require(MemoryLayout<Graph.ObserverRecord>.offset(of: \Graph.ObserverRecord.notDirect))
        #expect(notDirect == pending + 1)
        #expect(pending % MemoryLayout<UInt16>.alignment == 0)
        #expect(MemoryLayout<Graph.ObserverRecord>.stride == 120)  // the padding took both new fields
    }

    @Test func theOneWordCheckMatchesTheFields() throws {
        let g = Graph()
        let r = Recorder()
        let s = try g.createState(try Value(json: #"{"a":1}"#))
        let sync = try g.observe(s, path: nil, options: [.sync], sink: r.sink("sync"))
        let loop = try g.observe(s, path: nil, options: [], sink: r.sink("loop"))
        let path = try g.observe(s, path: JSONPointer(tokens: ["a"]), options: [.sync], sink: r.sink("path"))
        #expect(g.mayCallDirectly(Int(sync.index)))
        #expect(!g.mayCallDirectly(Int(loop.index)))
        #expect(!g.mayCallDirectly(Int(path.index)))
        g.observers[Int(sync.index)].pending = true
        #expect(!g.mayCallDirectly(Int(sync.index)))
    }
}
