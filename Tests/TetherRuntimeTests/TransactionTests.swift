import Testing
@testable import TetherRuntime

@Suite struct TransactionTests {
    @Test func commitIsAtomicWithOneRevision() throws {
        let rt = try Runtime()
        let a = rt.state(0)
        let b = rt.state(0)
        let before = try rt.revision
        let (_, revision) = try rt.transaction(tag: "pair") {
            a.value = 1
            b.value = 2
            #expect(a.value == 1)  // read-your-writes
        }
        #expect(revision == before + 1)
        #expect(try a.revision == revision && b.revision == revision)
    }

    @Test func throwingBodyAppliesNothing() throws {
        struct Cancelled: Error {}
        let rt = try Runtime()
        let a = rt.state(0)
        #expect(throws: Cancelled.self) {
            try rt.transaction { a.value = 9; throw Cancelled() }
        }
        #expect(a.value == 0)
    }

    @Test func refusedWriteDoomsTheTransaction() throws {
        let rt = try Runtime()
        let a = rt.state(0)
        let b = rt.state(0)
        try b.describe(range: 0...5)
        #expect(throws: TetherError.self) {
            try rt.transaction {
                a.value = 1
                try b.set(6)
            }
        }
        #expect(a.value == 0 && b.value == 0)
    }

    @Test func nestedTransactionsAreSavepoints() throws {
        struct Undo: Error {}
        let rt = try Runtime()
        let a = rt.state(0)
        let b = rt.state(0)
        try rt.transaction {
            a.value = 1
            _ = try? rt.transaction { b.value = 1; throw Undo() }
            #expect(rt.currentTransaction != nil)
        }
        #expect(a.value == 1 && b.value == 0)
        #expect(rt.currentTransaction == nil)
    }

    @Test func scopesFreeWhatWasMadeInThem() throws {
        let rt = try Runtime()
        let scope = try rt.makeScope()
        let kept = try scope.enter { rt.state(1) }
        let effectRuns = Recorder<Int>()
        let effect = try scope.enter { rt.effect(sync: true) { effectRuns.append(kept.value) } }
        let outside = rt.state(2)
        #expect(kept.value == 1)
        scope.free()
        #expect(throws: TetherError.self) { try kept.get() }  // freed by the scope
        #expect(outside.value == 2)
        #expect(throws: TetherError.self) { try scope.enter {} }  // the scope itself is stale
        #expect(effectRuns.all == [1])
        _ = effect
    }
}
