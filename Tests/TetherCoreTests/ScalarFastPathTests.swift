import Testing
@testable import TetherCore

/// The scalar fast paths of a write (`Graph.writeScalar`) and of a delivery
/// (`Graph.beginScalarDelivery`) must behave exactly as the general paths
/// they skip: the same change detection, the same old and new values, and
/// a fall back to the general path for everything that is not a scalar
/// over a scalar of the same type.
@Suite struct ScalarFastPathTests {
    /// Writes every kind of value over every kind, observed, and checks what
    /// the observer was told against what the state held before and after.
    @Test func everyTypeOverEveryTypeReportsTheTrueOldAndNewValues() throws {
        let values: [Value] = [.null, .bool(true), .bool(false), .int(7), .int(-7), .double(1.5),
                               .double(-0.0), .double(0.0), .double(.nan), .string("s"), .string("t"),
                               .bytes([1]), .array([.int(1)]), .object(ValueObject(["k": .int(1)]))]
        for first in values {
            for second in values {
                let g = Graph()
                let r = Recorder()
                let s = try g.createState(first)
                _ = try g.observe(s, path: nil, options: [.sync], sink: r.sink("o"))
                let changed = try g.write(s, second)
                deliver(g, .sync)
                #expect(changed == (first != second), "\(first) -> \(second)")
                #expect(try g.read(s) == (changed ? second : first))
                if changed {
                    #expect(r.changes.count == 1, "\(first) -> \(second)")
                    #expect(r.changes.first?.old == first && r.changes.first?.new == second)
                } else {
                    #expect(r.changes.isEmpty, "\(first) -> \(second): an equal write wakes nobody")
                }
            }
        }
    }

    /// -0.0 equals 0.0 and NaN equals NaN, as in the general path.
    @Test func equalDoublesAreNoChange() throws {
        let g = Graph()
        let s = try g.createState(.double(0.0))
        #expect(try g.write(s, .double(-0.0)) == false)
        #expect(try g.write(s, .double(.nan)))
        #expect(try g.write(s, .double(-.nan)) == false)
        #expect(g.revision == 1)
    }

    /// A type-locked double state takes an int as a double (the general
    /// path's conversion), and refuses a bool.
    @Test func typeLockStillConvertsAndRefuses() throws {
        let g = Graph()
        let s = try g.createState(.double(1), typeLocked: true)
        #expect(try g.write(s, .int(3)))
        #expect(try g.read(s) == .double(3))
        #expect(throws: TetherError.self) { try g.write(s, .bool(true)) }
        #expect(try g.read(s) == .double(3))
    }

    /// Coalescing: 42 -> 0 -> 42 before the observer runs is no call; an
    /// observer with `.equal` is called for an equal write, with old == new.
    @Test func coalescedAndEqualCalls() throws {
        let g = Graph()
        let r = Recorder()
        let s = try g.createState(.int(42))
        _ = try g.observe(s, path: nil, options: [.sync], sink: r.sink("o"))
        _ = try g.observe(s, path: nil, options: [.sync, .equal], sink: r.sink("eq"))
        #expect(try g.write(s, .int(0)))
        #expect(try g.write(s, .int(42)))
        deliver(g, .sync)
        #expect(r.names == ["eq"])
        #expect(r.changes.first?.old == .int(42) && r.changes.first?.new == .int(42))
        r.changes = []
        #expect(try g.write(s, .int(42)) == false)
        deliver(g, .sync)
        #expect(r.names == ["eq"])
    }

    /// A scalar call after a string call (the delivery's slots then hold
    /// references) and a string call after a scalar one both report their
    /// own values: the fast path must not take over slots holding strings.
    @Test func scalarAndCompositeCallsAlternate() throws {
        let g = Graph()
        let r = Recorder()
        let n = try g.createState(.int(0))
        let t = try g.createState(.string("a"))
        _ = try g.observe(n, path: nil, options: [.sync], sink: r.sink("n"))
        _ = try g.observe(t, path: nil, options: [.sync], sink: r.sink("t"))
        let batch = IndexQueue()
        var d = Delivery()
        for k in 1...3 {
            try g.write(t, .string("s\(k)"))
            try g.write(n, .int(Int64(k)))
            g.takeBatch(.sync, into: batch)
            var seen: [(Value?, Value?)] = []
            for e in 0..<batch.count where g.beginDelivery(batch[e], into: &d) {
                seen.append((d.change.oldValue, d.change.newValue))
                _ = g.endDelivery(observer: d.observerIndex)
            }
            #expect(seen.count == 2)
            let byType = Dictionary(uniqueKeysWithValues: seen.map { ($0.1!.type, $0) })
            #expect(byType[.int]?.0 == .int(Int64(k - 1)) && byType[.int]?.1 == .int(Int64(k)))
            #expect(byType[.string]?.0 == .string(k == 1 ? "a" : "s\(k - 1)") && byType[.string]?.1 == .string("s\(k)"))
        }
    }
}
