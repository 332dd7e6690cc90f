import Foundation
import Glibc
@testable import TetherDaemon
import TetherCore
import TetherWire
import XCTest

/// A watch is bounded from its first reply (issue 30 §5): its snapshot is
/// sent a slice at a time from a cursor into the store's names while its
/// peer reads, so a peer that does not read costs the watch buffer and no
/// more; and no reply is ever longer than `max_reply` (a change reply that
/// would be is split by state into replies of the same revision).
final class WatchBoundsTests: XCTestCase {
    /// The session's output as messages, without a length limit (the old
    /// daemon made replies over max_reply: a decoder would stop at them).
    private func messages(_ bytes: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var start = 0
        for i in bytes.indices where bytes[i] == 0 {
            result.append(Array(bytes[start..<i]))
            start = i + 1
        }
        XCTAssertEqual(start, bytes.count, "the output ends with a whole message")
        return result
    }

    private func watchReplies(_ bytes: [UInt8]) throws -> [WatchReply] {
        try messages(bytes).map { try WatchReply(parameters: Reply(parsing: $0).parameters) }
    }

    private func watch(_ c: InProcessDaemon.Client, _ parameters: [String: Value]) {
        c.send("io.tether.Watch", parameters, more: true)
    }

    /// A reader: takes the output and lets the watch go on (what the
    /// transport's write callback does) until the progress reply.
    private func read(_ d: InProcessDaemon, _ c: InProcessDaemon.Client, rounds: Int = 100_000,
                      between: (Int) -> Void = { _ in }) throws -> [WatchReply] {
        var all: [WatchReply] = []
        for round in 0..<rounds {
            let batch = try watchReplies(c.session.takeOutput())
            all += batch
            if batch.contains(where: { if case .progress = $0.event { return true } else { return false } }) { return all }
            between(round)
            d.service.resumeWatch(c.session)  // what the loop's next turn, or the written output, does
        }
        XCTFail("no progress reply after \(rounds) rounds")
        return all
    }

    func testThirtyWatchesThatNeverReadOverFortyBigStatesCostTheBufferEach() throws {
        let d = try InProcessDaemon()
        let w = d.connect()
        let big = String(repeating: "x", count: 1_500_000)
        for i in 0..<40 { w.ok("io.tether.Set", ["name": .string("big\(i)"), "value": .string(big)]) }
        let bound = d.service.watchBuffer + 1_600_000  // the buffer and one reply
        var sessions: [InProcessDaemon.Client] = []
        for k in 0..<30 {
            let c = d.connect()
            watch(c, ["prefix": ""])
            // The transport would call catchUp as it writes; a peer that
            // does not read has nothing written: calling it changes nothing.
            for _ in 0..<3 { d.service.resumeWatch(c.session) }
            guard c.session.output.count <= bound else {
                return XCTFail("watch \(k): \(c.session.output.count) bytes held (60 MB before), more than \(bound)")
            }
            XCTAssertGreaterThan(c.session.output.count, d.service.watchBuffer, "it was sent up to its buffer")
            sessions.append(c)
        }
        let held = sessions.reduce(0) { $0 + $1.session.output.count }
        XCTAssertLessThanOrEqual(held, 30 * bound)
        // The others are served meanwhile, and the watches see the writes.
        w.ok("io.tether.Set", ["name": "big0", "value": "small"])
        // One of them reads: all 40 states once, in order, then progress,
        // and big0's new value (its snapshot went before the Set: a change).
        let replies = try read(d, sessions[7])
        var names: [String] = []
        var big0: Value?
        for r in replies {
            switch r.event {
            case .snapshot(let e, let resync):
                XCTAssertFalse(resync)
                names.append(e.name)
                if e.name == "big0" { big0 = e.value }
            case .change(let changes, _, _):
                for ch in changes where ch.name == "big0" { if case .set(let v) = ch.write { big0 = v } }
            case .progress:
                XCTAssertEqual(r.revision, d.store.revision)
            }
        }
        XCTAssertEqual(names, (0..<40).map { "big\($0)" }.sorted(by: { Store.precedes($0, $1) }))
        XCTAssertEqual(big0, "small")
    }

