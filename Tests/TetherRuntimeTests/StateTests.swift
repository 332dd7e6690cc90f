import Testing
@testable import TetherRuntime

@Suite struct StateTests {
    @Test func scalarsRoundTrip() throws {
        let rt = try Runtime()
        let count = rt.state(41)
        count.value += 1
        #expect(count.value == 42)
        let ratio = rt.state(0.5)
        ratio.value *= 3
        #expect(ratio.value == 1.5)
        let on = rt.state(false)
        on.value.toggle()
        #expect(on.value)
        let title = rt.state("héllo")
        title.value += " wörld"
        #expect(title.value == "héllo wörld")
    }

    @Test func codableStructsRoundTrip() throws {
        let rt = try Runtime()
        let user = rt.state(ada)
        #expect(user.value == ada)
        user.value.address.city = "Paris"
        user.value.tags.append("code")
        #expect(user.value.address.city == "Paris")
        #expect(user.value.tags == ["math", "code"])
        #expect(try user.get(String.self, at: JSONPointer(parsing: "/address/city")) == "Paris")
    }

    @Test func pathWritesAndRemoval() throws {
        let rt = try Runtime()
        let doc = rt.state(["a": 1])
        try doc.set(2, at: JSONPointer(parsing: "/b"))
        #expect(try doc.get(Int.self, at: JSONPointer(parsing: "/b")) == 2)
        try doc.remove(at: JSONPointer(parsing: "/a"))
        #expect(throws: TetherError.self) { try doc.get(Int.self, at: JSONPointer(parsing: "/a")) }
    }

    @Test func revisionsAdvancePerWrite() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let before = try rt.revision
        s.value = 1
        s.value = 2
        #expect(try rt.revision == before + 2)
        #expect(try s.revision == rt.revision)
    }

    @Test func typeLockRefusesOtherTypes() throws {
        let rt = try Runtime()
        let n = rt.state(Value.int(1), lockType: true)
        #expect(throws: TetherError.self) { try n.set(Value.string("x")) }
        #expect(n.value == .int(1))
        let errors = capturingErrors { n.value = .string("y") }
        #expect(errors.map(\.code) == [.wrongType])
    }

    @Test func wrongTypeReadsAreErrorsNotCrashes() throws {
        let rt = try Runtime()
        let s = rt.state("text")
        let asInt = State<Int>(unowned: s.handle)
        #expect(throws: TetherError.self) { try asInt.get() }
        let asUser = State<User>(unowned: s.handle)
        #expect(throws: TetherError.self) { try asUser.get() }
    }

    @Test func freedStateIsStale() throws {
        let rt = try Runtime()
        let s = rt.state(1)
        let alias = State<Int>(unowned: s.handle)
        try s.free()
        do {
            _ = try alias.get()
            Issue.record("read of a freed state succeeded")
        } catch {
            #expect(error.code == .stale)
        }
        #expect(throws: TetherError.self) { try s.free() }
    }

    @Test func deinitFreesOwnedStatesOnly() throws {
        let rt = try Runtime()
        var handle: UInt64 = 0
        do {
            let s = rt.state(7)
            handle = s.handle
            let unowned = State<Int>(unowned: handle)
            _ = unowned  // dropping a wrapper does not free
            #expect(try State<Int>(unowned: handle).get() == 7)
        }
        #expect(throws: TetherError.self) { try State<Int>(unowned: handle).get() }
    }

    @Test func freedRuntimeMakesEverythingStale() throws {
        var rt: Runtime? = try Runtime()
        let s = rt!.state(1)
        rt = nil
        do {
            _ = try s.get()
            Issue.record("read after the runtime was freed succeeded")
        } catch {
            #expect(error.code == .stale)
        }
    }

    @Test func descriptorsAreEnforced() throws {
        let rt = try Runtime()
        let volume = rt.state(5)
        try volume.describe(range: 0...10)
        #expect(throws: TetherError.self) { try volume.set(11) }
        try volume.set(10)
        let name = rt.state("ok")
        try name.describe(validate: { $0.isEmpty ? "must not be empty" : nil })
        do {
            try name.set("")
            Issue.record("validator did not refuse")
        } catch {
            #expect(error.code == .rejected)
            #expect(error.message.contains("must not be empty"))
        }
        #expect(name.value == "ok")
        try name.describe(readOnly: true)
        #expect(throws: TetherError.self) { try name.set("other") }
    }

    @Test func hostLoopRuntime() throws {
        let rt = try Runtime(Runtime.Options(loop: .host))
        #expect(try rt.fileDescriptor >= 0)
        let s = rt.state(0)
        let seen = Recorder<Int>()
        let token = s.observe { seen.append($0.new ?? -1) }
        s.value = 3
        try rt.runOnce()
        #expect(seen.all == [3])
        token.cancel()
    }

    @Test func badOptionsAreRefused() {
        #expect(throws: TetherError.self) { try Runtime(Runtime.Options(maxRounds: 0)) }
        #expect(throws: TetherError.self) { try Runtime(Runtime.Options(singleThreaded: true)) }
    }
}
