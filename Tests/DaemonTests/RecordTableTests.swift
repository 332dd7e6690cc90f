import TetherCore
@testable import TetherDaemon
import TetherRuntime
import TetherWire
import XCTest

/// The store's table of records (`RecordTable`) against the dictionary it
/// replaced, on random inserts, replacements and removals: the same
/// records found, the same names absent, the same count, across growth and
/// the backward shifts of removal, with names that are equal as `String`s
/// but not as bytes (canonical equivalence, as the dictionary had it).
final class RecordTableTests: XCTestCase {
    func testTheTableAnswersAsTheDictionaryDid() throws {
        let runtime = try Runtime()
        func record(_ name: String) throws -> StateRecord {
            StateRecord(name: name, state: try runtime.makeState(Value.int(1)), modified: 1, descriptor: Descriptor(), sizeBound: 1)
        }
        var table = RecordTable()
        var reference: [String: StateRecord] = [:]
        // A fixed sequence (Knuth's MMIX LCG, high bits): the same every run.
        var x: UInt64 = 36
        func next() -> UInt64 {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return x >> 33
        }
        for i in 0..<20_000 {
            let name = "s\(next() % 3000)"
            switch next() % 10 {
            case 0..<6:
                let r = try record(name)
                table.insert(r)
                reference[name] = r
            case 6..<9:
                XCTAssertTrue(table.removeValue(forKey: name) === reference.removeValue(forKey: name), "remove \(name) at step \(i)")
            default:
                XCTAssertTrue(table[name] === reference[name], "find \(name) at step \(i)")
            }
            if i % 997 == 0 {
                for (n, r) in reference { XCTAssertTrue(table[n] === r, "\(n) at step \(i)") }
            }
        }
        XCTAssertEqual(table.count, reference.count)
        XCTAssertEqual(Set(table.keys), Set(reference.keys))
        XCTAssertEqual(Set(table.values.map(ObjectIdentifier.init)), Set(reference.values.map(ObjectIdentifier.init)))
        for n in 0..<3000 { XCTAssertTrue(table["s\(n)"] === reference["s\(n)"], "s\(n) at the end") }
        XCTAssertLessThan(table.longestProbe, 64, "probes stay short at most 3/4 full")

        // "é" precomposed and decomposed are one name, as in a dictionary.
        let composed = try record("caf\u{E9}")
        table.insert(composed)
        XCTAssertTrue(table["cafe\u{301}"] === composed)
        XCTAssertTrue(table.removeValue(forKey: "cafe\u{301}") === composed)
        XCTAssertNil(table["caf\u{E9}"])

        table.removeAll()
        XCTAssertEqual(table.count, 0)
        XCTAssertNil(table["s1"])
        table.reserveCapacity(100)
        table.insert(try record("s1"))
        XCTAssertEqual(table.count, 1)
    }
}
