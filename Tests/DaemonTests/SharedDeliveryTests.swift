import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// A commit's reply is encoded once for every watcher that gets the same
/// filtered list (Service.publish): watchers of one path, of another path,
/// and of some of a transaction's states must each still get exactly
/// their own list, and the same bytes as a watcher alone would.
final class SharedDeliveryTests: XCTestCase {
    func json(_ text: String) -> Value { try! Value(json: text) }

    func watch(_ d: InProcessDaemon, _ parameters: [String: Value]) -> InProcessDaemon.Client {
        let c = d.connect()
        c.send("io.tether.Watch", parameters, more: true)
        XCTAssertEqual(c.replies().last?.parameters.string("event"), "progress")
        return c
    }

    func testEachWatcherGetsItsOwnFilteredList() throws {
        let d = try InProcessDaemon()
        let writer = d.connect()
        writer.ok("io.tether.Set", ["name": "a", "value": json(#"{"n":0,"m":0}"#)])
        writer.ok("io.tether.Set", ["name": "b", "value": json(#"{"n":0}"#)])
        let n1 = watch(d, ["names": json(#"["a"]"#), "path": "/n"])
        let n2 = watch(d, ["names": json(#"["a"]"#), "path": "/n"])
        let nBoth = watch(d, ["names": json(#"["a","b"]"#), "path": "/n"])
        let m = watch(d, ["names": json(#"["a"]"#), "path": "/m"])
        let onlyB = watch(d, ["names": json(#"["b"]"#), "path": "/n"])
        let root = watch(d, ["prefix": ""])

        writer.ok("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"a","path":"/n","value":1},{"op":"set","name":"b","value":{"n":2}}]"#)])
        func changes(_ c: InProcessDaemon.Client) -> Value? {
            let r = c.replies()
            XCTAssertEqual(r.count, 1)
            return r.first?.parameters["changes"]
        }
        let a1 = json(#"[{"name":"a","op":"set","path":"/n","value":1}]"#)
        XCTAssertEqual(changes(n1), a1)
        XCTAssertEqual(changes(n2), a1)
        XCTAssertEqual(changes(nBoth), json(#"[{"name":"a","op":"set","path":"/n","value":1},{"name":"b","op":"set","path":"/n","value":2}]"#))
        XCTAssertTrue(m.replies().isEmpty, "a sibling's change is not sent")
        XCTAssertEqual(changes(onlyB), json(#"[{"name":"b","op":"set","path":"/n","value":2}]"#))
        XCTAssertEqual(changes(root), json(#"[{"name":"a","op":"set","path":"/n","value":1},{"name":"b","op":"set","path":"","value":{"n":2}}]"#))

        // A write above the path reaches each as a set at its own path.
        writer.ok("io.tether.Set", ["name": "a", "value": json(#"{"n":5,"m":6}"#)])
        XCTAssertEqual(changes(n1), json(#"[{"name":"a","op":"set","path":"/n","value":5}]"#))
        XCTAssertEqual(changes(m), json(#"[{"name":"a","op":"set","path":"/m","value":6}]"#))
        XCTAssertEqual(changes(n2), json(#"[{"name":"a","op":"set","path":"/n","value":5}]"#))
        XCTAssertEqual(changes(nBoth), json(#"[{"name":"a","op":"set","path":"/n","value":5}]"#))
        XCTAssertTrue(onlyB.replies().isEmpty)
        _ = root.replies()
    }

    /// The shared bytes are what a lone watcher of the same path gets.
    func testSharedBytesAreALoneWatchersBytes() throws {
        let lone = try InProcessDaemon(), crowd = try InProcessDaemon()
        var crowdWatchers: [InProcessDaemon.Client] = []
        let loneWriter = lone.connect(), crowdWriter = crowd.connect()
        for (d, w) in [(lone, loneWriter), (crowd, crowdWriter)] {
            w.ok("io.tether.Set", ["name": "s", "value": json(#"{"x":{"y":[1,2]},"z":"é"}"#)])
            _ = d
        }
        let single = lone.connect()
        single.send("io.tether.Watch", ["names": json(#"["s"]"#), "path": "/x"], more: true)
        _ = single.session.takeOutput()
        for _ in 0..<3 {
            let c = crowd.connect()
            c.send("io.tether.Watch", ["names": json(#"["s"]"#), "path": "/x"], more: true)
            _ = c.session.takeOutput()
            crowdWatchers.append(c)
        }
        for value in [#"{"x":{"y":[3]},"z":"é"}"#, #"{"x":null}"#, #"{"z":1}"#] {
            loneWriter.ok("io.tether.Set", ["name": "s", "value": json(value)])
            crowdWriter.ok("io.tether.Set", ["name": "s", "value": json(value)])
            let expected = single.session.takeOutput()
            XCTAssertFalse(expected.isEmpty, value)
            for c in crowdWatchers { XCTAssertEqual(c.session.takeOutput(), expected, value) }
        }
    }
}
