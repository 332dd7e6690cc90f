import Testing
@testable import TetherRuntime

@Suite struct DerivedTests {
    @Test func computedIsLazyCachedAndTracksDependencies() throws {
        let rt = try Runtime()
        let first = rt.state("Ada")
        let last = rt.state("Lovelace")
        let runs = Recorder<Int>()
        let full = rt.computed { () -> String in
            runs.append(1)
            return "\(first.value) \(last.value)"
        }
        #expect(runs.count == 0)  // lazy
        #expect(full.value == "Ada Lovelace")
        #expect(full.value == "Ada Lovelace")
        #expect(runs.count == 1)  // cached
        last.value = "Byron"
        #expect(full.value == "Ada Byron")
        #expect(runs.count == 2)
    }

    @Test func equalResultsCutOffDownstream() throws {
        let rt = try Runtime()
        let n = rt.state(2)
        let parity = rt.computed { n.value % 2 }
        let downstream = Recorder<Int>()
        let label = rt.computed { () -> String in
            downstream.append(1)
            return parity.value == 0 ? "even" : "odd"
        }
        #expect(label.value == "even")
        n.value = 4
        #expect(label.value == "even")
        #expect(downstream.count == 1)
    }

    @Test func computedErrorsAreCachedAndThrown() throws {
        struct Boom: Error {}
        let rt = try Runtime()
        let n = rt.state(0)
        let inverse = rt.computed { () throws -> Double in
            if n.value == 0 { throw TetherError(.outOfRange, "division by zero") }
            return 1 / Double(n.value)
        }
        do {
            _ = try inverse.get()
            Issue.record("no error")
        } catch {
            #expect(error.code == .outOfRange)
            #expect(error.message.contains("division by zero"))
        }
        n.value = 4
        #expect(inverse.value == 0.25)
        let other = rt.computed { () throws -> Int in throw Boom() }
        #expect(throws: TetherError.self) { try other.get() }
    }

