import Testing
@testable import TetherCore

/// Tracking by path in the core (GraphPaths.swift): a read at a JSON Pointer
/// depends on that part of the state only.
@Suite struct PathTrackingTests {
    /// {"user":{"name":{"first":"Ada","last":"Lovelace"},"age":36},"other":1}
    static func profile() -> Value {
        try! Value(json: #"{"user":{"name":{"first":"Ada","last":"Lovelace"},"age":36},"other":1}"#)
    }

    static func p(_ text: String) -> JSONPointer { try! JSONPointer(parsing: text) }

    /// A computed that reads `paths` of `s` and counts its runs.
    final class Reader {
        var calls = 0
        var id = DerivedID(index: 0, generation: 0)
        init(_ g: Graph, _ s: StateID, _ paths: [String]) throws {
            let pointers = paths.map { PathTrackingTests.p($0) }
            id = try g.createDerived(.computed, body: DerivedBody(compute: { [unowned self] r in
                self.calls += 1
                var parts: [Value] = []
                for path in pointers { parts.append((try? g.read(s, at: path, tracked: true)) ?? .null) }
                r = .array(parts)
                return nil
            }))
        }
    }

    @Test func siblingsDoNotWakeAncestorsAndDescendantsDo() throws {
        let g = Graph()
        let s = try g.createState(Self.profile())
        let name = try Reader(g, s, ["/user/name"]), age = try Reader(g, s, ["/user/age"])
        func touch() { _ = try? g.readComputed(name.id); _ = try? g.readComputed(age.id) }
        touch()
        #expect((name.calls, age.calls) == (1, 1))
        try g.write(s, .int(37), at: Self.p("/user/age"))
        try g.write(s, .int(2), at: Self.p("/other"))
        touch()
        #expect((name.calls, age.calls) == (1, 2))
        try g.write(s, .string("Augusta"), at: Self.p("/user/name/first"))  // a descendant
        touch()
        #expect((name.calls, age.calls) == (2, 2))
        try g.write(s, .string("Ada"), at: Self.p("/user/name"))  // the path
        touch()
        #expect((name.calls, age.calls) == (3, 2))
        var user = try g.read(s, at: Self.p("/user"))
        try user.set(.int(40), at: Self.p("/age"))
        try g.write(s, user, at: Self.p("/user"))  // an ancestor
        touch()
        #expect((name.calls, age.calls) == (4, 3))
        try g.write(s, Self.profile())  // the whole value
        touch()
        #expect((name.calls, age.calls) == (5, 4))
        try g.remove(s, at: Self.p("/user/name"))
        touch()
        #expect((name.calls, age.calls) == (6, 4))
        #expect(try g.readComputed(name.id) == .array([.null]))
    }

    @Test func pointerTextReadsAreTrackedByPath() throws {
        let g = Graph()
        let s = try g.createState(Self.profile())
        var calls = 0
        let text: [UInt8] = Array("/user/name/first".utf8)
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            calls += 1
            r = text.withUnsafeBytes { bytes in
                (try? g.read(s, at: try! PointerText(validating: bytes), tracked: true)) ?? .null
            }
            return nil
        }))
        #expect(try g.readComputed(c) == .string("Ada"))
        try g.write(s, .string("King"), at: Self.p("/user/name/last"))
        _ = try g.readComputed(c)
        #expect(calls == 1)
        try g.write(s, .string("Augusta"), at: Self.p("/user/name/first"))
        #expect(try g.readComputed(c) == .string("Augusta"))
        #expect(calls == 2)
        // Reads of the same path from C and from Swift share one node.
        let swiftReader = try Reader(g, s, ["/user/name/first"])
        _ = try g.readComputed(swiftReader.id)
        #expect(g.trackedPathCount(of: s) == 3)  // /user, /user/name, /user/name/first
    }

    @Test func repeatedReadsKeepOneEdgePerPath() throws {
        let g = Graph()
        let s = try g.createState(Self.profile())
        let r = try Reader(g, s, ["/user/age", "/user/age", "/other", "/user/age", "/other", "/user/age"])
        _ = try g.readComputed(r.id)
        #expect(g.dependencyCount(of: r.id) == 2)
        for i in 0..<5 {
            try g.write(s, .int(Int64(50 + i)), at: Self.p("/user/age"))
            _ = try g.readComputed(r.id)
        }
        #expect(r.calls == 6)
        #expect(g.dependencyCount(of: r.id) == 2)
        #expect(g.livePathNodes == 4)  // the root, /user, /user/age, /other
    }

    /// A reader woken through another source compares its path's version,
    /// not the state's: a sibling write that reached it by another way does
    /// not re-run it.
    @Test func versionsArePerPath() throws {
        let g = Graph()
        let s = try g.createState(Self.profile())
        let whole = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            if case let .object(o)? = try? g.read(s, tracked: true) { r = .int(Int64(o.members.count)) }
            return nil
        }))
        var calls = 0
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            calls += 1
            let first = (try? g.read(s, at: Self.p("/user/name/first"), tracked: true)) ?? .null
            let count = (try? g.readComputed(whole, tracked: true)) ?? .null
            r = .array([first, count])
            return nil
        }))
        _ = try g.readComputed(c)
        try g.write(s, .int(3), at: Self.p("/other"))  // wakes `whole`, which cuts off
        _ = try g.readComputed(c)
        #expect(calls == 1)
        try g.write(s, .int(3), at: Self.p("/more"))  // a new member: `whole` changes
        _ = try g.readComputed(c)
        #expect(calls == 2)
    }

    @Test func dynamicDependenciesDropTheirPaths() throws {
        let g = Graph()
        let s = try g.createState(Value(json: #"{"flag":true,"a":1,"b":1}"#))
        var calls = 0
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            calls += 1
            let on = (try? g.read(s, at: Self.p("/flag"), tracked: true)) == .bool(true)
            r = (try? g.read(s, at: Self.p(on ? "/a" : "/b"), tracked: true)) ?? .null
            return nil
        }))
        _ = try g.readComputed(c)
        #expect(g.trackedPathCount(of: s) == 2)
        try g.write(s, .bool(false), at: Self.p("/flag"))
        _ = try g.readComputed(c)
        #expect(g.trackedPathCount(of: s) == 2)  // /flag and /b; /a is gone
        try g.write(s, .int(5), at: Self.p("/a"))
        _ = try g.readComputed(c)
        #expect(calls == 2)
        try g.write(s, .int(5), at: Self.p("/b"))
        #expect(try g.readComputed(c) == .int(5))
        #expect(calls == 3)
        // Freeing the computed frees the trie.
        try g.freeDerived(c, .computed)?.finish()
        #expect(g.trackedPathCount(of: s) == 0)
        #expect(g.livePathNodes == 0)
        #expect(!g.states[Int(s.index)].pathReaders)
    }

    @Test func missingPathsAreTracked() throws {
        let g = Graph()
        let s = try g.createState(Self.profile())
        let email = try Reader(g, s, ["/user/email"]), deep = try Reader(g, s, ["/account/plan"])
        _ = try g.readComputed(email.id)
        _ = try g.readComputed(deep.id)
        try g.write(s, .int(1), at: Self.p("/user/age"))
        _ = try g.readComputed(email.id)
        _ = try g.readComputed(deep.id)
        #expect((email.calls, deep.calls) == (1, 1))
        try g.write(s, .string("a@b.c"), at: Self.p("/user/email"))
        #expect(try g.readComputed(email.id) == .array([.string("a@b.c")]))
        try g.write(s, Value(json: "{}"), at: Self.p("/account"))
        _ = try g.readComputed(deep.id)
        #expect((email.calls, deep.calls) == (2, 2))
    }

    @Test func arraysAreWokenWholeForElementWrites() throws {
        let g = Graph()
        let s = try g.createState(Value(json: #"{"list":[0,1,2,3],"other":0}"#))
        let third = try Reader(g, s, ["/list/3"]), other = try Reader(g, s, ["/other"])
        func touch() { _ = try? g.readComputed(third.id); _ = try? g.readComputed(other.id) }
        touch()
        try g.write(s, .int(10), at: Self.p("/list/0"))  // another element
        touch()
        #expect((third.calls, other.calls) == (2, 1))
        try g.remove(s, at: Self.p("/list/0"))  // shifts /list/3 away
        touch()
        #expect((third.calls, other.calls) == (3, 1))
        #expect(try g.readComputed(third.id) == .array([.null]))
        try g.write(s, .int(4), at: Self.p("/list/-"))  // brings it back
        touch()
        #expect((third.calls, other.calls) == (4, 1))
        #expect(try g.readComputed(third.id) == .array([.int(4)]))
    }

    @Test func commitsWakeTheirPathsOnly() throws {
        let g = Graph()
        let s = try g.createState(Self.profile())
        let name = try Reader(g, s, ["/user/name/first"])
        _ = try g.readComputed(name.id)
        var set = WriteSet()
        try g.stage(.put(.int(50), at: Self.p("/user/age")), to: s, in: &set, round: 0)
        try g.stage(.remove(at: Self.p("/other")), to: s, in: &set, round: 0)
        try g.commit(&set, round: 0)
        _ = try g.readComputed(name.id)
        #expect(name.calls == 1)
        set = WriteSet()
        try g.stage(.put(.int(51), at: Self.p("/user/age")), to: s, in: &set, round: 0)
        try g.stage(.put(.string("X"), at: Self.p("/user/name/first")), to: s, in: &set, round: 0)
        try g.commit(&set, round: 0)
        #expect(try g.readComputed(name.id) == .array([.string("X")]))
        #expect(name.calls == 2)
        set = WriteSet()
        try g.stage(.set(Self.profile()), to: s, in: &set, round: 0)
        try g.commit(&set, round: 0)
        _ = try g.readComputed(name.id)
        #expect(name.calls == 3)
    }

    @Test func aBatchThatPutsAPartBackRunsNothing() throws {
        let g = Graph()
        let s = try g.createState(Self.profile())
        var runs = 0
        _ = try g.createDerived(.effect, body: DerivedBody(run: { _ in
            _ = try? g.read(s, at: Self.p("/user/name"), tracked: true)
            runs += 1
        }), sync: true)
        deliver(g, .sync)
        g.batchDepth += 1
        try g.write(s, .string("X"), at: Self.p("/user/name/first"))
        try g.write(s, .string("Ada"), at: Self.p("/user/name/first"))
        g.batchDepth -= 1
        deliver(g, .sync)
        #expect(runs == 1)
        try g.write(s, .int(1), at: Self.p("/user/age"))
        deliver(g, .sync)
        #expect(runs == 1)
        try g.write(s, .string("Y"), at: Self.p("/user/name/last"))
        deliver(g, .sync)
        #expect(runs == 2)
    }

    /// Writes below the root of a state with readers but no observers are
    /// made in place once the epoch's base is kept: the base must stay what
    /// it was (so a batch that puts everything back runs nothing), and
    /// readers must see every write.
    @Test func inPlaceWritesKeepTheEpochBase() throws {
        let g = Graph()
        let s = try g.createState(Value(json: #"{"a":1,"b":[1,2]}"#))
        var runs = 0, seen: [Value] = []
        _ = try g.createDerived(.effect, body: DerivedBody(run: { _ in
            seen.append((try? g.read(s, tracked: true)) ?? .null)  // the whole value
            runs += 1
        }), sync: true)
        let c = try Reader(g, s, ["/a"])
        deliver(g, .sync)
        _ = try g.readComputed(c.id)
        g.batchDepth += 1
        try g.write(s, .int(2), at: Self.p("/a"))  // keeps the base, copies
        try g.write(s, .int(3), at: Self.p("/a"))  // in place
        #expect(try g.readComputed(c.id) == .array([.int(3)]))
        try g.write(s, .int(9), at: Self.p("/b/-"))
        try g.remove(s, at: Self.p("/b/2"))
        try g.write(s, .int(1), at: Self.p("/a"))  // everything is back
        g.batchDepth -= 1
        deliver(g, .sync)
        #expect(runs == 1)
        #expect(try g.readComputed(c.id) == .array([.int(1)]))
        g.batchDepth += 1
        try g.write(s, .int(5), at: Self.p("/a"))
        try g.write(s, .int(6), at: Self.p("/a"))
        g.batchDepth -= 1
        deliver(g, .sync)
        #expect(runs == 2)
        #expect(seen.last == (try Value(json: #"{"a":6,"b":[1,2]}"#)))
    }

    @Test func untrackedPathReadsRecordNothing() throws {
        let g = Graph()
        let s = try g.createState(Self.profile())
        var calls = 0
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { r in
            calls += 1
            g.beginUntracked()
            r = (try? g.read(s, at: Self.p("/user/age"), tracked: true)) ?? .null
            try? g.endUntracked()
            return nil
        }))
        _ = try g.readComputed(c)
        try g.write(s, .int(1), at: Self.p("/user/age"))
        _ = try g.readComputed(c)
        #expect(calls == 1)
        #expect(g.livePathNodes == 0)
    }

    @Test func freeingTheStateWakesAndUnlinksPathReaders() throws {
        let g = Graph()
        let s = try g.createState(Self.profile())
        let a = try Reader(g, s, ["/user/name/first", "/user/age"]), b = try Reader(g, s, ["/user"])
        _ = try g.readComputed(a.id)
        _ = try g.readComputed(b.id)
        #expect(g.livePathNodes == 5)
        _ = try g.freeState(s)
        #expect(g.livePathNodes == 0)
        #expect(g.dependencyCount(of: a.id) == 0)
        _ = try g.readComputed(a.id)
        _ = try g.readComputed(b.id)
        #expect((a.calls, b.calls) == (2, 2))
        // The slot's next state starts without path readers.
        let t = try g.createState(Self.profile())
        #expect(t.index == s.index)
        #expect(!g.states[Int(t.index)].pathReaders)
        try g.write(t, .int(1), at: Self.p("/user/age"))
        _ = try g.readComputed(a.id)
        #expect(a.calls == 2)
    }

    /// The children map: lookups, inserts and removals in any order, past
    /// the width where it builds its index, and with colliding mixes.
    @Test func pathChildrenFindsWhatItHolds() {
        var map = PathChildren()
        var expected: [String: UInt32] = [:]
        func key(_ name: String) -> MemberKey {
            // A third of the names share one mix: long probe runs to delete from.
            name.hasSuffix("3") ? MemberKey(name, forcingHash: 42) : MemberKey(name)
        }
        func check() {
            #expect(map.count == expected.count)
            for (name, node) in expected { #expect(map.find(key(name)) == node) }
            #expect(map.find(key("absent")) == nil)
            #expect(Set(map.nodes) == Set(expected.values))
        }
        for i in 0..<300 {
            map.insert(key("f\(i)"), UInt32(i))
            expected["f\(i)"] = UInt32(i)
        }
        check()
        var generator = SystemRandomNumberGenerator()
        var order = Array(expected.keys).shuffled(using: &generator)
        for (n, name) in order.enumerated() {
            map.remove(key(name))
            expected[name] = nil
            if n % 37 == 0 || expected.count < 12 { check() }
        }
        #expect(map.isEmpty)
        for i in 0..<20 { map.insert(key("g\(i)3"), UInt32(i)); expected["g\(i)3"] = UInt32(i) }
        check()
        order = Array(expected.keys)
        for name in order.prefix(15) { map.remove(key(name)); expected[name] = nil }
        check()
    }

    /// A whole-value edge is a `Link` as before: path edges carry their path
    /// in the path node, not in the link.
    @Test func edgesStaySmall() {
        #expect(MemoryLayout<Link>.stride == 32)
        #expect(MemoryLayout<Graph.StateNode>.stride <= 56)
    }
}
