import Testing
@testable import TetherRuntime

/// The real runtime against the reference of PropagationModel.swift, on
/// random graphs (states, object states read by path, computeds with
/// dynamic dependencies, equality and custom-equality cutoff and cached
/// errors, SYNC and loop effects, failing effects, observers of states,
/// paths and computeds) and random steps (writes, equal writes, batches,
/// transactions committed and aborted, reads from outside, flushes).
/// After every step: the computeds read, their run counts, and what the
/// effects and observers did, in order, must be the model's.
@Suite struct PropagationPropertyTests {
    /// Seeded: a failure names its seed, which reproduces it alone
    /// (`check(seed:)`).
    @Test(arguments: 0..<200)
    func realCoreMatchesTheReference(seed: Int) throws {
        try check(seed: UInt64(seed))
    }

    /// Deep graphs: chains past the pull's recursive levels.
    @Test(arguments: 0..<60)
    func realCoreMatchesTheReferenceOnDeepGraphs(seed: Int) throws {
        try check(seed: UInt64(seed), deep: true)
    }

    func check(seed: UInt64, deep: Bool = false) throws {
        let scenario = Scenario.random(seed: seed, deep: deep)
        let graph = scenario.graph
        let model = LazyModel(graph)
        let real = try RealGraph(graph)
        defer { real.free() }

        // Made in order, then the loop's first round (loop effects' first runs).
        real.make(model)
        try real.rt.flush()
        model.deliver(sync: false)
        compare(real, model, seed: seed, at: "making the graph")

        for (n, round) in scenario.rounds.enumerated() {
            let at = "step \(n): \(round.step)"
            real.apply(round.step)
            model.apply(round.step)
            for k in round.reads {
                let got = real.readComputed(k)
                let want = model.readComputed(k)
                #expect(got == want, "seed \(seed), \(at): c\(k) is \(got), the reference says \(want)")
            }
            if round.flush {
                try real.rt.flush()
                model.deliver(sync: false)
            }
            compare(real, model, seed: seed, at: at)
        }
        // Everything read at the end, in index order.
        try real.rt.flush()
        model.deliver(sync: false)
        for k in graph.computeds.indices {
            #expect(real.readComputed(k) == model.readComputed(k), "seed \(seed), at the end: c\(k)")
        }
        compare(real, model, seed: seed, at: "the end")
        #expect(model.problems.isEmpty, "seed \(seed): the reference disagrees with itself: \(model.problems)")
    }

    private func compare(_ real: RealGraph, _ model: LazyModel, seed: UInt64, at: String) {
        #expect(real.computedRuns() == model.computedRuns,
                "seed \(seed), \(at): computed runs \(real.computedRuns()), the reference says \(model.computedRuns)")
        #expect(real.log.all == model.log,
                "seed \(seed), \(at): effects and observers did \(real.log.all), the reference says \(model.log)")
        #expect(real.effectFailures.count == model.effectFailures,
                "seed \(seed), \(at): \(real.effectFailures.count) effect runs failed, the reference says \(model.effectFailures)")
    }

    /// A scenario known to end with every kind of step and watcher in it
    /// stays a meaningful test: the generator is not allowed to drift into
    /// graphs where nothing is lazy, nothing cuts off or nothing fails.
    @Test func theScenariosCoverWhatTheyClaim() {
        var kinds: Set<String> = []
        for seed in 0..<200 {
            let s = Scenario.random(seed: UInt64(seed))
            for c in s.graph.computeds {
                if c.customEquality { kinds.insert("custom equality") }
                if c.failsWhen != nil { kinds.insert("failing computed") }
                if c.modulus != nil { kinds.insert("cutoff") }
                if c.reads.ifEven.map(\.description) != c.reads.ifOdd.map(\.description) { kinds.insert("dynamic") }
                for i in [c.reads.cond] + c.reads.ifEven + c.reads.ifOdd {
                    if case .path = i { kinds.insert("path read") }
                }
            }
            for w in s.graph.watchers {
                switch w {
                case .effect(let e): kinds.insert(e.fallible ? "fallible effect" : e.sync ? "sync effect" : "loop effect")
                case .observer(let o): kinds.insert(o.sync ? "sync observer" : "loop observer")
                }
            }
            for r in s.rounds {
                switch r.step {
                case .write: kinds.insert("write")
                case .batch: kinds.insert("batch")
                case .transaction(_, let abort): kinds.insert(abort ? "aborted transaction" : "transaction")
                }
            }
        }
        let claimed: Set = ["custom equality", "failing computed", "cutoff", "dynamic", "path read",
                            "fallible effect", "sync effect", "loop effect", "sync observer", "loop observer",
                            "write", "batch", "transaction", "aborted transaction"]
        #expect(kinds == claimed)
        // The deep scenarios reach past the recursive part of the pull.
        let deepest = (0..<60).map { Scenario.random(seed: UInt64($0), deep: true).graph.chainDepth }.max() ?? 0
        #expect(deepest > 12, "the deepest chain of computeds is \(deepest)")
    }
}

