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
        var generator = SplitMix(seed: 36)
        for i in 0..<20_000 {
            let name = "s\(generator.next() % 3000)"
            switch generator.next() % 10 {
            case 0..<6:
                let r = try record(name)
                table[name] = r
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
        table["caf\u{E9}"] = composed
        XCTAssertTrue(table["cafe\u{301}"] === composed)
        XCTAssertTrue(table.removeValue(forKey: "cafe\u{301}") === composed)
        XCTAssertNil(table["caf\u{E9}"])

        table.removeAll()
        XCTAssertEqual(table.count, 0)
        XCTAssertNil(table["s1"])
        table.reserveCapacity(100)
        table["s1"] = try record("s1")
        XCTAssertEqual(table.count, 1)
    }
}

/// A small deterministic generator (the test's sequence is the same every run).
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