    func testAWatchOfEverythingOverManyStatesIsStreamedToAReaderAndBoundedForANonReader() throws {
        let d = try InProcessDaemon()
        let w = d.connect()
        let count = 200_000
        let names = (0..<count).map { "s" + String(repeating: "0", count: 6 - String($0).count) + String($0) }
        var i = 0
        while i < count {
            var ops: [Value] = []
            for name in names[i..<min(i + 128, count)] {
                ops.append(json(#"{"op":"set","name":"\#(name)","value":{"n":"\#(name)"}}"#))
            }
            w.ok("io.tether.Transaction", ["ops": .array(ops)])
            i += 128
        }
        XCTAssertEqual(d.store.count, count)

        // A non-reader holds at most the buffer and one reply.
        let idle = d.connect()
        watch(idle, ["prefix": ""])
        for _ in 0..<50 { d.service.resumeWatch(idle.session) }
        XCTAssertLessThanOrEqual(idle.session.output.count, d.service.watchBuffer + 64 << 10,
                                 "a watch of 200,000 states that nobody reads")

        // A reader gets every name once, in order, then progress; writes
        // made meanwhile reach it in order after the state's snapshot reply.
        let c = d.connect()
        watch(c, ["prefix": ""])
        var copy: [String: Value] = [:]
        var seen: [String] = []
        var lastRevision: UInt64 = 0
        var rounds = 0
        let replies = try read(d, c) { round in
            rounds = round + 1
            guard round == 2 else { return }
            w.ok("io.tether.Set", ["name": "s000000", "path": "/n", "value": "first, sent already"])
            w.ok("io.tether.Set", ["name": "s199999", "path": "/n", "value": "last, not sent yet"])
            w.ok("io.tether.Set", ["name": "s000000x", "value": "new, before the cursor"])
            w.ok("io.tether.Remove", ["name": "s199998"])
        }
        for r in replies {
            XCTAssertGreaterThanOrEqual(r.revision, lastRevision, "revisions never go back")
            lastRevision = r.revision
            switch r.event {
            case .snapshot(let e, _):
                seen.append(e.name)
                copy[e.name] = e.value
            case .change(let changes, _, _):
                for ch in changes {
                    XCTAssertNotNil(copy[ch.name] ?? (ch.path.isRoot ? .null : nil), "\(ch.name) changed before its snapshot")
                    switch ch.write {
                    case .set(let v):
                        if ch.path.isRoot { copy[ch.name] = v } else { try copy[ch.name]!.set(v, at: ch.path) }
                    case .remove:
                        if ch.path.isRoot { copy[ch.name] = nil } else { _ = try copy[ch.name]!.remove(at: ch.path) }
                    }
                }
            case .progress:
                XCTAssertEqual(r.revision, d.store.revision)
            }
        }
        XCTAssertGreaterThan(rounds, 3, "sent over several slices")
        var expected = names.filter { $0 != "s199998" }
        XCTAssertEqual(seen.count, expected.count, "every name once")
        XCTAssertTrue(seen == expected, "in the store's order (first difference at \(seen.indices.first(where: { $0 >= expected.count || seen[$0] != expected[$0] }).map(String.init) ?? "the end"))")
        expected.insert("s000000x", at: 1)
        XCTAssertEqual(copy.count, expected.count)
        XCTAssertEqual(copy["s000000"], json(#"{"n":"first, sent already"}"#))
        XCTAssertEqual(copy["s199999"], json(#"{"n":"last, not sent yet"}"#))
        XCTAssertEqual(copy["s000000x"], "new, before the cursor")
        XCTAssertEqual(copy["s123456"], json(#"{"n":"s123456"}"#))
    }

    func testAChangeReplyLongerThanMaxReplyIsSplitAndTheWatcherEndsWithTheValues() throws {
        let d = try InProcessDaemon()
        let w = d.connect()
        let big = String(repeating: "z", count: 1_500_000)
        for i in 0..<12 {
            w.ok("io.tether.Set", ["name": .string("arr\(i < 10 ? "0" : "")\(i)"), "value": .array([0, .string(big)])])
        }
        let c = d.connect()
        watch(c, ["prefix": "arr", "path": "/0"])
        let snapshot = try read(d, c)
        XCTAssertEqual(snapshot.count, 13)
        // A 624-byte Transaction: /0 removed from the 12 states moves the
        // big string to /0 in each (18 MB for a watcher of /0).
        let ops = (0..<12).map { i in json(#"{"op":"remove","name":"arr\#(i < 10 ? "0" : "")\#(i)","path":"/0"}"#) }
        let txn = w.ok("io.tether.Transaction", ["ops": .array(ops)])
        let revision = UInt64(txn.int("revision") ?? 0)
        let output = c.session.takeOutput()
        let raw = messages(output)
        let maxReply = d.store.limits.maxReply
        for m in raw { XCTAssertLessThanOrEqual(m.count, maxReply, "no reply over max_reply (18,000,691 bytes before)") }
        let replies = try raw.map { try WatchReply(parameters: Reply(parsing: $0).parameters) }
        var copy: [String: Value] = [:]
        var parts = 0
        for r in replies {
            XCTAssertEqual(r.revision, revision)
            if case .change(let changes, _, _) = r.event {
                parts += 1
                for ch in changes {
                    XCTAssertEqual(ch.path, try JSONPointer(parsing: "/0"))
                    if case .set(let v) = ch.write { copy[ch.name] = v }
                }
            }
        }
        XCTAssertGreaterThanOrEqual(parts, 2, "split")
        if case .progress? = replies.last?.event {} else { XCTFail("the parts end with a progress reply at \(revision)") }
        XCTAssertEqual(copy.count, 12)
        XCTAssertTrue(copy.values.allSatisfy { $0 == .string(big) }, "each state's /0 is now the big string")
    }

    /// Lines of a child's stdout, read as they come (a line may be 16 MB:
    /// only the new bytes are searched for its end).
    private final class Lines {
        let handle: FileHandle
        var buffer: [UInt8] = []
        var searched = 0
        init(_ handle: FileHandle) { self.handle = handle }
        func next() -> String? {
            while true {
                if let newline = buffer[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    searched = 0
                    return line
                }
                searched = buffer.count
                let data = handle.availableData  // blocks until bytes or the end
                if data.isEmpty { return nil }
                buffer.append(contentsOf: data)
            }
        }
    }

    /// The issue's case end to end: `tetherctl watch --path /0` over the 12
    /// states, and the 624-byte Transaction: it used to exit on the
    /// 18,000,691-byte reply ("a reply longer than 16777216 bytes"); now it
    /// prints the parts and the progress, and goes on.
    func testTetherctlWatchOfAPathSeesTheLongCommitInParts() throws {
        let daemon = try DaemonFixture(arguments: ["--memory"])
        defer { daemon.stop() }
        let fd = try connectStream(daemon.socketPath)
        defer { close(fd) }
        var decoder = MessageDecoder(maxMessage: Limits.defaults.maxReply)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        func call(_ method: String, _ parameters: ValueObject) throws -> Reply {
            var bytes: [UInt8] = []
            try MessageEncoder.append(Call(method: method, parameters: parameters), to: &bytes)
            XCTAssertEqual(bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }, bytes.count)
            while true {
                if let message = try decoder.next() { return try Reply(parsing: message) }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw FixtureError("the daemon closed the connection") }
                decoder.append(buffer[..<n])
            }
        }
        let big = String(repeating: "q", count: 1_500_000)
        let names = (0..<12).map { "arr" + ($0 < 10 ? "0" : "") + "\($0)" }
        for name in names {
            XCTAssertNil(try call("io.tether.Set", object(["name": .string(name), "value": .array([0, .string(big)])])).error)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: DaemonFixture.product("tetherctl"))
        process.arguments = ["--address", daemon.address, "watch", "--prefix", "arr", "--path", "/0"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let lines = Lines(out.fileHandleForReading)
        var snapshots = 0
        while let line = lines.next() {
            let reply = try Value(json: line)
            guard case .object(let r) = reply else { return XCTFail(line) }
            if r.string("event") == "snapshot" { snapshots += 1 }
            if r.string("event") == "progress" { break }
        }
        XCTAssertEqual(snapshots, 12)
        var ops: [Value] = []
        for name in names { ops.append(.object(object(["op": "remove", "name": .string(name), "path": "/0"]))) }
        let txn = try call("io.tether.Transaction", object(["ops": .array(ops)]))
        let revision = try XCTUnwrap(txn.parameters.int("revision"))
        var seen: [String: Value] = [:]
        var parts = 0
        var ended = false
        while let line = lines.next() {
            XCTAssertLessThanOrEqual(line.utf8.count, Limits.defaults.maxReply)
            guard case .object(let r) = try Value(json: line) else { return XCTFail("not an object") }
            XCTAssertEqual(r.int("revision"), revision)
            if r.string("event") == "change", case .array(let changes)? = r["changes"] {
                parts += 1
                for case .object(let c) in changes { seen[c.string("name") ?? ""] = c["value"] }
            }
            if r.string("event") == "progress" { ended = true; break }
        }
        XCTAssertTrue(ended, "tetherctl went on past the long commit: \(String(decoding: err.fileHandleForReading.availableData.prefix(300), as: UTF8.self))")
        XCTAssertTrue(process.isRunning, "tetherctl is still watching")
        XCTAssertGreaterThanOrEqual(parts, 2)
        XCTAssertEqual(Set(seen.keys), Set(names))
        XCTAssertTrue(seen.values.allSatisfy { $0 == .string(big) })
        process.terminate()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "SIGTERM ends a watch with exit 0")
    }
}
