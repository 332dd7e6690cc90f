// PropagationModel.swift — the reference the property tests hold the real core to.
//
// Two evaluators of one random graph description (`GraphSpec`), both written
// for obviousness, not speed:
//
// - `idealOutputs` recomputes every computed from scratch, in index order
//   (a computed reads only nodes made before it, so index order is a
//   topological order), from the states' values alone. It says what each
//   value must be.
// - `LazyModel` says when things run: the contract of docs/runtime.md
//   ("Computed values, effects and tracking", "Tracking by path",
//   "Versions of states") spelled as a naive recursive pull over
//   dictionaries. A computed runs when it is read and it never ran, or when
//   one of the sources it read last time (checked in the order it read
//   them, a computed source brought up to date first) has another version
//   than the one it saw. A computed's version moves only when its result
//   changes (by equality, or by its custom equality); a state's moves when
//   a delivery epoch (here: one write, batch or transaction) leaves it
//   with another value than it began with; a path's when such an epoch
//   wrote it, an ancestor or a descendant (no values compared). Effects
//   and observers of a round run in the order they were made, SYNC ones at
//   the end of the write, loop ones at a flush; an observer is called when
//   its part differs from what it last reported.
//
// The model checks every value it pulls against `idealOutputs`, so the
// values the real core is compared with are themselves checked from
// scratch.

/// A source a computed or effect reads.
enum Input: Hashable, Sendable, CustomStringConvertible {
    case int(Int)             // int state i, read whole
    case whole(Int)           // object state j read whole: a + b
    case path(Int, String)    // object state j read at /a or /b
    case computed(Int)        // computed k (its bucket when it has a custom equality; 1000 when it failed)

    var description: String {
        switch self {
        case .int(let i): return "s\(i)"
        case .whole(let j): return "o\(j)"
        case .path(let j, let m): return "o\(j)/\(m)"
        case .computed(let k): return "c\(k)"
        }
    }
}

/// What a computed or effect reads: `cond` first, then one branch by its
/// parity (dynamic dependencies); the sum of what it read is its result.
struct Reads: Sendable {
    var cond: Input
    var ifEven: [Input]
    var ifOdd: [Input]
}

struct ComputedSpec: Sendable {
    var reads: Reads
    /// The result is the sum modulo this (frequent equal results: cutoff).
    var modulus: Int?
    /// Equal when in the same bucket of 4 (`x / 4`); readers read the bucket.
    var customEquality: Bool
    /// Fails (a thrown error, the same each time) when the sum % 7 is this.
    var failsWhen: Int?
}

struct EffectSpec: Sendable {
    var reads: Reads
    var sync: Bool
    /// Throws after its reads when the sum % 5 == 0 (loop effects only: a
    /// SYNC effect whose first run fails is not made at all).
    var fallible: Bool
}

enum ObservedPart: Hashable, Sendable {
    case int(Int)
    case pathA(Int)     // object state j at /a
    case computed(Int)  // a computed that cannot fail
}

struct ObserverSpec: Sendable {
    var part: ObservedPart
    var sync: Bool
}

enum WatcherSpec: Sendable {
    case effect(EffectSpec)
    case observer(ObserverSpec)
    var sync: Bool {
        switch self {
        case .effect(let e): return e.sync
        case .observer(let o): return o.sync
        }
    }
}

struct Pair: Codable, Equatable, Sendable {
    var a: Int
    var b: Int
}

struct GraphSpec: Sendable {
    var ints: [Int]          // initial values
    var objects: [Pair]
    var computeds: [ComputedSpec]
    /// Effects and observers in the order they are made (that order is the
    /// delivery order within a round).
    var watchers: [WatcherSpec]
}

enum Write: Sendable {
    case int(Int, Int)            // state, value
    case whole(Int, Pair)         // object state, value
    case path(Int, String, Int)   // object state, member, value
}

enum Step: Sendable {
    case write(Write)
    case batch([Write])
    case transaction([Write], abort: Bool)
}

extension GraphSpec {
    /// The longest chain of computeds reading computeds (counting every
    /// branch: an upper bound on how deep a pull can go).
    var chainDepth: Int {
        var depth: [Int] = []
        for c in computeds {
            let inputs = [c.reads.cond] + c.reads.ifEven + c.reads.ifOdd
            depth.append(1 + (inputs.compactMap { if case .computed(let k) = $0 { return depth[k] }; return nil }.max() ?? 0))
        }
        return depth.max() ?? 0
    }
}

/// A computed's result: a value, or its (one) error.
enum Output: Equatable, CustomStringConvertible {
    case value(Int)
    case failed

