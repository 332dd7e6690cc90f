// PropagationScenario.swift — random graphs and random write sequences, from a seed.

/// SplitMix64: small, seeded, the same sequence on every platform.
struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 0 ..< n
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}

/// One test case: a graph, then steps, each followed by some reads of
/// computeds from outside and, often, a flush (loop deliveries).
struct Scenario {
    struct Round {
        var step: Step
        var reads: [Int]   // computeds read from outside afterwards
        var flush: Bool
    }

    var graph: GraphSpec
    var rounds: [Round]
}

extension Scenario {
    /// Writes use fresh values (a counter), so a value comes back only
    /// where a step means it to: an int state put back, inside a batch or
    /// transaction, to what it was when the step began (42 -> 0 -> 42), or
    /// an equal write. Object states never come back to a step's starting
    /// value, which keeps the versions of paths those of docs/runtime.md
    /// without the corner of a write that restores the whole value.
    ///
    /// `deep`: 14–30 computeds, each reading the one before it half the
    /// time, so chains run deeper than the pull's 12 recursive levels
    /// (`Graph.recursivePullDepth`) and its iterative part
    /// (`pullIteratively`) is exercised too.
    static func random(seed: UInt64, steps: Int = 40, deep: Bool = false) -> Scenario {
        var rng = SeededRandom(seed: seed)
        var fresh = 10
        func freshValue() -> Int { fresh += 1 + rng.below(3); return fresh }

        let intCount = 2 + rng.below(3), objectCount = 1 + rng.below(2)
        let ints = (0..<intCount).map { _ in freshValue() }
        let objects = (0..<objectCount).map { _ in Pair(a: freshValue(), b: freshValue()) }

        func stateInput() -> Input {
            switch rng.below(4) {
            case 0, 1: return .int(rng.below(intCount))
            case 2: return .whole(rng.below(objectCount))
            default: return .path(rng.below(objectCount), rng.chance(50) ? "a" : "b")
            }
        }
        func input(computedsBelow k: Int) -> Input {
            if deep && k > 0 && rng.chance(50) { return .computed(k - 1) }
            if k > 0 && rng.chance(45) { return .computed(rng.below(k)) }
            return stateInput()
        }
        func reads(computedsBelow k: Int) -> Reads {
            Reads(cond: input(computedsBelow: k),
                  ifEven: (0..<rng.below(4)).map { _ in input(computedsBelow: k) },
                  ifOdd: (0..<rng.below(4)).map { _ in input(computedsBelow: k) })
        }

        let computedCount = deep ? 14 + rng.below(17) : 3 + rng.below(8)
        var computeds: [ComputedSpec] = []
        for k in 0..<computedCount {
            computeds.append(ComputedSpec(
                reads: reads(computedsBelow: k),
                modulus: rng.chance(60) ? 2 + rng.below(4) : nil,
                customEquality: rng.chance(20),
                failsWhen: rng.chance(15) ? rng.below(7) : nil))
        }

        // The first watcher is a SYNC effect that reads every state whole:
        // every changing step then ends a delivery epoch, as the model's
        // versions of states assume (docs/runtime.md: an epoch starts with
        // every delivery round).
        let everything = (0..<intCount).map { Input.int($0) } + (0..<objectCount).map { Input.whole($0) }
        var watchers: [WatcherSpec] = [.effect(EffectSpec(reads: Reads(cond: .int(0), ifEven: everything, ifOdd: everything),
                                                          sync: true, fallible: false))]
        let neverFail = computeds.indices.filter { computeds[$0].failsWhen == nil }
        for _ in 0..<(2 + rng.below(6)) {
            if rng.chance(55) {
                let sync = rng.chance(50)
                watchers.append(.effect(EffectSpec(reads: reads(computedsBelow: computedCount), sync: sync,
                                                   fallible: !sync && rng.chance(30))))
            } else {
                let part: ObservedPart
                switch rng.below(3) {
                case 0: part = .int(rng.below(intCount))
                case 1: part = .pathA(rng.below(objectCount))
                default: part = neverFail.isEmpty ? .int(0) : .computed(rng.pick(neverFail))
                }
                watchers.append(.observer(ObserverSpec(part: part, sync: rng.chance(50))))
            }
        }
        let graph = GraphSpec(ints: ints, objects: objects, computeds: computeds, watchers: watchers)

        // The steps, tracking the values to put some back and to write equal ones.
        var values = StateValues(ints: ints, objects: objects)
        func changingWrite(_ start: StateValues, _ now: StateValues, inGroup: Bool) -> Write {
            if rng.chance(55) {
                let i = rng.below(intCount)
                if inGroup && now.ints[i] != start.ints[i] && rng.chance(40) { return .int(i, start.ints[i]) }
                return .int(i, freshValue())
            }
            let j = rng.below(objectCount)
            switch rng.below(4) {
            case 0: return .whole(j, Pair(a: rng.chance(50) ? now.objects[j].a : freshValue(), b: freshValue()))
            case 1: return .whole(j, Pair(a: freshValue(), b: rng.chance(50) ? now.objects[j].b : freshValue()))
            case 2: return .path(j, "a", freshValue())
            default: return .path(j, "b", freshValue())
            }
        }
        func group(_ count: Int) -> [Write] {
            let start = values
            var now = values
            var ws: [Write] = []
            for _ in 0..<count {
                let w = changingWrite(start, now, inGroup: true)
                now.apply(w)
                ws.append(w)
            }
            return ws
        }

        var rounds: [Round] = []
        for _ in 0..<steps {
            let step: Step
            switch rng.below(100) {
            case 0..<45: step = .write(changingWrite(values, values, inGroup: false))
            case 45..<65: step = .batch(group(2 + rng.below(4)))
            case 65..<85: step = .transaction(group(2 + rng.below(3)), abort: rng.chance(20))
            default:
                // An equal write: wakes nothing.
                if rng.chance(50) {
                    let i = rng.below(intCount)
                    step = .write(.int(i, values.ints[i]))
                } else {
                    let j = rng.below(objectCount)
                    step = .write(.whole(j, values.objects[j]))
                }
            }
            switch step {
            case .write(let w): values.apply(w)
            case .batch(let ws): ws.forEach { values.apply($0) }
            case .transaction(let ws, let abort): if !abort { ws.forEach { values.apply($0) } }
            }
            let reads = rng.chance(50) ? (0..<(1 + rng.below(2))).map { _ in rng.below(computedCount) } : []
            rounds.append(Round(step: step, reads: reads, flush: rng.chance(60)))
        }
        return Scenario(graph: graph, rounds: rounds)
    }
}
