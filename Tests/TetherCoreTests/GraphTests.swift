import Testing
@testable import TetherCore

/// Records calls; runs a graph's queued deliveries the way the runtime does.
final class Recorder {
    var changes: [(name: String, old: Value?, new: Value?, revision: UInt64, initial: Bool)] = []
    var released: [String] = []

    func sink(_ name: String, _ body: ((borrowing Change) -> Void)? = nil) -> ObserverSink {
        ObserverSink(call: { [unowned self] c in
            changes.append((name, c.oldValue, c.newValue, c.revision, c.isInitial))
            body?(c)
        }, release: { [unowned self] in released.append(name) })
    }

    var names: [String] { changes.map(\.name) }
}

@discardableResult
func deliver(_ g: Graph, _ queue: DeliveryQueue) -> Int {
    let batch = IndexQueue()
    var calls = 0
    while queue == .sync ? g.hasSyncWork : g.hasLoopWork {
        g.takeBatch(queue, into: batch)
        for i in (0..<batch.count).map({ batch[$0] }) {
            if Graph.isEffectEntry(i) {
                g.runDerived(i)
                continue
            }
            guard let d = g.beginDelivery(i) else { continue }
            d.sink!.call(d.change)
            calls += 1
            g.endDelivery(d)?.runRelease()
        }
    }
    return calls
}

@Suite struct GraphStateTests {
    @Test func createReadWrite() throws {
        let g = Graph()
        let s = try g.createState(.int(1))
        #expect(try g.read(s) == .int(1))
        #expect(try g.write(s, .int(2)))
        #expect(try g.read(s) == .int(2))
        #expect(g.revision == 1)
        #expect(try g.stateRevision(s) == 1)
    }

    @Test func equalWriteChangesNothing() throws {
        let g = Graph()
        let s = try g.createState(.string("a"))
        #expect(try g.write(s, .string("a")) == false)
        #expect(g.revision == 0)
        #expect(try g.write(s, .double(.nan)))
        #expect(try g.write(s, .double(.nan)) == false)  // NaN equals NaN here
    }

    @Test func staleAfterFreeAndSlotReuse() throws {
        let g = Graph()
        let a = try g.createState(.int(1))
        _ = try g.freeState(a)
        #expect(throws: TetherError.self) { try g.read(a) }
        let b = try g.createState(.int(2))
        #expect(b.index == a.index)           // slot reused
        #expect(b.generation != a.generation) // old handle still stale
        #expect(throws: TetherError.self) { try g.write(a, .int(3)) }
        #expect(try g.read(b) == .int(2))
        #expect(throws: TetherError.self) { try g.read(StateID(index: 0, generation: 0)) }
        #expect(throws: TetherError.self) { try g.read(StateID(index: 999, generation: 1)) }
        #expect(g.liveStates == 1)
    }

    @Test func typeLock() throws {
        let g = Graph()
        let d = try g.createState(.double(1.5), typeLocked: true)
        let e = #expect(throws: TetherError.self) { try g.write(d, .string("x")) }
        #expect(e?.code == .wrongType)
        #expect(try g.read(d) == .double(1.5))
        try g.write(d, .int(3))   // widened
        #expect(try g.read(d) == .double(3))
        let i = try g.createState(.int(1), typeLocked: true)
        #expect(throws: TetherError.self) { try g.write(i, .double(2)) }
    }

    @Test func pathWrites() throws {
        let g = Graph()
        let s = try g.createState(try Value(json: #"{"user":{"name":"a","age":1},"tags":[]}"#))
        try g.write(s, .string("b"), at: JSONPointer(parsing: "/user/name"))
        try g.write(s, .int(7), at: JSONPointer(parsing: "/tags/-"))
        #expect(try g.read(s) == Value(json: #"{"user":{"name":"b","age":1},"tags":[7]}"#))
        let before = g.revision
        #expect(try g.write(s, .int(1), at: JSONPointer(parsing: "/user/age")) == false)
        #expect(g.revision == before)
        let e = #expect(throws: TetherError.self) { try g.write(s, .int(1), at: JSONPointer(parsing: "/nope/x")) }
        #expect(e?.code == .notFound)
        try g.remove(s, at: JSONPointer(parsing: "/tags/0"))
        #expect(try g.read(s, at: JSONPointer(parsing: "/tags")) == .array([]))
        #expect(throws: TetherError.self) { try g.remove(s, at: .root) }
    }
}

@Suite struct GraphObserverTests {
    @Test func coalescesFirstOldLastNew() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(.int(0))
        _ = try g.observe(s, path: nil, options: [], sink: r.sink("o"))
        for v in 1...5 { try g.write(s, .int(Int64(v))) }
        #expect(deliver(g, .loop) == 1)
        #expect(r.changes.first?.old == .int(0))
        #expect(r.changes.first?.new == .int(5))
        #expect(r.changes.first?.revision == 5)
    }

    @Test func changedAndBackWakesNobody() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(.int(42))
        _ = try g.observe(s, path: nil, options: [], sink: r.sink("o"))
        try g.write(s, .int(0))
        try g.write(s, .int(42))
        #expect(deliver(g, .loop) == 0)
    }

