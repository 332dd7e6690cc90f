import Testing
@testable import TetherRuntime

/// Runtime.trace: why each recompute and effect run happened, from Swift.
@Suite struct TraceTests {
    @Test func effectRunNamesTheChangedSourceAndTransaction() throws {
        let rt = try Runtime()
        let user = rt.state(["name": "Ada", "city": "London"])
        try user.describe(name: "user")
        let count = rt.state(0)
        let cityPath = try JSONPointer(parsing: "/city")
        let traces = Recorder<RunTrace>()
        try rt.trace { traces.append($0) }
        let effect = rt.effect(sync: true) {
            _ = try? user.get(String.self, at: cityPath)
            _ = count.value
        }
        defer { effect.cancel() }
        #expect(traces.count == 1)
        #expect(traces.all.first?.firstRun == true)

        try rt.transaction(tag: "move", origin: 42) { try user.set("Paris", at: cityPath) }
        #expect(traces.count == 2)
        let run = traces.all[1]
        #expect(run.kind == .effectRun)
        #expect(run.reader == effect.handle)
        #expect(run.sources.count == 1)
        #expect(run.sources.first?.handle == user.handle)
        #expect(run.sources.first?.name == "user")
        #expect(run.sources.first?.pointer == "/city")
        #expect(run.sources.first?.revisionAfter == (try rt.revision))
        #expect(run.tag == "move")
        #expect(run.origin == 42)
        #expect(run.line.contains("state 'user' 0x"))
        #expect(run.line.contains(" at /city changed"))
        #expect(run.line.contains("transaction 'move' origin 42"))

        // A sibling's write wakes nobody: nothing reported.
        try user.set("Lovelace", at: JSONPointer(parsing: "/name"))
        #expect(traces.count == 2)
        try rt.trace(.off)
        count.value = 1
        #expect(traces.count == 2)
    }

    @Test func markedComputedOnly() throws {
        let rt = try Runtime()
        let n = rt.state(1)
        let doubled = rt.computed { n.value * 2 }
        let tripled = rt.computed { n.value * 3 }
        let traces = Recorder<RunTrace>()
        try rt.trace(.marked) { traces.append($0) }
        try tripled.trace()
        _ = doubled.value
        _ = tripled.value
        n.value = 2
        _ = doubled.value
        _ = tripled.value
        #expect(traces.all.map(\.reader) == [tripled.handle, tripled.handle])
        #expect(traces.all.map(\.kind) == [.recompute, .recompute])
        #expect(traces.all.last?.sources.first?.handle == n.handle)
        try tripled.trace(false)
        n.value = 3
        _ = tripled.value
        #expect(traces.count == 2)
    }
}
