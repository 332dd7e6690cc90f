import Testing
@testable import TetherCore

/// MemberTable is hand-written (see its header for why), so it is checked
/// against a plain model over long random runs, and at the places a hash
/// index goes wrong: the switch between scanning and indexing, colliding
/// hashes, probes that wrap around the end, removals that move positions.
@Suite struct MemberTableTests {
    /// The model: names in order, and their values, keyed by the names'
    /// bytes (a `String` key would make "\u{E9}" and "e\u{301}" one name).
    struct Model {
        var names: [String] = []
        var byBytes: [[UInt8]: Int64] = [:]

        func value(_ name: String) -> Value? { byBytes[Array(name.utf8)].map(Value.int) }

        mutating func set(_ name: String, _ v: Int64) {
            if byBytes[Array(name.utf8)] == nil { names.append(name) }
            byBytes[Array(name.utf8)] = v
        }

        mutating func remove(_ name: String) {
            guard byBytes.removeValue(forKey: Array(name.utf8)) != nil else { return }
            names.removeAll { Array($0.utf8) == Array(name.utf8) }
        }
    }

    static func expectSame(_ table: MemberTable, _ model: Model, probes: [String],
                           sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(table.count == model.names.count, sourceLocation: sourceLocation)
        let bytes = { (names: [String]) in names.map { Array($0.utf8) } }
        #expect(bytes(table.keys.map(\.string)) == bytes(model.names), "order", sourceLocation: sourceLocation)
        #expect(bytes(table.map(\.key.string)) == bytes(model.names), "iteration order", sourceLocation: sourceLocation)
        for name in probes {
            #expect(table[MemberKey(name)] == model.value(name), "\(name)", sourceLocation: sourceLocation)
            let byBytes = Array(name.utf8).withUnsafeBytes { table.position(ofUTF8: $0) }
            #expect(byBytes == table.position(of: MemberKey(name)), "\(name) by bytes", sourceLocation: sourceLocation)
            if let p = byBytes { #expect(Array(table.keys[p].string.utf8) == Array(name.utf8), sourceLocation: sourceLocation) }
        }
    }

    @Test func findsEveryMemberAcrossTheSwitchToAnIndex() {
        var table = MemberTable()
        var model = Model()
        let probes = (0..<40).map { "m\($0)" } + ["", "absent", "m40"]
        // Up to linearLimit members are scanned; one more builds the index.
        for i in 0..<40 {
            table[MemberKey("m\(i)")] = .int(Int64(i))
            model.set("m\(i)", Int64(i))
            Self.expectSame(table, model, probes: probes)
        }
        // Removing back down past the limit drops the index again.
        for i in stride(from: 39, through: 0, by: -3) {
            table[MemberKey("m\(i)")] = nil
            model.remove("m\(i)")
            Self.expectSame(table, model, probes: probes)
        }
    }

    @Test func updatingKeepsThePositionAndReturnsTheOldValue() {
        var table: MemberTable = ["a": .int(1), "b": .int(2), "c": .int(3)]
        #expect(table.updateValue(.int(20), forKey: "b") == .int(2))
        #expect(table.updateValue(.int(4), forKey: "d") == nil)
        #expect(table.keys.map(\.string) == ["a", "b", "c", "d"])
        #expect(table.values == [.int(1), .int(20), .int(3), .int(4)])
        #expect(table.swapValue(.null, at: 0) == .int(1))
        #expect(table["a"] == .null, "a null value is still a member")
    }

    @Test func aLiteralWithARepeatedNameKeepsTheFirstPlaceAndTheLastValue() {
        let table: MemberTable = ["x": .int(1), "y": .int(2), "x": .int(3)]
        #expect(table.keys.map(\.string) == ["x", "y"])
        #expect(table["x"] == .int(3))
    }

    @Test func removingFromEveryPlaceMovesLaterMembersDown() {
        for size in [1, 2, 8, 9, 10, 33] {
            for victim in 0..<size {
                var table = MemberTable()
                for i in 0..<size { table.updateValue(.int(Int64(i)), forKey: MemberKey("k\(i)")) }
                let removed = table.remove(at: victim)
                #expect(removed.key.string == "k\(victim)" && removed.value == .int(Int64(victim)))
                var model = Model()
                for i in 0..<size where i != victim { model.set("k\(i)", Int64(i)) }
                Self.expectSame(table, model, probes: (0...size).map { "k\($0)" })
            }
        }
    }

    @Test func collidingHashesAreTellApartByTheirBytes() {
        // Every key the same hash: one probe chain through the whole index,
        // wrapping past its end (hash -1 starts at the last slot).
        for forced in [0, -1, 12345] {
            var table = MemberTable()
            let keys = (0..<50).map { MemberKey("c\($0)", forcingHash: forced) }
            for (i, key) in keys.enumerated() { table.updateValue(.int(Int64(i)), forKey: key) }
            #expect(table.count == 50)
            for (i, key) in keys.enumerated() { #expect(table.position(of: key) == i) }
            #expect(table.position(of: MemberKey("c50", forcingHash: forced)) == nil)
            #expect(table.position(of: MemberKey("c1", forcingHash: forced &+ 1)) == nil, "same bytes, other hash")
            table.remove(at: 0)
            for (i, key) in keys.enumerated().dropFirst() { #expect(table.position(of: key) == i - 1) }
            #expect(table.position(of: keys[0]) == nil)
        }
    }

    @Test func namesDifferingOnlyPastEightBytesOrInEncodingAreDistinct() {
        let names = ["12345678a", "12345678b", "\u{E9}", "e\u{301}", "", "\u{0}", "\u{0}\u{0}", "\u{1F600}"]
        var table = MemberTable()
        var model = Model()
        for (i, name) in names.enumerated() {
            table[MemberKey(name)] = .int(Int64(i))
            model.set(name, Int64(i))
        }
        Self.expectSame(table, model, probes: names + ["12345678", "e"])
    }

    @Test func copiesAreIndependent() {
        var a = MemberTable()
        for i in 0..<20 { a[MemberKey("k\(i)")] = .int(Int64(i)) }
        var b = a
        b["k3"] = .int(-3)
        b["new"] = .null
        b.remove(at: 0)
        #expect(a.count == 20 && a["k3"] == .int(3) && a["k0"] == .int(0) && a["new"] == nil)
        #expect(b.count == 20 && b["k3"] == .int(-3) && b["k0"] == nil && b["new"] == .null)
    }

    @Test func settingByBytesReplacesInPlaceOrAppendsAndLeavesNothingOnError() throws {
        var table: MemberTable = ["a": .int(1), "b": .int(2)]
        func set(_ name: [UInt8], _ v: Value, vet: (Value) throws(TetherError) -> Void = { (_) throws(TetherError) in })
            throws {
            try name.withUnsafeBytes { bytes in try table.setValue(v, forUTF8: bytes, vet: vet) }
        }
        try set(Array("b".utf8), .int(20))
        try set(Array("c".utf8), .int(3))
        #expect(table.keys.map(\.string) == ["a", "b", "c"])
        #expect(table[MemberKey("b")] == .int(20))
        // The appended name is found again by a key made from its String.
        #expect(table.position(of: MemberKey("c")) == 2)
        // Ill-formed bytes are no name; a refused value changes nothing,
        // and a bad name is reported before the value is looked at.
        var vetted = 0
        let refuse: (Value) throws(TetherError) -> Void = { (_) throws(TetherError) in
            vetted += 1
            throw TetherError(.outOfRange, "refused")
        }
        #expect(throws: TetherError.self) { try set([0x61, 0xFF], .int(9)) }
        #expect(throws: TetherError.self) { try set([0xFF], .int(9), vet: refuse) }
        #expect(vetted == 0)
        #expect(throws: TetherError.self) { try set(Array("a".utf8), .int(9), vet: refuse) }
        #expect(throws: TetherError.self) { try set(Array("new".utf8), .int(9), vet: refuse) }
        #expect(vetted == 2)
        #expect(table.keys.map(\.string) == ["a", "b", "c"])
        #expect(table.values == [.int(1), .int(20), .int(3)])
    }

    @Test func matchesTheModelOverLongRandomRuns() {
        // A fixed-seed xorshift, so a failure repeats.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % UInt64(bound))
        }
        for run in 0..<20 {
            var table = MemberTable()
            var model = Model()
            let universe = [8, 16, 64, 300][run % 4]  // names in play: small and large objects
            for step in 0..<2_000 {
                let name = "n\(next(universe))"
                switch next(10) {
                case 0..<3:
                    table[MemberKey(name)] = .int(Int64(step))
                    model.set(name, Int64(step))
                case 3..<6:
                    // The C face's path: found or added by the name's bytes.
                    #expect(throws: Never.self) {
                        try Array(name.utf8).withUnsafeBytes { bytes in
                            try table.setValue(.int(Int64(step)), forUTF8: bytes) { (_) throws(TetherError) in }
                        }
                    }
                    model.set(name, Int64(step))
                case 6..<8:
                    table[MemberKey(name)] = nil
                    model.remove(name)
                case 8:
                    if !model.names.isEmpty {
                        let p = next(model.names.count)
                        #expect(table.remove(at: p).key.string == model.names[p])
                        model.remove(model.names[p])
                    }
                default:
                    #expect(table[MemberKey(name)] == model.value(name))
                }
            }
            Self.expectSame(table, model, probes: (0...universe).map { "n\($0)" })
        }
    }
}
