import Testing
@testable import TetherCore

private func json(_ text: String) throws -> Value { try Value(json: text) }

@Suite struct CommitTests {
    @Test func commitAppliesEverythingUnderOneRevision() throws {
        let g = Graph()
        let a = try g.createState(.int(1)), b = try g.createState(.int(2))
        let rec = Recorder()
        _ = try g.observe(a, path: nil, options: .sync, sink: rec.sink("a"))
        _ = try g.observe(b, path: nil, options: .sync, sink: rec.sink("b"))
        var set = WriteSet()
        try g.stage(.put(.int(10), at: .root), to: a, in: &set, round: 0)
        try g.stage(.put(.int(11), at: .root), to: a, in: &set, round: 0)
        try g.stage(.put(.int(20), at: .root), to: b, in: &set, round: 0)
        #expect(try g.read(a) == .int(1))          // staged, not applied
        #expect(set.staged(a) == .int(11))
        #expect(!g.hasSyncWork)
        let before = g.revision
        let committed = try g.commit(&set, round: 0)
        #expect(committed == before + 1)
        #expect(try g.read(a) == .int(11) && g.read(b) == .int(20))
        #expect(try g.stateRevision(a) == committed && g.stateRevision(b) == committed)
        #expect(deliver(g, .sync) == 2)            // one call per observer
        #expect(rec.changes[0].old == .int(1) && rec.changes[0].new == .int(11))
    }

    @Test func equalCommitAdvancesNothing() throws {
        let g = Graph()
        let a = try g.createState(.int(1))
        var set = WriteSet()
        try g.stage(.put(.int(5), at: .root), to: a, in: &set, round: 0)
        try g.stage(.put(.int(1), at: .root), to: a, in: &set, round: 0)
        let before = g.revision
        #expect(try g.commit(&set, round: 0) == nil)
        #expect(g.revision == before)
    }

    @Test func aDoomedSetAppliesNothing() throws {
        let g = Graph()
        let a = try g.createState(.int(1), typeLocked: true)
        var set = WriteSet()
        try g.stage(.put(.int(2), at: .root), to: a, in: &set, round: 0)
        #expect(throws: TetherError.self) { try g.stage(.put(.string("x"), at: .root), to: a, in: &set, round: 0) }
        #expect(set.staged(a) == .int(2))          // the refused write left the set as it was
        set.failure = TetherError(.wrongType, "refused")
        #expect(throws: TetherError.self) { try g.commit(&set, round: 0) }
        #expect(try g.read(a) == .int(1))
    }