    @Test func computedWritingAStateIsRefused() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let bad = rt.computed { () throws -> Int in
            try s.set(1)
            return 0
        }
        #expect(throws: TetherError.self) { try bad.get() }
        #expect(s.value == 0)
    }

    @Test func cyclesAreErrors() throws {
        let rt = try Runtime()
        final class Box: @unchecked Sendable { var other: Computed<Int>? }
        let box = Box()
        let a = rt.computed { () throws -> Int in try (box.other?.get() ?? 0) + 1 }
        let b = rt.computed { () throws -> Int in try a.get() + 1 }
        box.other = b
        #expect(throws: TetherError.self) { try a.get() }
    }

    @Test func observedComputed() throws {
        let rt = try Runtime()
        let n = rt.state(1)
        let doubled = rt.computed { n.value * 2 }
        let seen = Recorder<Int>()
        let token = doubled.observe(.sync) { seen.append($0.new ?? -1) }
        n.value = 5
        #expect(seen.all == [10])
        _ = token
    }

    @Test func effectsRerunAndCleanUp() throws {
        let rt = try Runtime()
        let n = rt.state(1)
        let log = Recorder<String>()
        let effect = rt.effect(sync: true, cleanup: { log.append("cleanup") }) {
            log.append("run \(n.value)")
        }
        n.value = 2
        effect.cancel()
        n.value = 3
        #expect(log.all == ["run 1", "cleanup", "run 2", "cleanup"])
    }

    @Test func loopEffectsRunOnFlush() throws {
        let rt = try Runtime()
        let n = rt.state(1)
        let seen = Recorder<Int>()
        let effect = rt.effect { seen.append(n.value) }
        try rt.flush()
        n.value = 2
        n.value = 3
        try rt.flush()
        #expect(seen.all.first == 1)
        #expect(seen.all.last == 3)
        _ = effect
    }

    @Test func untrackedReadsAreNotDependencies() throws {
        let rt = try Runtime()
        let tracked = rt.state(1)
        let ignored = rt.state(1)
        let runs = Recorder<Int>()
        let effect = rt.effect(sync: true) {
            runs.append(tracked.value + rt.untracked { ignored.value })
        }
        ignored.value = 5
        #expect(runs.all == [2])
        tracked.value = 2
        #expect(runs.all == [2, 7])
        _ = effect
    }

    @Test func withObservationTrackingFiresOnce() throws {
        let rt = try Runtime()
        let s = rt.state(1)
        let fired = Recorder<Int>()
        let read = try rt.withObservationTracking(sync: true, { s.value * 100 }, onChange: { fired.append(1) })
        #expect(read == 100)
        s.value = 2
        s.value = 3
        #expect(fired.count == 1)
    }

    @Test func batchesHoldDeliveriesBack() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let seen = Recorder<Int>()
        let token = s.observe(.sync) { seen.append($0.new!) }
        rt.batch {
            s.value = 1
            s.value = 2
            #expect(seen.count == 0)
        }
        #expect(seen.all == [2])
        _ = token
    }

    @Test func customEqualityCutsOff() throws {
        let rt = try Runtime()
        let reading = rt.state(20.0)
        let compared = Recorder<Int>()
        let shown = rt.computed(equals: { a, b in compared.append(1); return abs(a - b) < 0.5 }) { reading.value }
        let seen = Recorder<Double>()
        let token = shown.observe(.sync) { seen.append($0.new ?? .nan) }
        #expect(compared.count == 0)           // the first result is never compared
        reading.value = 20.3                   // within 0.5: unchanged, keeps 20.0
        #expect(shown.value == 20.0)
        #expect(seen.all.isEmpty)
        reading.value = 21.0
        #expect(seen.all == [21.0])
        #expect(compared.count == 2)
        _ = token
    }

    @Test func effectRunsRegisterSeveralCleanups() throws {
        let rt = try Runtime()
        let n = rt.state(0)
        let log = Recorder<String>()
        let effect = rt.effect(sync: true, cleanup: { log.append("own") }) {
            log.append("run \(n.value)")
            try? rt.onCleanup { log.append("a") }
            try? rt.onCleanup { log.append("b") }
        }
        n.value = 1
        effect.cancel()
        #expect(log.all == ["run 0", "b", "a", "own", "run 1", "b", "a", "own"])
        #expect(throws: TetherError.self) { try rt.onCleanup {} }  // not inside a run
    }

    @Test func fallibleEffects() throws {
        struct Broken: Error {}
        let rt = try Runtime()
        let n = rt.state(2)
        let reports = Recorder<String>()
        try rt.onEffectError { _, error in reports.append(error.message) }
        // A failing first SYNC run fails the creation.
        #expect(throws: TetherError.self) {
            _ = try rt.fallibleEffect(sync: true) { if n.value == 2 { throw Broken() } }
        }
        n.value = 3
        let runs = Recorder<Int>()
        let effect = try rt.fallibleEffect(sync: true) {
            runs.append(n.value)
            if n.value == 2 { throw TetherError(.outOfRange, "two is not allowed") }
        }
        #expect(effect.lastError == nil)
        n.value = 2                                  // fails: reported, readable, still subscribed
        #expect(reports.all == ["two is not allowed"])
        #expect(effect.lastError?.code == .outOfRange)
        n.value = 5                                  // recovers
        #expect(runs.all == [3, 2, 5])
        #expect(effect.lastError == nil)
        try rt.onEffectError(nil)
    }

    /// An effect owns what its run creates: before a re-run and on free,
    /// the previous run's children go first (before the parent's cleanup),
    /// and a change only a child reads re-runs only the child.
    @Test func nestedEffectsAreOwnedByTheirRun() throws {
        let rt = try Runtime()
        let outer = rt.state(0)
        let inner = rt.state(0)
        let log = Recorder<String>()
        final class Children: @unchecked Sendable { var effects: [Effect] = [] }
        let kept = Children()  // the Swift objects; the runtime owns the nodes
        let parent = rt.effect(sync: true, cleanup: { log.append("parent cleanup") }) {
            let generation = outer.value
            log.append("parent \(generation)")
            kept.effects.append(rt.effect(sync: true, cleanup: { log.append("child \(generation) cleanup") }) {
                log.append("child \(generation) sees \(inner.value)")
            })
        }
        try rt.flush()
        inner.value = 1            // only the child re-runs
        outer.value = 1            // the old child goes first, then the parent's cleanup, then a new run
        inner.value = 2            // only the new child runs: the old one is gone
        parent.cancel()            // the child first, then the parent's cleanup
        try rt.flush()
        #expect(log.all == [
            "parent 0", "child 0 sees 0",
            "child 0 cleanup", "child 0 sees 1",
            "child 0 cleanup", "parent cleanup", "parent 1", "child 1 sees 1",
            "child 1 cleanup", "child 1 sees 2",
            "child 1 cleanup", "parent cleanup",
        ])
    }
}