    @Test func registrationOrderAcrossStates() throws {
        let g = Graph(), r = Recorder()
        let a = try g.createState(.int(0)), b = try g.createState(.int(0))
        _ = try g.observe(b, path: nil, options: [], sink: r.sink("b1"))
        _ = try g.observe(a, path: nil, options: [], sink: r.sink("a1"))
        _ = try g.observe(b, path: nil, options: [], sink: r.sink("b2"))
        try g.write(a, .int(1))
        try g.write(b, .int(1))
        deliver(g, .loop)
        #expect(r.names == ["b1", "a1", "b2"])
    }

    @Test func pathObserversSkipSiblings() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(try Value(json: #"{"user":{"first":"a","last":"b"}}"#))
        _ = try g.observe(s, path: try JSONPointer(parsing: "/user/first"), options: [], sink: r.sink("first"))
        _ = try g.observe(s, path: try JSONPointer(parsing: "/user"), options: [], sink: r.sink("user"))
        _ = try g.observe(s, path: nil, options: [], sink: r.sink("root"))
        _ = try g.observe(s, path: try JSONPointer(parsing: "/user/nick"), options: [], sink: r.sink("nick"))
        try g.write(s, .string("c"), at: JSONPointer(parsing: "/user/last"))
        deliver(g, .loop)
        #expect(r.names == ["user", "root"])
        r.changes = []
        try g.write(s, .string("z"), at: JSONPointer(parsing: "/user/nick"))
        deliver(g, .loop)
        #expect(r.names == ["user", "root", "nick"])
        #expect(r.changes[2].old == nil)
        #expect(r.changes[2].new == .string("z"))
        r.changes = []
        // A whole-value write wakes only the paths whose part differs.
        try g.write(s, try Value(json: #"{"user":{"first":"a","last":"q","nick":"z"}}"#))
        deliver(g, .loop)
        #expect(r.names == ["user", "root"])
    }

    @Test func syncAndLoopQueuesAreSeparate() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(.int(0))
        _ = try g.observe(s, path: nil, options: [.sync], sink: r.sink("sync"))
        _ = try g.observe(s, path: nil, options: [], sink: r.sink("loop"))
        try g.write(s, .int(1))
        #expect(g.hasSyncWork && g.hasLoopWork)
        #expect(g.takeLoopWakeRequest())
        #expect(!g.takeLoopWakeRequest())
        deliver(g, .sync)
        #expect(r.names == ["sync"])
        deliver(g, .loop)
        #expect(r.names == ["sync", "loop"])
    }

    @Test func initialAndEqualFlags() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(.int(3))
        _ = try g.observe(s, path: nil, options: [.initial], sink: r.sink("init"))
        _ = try g.observe(s, path: nil, options: [.equal], sink: r.sink("eq"))
        deliver(g, .loop)
        #expect(r.names == ["init"])
        #expect(r.changes[0].initial && r.changes[0].old == .int(3) && r.changes[0].new == .int(3))
        try g.write(s, .int(3))
        deliver(g, .loop)
        #expect(r.names == ["init", "eq"])
    }

    @Test func removalIsIdempotentAndReleasesOnce() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(.int(0))
        let o = try g.observe(s, path: nil, options: [], sink: r.sink("o"))
        try g.write(s, .int(1))
        try g.removeObserver(o)?.runRelease()
        #expect(deliver(g, .loop) == 0)       // pending call dropped
        #expect(r.released == ["o"])
        let e = #expect(throws: TetherError.self) { try g.removeObserver(o) }
        #expect(e?.code == .stale)
        #expect(r.released == ["o"])
    }