    @Test func pathWritesReplayOntoConcurrentChanges() throws {
        let g = Graph()
        let s = try g.createState(json(#"{"a":1,"b":1}"#))
        var set = WriteSet()
        try g.stage(.put(.int(2), at: JSONPointer(parsing: "/a")), to: s, in: &set, round: 0)
        try g.write(s, .int(3), at: JSONPointer(parsing: "/b"))  // another writer, meanwhile
        try g.commit(&set, round: 0)
        #expect(try g.read(s) == json(#"{"a":2,"b":3}"#))
    }

    @Test func replayFailureAppliesNothing() throws {
        let g = Graph()
        let s = try g.createState(json(#"{"o":{}}"#)), t = try g.createState(.int(0))
        var set = WriteSet()
        try g.stage(.put(.int(1), at: .root), to: t, in: &set, round: 0)
        try g.stage(.put(.int(2), at: JSONPointer(parsing: "/o/x")), to: s, in: &set, round: 0)
        try g.write(s, .int(7))  // /o is gone: the replay cannot apply
        #expect(throws: TetherError.self) { try g.commit(&set, round: 0) }
        #expect(try g.read(t) == .int(0))
    }

    @Test func freedStateFailsTheCommit() throws {
        let g = Graph()
        let s = try g.createState(.int(0)), t = try g.createState(.int(0))
        var set = WriteSet()
        try g.stage(.put(.int(1), at: .root), to: t, in: &set, round: 0)
        try g.stage(.put(.int(1), at: .root), to: s, in: &set, round: 0)
        _ = try g.freeState(s)
        do {
            try g.commit(&set, round: 0)
            Issue.record("commit should fail")
        } catch {
            #expect(error.code == .stale)
        }
        #expect(try g.read(t) == .int(0))
    }
}

private func expectReadOnly(_ attempt: () throws(TetherError) -> Void) {
    do throws(TetherError) {
        try attempt()
        Issue.record("write accepted")
    } catch {
        #expect(error.code == .readOnly)
        #expect(error.message.contains("'port'"))
    }
}

@Suite struct DescriptorTests {
    @Test func readOnlyRefusesEveryWrite() throws {
        let g = Graph()
        let s = try g.createState(json(#"{"a":1}"#))
        _ = try g.describe(s, StateDescriptor(readOnly: true, name: "port"))
        let a = try JSONPointer(parsing: "/a")
        expectReadOnly { () throws(TetherError) in try g.write(s, .int(1)) }
        expectReadOnly { () throws(TetherError) in try g.write(s, .int(1), at: a) }
        expectReadOnly { () throws(TetherError) in try g.remove(s, at: a) }
        var set = WriteSet()
        #expect(throws: TetherError.self) { try g.stage(.put(.int(1), at: .root), to: s, in: &set, round: 0) }
        _ = try g.describe(s, nil)
        #expect(try g.write(s, .int(1)))
    }

    @Test func rangeChecksTheFinalValue() throws {
        let g = Graph()
        let s = try g.createState(.int(50))
        _ = try g.describe(s, StateDescriptor(range: 0...100))
        #expect(try g.write(s, .int(100)))
        #expect(try g.write(s, .double(0.5)))
        for bad: Value in [.int(101), .double(-0.1), .double(.nan)] {
            #expect(throws: TetherError.self) { try g.write(s, bad) }
        }
        do { try g.write(s, .string("x")); Issue.record("accepted") } catch { #expect(error.code == .wrongType) }
        // Inside a transaction only the final value counts.
        var set = WriteSet()
        try g.stage(.put(.int(500), at: .root), to: s, in: &set, round: 0)
        try g.stage(.put(.int(7), at: .root), to: s, in: &set, round: 0)
        try g.commit(&set, round: 0)
        #expect(try g.read(s) == .int(7))
    }

    @Test func validatorRejectsWithItsReasonAndNothingIsQueued() throws {
        let g = Graph()
        let theme = try g.createState(.string("light")), other = try g.createState(.int(0))
        let rec = Recorder()
        _ = try g.observe(theme, path: nil, options: .sync, sink: rec.sink("theme"))
        _ = try g.observe(other, path: nil, options: .sync, sink: rec.sink("other"))
        var seen: [Value] = []
        let validator = Validator(check: { _, value, _ in
            seen.append(value)
            return value == .string("pink") ? "unknown theme 'pink'" : nil
        })
        _ = try g.describe(theme, StateDescriptor(validator: validator, name: "theme"))
        #expect(g.needsValidation(theme) && !g.needsValidation(other))
        var set = WriteSet()
        try g.stage(.put(.int(1), at: .root), to: other, in: &set, round: 0)
        try g.stage(.put(.string("pink"), at: .root), to: theme, in: &set, round: 0)
        do {
            try g.commit(&set, round: 0)
            Issue.record("commit accepted")
        } catch {
            #expect(error.code == .rejected)
            #expect(error.message.contains("'theme'") && error.message.contains("unknown theme 'pink'"))
        }
        #expect(try g.read(other) == .int(0) && g.read(theme) == .string("light"))
        #expect(!g.hasSyncWork && !g.hasLoopWork)
        #expect(try g.write(theme, .string("dark")))  // a plain write is a one-write commit
        #expect(seen == [.string("pink"), .string("dark")])
        #expect(deliver(g, .sync) == 1)
    }

    @Test func validatorSeesTheWholeValueOfAPathWrite() throws {
        let g = Graph()
        let s = try g.createState(json(#"{"min":0,"max":5}"#))
        _ = try g.describe(s, StateDescriptor(validator: Validator(check: { _, v, _ in
            guard case let .int(lo)? = v.valueIfPresent(at: try! JSONPointer(parsing: "/min")),
                  case let .int(hi)? = v.valueIfPresent(at: try! JSONPointer(parsing: "/max")) else { return "shape" }
            return lo <= hi ? nil : "min > max"
        })))
        #expect(throws: TetherError.self) { try g.write(s, .int(9), at: JSONPointer(parsing: "/min")) }
        // Both bounds in one transaction: only the final value is validated.
        var set = WriteSet()
        try g.stage(.put(.int(10), at: JSONPointer(parsing: "/min")), to: s, in: &set, round: 0)
        try g.stage(.put(.int(20), at: JSONPointer(parsing: "/max")), to: s, in: &set, round: 0)
        try g.commit(&set, round: 0)
        #expect(try g.read(s) == json(#"{"min":10,"max":20}"#))
    }

    @Test func aChangeDuringValidationIsValidatedAgain() throws {
        let g = Graph()
        let s = try g.createState(json(#"{"a":0,"b":0}"#))
        var calls = 0
        _ = try g.describe(s, StateDescriptor(validator: Validator(check: { _, v, _ in
            calls += 1
            // The first time, another writer changes /b while we validate.
            if calls == 1 { _ = try? g.write(s, .int(5), at: JSONPointer(parsing: "/b")) }
            return nil
        })))
        var set = WriteSet()
        try g.stage(.put(.int(1), at: JSONPointer(parsing: "/a")), to: s, in: &set, round: 0)
        try g.commit(&set, round: 0)
        #expect(calls == 3)  // ours, the other writer's one-write commit, ours again
        #expect(try g.read(s) == json(#"{"a":1,"b":5}"#))
    }

    @Test func descriptorsReleaseOnceOnReplaceAndFree() throws {
        let g = Graph()
        let s = try g.createState(.int(0))
        var released: [String] = []
        let first = Validator(check: { _, _, _ in nil }, release: { released.append("first") })
        #expect(try g.describe(s, StateDescriptor(validator: first)) == nil)
        let replaced = try g.describe(s, StateDescriptor(validator: Validator(check: nil, release: { released.append("second") })))
        replaced?.releaser.runRelease()
        #expect(released == ["first"])
        #expect(!g.needsValidation(s))  // a release without a check validates nothing
        for sink in try g.freeState(s) { sink.runRelease() }
        #expect(released == ["first", "second"])
    }
}

@Suite struct CauseTests {
    final class Tag {}

    @Test func callsCarryTheCauseOfTheirLastWrite() throws {
        let g = Graph()
        let s = try g.createState(.int(0))
        var causes: [Cause] = []
        _ = try g.observe(s, path: nil, options: [], sink: ObserverSink(call: { c in causes.append(c.cause) }))
        let tag = Tag()
        g.cause = Cause(meta: tag, wave: 0)
        try g.write(s, .int(1))
        g.cause = Cause()
        deliver(g, .loop)
        #expect(causes.count == 1 && causes[0].meta === tag)
        #expect(causes[0].wave == g.revision)  // an outside write starts its own wave
        g.cause = Cause(meta: nil, wave: 42)
        try g.write(s, .int(2))
        g.cause = Cause()
        deliver(g, .loop)
        #expect(causes[1].meta == nil && causes[1].wave == 42)
    }

    @Test func effectsRunWithTheirCause() throws {
        let g = Graph()
        let s = try g.createState(.int(0))
        var seen: [AnyObject?] = []
        g.gate = { _, cause, body in seen.append(cause.meta); body(); return true }
        _ = try g.createDerived(.effect, body: DerivedBody(run: { _ in _ = try? g.read(s, tracked: true) }))
        deliver(g, .loop)
        let tag = Tag()
        g.cause = Cause(meta: tag)
        try g.write(s, .int(1))
        g.cause = Cause()
        deliver(g, .loop)
        #expect(seen.count == 2 && seen[0] == nil && seen[1] === tag)
    }
}