/// The scenario's graph made in a real runtime (host loop: loop deliveries
/// run only at the test's flushes), with counters the closures fill.
final class RealGraph {
    let rt: Runtime
    let spec: GraphSpec
    let ints: [State<Int>]
    let objects: [State<Pair>]
    private(set) var computeds: [Computed<Int>] = []
    private var keep: [AnyObject] = []    // effects and observers
    private let runs = Recorder<Int>()
    let log = Recorder<String>()
    let effectFailures = Recorder<UInt64>()

    init(_ spec: GraphSpec) throws {
        self.spec = spec
        let rt = try Runtime(Runtime.Options(loop: .host))
        self.rt = rt
        ints = spec.ints.map { rt.state($0) }
        objects = spec.objects.map { rt.state($0) }
        let failures = effectFailures
        try rt.onEffectError { handle, _ in failures.append(handle) }
        for (k, c) in spec.computeds.enumerated() {
            let read = reader()
            let runs = self.runs
            var buckets: (@Sendable (Int, Int) -> Bool)?
            if c.customEquality { buckets = { x, y in x / 4 == y / 4 } }
            let compute: @Sendable () throws -> Int = {
                runs.append(k)
                switch c.evaluate(read) {
                case .value(let v): return v
                case .failed: throw TetherError(.outOfRange, "c\(k) failed")
                }
            }
            computeds.append(rt.computed(equals: buckets, compute))
        }
    }

    /// A read inside a compute or an effect, as the model's inputs name it.
    private func reader() -> @Sendable (Input) -> Int {
        let ints = self.ints, objects = self.objects, computeds = self.computeds, spec = self.spec
        return { input in
            switch input {
            case .int(let i): return ints[i].value
            case .whole(let j): let p = objects[j].value; return p.a + p.b
            case .path(let j, let m): return (try? objects[j].get(Int.self, at: JSONPointer(tokens: [m]))) ?? -1_000_000
            case .computed(let k):
                do { return spec.computeds[k].readerSees(.value(try computeds[k].get())) } catch { return 1000 }
            }
        }
    }

    /// The effects and observers, made in order with the model's.
    func make(_ model: LazyModel) {
        let read = reader()
        for (w, watcher) in spec.watchers.enumerated() {
            let log = self.log
            switch watcher {
            case .effect(let e):
                if e.fallible {
                    keep.append(try! rt.fallibleEffect(sync: e.sync) {
                        let sum = e.reads.sum(read)
                        log.append("E\(w)=\(sum)")
                        if sum % 5 == 0 { throw TetherError(.rejected, "E\(w) failed") }
                    })
                } else {
                    keep.append(rt.effect(sync: e.sync) { log.append("E\(w)=\(e.reads.sum(read))") })
                }
            case .observer(let o):
                let options: ObserveOptions = o.sync ? .sync : []
                let report: @Sendable (ValueChange<Int>) -> Void = { change in
                    log.append("O\(w):\(change.old.map { "\($0)" } ?? "nil")->\(change.new.map { "\($0)" } ?? "nil")")
                }
                switch o.part {
                case .int(let i): keep.append(ints[i].observe(options, report))
                case .pathA(let j): keep.append(objects[j].observe(\.a, options, report))
                case .computed(let k): keep.append(computeds[k].observe(options, report))
                }
            }
            model.make(w)
        }
    }

    private func apply(_ w: Write) throws {
        switch w {
        case .int(let i, let v): try ints[i].set(v)
        case .whole(let j, let p): try objects[j].set(p)
        case .path(let j, let m, let v): try objects[j].set(v, at: JSONPointer(tokens: [m]))
        }
    }

    struct Abort: Error {}

    func apply(_ step: Step) {
        switch step {
        case .write(let w):
            try! apply(w)
        case .batch(let ws):
            rt.batch { for w in ws { try! apply(w) } }
        case .transaction(let ws, let abort):
            do {
                try rt.transaction {
                    for w in ws { try apply(w) }
                    if abort { throw Abort() }
                }
            } catch is Abort {
            } catch {
                Issue.record("a transaction failed: \(error)")
            }
        }
    }

    func readComputed(_ k: Int) -> Output {
        do { return .value(try computeds[k].get()) } catch { return .failed }
    }

    func computedRuns() -> [Int] {
        var counts = Array(repeating: 0, count: spec.computeds.count)
        for k in runs.all { counts[k] += 1 }
        return counts
    }

    func free() {
        keep.removeAll()
        computeds.removeAll()
        rt.free()
    }
}
