import Testing
@testable import TetherCore

/// The plain write (GraphPlainScalar.swift) reads and writes a state node
/// by byte offset in two places, for two instructions each; these pin the
/// layout facts it relies on, so a field moved or a `Value` case changed
/// fails here rather than in a wrong write.
@Suite struct StateNodeLayoutTests {
    /// `undescribedWithoutPathReaders`: `described` and `pathReaders` are
    /// one aligned 16-bit word.
    @Test func descriptorFlagsAndPathReadersAreOneAlignedWord() throws {
        let described = try #require(MemoryLayout<Graph.StateNode>.offset(of: \Graph.StateNode.described))
        let pathReaders = try #require(MemoryLayout<Graph.StateNode>.offset(of: \Graph.StateNode.pathReaders))
        #expect(pathReaders == described + 1)
        #expect(described % MemoryLayout<UInt16>.alignment == 0)
        #expect(MemoryLayout<DescriptorFlags>.size == 1)
    }

    /// `undescribedWithoutPathReaders` answers as the two fields do, for
    /// each of them set alone and both.
    @Test func theOneWordCheckMatchesTheFields() throws {
        let g = Graph()
        let s = try g.createState(.int(1))
        let i = Int(s.index)
        #expect(g.undescribedWithoutPathReaders(i))
        g.states[i].pathReaders = true
        #expect(!g.undescribedWithoutPathReaders(i))
        g.states[i].described = .readOnly
        #expect(!g.undescribedWithoutPathReaders(i))
        g.states[i].pathReaders = false
        #expect(!g.undescribedWithoutPathReaders(i))
        g.states[i].described = []
        #expect(g.undescribedWithoutPathReaders(i))
    }

    /// `storeIntPayload`: an int `Value`'s payload is its first eight bytes,
    /// so writing them changes the int and nothing else.
    @Test func anIntsPayloadIsTheValuesFirstEightBytes() throws {
        let g = Graph()
        let s = try g.createState(.int(7))
        for n: Int64 in [0, 1, -1, 42, Int64.max, Int64.min] {
            g.storeIntPayload(Int(s.index), n)
            #expect(try g.read(s) == .int(n))
        }
        var v = Value.int(3)
        withUnsafeMutablePointer(to: &v) { UnsafeMutableRawPointer($0).storeBytes(of: Int64(-9), as: Int64.self) }
        #expect(v == .int(-9))
    }
}
