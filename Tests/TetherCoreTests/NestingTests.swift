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
