import Glibc
import TetherCore
import TetherDaemon
import TetherWire
import XCTest

/// `Service.reset` (and `Store.reset` under it): a daemon that served
/// anything, reset, answers every message exactly as a new daemon does,
/// byte for byte, on every connection, watches and the idle timer
/// included. The fuzzer's in-memory targets keep their daemons across
/// inputs and reset them between inputs (DaemonFuzzer, `Kept`): this is
/// what makes an input's run, and so a crash it finds, the same when the
/// input is replayed alone.
final class ServiceResetTests: XCTestCase {
    static let owner = getuid()
    static let granted: UInt32 = owner == 4242 ? 4243 : 4242
    static let stranger: UInt32 = owner == 5353 ? 5354 : 5353

    static func daemon() throws -> InProcessDaemon {
        try InProcessDaemon(limits: Limits(maxMessage: 2048, maxValue: 1024, maxOps: 16, maxNames: 16, maxNameLength: 64),
                            logCapacity: 8,
                            policy: AccessPolicy(owner: owner, entries: [
                                .init(subject: .uid(granted), write: true, prefixes: ["a"]),
                                .init(subject: .uid(granted), write: false, prefixes: ["b"]),
                            ]))
    }

    /// Everything each connection was sent, step by step: a step is one
    /// message (or an idle tick), and after it the output of every
    /// connection opened so far.
    static func transcript(_ d: InProcessDaemon) -> [String] {
        var sessions: [Session] = []
        var lines: [String] = []
        func open(_ uid: UInt32) -> Session {
            let s = d.service.open(peer: Peer(pid: 1, uid: uid, gid: uid))
            sessions.append(s)
            return s
        }
        func step(_ s: Session?, _ message: String) {
            if let s { Array((message + "\0").utf8).withUnsafeBytes { s.receive($0) } } else { d.service.idleTick() }
            for (i, session) in sessions.enumerated() {
                let out = session.takeOutput()
                if !out.isEmpty { lines.append("\(message) -> \(i): \(String(decoding: out, as: UTF8.self))") }
            }
            _ = d.service.endOfTurn()
        }
        let watch = open(owner)
        step(watch, #"{"method":"io.tether.Watch","parameters":{"prefix":""},"more":true}"#)
        let pathWatch = open(owner)
        step(pathWatch, #"{"method":"io.tether.Watch","parameters":{"prefix":"","path":"/0"},"more":true}"#)
        let c = open(owner)
        for message in [
            #"{"method":"io.tether.Stats"}"#,
            #"{"method":"io.tether.List","parameters":{"prefix":""}}"#,
            #"{"method":"io.tether.Get","parameters":{"name":"x"}}"#,
            #"{"method":"io.tether.Set","parameters":{"name":"x","value":[1,2,3]}}"#,
            #"{"method":"io.tether.Set","parameters":{"name":"x","value":[4],"tag":"t"}}"#,
            #"{"method":"io.tether.Set","parameters":{"name":"x","path":"/0","value":{"k":"v"}}}"#,
            #"{"method":"io.tether.Declare","parameters":{"name":"typed","type":"int","value":7}}"#,
            #"{"method":"io.tether.Set","parameters":{"name":"typed","value":"no"}}"#,
            #"{"method":"io.tether.Get","parameters":{"name":"x"}}"#,
            #"{"method":"io.tether.Get","parameters":{"name":"x"}}"#,
            #"{"method":"io.tether.Describe","parameters":{"name":"typed"}}"#,
            #"{"method":"io.tether.Transaction","parameters":{"ops":[{"op":"set","name":"a.1","value":1},{"op":"remove","name":"x"}]}}"#,
            "",
            "not json",
            #"{"method":"io.tether.Snapshot","parameters":{"path":"/nonexistent/s.db"}}"#,
            #"{"method":"io.tether.Set","parameters":{"name":"o","value":1},"oneway":true}"#,
            #"{"method":"io.tether.Compact"}"#,
            #"{"method":"io.tether.Stats"}"#,
            #"{"method":"io.tether.List","parameters":{"prefix":""}}"#,
            #"{"method":"org.varlink.service.GetInfo"}"#,
        ] {
            step(c, message)
            if lines.count % 3 == 0 { step(nil, "(idle tick)") }
        }
        step(nil, "(idle tick)")
        let resumed = open(owner)
        step(resumed, #"{"method":"io.tether.Watch","parameters":{"prefix":"","from_revision":0,"epoch":"e1"},"more":true}"#)
        let other = open(granted)
        step(other, #"{"method":"io.tether.Set","parameters":{"name":"a.2","value":2}}"#)
        step(other, #"{"method":"io.tether.Set","parameters":{"name":"b","value":2}}"#)
        step(other, #"{"method":"io.tether.Get","parameters":{"name":"typed"}}"#)
        let refused = open(stranger)
        step(refused, #"{"method":"io.tether.Stats"}"#)
        step(c, #"{"method":"io.tether.Stats"}"#)
        step(c, #"{"method":"io.tether.Metrics"}"#)
        step(nil, "(idle tick)")
        for s in sessions where s !== c { d.service.closed(s) }
        step(c, #"{"method":"io.tether.Stats"}"#)
        return lines
    }

    func testAResetDaemonAnswersLikeANewOne() throws {
        let fresh = try Self.transcript(Self.daemon())
        XCTAssertGreaterThan(fresh.count, 30)

        // A daemon that served another history first: more states, its
        // log past its capacity and compacted, watches and connections
        // left open, a refused peer, a write of the granted uid.
        let used = try Self.daemon()
        _ = Self.transcript(used)
        let c = used.connect()
        for i in 0..<20 { c.ok("io.tether.Set", ["name": .string("s\(i)"), "value": .int(Int64(i))]) }
        c.ok("io.tether.Compact")
        let w = used.connect()
        w.send("io.tether.Watch", ["prefix": "s"], more: true)
        _ = used.connect(uid: Self.stranger)
        used.connect(uid: Self.granted).ok("io.tether.Set", ["name": "a.z", "value": 1])
        XCTAssertGreaterThan(used.store.count, 20)

        try used.service.reset()
        XCTAssertEqual(used.store.revision, 0)
        XCTAssertEqual(used.store.count, 0)
        XCTAssertEqual(used.service.connectionCount, 0)
        XCTAssertEqual(used.service.watchCount, 0)
        let afterReset = Self.transcript(used)
        XCTAssertEqual(afterReset.count, fresh.count)
        for (got, expected) in zip(afterReset, fresh) where got != expected {
            XCTFail("after a reset: \(got)\n a new daemon: \(expected)")
            break
        }

        // And again: a reset of a reset daemon is the same.
        try used.service.reset()
        XCTAssertEqual(Self.transcript(used), fresh)
    }
}
