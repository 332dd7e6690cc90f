import Foundation
import Glibc
import TetherCore
import TetherDaemon
import TetherDaemonFuzz
import TetherWire
import XCTest

/// What the fuzzer found (docs/robustness.md), each as the exchange that
/// shows it, and every input of the seed corpus and of the regressions
/// directory replayed through the fuzzer's own checks (DaemonFuzzer).
final class FuzzRegressionTests: XCTestCase {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().path + "/fuzz"

    /// Every file of Tests/fuzz/corpus, corpus-store (the store target's
    /// own seeds) and regressions passes every invariant of every target.
    func testCorpusAndRegressionsKeepEveryInvariant() throws {
        var count = 0
        for directory in ["corpus", "corpus-store", "regressions"] {
            let path = Self.fuzzDirectory + "/" + directory
            for name in try FileManager.default.contentsOfDirectory(atPath: path).sorted() {
                let data = try XCTUnwrap(FileManager.default.contents(atPath: path + "/" + name))
                let problems = DaemonFuzzer.run([UInt8](data))
                XCTAssertEqual(problems, [], "\(directory)/\(name)")
                count += 1
            }
        }
        XCTAssertGreaterThan(count, 20)
    }

    /// Found by the hour-long fuzz run (Tests/fuzz/regressions/resync-without-states):
    /// a prefix watch resuming from history the log no longer holds, when
    /// no state matches the prefix any more, got a resync snapshot of no
    /// states, so nothing said "resync": the client kept the states it had,
    /// which had all been removed. The progress that ends a resync is
    /// flagged too.
    func testAResyncWithNoStateToSendIsStillFlagged() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        c.ok("io.tether.Set", ["name": "app.x", "value": .int(1)])                  // revision 1
        let w = d.connect()
        w.send("io.tether.Watch", ["prefix": "app.", "from_revision": 0, "epoch": "e1"], more: true)
        XCTAssertEqual(w.replies().map { $0.parameters.string("event") }, ["change", "progress"], "history held: a replay")
        c.ok("io.tether.Remove", ["name": "app.x"])                                 // revision 2
        XCTAssertEqual(c.ok("io.tether.Compact").int("oldest_revision"), 1)
        // A client that saw revision 0 (app.x did not exist yet) and one that
        // saw 1 (app.x = 1) both need revision 2's removal, which only a
        // resync can tell the first now.
        let late = d.connect()
        late.send("io.tether.Watch", ["prefix": "app.", "from_revision": 0, "epoch": "e1"], more: true)
        let replies = late.replies()
        XCTAssertEqual(replies.map { $0.parameters.string("event") }, ["progress"])
        XCTAssertEqual(replies.first?.parameters.bool("resync"), true)
        // History still held: a resume, not flagged.
        let resumed = d.connect()
        resumed.send("io.tether.Watch", ["prefix": "app.", "from_revision": 1, "epoch": "e1"], more: true)
        let again = resumed.replies()
        XCTAssertEqual(again.map { $0.parameters.string("event") }, ["change", "progress"])
        XCTAssertNil(again.last?.parameters.bool("resync"))
    }

    /// Found by the fuzzer (Tests/fuzz/regressions/path-watch-array-remove):
    /// removing the array element a path watch points at moves the next
    /// element into its place, and the watch was sent a remove.
    func testPathWatchSeesTheNextElementMoveIntoARemovedOne() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        c.ok("io.tether.Set", ["name": "a", "value": json(#"[[1,2],{"x":1},3]"#)])
        let w = d.connect()
        w.send("io.tether.Watch", ["names": json(#"["a"]"#), "path": "/0"], more: true)
        XCTAssertEqual(w.replies().first?.parameters["state"], json(#"{"name":"a","exists":true,"value":[1,2],"type":"array","modified":1}"#))
        c.ok("io.tether.Remove", ["name": "a", "path": "/0"])                       // [{"x":1},3]
        XCTAssertEqual(w.replies().last?.parameters["changes"], json(#"[{"name":"a","op":"set","path":"/0","value":{"x":1}}]"#))
        c.ok("io.tether.Remove", ["name": "a", "path": "/1"])                       // [{"x":1}]: after the path
        XCTAssertTrue(w.replies().isEmpty)
        c.ok("io.tether.Remove", ["name": "a", "path": "/0"])                       // []: nothing moves in
        XCTAssertEqual(w.replies().last?.parameters["changes"], json(#"[{"name":"a","op":"remove","path":"/0"}]"#))
        // An object member named like an index: removed, nothing moves.
        c.ok("io.tether.Set", ["name": "o", "value": json(#"{"0":{"k":1},"1":2}"#)])
        let o = d.connect()
        o.send("io.tether.Watch", ["names": json(#"["o"]"#), "path": "/0/k"], more: true)
        _ = o.replies()
        c.ok("io.tether.Remove", ["name": "o", "path": "/0"])
        XCTAssertEqual(o.replies().last?.parameters["changes"], json(#"[{"name":"o","op":"remove","path":"/0/k"}]"#))
    }

    /// The same above the path: removing the element that holds it.
    func testPathWatchBelowARemovedElement() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        c.ok("io.tether.Set", ["name": "a", "value": json(#"[{"k":1},{"k":2}]"#)])
        let w = d.connect()
        w.send("io.tether.Watch", ["names": json(#"["a"]"#), "path": "/0/k"], more: true)
        _ = w.replies()
        c.ok("io.tether.Remove", ["name": "a", "path": "/0"])                       // [{"k":2}]: /0/k is now 2
        XCTAssertEqual(w.replies().last?.parameters["changes"], json(#"[{"name":"a","op":"set","path":"/0/k","value":2}]"#))
        // Resuming across it cannot be replayed without the values of the
        // time: a resync, not a guess.
        let late = d.connect()
        late.send("io.tether.Watch", ["names": json(#"["a"]"#), "path": "/0/k", "from_revision": 1, "epoch": "e1"], more: true)
        XCTAssertEqual(late.replies().first?.parameters.bool("resync"), true)
    }

    /// One commit that moves the watched element and then writes below
    /// it: the watch gets the value the commit left at its path, once, not
    /// a write below it that its copy cannot take (a remove of a member
    /// the sent value no longer has).
    func testOneCommitThatMovesAndWritesBelowThePath() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        c.ok("io.tether.Set", ["name": "a", "value": json("[0]")])
        let w = d.connect()
        w.send("io.tether.Watch", ["names": json(#"["a"]"#), "path": "/1"], more: true)
        _ = w.replies()
        c.ok("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"a","path":"/-","value":{"k":1,"j":2}},{"op":"remove","name":"a","path":"/1/k"}]"#)])
        XCTAssertEqual(w.replies().last?.parameters["changes"], json(#"[{"name":"a","op":"set","path":"/1","value":{"j":2}}]"#))
    }
}

extension FuzzRegressionTests {
    /// Found by the fuzzer (Tests/fuzz/regressions/bad-json-after-watch):
    /// a message that is not a call, sent on a connection its Watch holds,
    /// was answered with an error reply in the middle of the stream (which
    /// ends the Watch for a Varlink client) and the changes kept coming.
    /// Like any call after Watch, it now closes the connection unanswered.
    func testNotACallAfterWatchClosesTheConnectionUnanswered() throws {
        let d = try InProcessDaemon()
        let w = d.connect()
        w.send("io.tether.Watch", ["names": json(#"["a"]"#)], more: true)
        XCTAssertEqual(w.replies().map(\.continues), [true, true])          // snapshot, progress
        w.send(raw: Array(#"{"method":"io.tether.Watch","parameters":{"#.utf8) + [0])
        XCTAssertEqual(w.replies(), [])
        XCTAssertNotNil(w.session.closeReason)
        w.send(raw: Array("[1]".utf8) + [0])                                   // after the close: nothing
        XCTAssertEqual(w.replies(), [])
    }
}

extension FuzzRegressionTests {
    /// Reported by the fuzzer's restart check (Tests/fuzz/regressions/
    /// tag-with-nul-after-restart): the SQLite store bound and read its
    /// text as C strings, so a tag holding NUL ("x\u0000y", valid JSON and
    /// a valid Swift string) came back from the log cut at the NUL ("x"):
    /// a watch resuming across a restart got another tag than the live
    /// watches had. Text is now bound and read with its length in bytes.
    func testTagWithNULSurvivesARestart() throws {
        let template = NSTemporaryDirectory() + "tether-sqlite.XXXXXX"
        var bytes = Array(template.utf8CString)
        let directory = String(cString: try XCTUnwrap(mkdtemp(&bytes)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let sqlite = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 10)
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            let store = try Store(epoch: "e1", sink: sqlite)
            let service = Service(store: store, policy: AccessPolicy(owner: getuid()), log: EventLog(quiet: true))
            let c = InProcessDaemon.Client(session: service.open(peer: Peer(pid: 1, uid: getuid(), gid: getgid())), limits: store.limits)
            c.ok("io.tether.Set", ["name": "a", "value": 1, "tag": "x\u{0}y"])
            c.ok("io.tether.Set", ["name": "b", "value": 2, "tag": ""])
            try sqlite.sync()
        }
        let contents = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 10).load()
        XCTAssertEqual(contents.log.map(\.tag), ["x\u{0}y", ""])
        XCTAssertEqual(contents.epoch, "e1")
        XCTAssertEqual(contents.states.map(\.name), ["a", "b"])
    }
}
