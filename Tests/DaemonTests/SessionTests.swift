import Foundation
import Glibc
import TetherCore
import TetherDaemon
import TetherWire
import XCTest

/// The daemon's behaviour call by call, in process (no sockets): what a
/// client sends, what it gets back.
final class SessionTests: XCTestCase {
    func testSetGetAndOneRevisionPerCommit() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        XCTAssertEqual(c.ok("io.tether.Set", ["name": "settings", "value": json(#"{"theme":"light","size":3}"#)]).int("revision"), 1)
        let set = c.ok("io.tether.Set", ["name": "settings", "path": "/theme", "value": "dark"])
        XCTAssertEqual(set.int("revision"), 2)
        XCTAssertEqual(set.bool("changed"), true)
        // An equal value commits nothing.
        let same = c.ok("io.tether.Set", ["name": "settings", "path": "/theme", "value": "dark"])
        XCTAssertEqual(same.int("revision"), 2)
        XCTAssertEqual(same.bool("changed"), false)
        // The whole value, equal, with and without a tag (the untagged Set
        // learns it from the write itself, the tagged one from revisions).
        let whole = c.ok("io.tether.Set", ["name": "settings", "value": json(#"{"theme":"dark","size":3}"#)])
        XCTAssertEqual(whole.int("revision"), 2)
        XCTAssertEqual(whole.bool("changed"), false)
        let tagged = c.ok("io.tether.Set", ["name": "settings", "value": json(#"{"theme":"dark","size":3}"#), "tag": "t"])
        XCTAssertEqual(tagged.int("revision"), 2)
        XCTAssertEqual(tagged.bool("changed"), false)
        let n = c.ok("io.tether.Set", ["name": "n", "value": 5])
        XCTAssertEqual(n.bool("changed"), true)
        XCTAssertEqual(n.int("revision"), 3)
        XCTAssertEqual(c.ok("io.tether.Set", ["name": "n", "value": 5]).bool("changed"), false)
        XCTAssertEqual(c.ok("io.tether.Set", ["name": "n", "value": 6, "tag": "t"]).bool("changed"), true)
        XCTAssertEqual(c.ok("io.tether.Set", ["name": "n", "value": 6, "tag": "t"]).bool("changed"), false)
        XCTAssertEqual(c.ok("io.tether.Set", ["name": "n", "value": 7]).int("revision"), 5)
        XCTAssertEqual(c.ok("io.tether.Get", ["name": "n"])["value"], Value.int(7))
        c.fails("io.tether.Set", ["name": "missing-then-here", "path": "/x", "value": 1], with: "io.tether.NotFound")
        let got = c.ok("io.tether.Get", ["name": "settings"])
        XCTAssertEqual(got["value"], json(#"{"theme":"dark","size":3}"#))
        XCTAssertEqual(got.int("modified"), 2)
        XCTAssertEqual(c.ok("io.tether.Get", ["name": "settings", "path": "/size"])["value"], Value.int(3))
        c.fails("io.tether.Get", ["name": "settings", "path": "/nope"], with: "io.tether.NotFound")
        c.fails("io.tether.Get", ["name": "missing"], with: "io.tether.NotFound")
        c.fails("io.tether.Get", ["name": "settings", "path": "theme"], with: "io.tether.BadPath")
        c.fails("io.tether.Set", ["name": "", "value": 1], with: "org.varlink.service.InvalidParameter")
        XCTAssertEqual(d.store.revision, 5)
    }

    func testPipelinedCallsAreAnsweredInOrder() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        var bytes: [UInt8] = []
        for i in 0..<20 {
            try MessageEncoder.append(Call(method: "io.tether.Set", parameters: object(["name": "n", "value": .int(Int64(i))])), to: &bytes)
            try MessageEncoder.append(Call(method: "io.tether.Get", parameters: object(["name": "n"])), to: &bytes)
        }
        c.send(raw: bytes)
        let replies = c.replies()
        XCTAssertEqual(replies.count, 40)
        for i in 0..<20 {
            XCTAssertEqual(replies[2 * i].parameters.int("revision"), Int64(i + 1))
            XCTAssertEqual(replies[2 * i + 1].parameters["value"], Value.int(Int64(i)))
        }
    }

    func testBadInputGetsAnErrorAndTheConnectionLives() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        c.send(raw: Array(#"{"method":"io.tether.Get",}"#.utf8) + [0])
        XCTAssertEqual(c.replies().first?.error, "io.tether.BadJSON")
        c.send(raw: Array(#"[1,2]"#.utf8) + [0])
        XCTAssertEqual(c.replies().first?.error, "io.tether.InvalidCall")
        c.send(raw: [0xff, 0xfe, 0])
        XCTAssertEqual(c.replies().first?.error, "io.tether.BadJSON")
        c.fails("io.tether.Frobnicate", with: "org.varlink.service.MethodNotFound")
        c.fails("com.example.Nope", with: "org.varlink.service.InterfaceNotFound")
        c.fails("io.tether.Watch", ["names": json(#"["a"]"#)], with: "org.varlink.service.ExpectedMore")
        c.fails("io.tether.Set", ["value": 1], with: "org.varlink.service.InvalidParameter")
        // An absent value is null, as Varlink says.
        c.ok("io.tether.Set", ["name": "a"])
        XCTAssertNil(c.ok("io.tether.Get", ["name": "a"])["value"])
        // oneway: applied, never answered.
        c.send("io.tether.Set", ["name": "quiet", "value": 1], oneway: true)
        XCTAssertTrue(c.replies().isEmpty)
        XCTAssertNil(c.session.closeReason)
        XCTAssertEqual(c.ok("io.tether.Get", ["name": "quiet"])["value"], Value.int(1))
    }

    func testAnOversizeMessageClosesOnlyThatConnection() throws {
        var limits = Limits.defaults
        limits.maxMessage = 1024
        let d = try InProcessDaemon(limits: limits)
        let bad = d.connect()
        let good = d.connect()
        bad.send(raw: [UInt8](repeating: UInt8(ascii: " "), count: 2000))
        XCTAssertEqual(bad.replies().first?.error, "io.tether.LimitExceeded")
        let reason = try XCTUnwrap(bad.session.closeReason)
        XCTAssertTrue(reason.contains("1024"), "the reason names the limit: \(reason)")
        XCTAssertNil(good.session.closeReason)
        good.ok("io.tether.Set", ["name": "x", "value": 1])
    }

    func testTransactionsAreAllOrNothing() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        c.ok("io.tether.Set", ["name": "a", "value": json(#"{"n":1}"#)])
        // The second op fails: the first is not applied, no revision is used.
        let failed = c.fails("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"a","path":"/n","value":2},{"op":"set","name":"zz","path":"/x","value":1}]"#)],
                             with: "io.tether.NotFound")
        XCTAssertEqual(failed.int("op"), 1)
        XCTAssertEqual(c.ok("io.tether.Get", ["name": "a"])["value"], json(#"{"n":1}"#))
        XCTAssertEqual(d.store.revision, 1)
        // A created state is not left behind by a failure either.
        c.fails("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"new","value":1},{"op":"remove","name":"gone"}]"#)],
                with: "io.tether.NotFound")
        c.fails("io.tether.Get", ["name": "new"], with: "io.tether.NotFound")
        // Success: one revision for every op, creates and removes included.
        let ok = c.ok("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"b","value":1},{"op":"set","name":"a","path":"/n","value":5},{"op":"remove","name":"b"},{"op":"set","name":"c","value":[1]}]"#),
                                                "tag": "t", "origin": 9])
        XCTAssertEqual(ok.int("revision"), 2)
        c.fails("io.tether.Get", ["name": "b"], with: "io.tether.NotFound")
        XCTAssertEqual(c.ok("io.tether.Get", ["name": "c"]).int("modified"), 2)
        // Compare-on-revision.
        let mismatch = c.fails("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"a","value":0}]"#),
                                                          "preconditions": json(#"[{"name":"a","revision":1}]"#)],
                               with: "io.tether.RevisionMismatch")
        XCTAssertEqual(mismatch.int("actual"), 2)
        c.ok("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"a","value":0}]"#),
                                       "preconditions": json(#"[{"name":"a","revision":2},{"name":"nothing","revision":0}]"#)])
        var ops = "["
        for i in 0...128 { ops += (i > 0 ? "," : "") + #"{"op":"set","name":"x","value":\#(i)}"# }
        c.fails("io.tether.Transaction", ["ops": json(ops + "]")], with: "io.tether.LimitExceeded")
    }

    func testDescriptorsAreEnforcedForEveryClient() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        XCTAssertEqual(c.ok("io.tether.Declare", ["name": "volume", "descriptor": json(#"{"type":"double","range":{"minimum":0.0,"maximum":1.0}}"#),
                                                  "value": 0.5]).bool("created"), true)
        let other = d.connect()
        other.fails("io.tether.Set", ["name": "volume", "value": 2.0], with: "io.tether.OutOfRange")
        other.fails("io.tether.Set", ["name": "volume", "value": "loud"], with: "io.tether.WrongType")
        other.ok("io.tether.Set", ["name": "volume", "value": 1])
        XCTAssertEqual(other.ok("io.tether.Get", ["name": "volume"])["value"], Value.double(1))
        c.ok("io.tether.Declare", ["name": "build", "descriptor": json(#"{"type":"string","read_only":true}"#), "value": "r1"])
        other.fails("io.tether.Set", ["name": "build", "value": "r2"], with: "io.tether.ReadOnly")
        other.fails("io.tether.Remove", ["name": "build"], with: "io.tether.ReadOnly")
        let described = other.ok("io.tether.Describe", ["name": "build"])
        XCTAssertEqual(described["descriptor"], json(#"{"type":"string","read_only":true}"#))
        // Lift read-only, write, declare again.
        c.ok("io.tether.Declare", ["name": "build", "descriptor": json(#"{"type":"string"}"#)])
        other.ok("io.tether.Set", ["name": "build", "value": "r2"])
        c.fails("io.tether.Declare", ["name": "build", "descriptor": json(#"{"type":"int"}"#)], with: "io.tether.WrongType")
        c.fails("io.tether.Declare", ["name": "n", "descriptor": json(#"{"range":{"minimum":1.0}}"#), "value": 0], with: "io.tether.OutOfRange")
        c.fails("io.tether.Get", ["name": "n"], with: "io.tether.NotFound")
    }

    func testListPagesInByteOrder() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        for name in ["app.b", "app.a", "apple", "app.c", "zeta", "app.é"] { c.ok("io.tether.Set", ["name": .string(name), "value": 1]) }
        let first = c.ok("io.tether.List", ["prefix": "app.", "limit": 2])
        XCTAssertEqual(first["states"].map { names($0) }, ["app.a", "app.b"])
        XCTAssertEqual(first.bool("truncated"), true)
        let rest = c.ok("io.tether.List", ["prefix": "app.", "after": "app.b"])
        XCTAssertEqual(rest["states"].map { names($0) }, ["app.c", "app.é"])
        XCTAssertEqual(rest.bool("truncated"), false)
    }

    func testWatchSnapshotThenChangesWithPaths() throws {
        let d = try InProcessDaemon()
        let writer = d.connect()
        writer.ok("io.tether.Set", ["name": "settings", "value": json(#"{"theme":"light","size":3}"#)])
        let w = d.connect()
        w.send("io.tether.Watch", ["names": json(#"["settings","missing"]"#), "path": "/theme"], more: true)
        var r = w.replies()
        XCTAssertEqual(r.map { $0.parameters.string("event") }, ["snapshot", "snapshot", "progress"])
        XCTAssertTrue(r.allSatisfy { $0.continues })
        XCTAssertEqual(r[0].parameters["state"], json(#"{"name":"settings","exists":true,"value":"light","type":"string","modified":1}"#))
        XCTAssertEqual(r[1].parameters["state"], json(#"{"name":"missing","exists":false,"modified":0}"#))
        // A sibling write is not sent; a write at the path is; a write above
        // it arrives as a set at the path; a root remove as a remove.
        writer.ok("io.tether.Set", ["name": "settings", "path": "/size", "value": 4])
        XCTAssertTrue(w.replies().isEmpty)
        writer.ok("io.tether.Set", ["name": "settings", "path": "/theme", "value": "dark", "tag": "ui", "origin": 7])
        r = w.replies()
        XCTAssertEqual(r.count, 1)
        XCTAssertEqual(r[0].parameters["changes"], json(#"[{"name":"settings","op":"set","path":"/theme","value":"dark"}]"#))
        XCTAssertEqual(r[0].parameters.string("tag"), "ui")
        XCTAssertEqual(r[0].parameters.int("origin"), 7)
        XCTAssertEqual(r[0].parameters.int("revision"), 3)
        writer.ok("io.tether.Set", ["name": "settings", "value": json(#"{"theme":"blue"}"#)])
        XCTAssertEqual(w.replies().first?.parameters["changes"], json(#"[{"name":"settings","op":"set","path":"/theme","value":"blue"}]"#))
        writer.ok("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"missing","value":1},{"op":"remove","name":"settings"}]"#)])
        r = w.replies()
        XCTAssertEqual(r.count, 1, "one reply per commit, never split")
        XCTAssertEqual(r[0].parameters["changes"], json(#"[{"name":"missing","op":"remove","path":"/theme"},{"name":"settings","op":"remove","path":"/theme"}]"#))
        // Nothing else may be called on a watch's connection.
        w.send("io.tether.Get", ["name": "missing"])
        XCTAssertTrue(w.replies().isEmpty, "no reply: an error would end the Watch for the client")
        XCTAssertEqual(w.session.closeReason, "a call after Watch on the same connection (give each Watch its own connection)")
        // Idle: progress at the current revision.
        let idle = d.connect()
        idle.send("io.tether.Watch", ["prefix": "zzz"], more: true)
        _ = idle.replies()
        d.service.idleTick()  // the snapshot went out since the last tick
        XCTAssertTrue(idle.replies().isEmpty)
        d.service.idleTick()
        XCTAssertEqual(idle.replies().map { $0.parameters.string("event") }, ["progress"])
    }

    func testWatchResumesOrResyncs() throws {
        let d = try InProcessDaemon(logCapacity: 3)
        let c = d.connect()
        for i in 1...3 { c.ok("io.tether.Set", ["name": "n", "value": .int(Int64(i))]) }
        let resumed = d.connect()
        resumed.send("io.tether.Watch", ["names": json(#"["n"]"#), "from_revision": 1, "epoch": "e1"], more: true)
        let r = resumed.replies()
        XCTAssertEqual(r.map { $0.parameters.int("revision") }, [2, 3, 3])
        XCTAssertEqual(r.map { $0.parameters.string("event") }, ["change", "change", "progress"])
        // Past the log (it holds revisions 1...3, so resuming from 0 works,
        // and after two more commits it does not).
        for i in 4...5 { c.ok("io.tether.Set", ["name": "n", "value": .int(Int64(i))]) }
        XCTAssertEqual(c.ok("io.tether.Stats")["oldest_revision"], Value.int(2))
        let old = d.connect()
        old.send("io.tether.Watch", ["names": json(#"["n"]"#), "from_revision": 1, "epoch": "e1"], more: true)
        let resync = old.replies()
        XCTAssertEqual(resync.map { $0.parameters.string("event") }, ["snapshot", "progress"])
        XCTAssertEqual(resync[0].parameters.bool("resync"), true)
        XCTAssertEqual(resync[0].parameters["state"], json(#"{"name":"n","exists":true,"value":5,"type":"int","modified":5}"#))
        // Another epoch: resync as well.
        let foreign = d.connect()
        foreign.send("io.tether.Watch", ["names": json(#"["n"]"#), "from_revision": 5, "epoch": "other"], more: true)
        XCTAssertEqual(foreign.replies().first?.parameters.bool("resync"), true)
    }

    func testAccessByPeerCredentials() throws {
        let me = getuid()
        let stranger: UInt32 = me == 4242 ? 4343 : 4242
        let reader: UInt32 = stranger + 1
        let policy = AccessPolicy(owner: me, entries: [.init(subject: .uid(reader), write: false, prefixes: ["pub."])])
        let d = try InProcessDaemon(policy: policy)
        d.connect().ok("io.tether.Set", ["name": "pub.a", "value": 1])
        d.connect().ok("io.tether.Set", ["name": "secret", "value": 2])
        let refused = d.connect(uid: stranger)
        refused.fails("io.tether.Get", ["name": "pub.a"], with: "org.varlink.service.PermissionDenied")
        let reason = try XCTUnwrap(refused.session.closeReason)
        XCTAssertTrue(reason.hasPrefix("refused: ") && reason.contains("\(stranger)"), "the reason names the uid: \(reason)")
        let r = d.connect(uid: reader)
        XCTAssertEqual(r.ok("io.tether.Get", ["name": "pub.a"])["value"], Value.int(1))
        r.fails("io.tether.Get", ["name": "secret"], with: "io.tether.AccessDenied")
        r.fails("io.tether.Set", ["name": "pub.a", "value": 3], with: "io.tether.AccessDenied")
        XCTAssertEqual(r.ok("io.tether.List")["states"].map { names($0) }, ["pub.a"])
        r.send("io.tether.Watch", ["prefix": ""], more: true)
        XCTAssertEqual(r.replies().first?.error, "io.tether.AccessDenied")
        // Root is always the owner's equal.
        d.connect(uid: 0).ok("io.tether.Set", ["name": "secret", "value": 3])
    }

    func testAccessConfigurationFile() throws {
        let policy = try AccessPolicy(owner: 1000, json: #"{"grants":[{"uid":1001,"access":"read-write","prefixes":["app."]},{"gid":50,"access":"read","prefixes":[""]}]}"#)
        XCTAssertEqual(policy.entries.count, 2)
        let grant = try XCTUnwrap(policy.grant(for: Peer(pid: 1, uid: 1001, gid: 1001)))
        XCTAssertTrue(grant.mayWrite("app.x"))
        XCTAssertFalse(grant.mayRead("other"))
        XCTAssertNotNil(policy.grant(for: Peer(pid: 1, uid: 77777, gid: 50)))
        XCTAssertNil(policy.grant(for: Peer(pid: 1, uid: 77777, gid: 77777)))
        func refusal(_ text: String, _ code: ErrorCode, _ message: String, line: UInt = #line) {
            XCTAssertThrowsError(try AccessPolicy(owner: 1, json: text), line: line) { error in
                guard let e = error as? TetherError else { return XCTFail("\(error)", line: line) }
                XCTAssertEqual(e.code, code, "\(e)", line: line)
                XCTAssertTrue(e.message.contains(message), "\(e.message)", line: line)
            }
        }
        refusal(#"{"grants":[{"uid":1,"access":"all","prefixes":[]}]}"#, .invalidArgument, #"grants[0].access must be "read" or "read-write""#)
        refusal(#"{"grants":[{"access":"read","prefixes":[""]}]}"#, .invalidArgument, "grants[0] must name a uid, user, gid or group")
        refusal("{", .badJSON, "invalid JSON at line 1")
    }

    func testServiceInterface() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        let info = c.ok("org.varlink.service.GetInfo")
        XCTAssertEqual(info["interfaces"], json(#"["org.varlink.service","io.tether"]"#))
        let description = c.ok("org.varlink.service.GetInterfaceDescription", ["interface": "io.tether"])
        XCTAssertEqual(description.string("description"), InterfaceText.ioTether)
        c.fails("org.varlink.service.GetInterfaceDescription", ["interface": "nope"], with: "org.varlink.service.InterfaceNotFound")
    }

    func testValueLimit() throws {
        var limits = Limits.defaults
        limits.maxValue = 100
        let d = try InProcessDaemon(limits: limits)
        let c = d.connect()
        c.ok("io.tether.Set", ["name": "s", "value": json(#"{"a":"x"}"#)])
        let big = String(repeating: "y", count: 150)
        c.fails("io.tether.Set", ["name": "s", "path": "/b", "value": .string(big)], with: "io.tether.LimitExceeded")
        c.fails("io.tether.Set", ["name": "t", "value": .string(big)], with: "io.tether.LimitExceeded")
        XCTAssertEqual(c.ok("io.tether.Get", ["name": "s"])["value"], json(#"{"a":"x"}"#))
    }

    func testPathWatchesFollowArrayShifts() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        c.ok("io.tether.Set", ["name": "arr", "value": json("[0]")])
        let w = d.connect()
        w.send("io.tether.Watch", ["names": json(#"["arr"]"#), "path": "/1"], more: true)
        XCTAssertEqual(w.replies().first?.parameters["state"], json(#"{"name":"arr","exists":false,"modified":0}"#))
        c.ok("io.tether.Set", ["name": "arr", "path": "/-", "value": 1])          // creates /1
        XCTAssertEqual(w.replies().first?.parameters["changes"], json(#"[{"name":"arr","op":"set","path":"/1","value":1}]"#))
        c.ok("io.tether.Set", ["name": "arr", "path": "/-", "value": 8])          // [0,1,8]
        c.ok("io.tether.Remove", ["name": "arr", "path": "/0"])                    // [1,8]: /1 is now 8
        let r = w.replies()
        XCTAssertEqual(r.last?.parameters["changes"], json(#"[{"name":"arr","op":"set","path":"/1","value":8}]"#))
        c.ok("io.tether.Remove", ["name": "arr", "path": "/1"])                    // [1]: /1 is gone
        XCTAssertEqual(w.replies().last?.parameters["changes"], json(#"[{"name":"arr","op":"remove","path":"/1"}]"#))
        c.ok("io.tether.Set", ["name": "arr", "path": "/0", "value": 5])           // a sibling that moves nothing
        XCTAssertTrue(w.replies().isEmpty)
        // Resuming across a shift cannot be replayed without the values
        // of the time: a resync, not a guess.
        let late = d.connect()
        late.send("io.tether.Watch", ["names": json(#"["arr"]"#), "path": "/1", "from_revision": 2, "epoch": "e1"], more: true)
        XCTAssertEqual(late.replies().first?.parameters.bool("resync"), true)
    }

    func testSetErrorsNameTheStateNotAnOp() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        c.ok("io.tether.Declare", ["name": "volume", "descriptor": json(#"{"type":"double","range":{"minimum":0.0,"maximum":1.0}}"#), "value": 0.5])
        let e = c.fails("io.tether.Set", ["name": "volume", "value": 1.5], with: "io.tether.OutOfRange")
        XCTAssertEqual(e.string("name"), "volume")
        XCTAssertNil(e["op"])
        XCTAssertEqual(e.string("message"), "state 'volume' must stay in [0.0, 1.0]; refused 1.5")
        let t = c.fails("io.tether.Set", ["name": "volume", "value": "x"], with: "io.tether.WrongType")
        XCTAssertFalse(t.string("message")?.contains("#") ?? true, t.string("message") ?? "")
        XCTAssertNil(c.fails("io.tether.Remove", ["name": "nope"], with: "io.tether.NotFound")["op"])
        // In a Transaction, op says which.
        XCTAssertEqual(c.fails("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"x","value":1},{"op":"set","name":"volume","value":9}]"#)],
                               with: "io.tether.OutOfRange").int("op"), nil, "a range is checked at commit: no op index")
    }

    func testCompactForgetsHistoryAndResumesResync() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        for i in 1...5 { c.ok("io.tether.Set", ["name": "n", "value": .int(Int64(i))]) }
        XCTAssertEqual(c.ok("io.tether.Compact", ["revision": 3]).int("oldest_revision"), 3)
        XCTAssertEqual(c.ok("io.tether.Stats").int("oldest_revision"), 3)
        let fromThree = d.connect()
        fromThree.send("io.tether.Watch", ["names": json(#"["n"]"#), "from_revision": 3, "epoch": "e1"], more: true)
        XCTAssertEqual(fromThree.replies().map { $0.parameters.string("event") }, ["change", "change", "progress"])
        let fromTwo = d.connect()
        fromTwo.send("io.tether.Watch", ["names": json(#"["n"]"#), "from_revision": 2, "epoch": "e1"], more: true)
        XCTAssertEqual(fromTwo.replies().first?.parameters.bool("resync"), true)
        XCTAssertEqual(c.ok("io.tether.Compact").int("oldest_revision"), 4, "all but the newest")
        // Without a store there is nothing to copy; a reader may not maintain.
        c.fails("io.tether.Snapshot", ["path": "/tmp/never"], with: "io.tether.InvalidArgument")
        c.fails("io.tether.Snapshot", ["path": "relative"], with: "org.varlink.service.InvalidParameter")
    }

    func testMaintenanceNeedsTheDaemonsUid() throws {
        let reader: UInt32 = getuid() == 4242 ? 4343 : 4242
        let d = try InProcessDaemon(policy: AccessPolicy(owner: getuid(), entries: [.init(subject: .uid(reader), write: true, prefixes: [""])]))
        let r = d.connect(uid: reader)
        r.fails("io.tether.Compact", with: "io.tether.AccessDenied")
        r.fails("io.tether.Snapshot", ["path": "/tmp/x.db"], with: "io.tether.AccessDenied")
    }

    func testSnapshotAndRestoreThroughSQLite() throws {
        let dir = NSTemporaryDirectory() + "tether-snapshot-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir + "/a", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/b", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sqlite = try SQLiteStore(directory: dir + "/a", durability: .normal, logCapacity: 100)
        try sqlite.start(epoch: "e1")
        let store = try Store(epoch: "e1", sink: sqlite)
        let service = Service(store: store, policy: AccessPolicy(owner: getuid()), log: EventLog(quiet: true))
        let c = InProcessDaemon.Client(session: service.open(peer: Peer(pid: 1, uid: getuid(), gid: getgid())), limits: store.limits)
        c.ok("io.tether.Set", ["name": "blob", "value": "AAEC", "bytes_at": json(#"[""]"#)])
        c.ok("io.tether.Declare", ["name": "v", "descriptor": json(#"{"type":"double","range":{"minimum":0.0,"maximum":1.0}}"#), "value": 0.5])
        let copy = dir + "/copy.db"
        let snap = c.ok("io.tether.Snapshot", ["path": .string(copy)])
        XCTAssertEqual(snap.int("revision"), 2)
        XCTAssertGreaterThan(snap.int("bytes") ?? 0, 0)
        c.fails("io.tether.Snapshot", ["path": .string(copy)], with: "io.tether.InvalidArgument")  // never overwrites
        c.ok("io.tether.Set", ["name": "later", "value": 1])  // not in the copy

        try SQLiteStore.restore(from: copy, into: dir + "/b", epoch: "e2")
        let contents = try SQLiteStore(directory: dir + "/b", durability: .normal, logCapacity: 100).load()
        XCTAssertEqual(contents.epoch, "e2", "a restored store is a new history")
        XCTAssertEqual(contents.revision, 2)
        XCTAssertEqual(contents.states.map(\.name), ["blob", "v"])
        XCTAssertEqual(contents.states.first?.value, .bytes([0, 1, 2]), "bytes stay bytes")
        XCTAssertEqual(contents.states.last?.descriptor.type, .double)
        XCTAssertThrowsError(try SQLiteStore.restore(from: dir + "/nope.db", into: dir + "/b", epoch: "e3"))
    }

    func testWatchersOfTheWholeCommitShareOneEncoding() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        let all1 = d.connect(), all2 = d.connect(), onlyA = d.connect()
        all1.send("io.tether.Watch", ["prefix": ""], more: true)
        all2.send("io.tether.Watch", ["names": json(#"["a","b"]"#)], more: true)
        onlyA.send("io.tether.Watch", ["names": json(#"["a"]"#)], more: true)
        for w in [all1, all2, onlyA] { _ = w.replies() }
        c.ok("io.tether.Transaction", ["ops": json(#"[{"op":"set","name":"a","value":1},{"op":"set","name":"b","value":2}]"#), "tag": "t"])
        let r1 = all1.replies(), r2 = all2.replies(), r3 = onlyA.replies()
        XCTAssertEqual(r1, r2, "the same commit, the same reply")
        XCTAssertEqual(r1.first?.parameters["changes"], json(#"[{"name":"a","op":"set","path":"","value":1},{"name":"b","op":"set","path":"","value":2}]"#))
        XCTAssertEqual(r3.first?.parameters["changes"], json(#"[{"name":"a","op":"set","path":"","value":1}]"#), "filtered: its own")
        XCTAssertEqual(r3.first?.parameters.string("tag"), "t")
    }
}

private func names(_ states: Value) -> [String] {
    guard case .array(let items) = states else { return [] }
    return items.compactMap { item in
        if case .object(let o) = item, case .string(let n)? = o["name"] { return n }
        return nil
    }
}
