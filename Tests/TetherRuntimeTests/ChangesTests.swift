import Observation
import Testing
@testable import TetherRuntime
import TetherSharing

/// `changes`: states, bindings and computeds as AsyncSequences; and
/// states as Observation sees them (`ObservableState`).
@Suite(.timeLimit(.minutes(1))) struct ChangesTests {
    /// Iterates `sequence` in a task, handing each element to the returned
    /// stream, so the test can wait for each one (no sleeping) and then
    /// await the task to see the loop end.
    func iterate<S: AsyncSequence & Sendable>(_ sequence: S) -> (AsyncStream<S.Element>.Iterator, Task<Int, Never>)
        where S.Element: Sendable, S.Failure == Never {
        let (seen, feed) = AsyncStream.makeStream(of: S.Element.self)
        let task = Task {
            var count = 0
            for await element in sequence {
                count += 1
                feed.yield(element)
            }
            feed.finish()
            return count
        }
        return (seen.makeAsyncIterator(), task)
    }

    @Test func theSequenceStartsWithTheValueAndEndsWhenTheStateIsFreed() async throws {
        let rt = try Runtime()
        let count = rt.state(0)
        var (seen, task) = iterate(count.changes)
        #expect(await seen.next() == 0)
        count.value = 1
        #expect(await seen.next() == 1)
        try count.free()
        #expect(await task.value == 2, "the loop ended, having seen two values")
        #expect(await seen.next() == nil)
    }

    @Test func cancellingTheTaskEndsTheSequenceAndRemovesItsObserver() async throws {
        let rt = try Runtime()
        let count = rt.state(0)
        var (seen, task) = iterate(count.changes)
        #expect(await seen.next() == 0)
        task.cancel()
        #expect(await task.value == 1, "the loop ended while the state lives")
        #expect(try liveObservers(rt) == 0, "its observer was removed")
        count.value = 2  // and nothing owes it a call
        try rt.flush()
    }

    @Test func aSlowConsumerGetsTheLatestValueNotAQueue() async throws {
        let rt = try Runtime()
        let count = rt.state(0)
        var iterator = count.changes.makeAsyncIterator()
        for i in 1...100 {
            count.value = i
            try rt.flush()  // each change delivered, none consumed
        }
        #expect(await iterator.next() == 100, "only the newest value was kept")
        count.value = 101
        #expect(await iterator.next() == 101, "and nothing older was queued behind it")
    }

    @Test func aKeyPathsChangesWakeOnlyForItsMember() async throws {
        let rt = try Runtime()
        let user = rt.state(ada)
        var (seen, task) = iterate(user.changes(\.name))
        #expect(await seen.next() == "Ada")
        user.value.age = 37
        user.binding(\.name).wrappedValue = "Grace"
        #expect(await seen.next() == "Grace", "the age write woke nothing")
        var (bound, boundTask) = iterate(user.binding.address.city.changes)
        #expect(await bound.next() == "London")
        user.value.address.city = "Paris"
        #expect(await bound.next() == "Paris")
        rt.free()
        #expect(await task.value == 2, "freeing the runtime ends every sequence")
        #expect(await boundTask.value == 2)
    }

    @Test func aComputedsChangesAreItsResults() async throws {
        let rt = try Runtime()
        let count = rt.state(2)
        var doubled: Computed<Int>? = rt.computed { count.value * 2 }
        var (seen, task) = iterate(doubled!.changes)
        #expect(await seen.next() == 4)
        count.value = 5
        #expect(await seen.next() == 10)
        doubled = nil  // frees it
        #expect(await task.value == 2)
    }

    @Test func aCustomBindingHasNoChangesAndSaysSo() async throws {
        let rt = try Runtime()
        let count = rt.state(0)
        let custom = Binding<Int>(get: { count.value }, set: { count.value = $0 })
        let box = Recorder<Int>()
        let errors = await capturingErrorsAsync {
            for await value in custom.changes { box.append(value) }
        }
        #expect(box.all.isEmpty)
        #expect(errors.map(\.code) == [.invalidArgument])
    }

    @Test func anObservableStateTakesPartInObservationTracking() throws {
        let rt = try Runtime()
        let count = rt.state(0)
        let model = count.observable
        let fired = Recorder<Int>()
        let read = withObservationTracking { model.value } onChange: { fired.append(count.value) }
        #expect(read == 0)
        count.value = 3  // written around the wrapper, as C or a daemon would
        try rt.flush()
        #expect(fired.all == [3], "onChange ran once, after the change was applied")
        count.value = 4
        try rt.flush()
        #expect(fired.count == 1, "Observation's trackers fire once")

        withObservationTracking { _ = model.value } onChange: { fired.append(-1) }
        model.value = 5  // a write through the wrapper is the state's
        try rt.flush()
        #expect(count.value == 5)
        #expect(fired.all == [3, -1])
    }
}

/// How many observers the runtime's graph holds.
func liveObservers(_ rt: Runtime) throws -> Int {
    let engine = try Runtimes.acquire(rt.handle, .runtime)
    defer { engine.lock.unlock() }
    return engine.graph.liveObservers
}

/// `capturingErrors` for an async body.
func capturingErrorsAsync(_ body: () async -> Void) async -> [TetherError] {
    let seen = Recorder<TetherError>()
    let previous = TetherErrors.handler
    TetherErrors.handler = { seen.append($0) }
    defer { TetherErrors.handler = previous }
    await body()
    return seen.all
}
