import Foundation
import Glibc
import TetherCore
import XCTest

/// tetherctl, run as a process, against a real tetherd from `DaemonFixture`.
/// Nothing sleeps: a watch is read line by line, and the writes it must
/// see are made only after its snapshot and progress lines have arrived.
final class TetherctlTests: XCTestCase {
    private var daemon: DaemonFixture!

    override func setUpWithError() throws {
        daemon = try DaemonFixture()
    }

    override func tearDown() {
        daemon?.stop()
        daemon = nil
    }

    // MARK: Helpers

    /// Runs tetherctl with `--address` of the fixture's daemon.
    @discardableResult
    private func ctl(_ arguments: String..., input: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        try DaemonFixture.run("tetherctl", ["--address", daemon.address] + arguments, input: input)
    }

    /// Runs tetherctl, expects exit 0, and returns its stdout as one JSON object.
    @discardableResult
    private func ok(_ arguments: String..., input: String? = nil, file: StaticString = #filePath,
                    line: UInt = #line) throws -> ValueObject {
        let r = try DaemonFixture.run("tetherctl", ["--address", daemon.address] + arguments, input: input)
        XCTAssertEqual(r.status, 0, "tetherctl \(arguments.joined(separator: " ")): \(r.stderr)", file: file, line: line)
        XCTAssertEqual(r.stdout.filter { $0 == "\n" }.count, 1, "one line of JSON: \(r.stdout)", file: file, line: line)
        return try object(r.stdout)
    }

