import Testing
@testable import TetherCore

/// The pinned direct call (GraphDirect.swift): the owner claims and ends
/// each call without the lock, a removal races it for the call's word. The
/// contract those words keep: a removed observer is not called again, and
/// its sink is released at once unless its call is running (then when it
/// ends, by the owner).
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

    @Test func removalsBeforeDuringAndAfterTheirCall() throws {
        let (g, r, ids) = try pinnedCall()
        // a: called, then removed: released at once.
        #expect(g.claimDirectCall(0))
        g.makeDirectCall(0)
        #expect(!g.finishDirectCall(0))
        #expect(try g.removeObserver(ids[0]) != nil)
        // b: removed during its call: released by the owner when it ends.
        #expect(g.claimDirectCall(1))
        #expect(try g.removeObserver(ids[1]) == nil)
        #expect(throws: TetherError.self) { try g.removeObserver(ids[1]) }  // already removed
        g.makeDirectCall(1)
        #expect(g.finishDirectCall(1))
        #expect(g.endRemovedDirectCall(1) != nil)
        // d: removed before its call: released at once, never called.
        #expect(try g.removeObserver(ids[3]) != nil)
        #expect(g.claimDirectCall(2))
        g.makeDirectCall(2)
        #expect(!g.finishDirectCall(2))
        #expect(!g.claimDirectCall(3))
        g.endDirectCall()
        #expect(r.names == ["a", "b", "c"])
        #expect(g.liveObservers == 1)
        // A removal after the call ended does not look at its words.
        #expect(try g.removeObserver(ids[2]) != nil)
    }

    /// Queued SYNC work and deferred releases tell the owner to look; what
    /// is still owed then goes back to the queue, without the observers
    /// removed meanwhile.
    @Test func queuedWorkStopsTheCallsAndTheRestIsQueued() throws {
        let (g, r, ids) = try pinnedCall()
        #expect(g.claimDirectCall(0))
        g.makeDirectCall(0)
        #expect(!g.finishDirectCall(0))
        #expect(try g.removeObserver(ids[2]) != nil)
        let other = try g.createState(.int(0))
        _ = try g.observe(other, path: nil, options: [.sync], sink: r.sink("t"))
        try g.write(other, .int(5))
        #expect(g.directCallStopped && g.directCallInterrupted)
        g.resumeDirectCalls()
        #expect(!g.directCallStopped)
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
