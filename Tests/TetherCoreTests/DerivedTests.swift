import Testing
@testable import TetherCore

/// Computeds and effects in the core, without the runtime: reads go straight
/// to the graph with `tracked: true`, as the C face does inside callbacks.
@Suite struct ComputedTests {
    @Test func lazyCachedAndRecomputedOnChange() throws {
        let g = Graph()
        let a = try g.createState(.int(1))
        var calls = 0
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            calls += 1
            guard case let .int(v) = try! g.read(a, tracked: true) else { return nil }
            r = .int(v * 10)
            return nil
        }))
        #expect(calls == 0)                    // lazy
        #expect(try g.readComputed(c) == .int(10))
        #expect(try g.readComputed(c) == .int(10))
        #expect(calls == 1)                    // cached
        try g.write(a, .int(2))
        #expect(calls == 1)                    // still lazy
        #expect(try g.readComputed(c) == .int(20))
        #expect(calls == 2)
    }

    @Test func diamondRunsOnceAndIsGlitchFree() throws {
        let g = Graph()
        let a = try g.createState(.int(1))
        func intOf(_ v: Value) -> Int64 { if case let .int(i) = v { return i }; return -1 }
        let b = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            r = .int(intOf(try! g.read(a, tracked: true)) + 1); return nil }))
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            r = .int(intOf(try! g.read(a, tracked: true)) * 2); return nil }))
        var seen: [(Int64, Int64)] = []
        let d = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            let x = intOf(try! g.readComputed(b, tracked: true)), y = intOf(try! g.readComputed(c, tracked: true))
            seen.append((x, y))
            r = .int(x + y); return nil }))
        #expect(try g.readComputed(d) == .int(4))
        try g.write(a, .int(5))
        #expect(try g.readComputed(d) == .int(16))
        #expect(seen.count == 2)
        #expect(seen[1] == (6, 10))
    }

    @Test func equalResultCutsOffDownstream() throws {
        let g = Graph()
        let a = try g.createState(.int(1))
        var downstream = 0
        let parity = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            if case let .int(v) = try! g.read(a, tracked: true) { r = .int(v % 2) }; return nil }))
        let after = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            downstream += 1
            r = try! g.readComputed(parity, tracked: true); return nil }))
        _ = try g.readComputed(after)
        try g.write(a, .int(3))                // parity stays 1
        _ = try g.readComputed(after)
        #expect(downstream == 1)
    }

    @Test func dynamicDependenciesSwitch() throws {
        let g = Graph()
        let flag = try g.createState(.bool(true)), x = try g.createState(.int(1)), y = try g.createState(.int(2))
        var calls = 0
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            calls += 1
            if case .bool(true) = try! g.read(flag, tracked: true) { r = try! g.read(x, tracked: true) }
            else { r = try! g.read(y, tracked: true) }
            return nil }))
        #expect(try g.readComputed(c) == .int(1))
        try g.write(flag, .bool(false))
        #expect(try g.readComputed(c) == .int(2))
        let before = calls
        try g.write(x, .int(100))              // no longer read
        #expect(try g.readComputed(c) == .int(2))
        #expect(calls == before)
    }

    @Test func cycleIsAnErrorNotACrash() throws {
        let g = Graph()
        var other: DerivedID?
        let a = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            do throws(TetherError) { r = try g.readComputed(other!, tracked: true); return nil } catch { return error } }))
        other = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            do throws(TetherError) { r = try g.readComputed(a, tracked: true); return nil } catch { return error } }))
        let e = #expect(throws: TetherError.self) { try g.readComputed(a) }
        #expect(e?.code == .cycle)
    }

    @Test func errorsAreCachedUntilADependencyChanges() throws {
        let g = Graph()
        let a = try g.createState(.int(-1))
        var calls = 0
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            calls += 1
            guard case let .int(v) = try! g.read(a, tracked: true), v >= 0 else {
                return TetherError(.outOfRange, "negative")
            }
            r = .int(v); return nil }))
        #expect(throws: TetherError.self) { try g.readComputed(c) }
        #expect(throws: TetherError.self) { try g.readComputed(c) }
        #expect(calls == 1)
        try g.write(a, .int(4))
        #expect(try g.readComputed(c) == .int(4))
    }

    @Test func freedComputedIsStaleAndReleasedOnce() throws {
        let g = Graph()
        var released = 0
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in r = .int(1); return nil },
                                                                 release: { released += 1 }))
        _ = try g.readComputed(c)
        try g.freeDerived(c, .computed)?.finish()
        #expect(released == 1)
        #expect(throws: TetherError.self) { try g.readComputed(c) }
        #expect(throws: TetherError.self) { try g.freeDerived(c, .computed) }
    }
}

