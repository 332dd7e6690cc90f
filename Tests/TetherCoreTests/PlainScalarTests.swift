import Testing
@testable import TetherCore

/// The core half of the typed getters' and setters' plain path
/// (GraphPlainScalar.swift): each function either does exactly what the
/// full path would have done, or answers "not this case" having changed
/// nothing, so the caller's full path takes over.
@Suite struct PlainScalarTests {
    /// A graph's state of every kind, and the plain reads of each type.
    @Test func readsTakeOnlyALiveStateOfTheAskedType() throws {
        let g = Graph()
        let i = try g.createState(.int(7))
        let d = try g.createState(.double(2.5))
        let b = try g.createState(.bool(true))
        let s = try g.createState(.string("x"))
        #expect(g.plainInt(i.index, i.generation, callbackOf: 0) == 7)
        #expect(g.plainDouble(d.index, d.generation, callbackOf: 0) == 2.5)
        #expect(g.plainBool(b.index, b.generation, callbackOf: 0) == true)
        // Another type (the full path converts an int to a double, or reports).
        #expect(g.plainDouble(i.index, i.generation, callbackOf: 0) == nil)
        #expect(g.plainInt(d.index, d.generation, callbackOf: 0) == nil)
        #expect(g.plainInt(s.index, s.generation, callbackOf: 0) == nil)
        // Stale: freed, a wrong generation, generation 0 (a free slot's), past the end.
        _ = try g.freeState(b)
        #expect(g.plainBool(b.index, b.generation, callbackOf: 0) == nil)
        #expect(g.plainInt(b.index, 0, callbackOf: 0) == nil)
        // A free slot's own generation, which no handle carries.
        #expect(g.plainBool(b.index, Graph.StateNode.freed, callbackOf: 0) == nil)
        #expect(!g.writePlainInt(b.index, Graph.StateNode.freed, 1))
        #expect(g.plainInt(i.index, i.generation &+ 1, callbackOf: 0) == nil)
        #expect(g.plainInt(99, i.generation, callbackOf: 0) == nil)
    }

    /// The inline write does what `write` does for an unwatched int state:
    /// the same value, graph revision and state revision, nothing for an
    /// equal value; twin graphs written the two ways stay identical.
    @Test func theInlineWriteMatchesTheFullWrite() throws {
        let plain = Graph(), full = Graph()
        let p = try plain.createState(.int(0)), f = try full.createState(.int(0))
        for n: Int64 in [1, 1, 5, -3, -3, 0, Int64.max, Int64.min] {
            #expect(plain.writePlainInt(p.index, p.generation, n))
            try full.write(f, .int(n))
            #expect(try plain.read(p) == full.read(f))
            #expect(plain.revision == full.revision)
            #expect(try plain.stateRevision(p) == full.stateRevision(f))
        }
        #expect(plain.revision == 6)
    }