    /// Expects `status` and one line on stderr that names `error`.
    private func fails(_ status: Int32, naming error: String, _ arguments: String..., input: String? = nil,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try DaemonFixture.run("tetherctl", ["--address", daemon.address] + arguments, input: input)
        XCTAssertEqual(r.status, status, "tetherctl \(arguments.joined(separator: " ")): \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stderr.contains(error), "stderr names \(error): \(r.stderr)", file: file, line: line)
        XCTAssertEqual(r.stderr.filter { $0 == "\n" }.count, 1, "one line on stderr: \(r.stderr)", file: file, line: line)
        XCTAssertEqual(r.stdout, "", "nothing on stdout", file: file, line: line)
    }

    private func object(_ text: String) throws -> ValueObject {
        guard case .object(let o) = try Value(json: text) else { throw FixtureError("not a JSON object: \(text)") }
        return o
    }

    private func json(_ text: String) throws -> Value { try Value(json: text) }

    private func int(_ value: Value?) -> Int64? {
        if case .int(let n)? = value { return n }
        return nil
    }

    private func string(_ value: Value?) -> String? {
        if case .string(let s)? = value { return s }
        return nil
    }

    // MARK: get, set, rm

    func testSetAndGetWholeValueAndPath() throws {
        let set = try ok("set", "settings", #"{"theme":"dark","font":{"size":11}}"#)
        XCTAssertEqual(set["changed"], .bool(true))
        let revision = try XCTUnwrap(int(set["revision"]))

        let whole = try ok("get", "settings")
        XCTAssertEqual(whole["value"], try json(#"{"theme":"dark","font":{"size":11}}"#))
        XCTAssertEqual(whole["type"], .string("object"))
        XCTAssertEqual(int(whole["modified"]), revision)

        let size = try ok("get", "settings", "/font/size")
        XCTAssertEqual(size["value"], .int(11))
        XCTAssertEqual(size["type"], .string("int"))

        let write = try ok("set", "settings", "/font/size", "12", "--tag", "ui", "--origin", "7")
        XCTAssertEqual(write["changed"], .bool(true))
        XCTAssertEqual(int(write["revision"]), revision + 1)
        let again = try ok("set", "settings", "/font/size", "12")
        XCTAssertEqual(again["changed"], .bool(false), "an equal value commits nothing")
        XCTAssertEqual(int(again["revision"]), revision + 1)

        // A value starting with a dash is a value; "-" reads stdin.
        XCTAssertEqual(try ok("set", "delta", "-3")["changed"], .bool(true))
        XCTAssertEqual(try ok("get", "delta")["value"], .int(-3))
        XCTAssertEqual(try ok("set", "settings", "/theme", "-", input: #""light""#)["changed"], .bool(true))

        let r = try ctl("get", "settings", "--value-only")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try json(r.stdout), try json(#"{"theme":"light","font":{"size":12}}"#))

        let pretty = try ctl("get", "settings", "--pretty")
        XCTAssertGreaterThan(pretty.stdout.filter { $0 == "\n" }.count, 3)
        XCTAssertEqual(try object(pretty.stdout)["value"], try json(#"{"theme":"light","font":{"size":12}}"#))
    }

    func testBytesArePrintedAsReceived() throws {
        XCTAssertEqual(try ok("set", "avatar", #""iVBORw==""#, "--bytes-at", "")["changed"], .bool(true))
        let get = try ok("get", "avatar")
        XCTAssertEqual(get["value"], .string("iVBORw=="))
        XCTAssertEqual(get["bytes_at"], .array([.string("")]))
        XCTAssertEqual(get["type"], .string("bytes"))
    }

    func testRemovePathAndState() throws {
        try ok("set", "settings", #"{"theme":"dark","font":{"size":11}}"#)
        XCTAssertEqual(try ok("rm", "settings", "/font")["changed"], .bool(true))
        XCTAssertEqual(try ok("get", "settings")["value"], try json(#"{"theme":"dark"}"#))
        try fails(5, naming: "io.tether.NotFound", "get", "settings", "/font")
        XCTAssertEqual(try ok("rm", "settings")["changed"], .bool(true))
        try fails(5, naming: "io.tether.NotFound", "get", "settings")
    }

    func testMissingStateIsExit5() throws {
        try fails(5, naming: "io.tether.NotFound", "get", "nope")
        try fails(5, naming: "io.tether.NotFound", "describe", "nope")
        let r = try ctl("get", "nope")
        XCTAssertTrue(r.stderr.hasPrefix("tetherctl: io.tether.NotFound: "), r.stderr)
        XCTAssertTrue(r.stderr.contains("nope"), r.stderr)
    }

    func testBadJSONArgumentIsAUsageErrorAndChangesNothing() throws {
        try ok("set", "theme", #""dark""#)
        let r = try ctl("set", "theme", "light")
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("not valid JSON"), r.stderr)
        XCTAssertTrue(r.stderr.contains(#"'"light"'"#), "suggests the quotes: \(r.stderr)")
        XCTAssertEqual(r.stdout, "")
        let bad = try ctl("set", "fresh", #"{"a":1,}"#)
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("line 1, column"), bad.stderr)
        XCTAssertEqual(try ok("get", "theme")["value"], .string("dark"))
        try fails(5, naming: "io.tether.NotFound", "get", "fresh")
        XCTAssertEqual(try ctl("set", "theme", "not-a-path", "1").status, 2, "a path must be a JSON Pointer")
        XCTAssertEqual(try ctl("tx", input: #"{"ops":[{"op":"sett","name":"a"}]}"#).status, 2)
        XCTAssertEqual(try ctl("tx", input: "{").status, 2)
        try fails(5, naming: "io.tether.NotFound", "get", "a")
    }

    // MARK: list

    func testListWithPrefixFollowsTruncation() throws {
        for name in ["app.b", "app.a", "apple", "other", "app.c"] {
            try ok("set", name, "1")
        }
        let list = try ok("list", "app.")
        XCTAssertEqual(names(list), ["app.a", "app.b", "app.c"])
        XCTAssertEqual(list["truncated"], .bool(false))
        let first = try XCTUnwrap(arrayItems(list["states"]).first)
        guard case .object(let entry) = first else { return XCTFail("a state is an object") }
        XCTAssertEqual(entry["type"], .string("int"))
        XCTAssertNotNil(int(entry["modified"]))

        // One state per call: tetherctl asks again until it has all.
        XCTAssertEqual(names(try ok("list", "app.", "--page-size", "1")), ["app.a", "app.b", "app.c"])
        XCTAssertEqual(names(try ok("list", "--page-size", "2")), ["app.a", "app.b", "app.c", "apple", "other"])
        XCTAssertEqual(names(try ok("list", "zzz")), [])
    }

    private func arrayItems(_ value: Value?) -> [Value] {
        if case .array(let items)? = value { return items }
        return []
    }

    private func names(_ list: ValueObject) -> [String] {
        arrayItems(list["states"]).compactMap { item in
            if case .object(let o) = item { return string(o["name"]) }
            return nil
        }
    }

    // MARK: describe, declare

    func testDeclareDescribeAndReadOnly() throws {
        let declared = try ok("declare", "volume", "--type", "double", "--min", "0", "--max", "1", "--value", "0.5")
        XCTAssertEqual(declared["created"], .bool(true))
        let described = try ok("describe", "volume")
        XCTAssertEqual(described["descriptor"], try json(#"{"type":"double","range":{"minimum":0.0,"maximum":1.0}}"#))
        XCTAssertEqual(described["type"], .string("double"))

        try fails(1, naming: "io.tether.OutOfRange", "set", "volume", "1.5")
        try fails(1, naming: "io.tether.WrongType", "set", "volume", #""loud""#)
        XCTAssertEqual(try ok("set", "volume", "1")["changed"], .bool(true), "an int in a double state")
        XCTAssertEqual(try ok("get", "volume")["value"], .double(1))

        XCTAssertEqual(try ok("declare", "build.id", "--type", "string", "--read-only", "--value", #""r1""#)["created"],
                       .bool(true))
        XCTAssertEqual(try ok("describe", "build.id")["descriptor"], try json(#"{"type":"string","read_only":true}"#))
        try fails(1, naming: "io.tether.ReadOnly", "set", "build.id", #""r2""#)
        try fails(1, naming: "io.tether.ReadOnly", "rm", "build.id")
        XCTAssertEqual(try ok("get", "build.id")["value"], .string("r1"))

        // Declared again without --read-only: writable.
        XCTAssertEqual(try ok("declare", "build.id", "--type", "string")["created"], .bool(false))
        XCTAssertEqual(try ok("set", "build.id", #""r2""#)["changed"], .bool(true))

        // A value that does not satisfy the descriptor: nothing changes.
        try fails(1, naming: "io.tether.WrongType", "declare", "build.id", "--type", "int")
        XCTAssertEqual(try ok("describe", "build.id")["descriptor"], try json(#"{"type":"string"}"#))

        XCTAssertEqual(try ctl("declare", "x", "--type", "float").status, 2, "an unknown type is a usage error")
    }

    // MARK: tx

    func testTransactionIsAllOrNothing() throws {
        try ok("declare", "volume", "--type", "double", "--value", "0.5")
        let refused = try ctl("tx", input: #"""
            {"ops":[{"op":"set","name":"a","value":1},{"op":"set","name":"volume","value":"loud"}]}
            """#)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("io.tether.WrongType"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains(#""op":1"#), "names the op: \(refused.stderr)")
        try fails(5, naming: "io.tether.NotFound", "get", "a")

        let before = try XCTUnwrap(int(try ok("stats")["revision"]))
        let done = try ok("tx", "--tag", "pair", input: #"""
            {"ops":[{"op":"set","name":"a","value":1},{"op":"set","name":"b","value":{"n":2}},
                    {"op":"set","name":"b","path":"/m","value":3}]}
            """#)
        XCTAssertEqual(done["changed"], .bool(true))
        let revision = try XCTUnwrap(int(done["revision"]))
        XCTAssertEqual(revision, before + 1, "one commit, one revision")
        XCTAssertEqual(int(try ok("get", "a")["modified"]), revision)
        XCTAssertEqual(try ok("get", "b")["value"], try json(#"{"n":2,"m":3}"#))
    }

    func testFailedPreconditionIsExit4() throws {
        let a = try XCTUnwrap(int(try ok("set", "a", "1")["revision"]))
        try ok("set", "a", "2")
        let path = daemon.directory + "/tx.json"
        try #"""
            {"ops":[{"op":"set","name":"a","value":10},{"op":"remove","name":"a","path":""}],
             "preconditions":[{"name":"a","revision":\#(a)}]}
            """#.write(toFile: path, atomically: true, encoding: .utf8)
        try fails(4, naming: "io.tether.RevisionMismatch", "tx", path)
        XCTAssertEqual(try ok("get", "a")["value"], .int(2))

        // The same check with the right revision holds; revision 0: must not exist.
        let current = try XCTUnwrap(int(try ok("get", "a")["modified"]))
        let check = try ok("tx", input: #"{"ops":[],"preconditions":[{"name":"a","revision":\#(current)},{"name":"z","revision":0}]}"#)
        XCTAssertEqual(check["changed"], .bool(false))
        try fails(4, naming: "io.tether.RevisionMismatch", "tx",
                  input: #"{"ops":[{"op":"set","name":"z","value":1}],"preconditions":[{"name":"a","revision":0}]}"#)
        try fails(5, naming: "io.tether.NotFound", "get", "z")
    }

    // MARK: watch

    /// `tetherctl graph`: a watching tetherctl appears as a process node
    /// (command, pid) with an edge to the state it watches; PREFIX filters;
    /// --svg runs Graphviz's dot (when installed).
    func testGraphShowsWhoWatchesWhat() throws {
        try ok("set", "app.theme", #""dark""#)
        let watch = try StreamingProcess(DaemonFixture.product("tetherctl"),
                                         ["--address", daemon.address, "watch", "app.theme", "--path", "/x"])
        defer { watch.terminate() }
        _ = try XCTUnwrap(watch.readLine(), "the watch's snapshot: \(watch.stderrText())")  // it is open now
        let r = try ctl("graph")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("digraph tetherd {"), r.stdout)
        XCTAssertTrue(r.stdout.contains("[label=\"tetherctl\\npid \(watch.process.processIdentifier) uid \(getuid())\""), r.stdout)
        XCTAssertTrue(r.stdout.contains("\"pid \(watch.process.processIdentifier) uid \(getuid())\" -> \"state app.theme\" [tether_edge=\"watches\", label=\"/x\"]"), r.stdout)
        let other = try ctl("graph", "other.")
        XCTAssertEqual(other.status, 0, other.stderr)
        XCTAssertFalse(other.stdout.contains("app.theme"), other.stdout)
        if access("/usr/bin/dot", X_OK) == 0 {
            let dir = try temporaryDirectory("tetherctl-graph")
            let svg = try ctl("graph", "--svg", dir + "/g.svg")
            XCTAssertEqual(svg.status, 0, svg.stderr)
            XCTAssertTrue(try String(contentsOfFile: dir + "/g.svg", encoding: .utf8).contains("<svg"))
        }
        let missingDot = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "graph", "--png", "/tmp/x.png"],
                                               environment: ["PATH": "/nonexistent"])
        XCTAssertEqual(missingDot.status, 2)
        XCTAssertTrue(missingDot.stderr.contains("apt-get install graphviz"), missingDot.stderr)
    }

    func testWatchSeesChangesFromAnotherProcess() throws {
        try ok("set", "settings", #"{"theme":"dark"}"#)
        let watch = try StreamingProcess(DaemonFixture.product("tetherctl"),
                                         ["--address", daemon.address, "watch", "settings", "missing", "--count", "3"])
        defer { watch.terminate() }

        // Snapshots (settings, missing), then progress: only then write.
        var snapshots: [String: ValueObject] = [:]
        var progress: ValueObject?
        while progress == nil {
            let line = try XCTUnwrap(watch.readLine(), "watch ended early: \(watch.stderrText())")
            let reply = try object(line)
            switch string(reply["event"]) {
            case "snapshot":
                guard case .object(let state)? = reply["state"] else { return XCTFail("a snapshot has a state: \(line)") }
                snapshots[string(state["name"]) ?? ""] = state
            case "progress":
                progress = reply
            default:
                XCTFail("before the progress line: \(line)")
            }
        }
        XCTAssertEqual(snapshots["settings"]?["value"], try json(#"{"theme":"dark"}"#))
        XCTAssertEqual(snapshots["settings"]?["exists"], .bool(true))
        XCTAssertEqual(snapshots["missing"]?["exists"], .bool(false))
        let epoch = try XCTUnwrap(string(progress?["epoch"]))

        let r1 = try XCTUnwrap(int(try ok("set", "settings", "/theme", #""light""#, "--tag", "ui", "--origin", "7")["revision"]))
        try ok("set", "unwatched", "1")
        let r2 = try XCTUnwrap(int(try ok("set", "missing", "[1]", "--origin", "18446744073709551615")["revision"]))
        let r3 = try XCTUnwrap(int(try ok("tx", input: #"""
            {"ops":[{"op":"remove","name":"settings"},{"op":"set","name":"missing","path":"/-","value":2}],
             "tag":"doc","origin":5}
            """#)["revision"]))

        var changes: [ValueObject] = []
        while let line = watch.readLine() {
            let reply = try object(line)
            if string(reply["event"]) == "change" { changes.append(reply) }
        }
        XCTAssertEqual(watch.wait(), 0, watch.stderrText())
        XCTAssertEqual(changes.count, 3, "--count 3 stops after three change lines")
        guard changes.count == 3 else { return }
        XCTAssertEqual(changes.map { int($0["revision"]) }, [r1, r2, r3])
        XCTAssertEqual(changes.map { string($0["epoch"]) }, [epoch, epoch, epoch])
        XCTAssertEqual(changes[0]["changes"], try json(#"[{"name":"settings","op":"set","path":"/theme","value":"light"}]"#))
        XCTAssertEqual(changes[0]["tag"], .string("ui"))
        XCTAssertEqual(changes[0]["origin"], .int(7))
        XCTAssertEqual(changes[1]["changes"], try json(#"[{"name":"missing","op":"set","path":"","value":[1]}]"#))
        XCTAssertEqual(changes[1]["origin"], .int(-1), "a uint64 origin travels as the int64 with the same bits")
        XCTAssertNil(changes[1]["tag"])
        XCTAssertEqual(changes[2]["tag"], .string("doc"))
        XCTAssertEqual(changes[2]["origin"], .int(5))
        guard case .array(let last)? = changes[2]["changes"] else { return XCTFail("changes is an array") }
        XCTAssertEqual(last.count, 2, "one reply per commit, never split")
        XCTAssertTrue(last.contains(try json(#"{"name":"settings","op":"remove","path":""}"#)), "\(last)")
    }

    func testWatchPrefixPathAndResume() throws {
        try ok("set", "app.a", #"{"x":1,"y":1}"#)
        let first = try StreamingProcess(DaemonFixture.product("tetherctl"),
                                         ["--address", daemon.address, "watch", "--prefix", "app.", "--path", "/x", "--count", "0"])
        var lines: [ValueObject] = []
        while let line = first.readLine() { lines.append(try object(line)) }
        XCTAssertEqual(first.wait(), 0, first.stderrText())
        XCTAssertEqual(lines.map { string($0["event"]) }, ["snapshot", "progress"], "--count 0 stops at the first progress")
        guard lines.count == 2, case .object(let state)? = lines[0]["state"] else { return XCTFail("\(lines)") }
        XCTAssertEqual(state["value"], .int(1))
        let from = try XCTUnwrap(int(lines[1]["revision"]))
        let epoch = try XCTUnwrap(string(lines[1]["epoch"]))

        try ok("set", "app.a", "/y", "2")       // not at /x: not sent
        let rx = try XCTUnwrap(int(try ok("set", "app.a", "/x", "3")["revision"]))
        let rb = try XCTUnwrap(int(try ok("set", "app.b", #"{"x":"b"}"#)["revision"]))

        let resumed = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "watch", "--prefix", "app.", "--path", "/x",
                                                          "--from", String(from), "--epoch", epoch, "--count", "2"])
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        let replies = try resumed.stdout.split(separator: "\n").map { try object(String($0)) }
        XCTAssertEqual(replies.map { string($0["event"]) }, ["change", "change"])
        XCTAssertEqual(replies.map { int($0["revision"]) }, [rx, rb])
        XCTAssertEqual(replies.first?["changes"], try json(#"[{"name":"app.a","op":"set","path":"/x","value":3}]"#))
    }

    func testWatchEndsCleanlyOnSIGINT() throws {
        let watch = try StreamingProcess(DaemonFixture.product("tetherctl"), ["--address", daemon.address, "watch", "--prefix", ""])
        defer { watch.terminate() }
        while let line = watch.readLine() {
            if string(try object(line)["event"]) == "progress" { break }
        }
        kill(watch.process.processIdentifier, SIGINT)
        XCTAssertEqual(watch.wait(), 0, watch.stderrText())
        XCTAssertEqual(watch.process.terminationReason, .exit)
    }

    func testWatchEndsCleanlyWhenStdoutCloses() throws {
        let watch = try StreamingProcess(DaemonFixture.product("tetherctl"), ["--address", daemon.address, "watch", "gone"])
        defer { watch.terminate() }
        while let line = watch.readLine() {
            if string(try object(line)["event"]) == "progress" { break }
        }
        watch.closeStdout()
        // The next change line meets a closed pipe: EPIPE, exit 0.
        try ok("set", "gone", "1")
        XCTAssertEqual(watch.wait(), 0, watch.stderrText())
        XCTAssertEqual(watch.process.terminationReason, .exit, "not killed by SIGPIPE")
    }

    func testWatchReportsADaemonThatGoesAway() throws {
        let watch = try StreamingProcess(DaemonFixture.product("tetherctl"), ["--address", daemon.address, "watch", "a"])
        defer { watch.terminate() }
        while let line = watch.readLine() {
            if string(try object(line)["event"]) == "progress" { break }
        }
        daemon.stop()
        XCTAssertNil(watch.readLine())
        XCTAssertEqual(watch.wait(), 3)
        let stderr = watch.stderrText()
        XCTAssertTrue(stderr.hasPrefix("tetherctl: lost the connection to \(daemon.address)"), stderr)
        XCTAssertEqual(stderr.filter { $0 == "\n" }.count, 1, stderr)
    }

    func testWatchNeedsANameOrPrefix() throws {
        XCTAssertEqual(try ctl("watch").status, 2)
    }

    // MARK: stats, info, address

    func testStatsAndInfo() throws {
        try ok("set", "a", "1")
        try ok("set", "b", "2")
        let stats = try ok("stats")
        XCTAssertEqual(int(stats["states"]), 2)
        XCTAssertGreaterThanOrEqual(int(stats["revision"]) ?? 0, 2)
        XCTAssertNotNil(string(stats["epoch"]))
        XCTAssertNotNil(int(stats["oldest_revision"]))
        guard case .object(let limits)? = stats["limits"] else { return XCTFail("limits: \(stats)") }
        XCTAssertEqual(int(limits["max_ops"]), 128)

        let info = try ok("info")
        XCTAssertEqual(string(info["product"]), "tetherd")
        XCTAssertEqual(info["interfaces"].map { arrayItems($0).compactMap { string($0) }.sorted() },
                       ["io.tether", "org.varlink.service"])
    }

    func testBadAddressIsExit3() throws {
        let missing = daemon.directory + "/no-such.sock"
        let r = try DaemonFixture.run("tetherctl", ["--address", "unix:" + missing, "get", "a"])
        XCTAssertEqual(r.status, 3)
        XCTAssertTrue(r.stderr.contains("unix:" + missing), "names the address tried: \(r.stderr)")
        XCTAssertTrue(r.stderr.contains("is tetherd running?"), r.stderr)
        XCTAssertEqual(r.stdout, "")

        let malformed = try DaemonFixture.run("tetherctl", ["--address", "tcp:localhost:1", "stats"])
        XCTAssertEqual(malformed.status, 3)
        XCTAssertTrue(malformed.stderr.contains("tcp:localhost:1"), malformed.stderr)

        // The default address comes from TETHER_ADDRESS.
        let viaEnvironment = try DaemonFixture.run("tetherctl", ["stats"], environment: ["TETHER_ADDRESS": daemon.address])
        XCTAssertEqual(viaEnvironment.status, 0, viaEnvironment.stderr)
        let elsewhere = try DaemonFixture.run("tetherctl", ["stats"], environment: ["TETHER_ADDRESS": "unix:" + missing])
        XCTAssertEqual(elsewhere.status, 3)
    }

    func testHelpDocumentsExitCodes() throws {
        let r = try DaemonFixture.run("tetherctl", ["--help"])
        XCTAssertEqual(r.status, 0)
        for code in ["0  success", "1  the daemon answered with an error", "2  usage error", "3  cannot connect",
                     "4  a transaction's precondition failed", "5  no such state"] {
            XCTAssertTrue(r.stdout.contains(code), "--help says \(code)")
        }
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["frobnicate"]).status, 2, "usage errors exit 2")
    }
}

/// A child process whose stdout is read line by line as it comes (poll,
/// with a generous deadline only so that a broken daemon fails the test
/// rather than hanging it).
final class StreamingProcess: @unchecked Sendable {
    let process = Process()
    private let out = Pipe()
    private let err = Pipe()
    private var buffer: [UInt8] = []
    private var eof = false
    private var stdoutClosed = false
    private var errData = Data()
    private let errDone = DispatchSemaphore(value: 0)

    init(_ executable: String, _ arguments: [String], deadline seconds: Double = 60) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        self.seconds = seconds
        try process.run()
        let handle = err.fileHandleForReading
        DispatchQueue.global().async { [self] in
            let data = handle.readDataToEndOfFile()
            errData = data
            errDone.signal()
        }
    }

    private let seconds: Double

    /// The next line of stdout, without its newline; nil at the end.
    func readLine() -> String? {
        let fd = out.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if eof || stdoutClosed { return nil }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            let rc = poll(&pfd, 1, remaining)
            if rc == 0 {
                XCTFail("no line from \(process.arguments ?? []) within \(seconds) s")
                return nil
            }
            if rc < 0 { if errno == EINTR { continue }; return nil }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &chunk, chunk.count)
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { eof = true; continue }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// Closes the reading end: the child's next write gets EPIPE.
    func closeStdout() {
        guard !stdoutClosed else { return }
        stdoutClosed = true
        try? out.fileHandleForReading.close()
    }

    /// Waits for the exit; returns the status.
    @discardableResult
    func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// What the child wrote on stderr (after it exited).
    func stderrText() -> String {
        if process.isRunning { return "(still running)" }
        errDone.wait()
        errDone.signal()
        return String(decoding: errData, as: UTF8.self)
    }

    func terminate() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
