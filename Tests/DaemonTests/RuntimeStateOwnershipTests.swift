import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// A record owns its state of the daemon's runtime by handle
/// (`RuntimeState`): every way a record goes (Remove, a Declare that
/// converts the value or changes the type lock, a refused transaction's
/// new states, a reset) frees its state once, and no other state.
final class RuntimeStateOwnershipTests: XCTestCase {
    func json(_ text: String) -> Value { try! Value(json: text) }

    func testTheRuntimeHoldsExactlyTheRecordsStates() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        func live() throws -> Int { try d.store.runtime.liveStates }
        XCTAssertEqual(try live(), 0)
        for i in 0..<20 { c.ok("io.tether.Set", ["name": .string("s\(i)"), "value": .int(Int64(i))]) }
        XCTAssertEqual(try live(), 20)
        c.ok("io.tether.Remove", ["name": "s0"])
        c.ok("io.tether.Set", ["name": "s1", "value": json(#"{"a":[1,2]}"#)])
        c.ok("io.tether.Set", ["name": "s1", "path": "/a/0", "value": 3])
        XCTAssertEqual(try live(), 19)
        // A Declare that converts an int to a double replaces the state.
        c.ok("io.tether.Declare", ["name": "s2", "descriptor": json(#"{"type":"double"}"#)])
        // One that changes the type lock, and one that only adds a range.
        c.ok("io.tether.Declare", ["name": "s3", "descriptor": json(#"{"type":"int"}"#)])
        c.ok("io.tether.Declare", ["name": "s4", "descriptor": json(#"{"range":{"minimum":0.0,"maximum":100.0}}"#)])
        c.ok("io.tether.Declare", ["name": "new", "descriptor": json(#"{"type":"string"}"#), "value": "x"])
        XCTAssertEqual(try live(), 20)
        // A transaction that makes states and then fails: none of them stays.
        c.fails("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"t1","value":1},{"op":"set","name":"t2","value":2},{"op":"set","name":"s3","value":"not an int"}]"#)],
                with: "io.tether.WrongType")
        XCTAssertEqual(try live(), 20)
        XCTAssertNil(d.store.record("t1"))
        // One that succeeds keeps them.
        c.ok("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"t1","value":1},{"op":"remove","name":"s5"}]"#)])
        XCTAssertEqual(try live(), 20)
        // Every state still reads as its record says.
        XCTAssertEqual(try d.store.get("s2", at: .root).value, .double(2))
        XCTAssertEqual(try d.store.get("s1", at: .root).value, json(#"{"a":[3,2]}"#))
        XCTAssertEqual(try d.store.get("new", at: .root).value, .string("x"))
        // A reset moves to a new runtime: the old one, still referenced
        // here, must be left with no state of the records.
        let old = d.store.runtime
        try d.service.reset()
        XCTAssertEqual(try old.liveStates, 0, "a reset frees every state")
        XCTAssertFalse(old === d.store.runtime)
        XCTAssertEqual(try live(), 0)
    }
}
