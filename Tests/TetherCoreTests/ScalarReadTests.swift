import Testing
@testable import TetherCore

/// The typed getters' reads: scalars taken without copying the value, and
/// dependencies recorded exactly as whole-value reads record them.
@Suite struct ScalarReadTests {
    @Test func scalarsComeOutAndCompositesOnlyNameTheirType() throws {
        let g = Graph()
        let cases: [(Value, ScalarValue)] = [
            (.null, .null), (.bool(true), .bool(true)), (.int(-7), .int(-7)), (.double(2.5), .double(2.5)),
            (.string("x"), .other(.string)), (.bytes([1]), .other(.bytes)),
            (.array([.int(1)]), .other(.array)), (.object(ValueObject(["k": .int(1)])), .other(.object)),
        ]
        for (value, scalar) in cases {
            #expect(value.scalar == scalar)
            #expect(scalar.type == value.type)
            let s = try g.createState(value)
            #expect(try g.readScalar(s) == scalar)
        }
    }

    @Test func scalarEqualityIsValueEquality() {
        let values: [Value] = [.null, .bool(false), .bool(true), .int(0), .int(1), .double(0), .double(-0.0),
                               .double(1), .double(.nan), .double(-.nan), .double(.infinity), .string("1")]
        for a in values {
            for b in values where a.scalar != .other(.string) && b.scalar != .other(.string) {
                #expect(a.scalar.sameValue(as: b.scalar) == (a == b), "\(a) vs \(b)")
            }
            #expect(!a.scalar.sameValue(as: .other(.string)))  // composites are compared whole
        }
    }

    @Test func storeScalarReplacesAnyValue() {
        let slot = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        defer { slot.deinitialize(count: 1); slot.deallocate() }
        slot.initialize(to: .object(ValueObject(["k": .string(String(repeating: "x", count: 64))])))
        slot.storeScalar(.int(3))
        #expect(slot.pointee == .int(3))
        slot.storeScalar(.double(.nan))
        #expect(slot.pointee == .double(.nan))
        slot.pointee = .array([.string("y")])
        slot.storeScalar(.null)
        #expect(slot.pointee == .null)
        slot.storeScalar(.bool(true))
        #expect(slot.pointee == .bool(true))
    }

    @Test func staleHandlesThrowAsWholeReadsDo() throws {
        let g = Graph()
        let s = try g.createState(.int(1))
        let c = try g.createDerived(.computed, body: computing({ (r) throws(TetherError) in r = .int(2) }))
        _ = try g.freeState(s)
        _ = try g.freeDerived(c, .computed)
        #expect(throws: TetherError.self) { try g.readScalar(s) }
        #expect(throws: TetherError.self) { try g.readComputedScalar(c) }
    }

    @Test func computedScalarReadsEvaluateTrackAndCacheErrors() throws {
        let g = Graph()
        let a = try g.createState(.int(1))
        var calls = 0
        let doubled = try g.createDerived(.computed, body: computing({ (r) throws(TetherError) in
            calls += 1
            guard case let .int(v) = try g.readScalar(a, tracked: true), v >= 0 else {
                throw TetherError(.invalidArgument, "negative")
            }
            r = .int(v * 2)
        }))
        let plusOne = try g.createDerived(.computed, body: computing({ (r) throws(TetherError) in
            guard case let .int(v) = try g.readComputedScalar(doubled, tracked: true) else { throw TetherError(.wrongType, "not an int") }
            r = .int(v + 1)
        }))
        #expect(try g.readComputedScalar(plusOne) == .int(3))
        try g.write(a, .int(5))
        #expect(try g.readComputedScalar(plusOne) == .int(11))  // the scalar reads were dependencies
        #expect(calls == 2)
        try g.write(a, .int(-1))
        #expect(throws: TetherError.self) { try g.readComputedScalar(doubled) }
        #expect(throws: TetherError.self) { try g.readComputedScalar(doubled) }
        #expect(calls == 3)  // the error is cached
    }

    @Test func untrackedSectionsAndNestedEvaluationsRecordForTheRightNode() throws {
        let g = Graph()
        let tracked = try g.createState(.int(1)), hidden = try g.createState(.int(10)), inner = try g.createState(.int(100))
        var innerCalls = 0, outerCalls = 0
        let nested = try g.createDerived(.computed, body: computing({ (r) throws(TetherError) in
            innerCalls += 1
            r = try g.read(inner, tracked: true)
        }))
        let outer = try g.createDerived(.computed, body: computing({ (r) throws(TetherError) in
            outerCalls += 1
            guard case let .int(t) = try g.readScalar(tracked, tracked: true) else { throw TetherError(.wrongType, "not an int") }
            g.beginUntracked()
            // Evaluated inside the untracked section: its own read of `inner`
            // is still its dependency, and the section resumes after it.
            guard case let .int(n) = try g.readComputedScalar(nested, tracked: true),
                  case let .int(h) = try g.readScalar(hidden, tracked: true) else { throw TetherError(.wrongType, "not an int") }
            try g.endUntracked()
            r = .int(t + h + n)
        }))
        #expect(g.trackTarget == -1)
        #expect(try g.readComputedScalar(outer) == .int(111))
        #expect(g.trackTarget == -1 && g.untrackedDepth == 0)
        try g.write(hidden, .int(20))           // read untracked: no re-evaluation
        #expect(try g.readComputedScalar(outer) == .int(111))
        #expect(outerCalls == 1)
        try g.write(inner, .int(200))           // nested's dependency, not outer's
        #expect(try g.readComputedScalar(nested) == .int(200))
        #expect(innerCalls == 2)
        #expect(try g.readComputedScalar(outer) == .int(111))
        #expect(outerCalls == 1)
        try g.write(tracked, .int(2))
        #expect(try g.readComputedScalar(outer) == .int(222))
        #expect(outerCalls == 2)
    }
}

/// A compute body whose reads may throw: the error becomes the computed's.
private func computing(_ compute: @escaping (inout Value) throws(TetherError) -> Void) -> DerivedBody {
    DerivedBody(compute: { r in
        do throws(TetherError) { try compute(&r); return nil } catch { return error }
    })
}