    var description: String {
        switch self {
        case .value(let v): return "\(v)"
        case .failed: return "failed"
        }
    }
}

/// The values of all states.
struct StateValues {
    var ints: [Int]
    var objects: [Pair]

    func read(_ input: Input, computeds: (Int) -> Int) -> Int {
        switch input {
        case .int(let i): return ints[i]
        case .whole(let j): return objects[j].a + objects[j].b
        case .path(let j, let m): return m == "a" ? objects[j].a : objects[j].b
        case .computed(let k): return computeds(k)
        }
    }

    mutating func apply(_ w: Write) {
        switch w {
        case .int(let i, let v): ints[i] = v
        case .whole(let j, let p): objects[j] = p
        case .path(let j, let m, let v): if m == "a" { objects[j].a = v } else { objects[j].b = v }
        }
    }
}

extension ComputedSpec {
    /// The compute itself, over any way of reading.
    func evaluate(_ read: (Input) -> Int) -> Output {
        let c = read(reads.cond)
        var sum = c
        for input in (c % 2 == 0 ? reads.ifEven : reads.ifOdd) { sum += read(input) }
        if let f = failsWhen, sum % 7 == f { return .failed }
        return .value(modulus.map { sum % $0 } ?? sum)
    }

    /// What a reader of this computed reads from an output.
    func readerSees(_ output: Output) -> Int {
        switch output {
        case .value(let v): return customEquality ? v / 4 : v
        case .failed: return 1000
        }
    }
}

extension Reads {
    /// An effect's run: the sum of what it read.
    func sum(_ read: (Input) -> Int) -> Int {
        let c = read(cond)
        var sum = c
        for input in (c % 2 == 0 ? ifEven : ifOdd) { sum += read(input) }
        return sum
    }
}

/// Every computed recomputed from scratch, in index order.
func idealOutputs(_ spec: GraphSpec, _ values: StateValues) -> [Output] {
    var out: [Output] = []
    for c in spec.computeds {
        let o = c.evaluate { input in values.read(input) { k in spec.computeds[k].readerSees(out[k]) } }
        out.append(o)
    }
    return out
}

/// A source as the lazy model versions it.
enum Source: Hashable {
    case int(Int), object(Int), path(Int, String), computed(Int)
}

/// The lazy model: what runs, when, and what effects and observers report.
final class LazyModel {
    let spec: GraphSpec
    private(set) var values: StateValues
    private var nextVersion = 1
    private var versions: [Source: Int] = [:]

    // Computeds: cached output, whether evaluated, what they read last time.
    private(set) var outputs: [Output?]
    private var deps: [[(Source, Int)]]
    private(set) var computedRuns: [Int]

    // Watchers: effects' deps and whether they ran; observers' last report.
    private var effectDeps: [Int: [(Source, Int)]] = [:]
    private var effectRan: Set<Int> = []
    private var reported: [Int: Int] = [:]
    /// What the effects and observers did, in order: "E3=17", "O2:5->7".
    private(set) var log: [String] = []
    private(set) var effectFailures = 0
    /// Where the model disagreed with the from-scratch evaluation (a bug
    /// in the model itself: the test fails).
    private(set) var problems: [String] = []

    /// Moves whenever a step changes a state. A computed checked at the
    /// current clock is up to date: nothing it could read has moved since
    /// (this only spares the model re-walking a graph it just walked).
    private var clock = 0
    private var checkedAt: [Int]
    private var idealAt = -1
    private var ideal: [Output] = []

    init(_ spec: GraphSpec) {
        self.spec = spec
        values = StateValues(ints: spec.ints, objects: spec.objects)
        outputs = Array(repeating: nil, count: spec.computeds.count)
        deps = Array(repeating: [], count: spec.computeds.count)
        computedRuns = Array(repeating: 0, count: spec.computeds.count)
        checkedAt = Array(repeating: -1, count: spec.computeds.count)
    }

    private func freshVersion() -> Int {
        nextVersion += 1
        return nextVersion
    }

    private func version(_ s: Source) -> Int { versions[s] ?? 0 }

    // MARK: Reads and the pull

    /// The source an input links to, read through the pull; records it.
    private func read(_ input: Input, into seen: inout [(Source, Int)]) -> Int {
        let source: Source
        switch input {
        case .int(let i): source = .int(i)
        case .whole(let j): source = .object(j)
        case .path(let j, let m): source = .path(j, m)
        case .computed(let k):
            pull(k)
            seen.append((.computed(k), version(.computed(k))))
            return spec.computeds[k].readerSees(outputs[k]!)
        }
        seen.append((source, version(source)))
        return values.read(input) { _ in fatalError("unreachable") }
    }