    @Test func removalDuringOwnCallDefersRelease() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(.int(0))
        var me: ObserverID?
        var releasedInside: [String] = []
        me = try g.observe(s, path: nil, options: [], sink: r.sink("self") { _ in
            #expect(try! g.removeObserver(me!) == nil)  // running: not released yet
            releasedInside = r.released
        })
        try g.write(s, .int(1))
        deliver(g, .loop)
        #expect(releasedInside.isEmpty)
        #expect(r.released == ["self"])
        #expect(g.liveObservers == 0)
    }

    @Test func freeStateReleasesItsObservers() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(.int(0))
        _ = try g.observe(s, path: nil, options: [], sink: r.sink("a"))
        _ = try g.observe(s, path: nil, options: [.sync], sink: r.sink("b"))
        try g.write(s, .int(1))
        for sink in try g.freeState(s) { sink.runRelease() }
        #expect(Set(r.released) == ["a", "b"])
        #expect(deliver(g, .loop) + deliver(g, .sync) == 0)
    }

    @Test func feedbackLoopIsCut() throws {
        let g = Graph(maxRounds: 10), r = Recorder()
        let a = try g.createState(.int(0)), b = try g.createState(.int(0))
        var refused: TetherError?
        let batch = IndexQueue()
        _ = try g.observe(a, path: nil, options: [], sink: r.sink("a"))
        _ = try g.observe(b, path: nil, options: [], sink: r.sink("b"))
        try g.write(a, .int(1))
        // Emulate the runtime: each callback writes the other state one round deeper.
        var round: UInt32 = 0
        while g.hasLoopWork && refused == nil {
            g.takeBatch(.loop, into: batch)
            for i in (0..<batch.count).map({ batch[$0] }) {
                guard let d = g.beginDelivery(i) else { continue }
                round = d.round + 1
                let target = d.change.state == a ? b : a
                do { try g.write(target, .int(Int64(round) + 1), round: round) } catch { refused = error }
                _ = g.endDelivery(d)
            }
        }
        #expect(refused?.code == .feedbackLoop)
        #expect(round == 10)
    }

    @Test func releaseAllHandsBackEverySink() throws {
        let g = Graph(), r = Recorder()
        for n in 0..<3 {
            let s = try g.createState(.int(Int64(n)))
            _ = try g.observe(s, path: nil, options: [], sink: r.sink("o\(n)"))
        }
        let sinks = g.releaseAll().sinks
        #expect(sinks.count == 3)
        sinks.forEach { $0.runRelease() }
        sinks.forEach { $0.runRelease() }   // idempotent
        #expect(r.released.count == 3)
        #expect(g.liveStates == 0 && g.liveObservers == 0)
    }
}

@Suite struct GraphArrayPathTests {
    @Test func appendWakesObserverOfTheNewIndex() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(try Value(json: #"{"tags":["a"]}"#))
        _ = try g.observe(s, path: try JSONPointer(parsing: "/tags/1"), options: [], sink: r.sink("t1"))
        _ = try g.observe(s, path: try JSONPointer(parsing: "/tags/0"), options: [], sink: r.sink("t0"))
        try g.write(s, .string("b"), at: JSONPointer(parsing: "/tags/-"))
        deliver(g, .loop)
        #expect(r.names == ["t1"])
        #expect(r.changes.first?.old == nil)
        #expect(r.changes.first?.new == .string("b"))
    }

    @Test func removingAnElementWakesTheOnesThatShift() throws {
        let g = Graph(), r = Recorder()
        let s = try g.createState(try Value(json: #"{"tags":["a","b","c"],"n":1}"#))
        for k in 0..<3 {
            _ = try g.observe(s, path: try JSONPointer(parsing: "/tags/\(k)"), options: [], sink: r.sink("t\(k)"))
        }
        _ = try g.observe(s, path: try JSONPointer(parsing: "/n"), options: [], sink: r.sink("n"))
        try g.remove(s, at: JSONPointer(parsing: "/tags/1"))
        deliver(g, .loop)
        #expect(r.names == ["t1", "t2"])
        #expect(r.changes[0].new == .string("c"))
        #expect(r.changes[1].old == .string("c") && r.changes[1].new == nil)
    }
}

@Suite struct GraphLayoutTests {
    /// 56, so that with the storage's doubling slack a state still costs
    /// at most 64 bytes (the benchmark target) at any count.
    @Test func stateNodeFitsFiftySixBytes() {
        #expect(MemoryLayout<Graph.StateNode>.stride <= 56)
    }

    /// The cached error lives in a side table (`derivedErrors`), not in
    /// every node: derived nodes are read on every step of a pull.
    @Test func derivedNodeHasNoErrorField() {
        #expect(MemoryLayout<DerivedNode>.stride <= 112)
    }

    @Test func aFailedComputedKeepsItsErrorUntilItRecovers() throws {
        let g = Graph()
        let s = try g.createState(.int(0))
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { result in
            guard case let .int(v) = (try? g.read(s, tracked: true)) ?? .null else { return nil }
            if v < 0 { return TetherError(.outOfRange, "negative") }
            result = .int(v * 2)
            return nil
        }))
        #expect(try g.readComputed(c) == .int(0))
        _ = try g.write(s, .int(-1))
        #expect(throws: TetherError(.outOfRange, "negative")) { try g.readComputed(c) }
        #expect(g.derivedErrors.count == 1)
        _ = try g.write(s, .int(4))
        #expect(try g.readComputed(c) == .int(8))
        #expect(g.derivedErrors.isEmpty)
        _ = try g.write(s, .int(-2))
        _ = try? g.readComputed(c)
        _ = try g.freeDerived(c, .computed)
        #expect(g.derivedErrors.isEmpty)  // freed with the node
    }
}
