import Testing
@testable import TetherCore

/// A derived node's body keeps what only some bodies have (closures, a
/// custom equality, added cleanups, a failure) in a side object made on
/// first use: a body without them must still answer for them, and one
/// with them must behave as when they were stored fields.
@Suite struct DerivedBodyTests {
    /// A C-style body: no closures, nothing set.
    private func bare(cleanup: Bool = false) -> DerivedBody {
        DerivedBody(computeFunction: nil, userData: nil, isBindingGet: false, hasCleanup: cleanup, release: nil)
    }

    @Test func aBareBodyHasNothingAndClearingMakesNothing() {
        let body = bare()
        #expect(body.compute == nil && body.run == nil && body.cleanup == nil && body.equals == nil)
        #expect(body.failure == nil && body.addedCleanups.isEmpty && !body.hasCustomEquals && !body.hasAnyCleanup)
        body.failure = nil
        body.equals = nil
        body.addedCleanups = []
        #expect(body.failure == nil && body.equals == nil && !body.hasCustomEquals && !body.hasAnyCleanup)
        body.finish()    // no release to run, no cleanup owed
        body.runRelease()
    }

    @Test func theReleaseRunsOnceAndFinishRunsTheOwedCleanupFirst() {
        var events: [String] = []
        let body = DerivedBody(run: { _ in events.append("run") }, cleanup: { events.append("cleanup") },
                               release: { events.append("release") })
        #expect(body.hasCleanup && body.run != nil && body.cleanup != nil)
        body.runBody(1)
        body.cleanupOwed = true
        body.finish()
        body.finish()
        body.runRelease()
        #expect(events == ["run", "cleanup", "release"])
    }

    @Test func aReleaseGivenToAFunctionBodyRunsOnce() {
        var released = 0
        let body = DerivedBody(computeFunction: nil, userData: nil, isBindingGet: true, release: { released += 1 })
        #expect(body.isBindingGet && body.compute == nil)
        body.runRelease()
        body.runRelease()
        #expect(released == 1)
    }

    @Test func anAbandonedCreationRunsNoRelease() {
        var released = 0
        let body = DerivedBody(run: { _ in }, release: { released += 1 })
        body.releaseAbandoned = true
        body.finish()
        #expect(released == 0)
    }

    @Test func aCustomEqualityIsKeptAndCanBeRemoved() {
        let body = bare()
        body.equals = { _, _ in true }
        #expect(body.hasCustomEquals && body.equals?(.int(1), .int(2)) == true)
        body.equals = nil
        #expect(!body.hasCustomEquals && body.equals == nil)
    }

    @Test func aFailureIsKeptUntilCleared() {
        let body = bare()
        body.failure = TetherError(.invalidArgument, "its effect callback returned -1")
        #expect(body.failure?.code == .invalidArgument)
        body.failure = nil
        #expect(body.failure == nil)
    }

    @Test func aRunsFailureIsRecordedOnlyByAFallibleBody() {
        let plain = bare()
        plain.runFailure = TetherError(.invalidArgument, "dropped")
        #expect(plain.runFailure == nil)    // not fallible: nothing to record it in
        let fallible = bare()
        fallible.reportsToCreator = true    // made its extras before being shared
        fallible.runFailure = TetherError(.invalidArgument, "its effect callback returned -22")
        #expect(fallible.runFailure?.code == .invalidArgument && fallible.failure == nil)
        fallible.failure = fallible.runFailure   // what the owner publishes under its lock
        fallible.runFailure = nil
        #expect(fallible.failure?.code == .invalidArgument && fallible.runFailure == nil)
    }

    @Test func addedCleanupsRunNewestFirstThenTheOwnOnceEach() {
        var events: [String] = []
        let body = DerivedBody(run: { _ in }, cleanup: { events.append("own") })
        body.addedCleanups.append { events.append("first") }
        body.addedCleanups.append { events.append("second") }
        #expect(body.hasAnyCleanup && body.addedCleanups.count == 2)
        body.runCleanups()
        #expect(events == ["second", "first", "own"])
        #expect(body.addedCleanups.isEmpty)
        events = []
        body.runCleanups()
        #expect(events == ["own"])
    }

    @Test func aBareBodyTakesAddedCleanupsToo() {
        var ran = 0
        let body = bare()
        body.addedCleanups.append { ran += 1 }
        #expect(body.hasAnyCleanup)
        body.runCleanups()
        #expect(ran == 1 && !body.hasAnyCleanup)
    }
}
