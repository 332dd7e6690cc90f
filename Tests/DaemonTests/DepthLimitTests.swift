import Foundation
import Glibc
import TetherCore
import TetherRuntime
import TetherWire
import XCTest

/// Issue 30 §1: one depth limit, held everywhere. A state's value nests at
/// most `Value.maxNesting` (512) levels of arrays and objects; every write
/// path refuses one level more with OutOfRange, and every layer behind
/// the check (store rows, log rows, snapshots, replies, watch events, the
/// clients) holds a value at the limit, across SIGTERM and SIGKILL.
final class DepthLimitTests: XCTestCase {
    static let limit = Value.maxNesting

    /// `[[…]]`, `depth` levels of arrays, as JSON text.
    static func deep(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    /// A client on a real daemon's socket, reading replies with the
    /// limits every client has (`Limits.defaults`).
    final class RawClient {
        let fd: Int32
        private var decoder = MessageDecoder(maxMessage: Limits.defaults.maxReply)

        init(_ daemon: DaemonFixture) throws { fd = try connectStream(daemon.socketPath) }
        deinit { close(fd) }

        func send(_ text: String) throws {
            var bytes = Array(text.utf8)
            bytes.append(0)
            var done = 0
            while done < bytes.count {
                let n = bytes[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { throw FixtureError("write failed: errno \(errno)") }
                done += n
            }
        }

        /// The next reply (blocking read; the daemon always answers).
        func next() throws -> Reply {
            while true {
                if let message = try decoder.next() { return try Reply(parsing: message) }
                var buffer = [UInt8](repeating: 0, count: 65536)
                let n = read(fd, &buffer, buffer.count)
                guard n > 0 else { throw FixtureError("the daemon closed the connection") }
                decoder.append(buffer[..<n])
            }
        }

        func call(_ method: String, _ parameters: String) throws -> Reply {
            try send(#"{"method":"io.tether.\#(method)","parameters":\#(parameters)}"#)
            return try next()
        }
    }

    private func depth(_ value: Value?) -> Int { value?.nestingDepth ?? -1 }

    private func newDirectory() throws -> String {
        let directory = try temporaryDirectory("tether-depth")
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    /// The states every write path wrote, and the depth each holds.
    private let written = ["fast": limit, "generic": limit, "path": limit, "tx": limit, "declared": limit]

    private func checkReadable(_ daemon: DaemonFixture, file: StaticString = #filePath, line: UInt = #line) throws {
        let c = try RawClient(daemon)
        for (name, expected) in written.sorted(by: { $0.key < $1.key }) {
            let r = try c.call("Get", #"{"name":"\#(name)"}"#)
            XCTAssertNil(r.error, "\(name): \(r.parameters)", file: file, line: line)
            XCTAssertEqual(depth(r.parameters["value"]), expected, name, file: file, line: line)
        }
    }

    func testEveryWritePathTakesTheLimitAndRefusesOneMoreAndTheStoreHoldsIt() throws {
        let data = try newDirectory() + "/data"
        var daemon: DaemonFixture? = try DaemonFixture(arguments: ["--data-dir", data])
        let c = try RawClient(daemon!)
        let watcher = try RawClient(daemon!)
        let limit = Self.limit
        let atLimit = Self.deep(limit)

        // A watch of everything, before the writes: its snapshot (nothing) and progress.
        try watcher.send(#"{"method":"io.tether.Watch","parameters":{"prefix":""},"more":true}"#)
        while try watcher.next().parameters.string("event") != "progress" {}

        // At the limit: accepted on every path.
        // The fast Set (SimpleSetCall's shape: name and value only).
        XCTAssertNil(try c.call("Set", #"{"name":"fast","value":\#(atLimit)}"#).error)
        // The generic Set (a tag takes it past the fast path).
        XCTAssertNil(try c.call("Set", #"{"name":"generic","value":\#(atLimit),"tag":"t"}"#).error)
        // A Set at a path: the path's 2 levels and the value's 510.
        XCTAssertNil(try c.call("Set", #"{"name":"path","value":{"a":{}}}"#).error)
        XCTAssertNil(try c.call("Set", #"{"name":"path","path":"/a/b","value":\#(Self.deep(limit - 2))}"#).error)
        XCTAssertNil(try c.call("Transaction", #"{"ops":[{"op":"set","name":"tx","value":\#(atLimit)}]}"#).error)
        XCTAssertNil(try c.call("Declare", #"{"name":"declared","descriptor":{},"value":\#(atLimit)}"#).error)

        // One level more: OutOfRange on every path, nothing changes.
        let oneMore = Self.deep(limit + 1)
        let refused = [
            try c.call("Set", #"{"name":"fast","value":\#(oneMore)}"#),
            try c.call("Set", #"{"name":"generic","value":\#(oneMore),"tag":"t"}"#),
            try c.call("Set", #"{"name":"path","path":"/a/b","value":\#(Self.deep(limit - 1))}"#),
            try c.call("Transaction", #"{"ops":[{"op":"set","name":"tx","value":\#(oneMore)}]}"#),
            try c.call("Declare", #"{"name":"declared2","descriptor":{},"value":\#(oneMore)}"#),
        ]
        XCTAssertEqual(refused.map(\.error), Array(repeating: "io.tether.OutOfRange", count: 5),
                       "\(refused.map(\.parameters))")
        // At the root, every depth the message limit lets through past the
        // value's limit (513-518 levels) is refused too.
        for d in (limit + 1)...(Limits.defaults.maxDepth - 2) {
            XCTAssertEqual(try c.call("Set", #"{"name":"new\#(d)","value":\#(Self.deep(d))}"#).error, "io.tether.OutOfRange", "fast Set of \(d)")
            XCTAssertEqual(try c.call("Set", #"{"name":"new\#(d)","value":\#(Self.deep(d)),"tag":"t"}"#).error, "io.tether.OutOfRange", "Set of \(d)")
        }
        XCTAssertEqual(try c.call("List", "{}").parameters["states"].flatMap { if case .array(let a) = $0 { a.count } else { nil } }, 5,
                       "nothing refused was created")

        // The watcher got every write at the limit, whole: 6 commits.
        var changed: [String: Int] = [:]
        var commits = 0
        while commits < 6 {
            let r = try watcher.next()
            XCTAssertNil(r.error, "\(r.parameters)")
            guard r.parameters.string("event") == "change" else { continue }
            commits += 1
            guard case .array(let changes)? = r.parameters["changes"] else { return XCTFail("a change has changes") }
            for case .object(let change) in changes { changed[change.string("name") ?? ""] = depth(change["value"]) }
        }
        XCTAssertEqual(changed, ["fast": limit, "generic": limit, "path": limit - 2, "tx": limit, "declared": limit])

        // SIGTERM, then a new daemon on the same store: all there.
        XCTAssertEqual(daemon!.stop().status, 0)
        daemon = try DaemonFixture(arguments: ["--data-dir", data])
        try checkReadable(daemon!)

        // SIGKILL, then again.
        kill(daemon!.process.processIdentifier, SIGKILL)
        daemon!.process.waitUntilExit()
        daemon = try DaemonFixture(arguments: ["--data-dir", data])
        try checkReadable(daemon!)
    }

    func testTetherctlWatchSnapshotAndRestoreAndARemoteStateHoldTheLimit() throws {
        let daemon = try DaemonFixture()
        let atLimit = Self.deep(Self.limit)
        let watch = try StreamingProcess(DaemonFixture.product("tetherctl"),
                                         ["--address", daemon.address, "watch", "deep", "--count", "1"])
        defer { watch.terminate() }
        while true {
            let line = try XCTUnwrap(watch.readLine(), "watch ended early: \(watch.stderrText())")
            if line.contains(#""event":"progress""#) { break }
        }
        let c = try RawClient(daemon)
        XCTAssertNil(try c.call("Set", #"{"name":"deep","value":\#(atLimit)}"#).error)
        let line = try XCTUnwrap(watch.readLine(), "tetherctl watch got no change: \(watch.stderrText())")
        XCTAssertEqual(watch.wait(), 0, watch.stderrText())
        guard case .object(let event) = try Value(json: line, maxDepth: Self.limit + 8),
              case .array(let changes)? = event["changes"], case .object(let change)? = changes.first else {
            return XCTFail("not a change line: \(line.prefix(200))")
        }
        XCTAssertEqual(depth(change["value"]), Self.limit)

        // A remote state of libtether reads it.
        let runtime = try Runtime()
        let remote = try runtime.connect(to: daemon.address)
        let state = try remote.state("deep", as: Value.self)
        XCTAssertEqual(state.value.nestingDepth, Self.limit)

        // tetherctl snapshot, and a daemon started with --restore from it.
        let copy = try newDirectory() + "/copy.db"
        let snap = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "snapshot", copy])
        XCTAssertEqual(snap.status, 0, snap.stderr)
        let restored = try DaemonFixture(arguments: ["--restore", copy])
        let r = try RawClient(restored).call("Get", #"{"name":"deep"}"#)
        XCTAssertNil(r.error, "\(r.parameters)")
        XCTAssertEqual(depth(r.parameters["value"]), Self.limit)
    }

    /// A store row that cannot be read (written by hand into a stopped
    /// daemon's store) keeps nothing else from being served.
    func testAStoreWithOneBadRowStartsAndNamesIt() throws {
        let data = try newDirectory() + "/data"
        var daemon = try DaemonFixture(arguments: ["--data-dir", data])
        let c = try RawClient(daemon)
        XCTAssertNil(try c.call("Set", #"{"name":"good","value":{"a":1}}"#).error)
        XCTAssertEqual(daemon.stop().status, 0)

        let tooDeep = #"{"value":\#(Self.deep(2000))}"#
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("INSERT OR REPLACE INTO states(name, value, modified, descriptor) VALUES('bad', ?, 1, '{}')", (sys.argv[2],))
            db.execute("INSERT OR REPLACE INTO states(name, value, modified, descriptor) VALUES('garbage', 'not json', 1, '{}')")
            db.commit()
            """
        let py = try DaemonFixture.run("/usr/bin/env", ["python3", "-c", script, data + "/tether.db", tooDeep])
        XCTAssertEqual(py.status, 0, py.stderr)

        daemon = try DaemonFixture(arguments: ["--data-dir", data])
        let d = try RawClient(daemon)
        let good = try d.call("Get", #"{"name":"good"}"#)
        XCTAssertEqual(good.parameters["value"], try Value(json: #"{"a":1}"#), "the other states are served")
        for name in ["bad", "garbage"] {
            let r = try d.call("Get", #"{"name":"\#(name)"}"#)
            XCTAssertEqual(r.error, "io.tether.BadJSON", "\(r.parameters)")
            XCTAssertEqual(r.parameters.string("name"), name)
            XCTAssertTrue(r.parameters.string("message")?.contains("quarantined") == true, "\(r.parameters)")
        }
        // A Set of the whole value replaces it.
        XCTAssertNil(try d.call("Set", #"{"name":"bad","value":2}"#).error)
        XCTAssertEqual(try d.call("Get", #"{"name":"bad"}"#).parameters["value"], .int(2))
        let log = daemon.stop().log
        XCTAssertTrue(log.contains("quarantined name=bad "), log)
        XCTAssertTrue(log.contains("quarantined name=garbage "), log)
        XCTAssertTrue(log.contains("table states"), log)
    }
}
