import Testing
@testable import TetherCore

@Suite struct NestingTests {
    func nested(_ levels: Int) -> Value {
        var v = Value.int(1)
        for _ in 0..<levels { v = .array([v]) }
        return v
    }

    @Test func depthCountsContainers() {
        #expect(Value.int(3).nestingDepth == 0)
        #expect(Value.array([]).nestingDepth == 1)
        #expect(nested(7).nestingDepth == 7)
        #expect(Value.object(ValueObject(["a": nested(2), "b": .null])).nestingDepth == 3)
    }

    @Test func insertsDeeperThanTheLimitAreRefused() throws {
        #expect(throws: Never.self) { try Value.checkNesting(of: nested(511), under: 1) }
        let e = #expect(throws: TetherError.self) { try Value.checkNesting(of: nested(512), under: 1) }
        #expect(e?.code == .outOfRange)
        #expect(throws: Never.self) { try Value.checkNesting(of: .string("x"), under: 10_000) }
    }

    @Test func graphPathWriteKeepsTheLimit() throws {
        let g = Graph()
        let s = try g.createState(.array([.null]))
        #expect(throws: TetherError.self) { try g.write(s, nested(512), at: JSONPointer(parsing: "/0")) }
        #expect(try g.read(s) == .array([.null]))
        try g.write(s, nested(511), at: JSONPointer(parsing: "/0"))
        #expect(try g.read(s).nestingDepth == 512)
    }

    @Test func stringsCompareByteForByte() {
        #expect(Value.string("\u{e9}") != Value.string("e\u{301}"))
        #expect(Value.string("a\u{0}b") == Value.string("a\u{0}b"))
    }
}

/// The C face lends an observer's `Value?` to C by the optional's address
/// (CObservers.swift, `lend`): that is only right while a present optional
/// has exactly the layout of its `Value`.
@Suite struct OptionalValueLayoutTests {
    @Test func anOptionalValueIsLaidOutAsTheValue() throws {
        #expect(MemoryLayout<Value?>.size == MemoryLayout<Value>.size)
        #expect(MemoryLayout<Value?>.alignment == MemoryLayout<Value>.alignment)
        let samples: [Value] = [
            .null, .bool(true), .int(-7), .double(2.5), .string("héllo"), .bytes([0, 255]),
            .array([.int(1), .string("x")]), try Value(json: #"{"a":{"b":[1,2,3]}}"#),
        ]
        for sample in samples {
            let present: Value? = sample
            let seen = withUnsafePointer(to: present) { UnsafeRawPointer($0).load(as: Value.self) }
            #expect(seen == sample)
        }
    }
}

/// Graph.recompute reads a derived node's body by its raw bits, without a
/// retain (`borrowedBody`): right only while an optional class reference is
/// one pointer, null for nil, the layout of `Unmanaged?`.
@Suite struct BorrowedBodyLayoutTests {
    @Test func anOptionalBodyIsOnePointer() {
        #expect(MemoryLayout<DerivedBody?>.size == MemoryLayout<UnsafeRawPointer>.size)
        #expect(MemoryLayout<DerivedBody?>.size == MemoryLayout<Unmanaged<DerivedBody>?>.size)
        let body: DerivedBody? = DerivedBody(compute: { _ in nil })
        let bits = withUnsafePointer(to: body) { UnsafeRawPointer($0).load(as: Unmanaged<DerivedBody>?.self) }
        #expect(bits?.takeUnretainedValue() === body)
        let none: DerivedBody? = nil
        #expect(withUnsafePointer(to: none) { UnsafeRawPointer($0).load(as: UInt.self) } == 0)
    }

    @Test func recomputeStillSeesTheComputeAfterFreeingItselfMidCall() throws {
        // A compute that frees its own node: the body must outlive the call.
        let g = Graph()
        let s = try g.createState(.int(1))
        var me: DerivedID?
        var freedInside = false
        let c = try g.createDerived(.computed, body: DerivedBody(compute: { result in
            if let me, !freedInside {
                freedInside = true
                _ = try? g.freeDerived(me, .computed)
            }
            result = (try? g.read(s, tracked: true)) ?? .null
            return nil
        }))
        me = c
        _ = try? g.readComputed(c)
        #expect(freedInside)
        #expect(throws: TetherError.self) { try g.readComputed(c) }
    }
}