    /// Every case the inline write must leave alone: it answers false and
    /// the state, its revision and the graph's are untouched.
    @Test func theInlineWriteDeclinesAnythingWatchedOrOwed() throws {
        func unchanged(_ g: Graph, _ s: StateID, _ value: Value, _ why: String) throws {
            let revision = g.revision
            #expect(!g.writePlainInt(s.index, s.generation, 42), "\(why)")
            #expect(try g.read(s) == value, "\(why)")
            #expect(g.revision == revision, "\(why)")
        }
        let r = Recorder()
        var g = Graph()
        var s = try g.createState(.int(1))
        _ = try g.observe(s, path: nil, options: [.sync], sink: r.sink("o"))
        try unchanged(g, s, .int(1), "an observer")

        g = Graph()
        s = try g.createState(.int(1))
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { out in
            out = try! g.read(s, tracked: true)
            return nil
        }))
        _ = try g.readComputed(c)
        try unchanged(g, s, .int(1), "a computed reading it")

        g = Graph()
        s = try g.createState(.int(1))
        _ = try g.describe(s, StateDescriptor(readOnly: true))
        try unchanged(g, s, .int(1), "a descriptor")

        g = Graph()
        s = try g.createState(.double(1))
        try unchanged(g, s, .double(1), "another type")

        // A SYNC call owed for another state's write: the full write
        // delivers it, so the inline one must not skip past it.
        g = Graph()
        s = try g.createState(.int(1))
        let other = try g.createState(.int(1))
        _ = try g.observe(other, path: nil, options: [.sync], sink: r.sink("other"))
        try g.write(other, .int(2))
        #expect(g.hasSyncWork)
        try unchanged(g, s, .int(1), "a SYNC call owed")

        // A loop observer's wake-up owed.
        g = Graph()
        s = try g.createState(.int(1))
        let watched = try g.createState(.int(1))
        _ = try g.observe(watched, path: nil, options: [], sink: r.sink("loop"))
        try g.write(watched, .int(2))
        #expect(g.wantsLoopWake)
        try unchanged(g, s, .int(1), "a loop wake-up owed")
    }

    /// `writeHeldInt` is `writeScalar` from outside callbacks: it writes
    /// watched states (a direct call when allowed and possible, queued
    /// otherwise) and declines what only the full write handles.
    @Test func theHeldWriteSchedulesOrDeclines() throws {
        let g = Graph()
        let r = Recorder()
        let s = try g.createState(.int(1))
        _ = try g.observe(s, path: nil, options: [.sync], sink: r.sink("o"))
        #expect(g.writeHeldInt(s, 2, directCalls: true))
        #expect(g.hasDirectCall && !g.hasSyncWork)  // left to the writer
        g.scheduleDirectCall()  // what a writer that cannot make it does
        #expect(deliver(g, .sync) == 1)
        #expect(r.changes.last?.old == .int(1) && r.changes.last?.new == .int(2))

        #expect(g.writeHeldInt(s, 3, directCalls: false))
        #expect(!g.hasDirectCall && g.hasSyncWork)  // queued
        #expect(deliver(g, .sync) == 1)
        #expect(try g.read(s) == .int(3))

        let locked = try g.createState(.int(1))
        _ = try g.describe(locked, StateDescriptor(readOnly: true))
        let revision = g.revision
        #expect(!g.writeHeldInt(locked, 9, directCalls: true))
        #expect(try g.read(locked) == .int(1) && g.revision == revision)
        let freed = try g.createState(.int(1))
        _ = try g.freeState(freed)
        #expect(!g.writeHeldInt(freed, 9, directCalls: true))
    }

    /// A computed is read by the plain path only when it is up to date and
    /// holds an int; a read from a callback is taken (and tracked) only for
    /// the runtime that owns the graph.
    @Test func computedReadsAndTheCallbacksTheyTrack() throws {
        let owner: UInt64 = 0x4242
        let g = Graph(ownerID: owner)
        let a = try g.createState(.int(1))
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { out in
            out = .int((g.plainInt(a.index, a.generation, callbackOf: owner) ?? -1) * 10)
            return nil
        }))
        #expect(g.plainComputedInt(c.index, c.generation, callbackOf: 0) == nil)  // never evaluated
        #expect(try g.readComputed(c) == .int(10))
        #expect(g.plainComputedInt(c.index, c.generation, callbackOf: 0) == 10)
        // The plain read inside the compute was tracked: a write makes it stale.
        try g.write(a, .int(2))
        #expect(g.plainComputedInt(c.index, c.generation, callbackOf: 0) == nil)
        #expect(try g.readComputed(c) == .int(20))
        #expect(g.plainComputedInt(c.index, c.generation, callbackOf: 0) == 20)
        // A callback of another runtime in the same slot: not taken.
        #expect(g.plainComputedInt(c.index, c.generation, callbackOf: owner &+ 1) == nil)
        #expect(g.plainInt(a.index, a.generation, callbackOf: owner &+ 1) == nil)
        // Another kind of derived node, or a freed one: not taken.
        let e = try g.createDerived(.effect, body: DerivedBody(run: { _ in }))
        #expect(g.plainComputedInt(e.index, e.generation, callbackOf: 0) == nil)
        _ = try g.freeDerived(c, .computed)
        #expect(g.plainComputedInt(c.index, c.generation, callbackOf: 0) == nil)
    }

    /// A computed whose last evaluation failed, or that holds another type.
    @Test func failedAndOtherTypedComputedsAreNotPlain() throws {
        let g = Graph()
        let a = try g.createState(.int(1))
        let failing = try g.createDerived(.computed, body: DerivedBody(compute: { _ in
            TetherError(.invalidArgument, "no")
        }))
        _ = try? g.readComputed(failing)
        #expect(g.plainComputedInt(failing.index, failing.generation, callbackOf: 0) == nil)
        let text = try g.createDerived(.computed, body: DerivedBody(compute: { out in
            out = .string("\(try! g.read(a, tracked: true))")
            return nil
        }))
        _ = try g.readComputed(text)
        #expect(g.plainComputedInt(text.index, text.generation, callbackOf: 0) == nil)
    }
}
