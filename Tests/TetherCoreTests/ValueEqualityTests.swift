import Testing
import TetherCore

@Suite struct ValueEqualityTests {
    @Test func nanEqualsNaN() {
        #expect(Value.double(.nan) == .double(.nan))
        #expect(Value.double(.nan) == .double(-.nan))
        #expect(Value.double(.signalingNaN) == .double(.nan))
        #expect(Value.double(Double(nan: 0x1234, signaling: false)) == .double(.nan), "any payload")
        #expect(Value.double(.nan) != .double(0))
        #expect(Value.double(0) != .double(.nan))
        #expect(Value.array([.double(.nan)]) == .array([.double(.nan)]))
    }

    @Test func doublesCompareByIEEEValueOtherwise() {
        #expect(Value.double(0.1 + 0.2) != .double(0.3))
        #expect(Value.double(1.5) == .double(1.5))
        #expect(Value.double(.infinity) == .double(.infinity))
        #expect(Value.double(.infinity) != .double(-.infinity))
        // IEEE says 0 == -0, and Value follows it: writing -0.0 over 0.0 is not a change.
        #expect(Value.double(0.0) == .double(-0.0))
    }

    @Test func intNeverEqualsDouble() {
        #expect(Value.int(1) != .double(1.0))
        #expect(Value.double(1.0) != .int(1))
        #expect(Value.int(0) != .double(0))
        #expect(Value.array([.int(1)]) != .array([.double(1)]))
    }

    @Test func differentTypesAreNeverEqual() {
        let samples: [Value] = [
            .null, .bool(false), .int(0), .double(0), .string(""), .bytes([]), .array([]), .object(ValueObject()),
        ]
        for (i, a) in samples.enumerated() {
            for (j, b) in samples.enumerated() {
                #expect((a == b) == (i == j), "\(a) vs \(b)")
            }
        }
        #expect(Value.string("AQ==") != .bytes([1]), "bytes are not their base64 text")
        #expect(Value.string("1") != .int(1))
    }

    @Test func scalarsCompareByValue() {
        #expect(Value.bool(true) == .bool(true))
        #expect(Value.bool(true) != .bool(false))
        #expect(Value.int(.min) == .int(.min))
        #expect(Value.int(.max) != .int(.min))
        #expect(Value.string("é") != .string("e\u{301}"), "strings compare byte for byte, like JSON")
        #expect(Value.string("a") != .string("a\0"))
        #expect(Value.bytes([0, 1, 2]) == .bytes([0, 1, 2]))
        #expect(Value.bytes([0, 1, 2]) != .bytes([0, 1]))
    }

    @Test func arraysAreOrdered() {
        #expect(Value.array([.int(1), .int(2)]) == .array([.int(1), .int(2)]))
        #expect(Value.array([.int(1), .int(2)]) != .array([.int(2), .int(1)]))
        #expect(Value.array([.int(1)]) != .array([.int(1), .int(1)]))
        #expect(Value.array([]) != .array([.null]))
    }

    @Test func objectsIgnoreMemberOrder() {
        let ab = ValueObject(["a": .int(1), "b": .int(2)])
        let ba = ValueObject(["b": .int(2), "a": .int(1)])
        #expect(ab == ba)
        #expect(Value.object(ab) == .object(ba))
        #expect(Array(ab.members.keys) != Array(ba.members.keys), "order is still kept")
    }

    @Test func objectsCompareKeysAndValues() {
        let base = ValueObject(["a": .int(1), "b": .int(2)])
        #expect(base != ValueObject(["a": .int(1)]), "missing member")
        #expect(ValueObject(["a": .int(1)]) != base, "extra member")
        #expect(base != ValueObject(["a": .int(1), "c": .int(2)]), "same count, different key")
        #expect(base != ValueObject(["a": .int(1), "b": .int(3)]), "different value")
        #expect(base != ValueObject(["a": .int(1), "b": .double(2)]), "int vs double member")
        #expect(ValueObject() == ValueObject())
        #expect(ValueObject(["a": .null]) != ValueObject(), "a null member is still a member")
    }

    @Test func nestedStructuresCompareDeeply() {
        func doc(_ leaf: Value, swapped: Bool) -> Value {
            let inner: MemberTable = swapped
                ? ["y": .array([leaf, .null]), "x": .string("s")]
                : ["x": .string("s"), "y": .array([leaf, .null])]
            return .object(ValueObject(["outer": .array([.object(ValueObject(inner)), .bytes([9])])]))
        }
        #expect(doc(.double(.nan), swapped: false) == doc(.double(.nan), swapped: true))
        #expect(doc(.int(1), swapped: false) == doc(.int(1), swapped: true))
        #expect(doc(.int(1), swapped: false) != doc(.double(1), swapped: true))
        #expect(doc(.int(1), swapped: false) != doc(.int(2), swapped: false))
    }

    /// Objects are compared position by position while their names line
    /// up, then by name: every way the two phases can meet.
    @Test func objectsCompareAcrossTheSwitchFromPlacesToNames() {
        func obj(_ members: [(String, Int64)]) -> Value {
            var table = MemberTable()
            for (k, v) in members { table[MemberKey(k)] = .int(v) }
            return .object(ValueObject(table))
        }
        let base: [(String, Int64)] = (0..<12).map { ("k\($0)", Int64($0)) }
        #expect(obj(base) == obj(base))
        // The same storage, and a copy of it.
        let one = obj(base)
        #expect(one == one)
        // Out of place from the start, from the middle, at the very end.
        for cut in [0, 5, 10] {
            var moved = base
            moved.swapAt(cut, cut + 1)
            #expect(obj(base) == obj(moved), "swapped at \(cut)")
            var changed = moved
            changed[11].1 = 99
            #expect(obj(base) != obj(changed), "swapped at \(cut), last value changed")
            var renamed = moved
            renamed[cut].0 = "other"
            #expect(obj(base) != obj(renamed), "swapped at \(cut), a name changed")
        }
        // A value differing while the names still line up.
        var early = base
        early[3].1 = -3
        #expect(obj(base) != obj(early))
        // A name of one that the other has elsewhere, with counts equal.
        #expect(obj([("a", 1), ("b", 2)]) != obj([("b", 2), ("c", 1)]))
        // Names equal byte for byte only: the two forms of "é" differ.
        #expect(obj([("\u{E9}", 1)]) != obj([("e\u{301}", 1)]))
        #expect(Value.string("\u{E9}") != Value.string("e\u{301}"))
        let long = String(repeating: "x", count: 40)
        #expect(Value.string(long) == Value.string(String(decoding: Array(long.utf8), as: UTF8.self)))
    }

    @Test func valueTypeNamesMatchCases() {
        #expect(Value.null.type == .null)
        #expect(Value.bytes([]).type == .bytes)
        #expect(Value.object(ValueObject()).type == .object)
        #expect(ValueType.allCases.map(\.rawValue) == Array(0...7))
    }
}