@Suite struct EffectTests {
    @Test func runsOnceThenOnChangeWithCleanupFirst() throws {
        let g = Graph()
        let a = try g.createState(.int(0))
        var log: [String] = []
        _ = try g.createDerived(.effect, body: DerivedBody(
            run: { _ in log.append("run \(try! g.read(a, tracked: true))") },
            cleanup: { log.append("cleanup") }))
        deliver(g, .loop)
        try g.write(a, .int(1))
        deliver(g, .loop)
        #expect(log == ["run int(0)", "cleanup", "run int(1)"])
    }

    @Test func batchThatRevertsRunsNothing() throws {
        let g = Graph()
        let a = try g.createState(.int(42))
        var runs = 0
        _ = try g.createDerived(.effect, body: DerivedBody(run: { _ in _ = try! g.read(a, tracked: true); runs += 1 }), sync: true)
        deliver(g, .sync)
        g.batchDepth += 1
        try g.write(a, .int(0))
        try g.write(a, .int(42))
        g.batchDepth -= 1
        deliver(g, .sync)
        #expect(runs == 1)
    }

    @Test func freeingCancelsThePendingRun() throws {
        let g = Graph()
        let a = try g.createState(.int(0))
        var runs = 0, cleanups = 0, released = 0
        let e = try g.createDerived(.effect, body: DerivedBody(
            run: { _ in _ = try! g.read(a, tracked: true); runs += 1 },
            cleanup: { cleanups += 1 }, release: { released += 1 }))
        deliver(g, .loop)
        try g.write(a, .int(1))
        try g.freeDerived(e, .effect)?.finish()
        deliver(g, .loop)
        #expect(runs == 1 && cleanups == 1 && released == 1)
    }

    @Test func trackingFiresOnceWithTheRevision() throws {
        let g = Graph()
        let a = try g.createState(.int(0)), b = try g.createState(.int(0))
        var fired: [UInt64] = []
        let t = try g.createDerived(.tracking, body: DerivedBody(run: { rev in fired.append(rev) }))
        try g.runApply(t) { _ = try! g.read(a, tracked: true) }
        try g.write(b, .int(1))                // not read: nothing
        deliver(g, .loop)
        #expect(fired.isEmpty)
        try g.write(a, .int(1))
        let first = g.revision                 // on_change reports the first change
        try g.write(a, .int(2))
        deliver(g, .loop)
        #expect(fired == [first])
        try g.write(a, .int(3))
        deliver(g, .loop)
        #expect(fired.count == 1)              // disarmed
        #expect(throws: TetherError.self) { try g.freeDerived(t, .tracking) }
    }
}

@Suite struct DerivedEdgeTests {
    @Test func selfWakingEffectIsCutAtMaxRounds() throws {
        let g = Graph(maxRounds: 10)
        let x = try g.createState(.int(0))
        var runs = 0
        var refused: TetherError?
        var round: UInt32 = 0
        // Emulate the runtime's gate: the body runs with the round it is given.
        g.gate = { r, _, body in
            let saved = round
            round = r
            body()
            round = saved
            return true
        }
        _ = try g.createDerived(.effect, body: DerivedBody(run: { _ in
            runs += 1
            guard case let .int(v) = try! g.read(x, tracked: true) else { return }
            do throws(TetherError) { try g.write(x, .int(v + 1), round: round) } catch { refused = error }
        }))
        deliver(g, .loop)
        #expect(refused?.code == .feedbackLoop)
        #expect(runs == 10)
    }