    /// Whether any source in `seen` has moved, checked in read order with
    /// computed sources brought up to date first (stopping at the first).
    private func changed(_ seen: [(Source, Int)]) -> Bool {
        for (source, v) in seen {
            if case .computed(let k) = source { pull(k) }
            if version(source) != v { return true }
        }
        return false
    }

    /// Brings computed `k` up to date, running it when needed.
    func pull(_ k: Int) {
        if checkedAt[k] == clock { return }
        if outputs[k] == nil || changed(deps[k]) { recompute(k) }
        checkedAt[k] = clock
        if idealAt != clock {
            ideal = idealOutputs(spec, values)
            idealAt = clock
        }
        let ideal = ideal[k]
        let mine = outputs[k]!
        if spec.computeds[k].customEquality, case .value(let a) = mine, case .value(let b) = ideal {
            if a / 4 != b / 4 { problems.append("model c\(k) = \(a), from scratch \(b): not in one bucket") }
        } else if mine != ideal {
            problems.append("model c\(k) = \(mine), from scratch \(ideal)")
        }
    }

    private func recompute(_ k: Int) {
        computedRuns[k] += 1
        var seen: [(Source, Int)] = []
        let c = spec.computeds[k]
        let new = c.evaluate { read($0, into: &seen) }
        deps[k] = seen
        let old = outputs[k]
        outputs[k] = new
        var same = old == new
        if let old, c.customEquality, case .value(let a) = old, case .value(let b) = new, a / 4 == b / 4 {
            same = true
            outputs[k] = old  // the custom equality keeps the old result
        }
        if !same { versions[.computed(k)] = freshVersion() }
    }

    /// Reads computed `k` from outside (a test's read).
    func readComputed(_ k: Int) -> Output {
        pull(k)
        return outputs[k]!
    }

    // MARK: Effects and observers

    private func runEffect(_ w: Int, _ e: EffectSpec) {
        var seen: [(Source, Int)] = []
        let sum = e.reads.sum { read($0, into: &seen) }
        effectDeps[w] = seen
        effectRan.insert(w)
        log.append("E\(w)=\(sum)")
        if e.fallible && sum % 5 == 0 { effectFailures += 1 }
    }

    private func currentPart(_ part: ObservedPart) -> Int {
        switch part {
        case .int(let i): return values.ints[i]
        case .pathA(let j): return values.objects[j].a
        case .computed(let k):
            pull(k)
            guard case .value(let v) = outputs[k]! else { fatalError("observed computeds cannot fail") }
            return v
        }
    }

    /// Made in order: a SYNC effect runs now, an observer takes its part's
    /// value now (a computed's is evaluated); loop effects wait for a flush.
    func make(_ w: Int) {
        switch spec.watchers[w] {
        case .effect(let e): if e.sync { runEffect(w, e) }
        case .observer(let o): reported[w] = currentPart(o.part)
        }
    }

    /// One delivery round: the SYNC watchers (or the loop ones) in order.
    func deliver(sync: Bool) {
        for (w, watcher) in spec.watchers.enumerated() where watcher.sync == sync {
            switch watcher {
            case .effect(let e):
                if !effectRan.contains(w) || changed(effectDeps[w]!) { runEffect(w, e) }
            case .observer(let o):
                let now = currentPart(o.part)
                if now != reported[w]! {
                    log.append("O\(w):\(reported[w]!)->\(now)")
                    reported[w] = now
                }
            }
        }
    }

    // MARK: Writes

    /// One write, batch or transaction: the states' new values, then the
    /// versions the epoch leaves (see the file's head), then the SYNC round.
    func apply(_ step: Step) {
        let writes: [Write]
        switch step {
        case .write(let w): writes = [w]
        case .batch(let ws): writes = ws
        case .transaction(let ws, let abort): writes = abort ? [] : ws
        }
        let before = values
        var pathsWritten: Set<Source> = []
        for w in writes {
            values.apply(w)
            switch w {
            case .int: break
            case .whole(let j, _): pathsWritten.formUnion([.path(j, "a"), .path(j, "b")])
            case .path(let j, let m, _): pathsWritten.insert(.path(j, m))
            }
        }
        if values.ints != before.ints || values.objects != before.objects { clock += 1 }
        for i in values.ints.indices where values.ints[i] != before.ints[i] {
            versions[.int(i)] = freshVersion()
        }
        for j in values.objects.indices where values.objects[j] != before.objects[j] {
            let v = freshVersion()
            versions[.object(j)] = v
            for m in ["a", "b"] where pathsWritten.contains(.path(j, m)) { versions[.path(j, m)] = v }
        }
        deliver(sync: true)
    }
}