    @Test func readerOfAFreedComputedReevaluates() throws {
        let g = Graph()
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in r = .int(1); return nil }))
        let reader = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            do throws(TetherError) { r = try g.readComputed(c, tracked: true); return nil } catch { return error } }))
        #expect(try g.readComputed(reader) == .int(1))
        try g.freeDerived(c, .computed)?.finish()
        let e = #expect(throws: TetherError.self) { try g.readComputed(reader) }
        #expect(e?.code == .stale)
    }

    @Test func brokenCycleRecovers() throws {
        let g = Graph()
        let flag = try g.createState(.bool(true))
        var b: DerivedID?
        let a = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            guard case .bool(true) = try! g.read(flag, tracked: true) else { r = .int(100); return nil }
            do throws(TetherError) {
                guard case let .int(v) = try g.readComputed(b!, tracked: true) else { return nil }
                r = .int(v + 1); return nil
            } catch { return error } }))
        b = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            do throws(TetherError) {
                guard case let .int(v) = try g.readComputed(a, tracked: true) else { return nil }
                r = .int(v + 1); return nil
            } catch { return error } }))
        #expect((#expect(throws: TetherError.self) { try g.readComputed(b!) })?.code == .cycle)
        try g.write(flag, .bool(false))
        #expect(try g.readComputed(b!) == .int(101))
        try g.write(flag, .bool(true))
        #expect((#expect(throws: TetherError.self) { try g.readComputed(b!) })?.code == .cycle)
        #expect((#expect(throws: TetherError.self) { try g.readComputed(a) })?.code == .cycle)
    }

    /// kairo unstable's shape: head, then x or y by head's parity, 20 times.
    @Test func alternatingReadsKeepOneEdgePerSource() throws {
        let g = Graph()
        let head = try g.createState(.int(0))
        let x = try g.createState(.int(10)), y = try g.createState(.int(100))
        var calls = 0
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            calls += 1
            var sum: Int64 = 0
            for _ in 0..<20 {
                guard case let .int(h) = try! g.read(head, tracked: true),
                      case let .int(v) = try! g.read(h % 2 == 0 ? x : y, tracked: true) else { return nil }
                sum += v
            }
            r = .int(sum)
            return nil
        }))
        #expect(try g.readComputed(c) == .int(200))
        #expect(g.dependencyCount(of: c) == 2)   // head and x, not 40 edges
        try g.write(head, .int(1))
        #expect(try g.readComputed(c) == .int(2000))
        #expect(g.dependencyCount(of: c) == 2)   // head and y; x's edge is gone
        let before = calls
        try g.write(x, .int(11))                 // no longer read: wakes nothing
        #expect(try g.readComputed(c) == .int(2000))
        #expect(calls == before)
        try g.write(y, .int(101))
        #expect(try g.readComputed(c) == .int(2020))
        try g.write(head, .int(2))
        #expect(try g.readComputed(c) == .int(220))
        #expect(g.dependencyCount(of: c) == 2)
    }

    /// Rotating over more sources than the repeat window looks back: an
    /// edge may be made twice, but values and wake-ups stay right, and the
    /// edges do not pile up across evaluations.
    @Test func readsRotatingOverManySourcesStayCorrect() throws {
        let g = Graph()
        let sources = try (0..<6).map { try g.createState(.int(Int64($0))) }
        let rounds = try g.createState(.int(3))
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            guard case let .int(n) = try! g.read(rounds, tracked: true) else { return nil }
            var sum: Int64 = 0
            for _ in 0..<n {
                for s in sources { if case let .int(v) = try! g.read(s, tracked: true) { sum += v } }
            }
            r = .int(sum)
            return nil
        }))
        #expect(try g.readComputed(c) == .int(45))
        let edges = g.dependencyCount(of: c)
        #expect(edges >= 7 && edges <= 1 + 6 * 3)
        for i in 0..<6 {
            try g.write(sources[i], .int(Int64(10 * i)))
            #expect(try g.readComputed(c) == .int(Int64(3 * (0..<6).map { $0 <= i ? 10 * $0 : $0 }.reduce(0, +))))
            #expect(g.dependencyCount(of: c) == edges)
        }
        try g.write(rounds, .int(1))
        #expect(try g.readComputed(c) == .int(150))
        #expect(g.dependencyCount(of: c) == 7)
    }
}
