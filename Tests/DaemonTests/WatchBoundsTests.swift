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
}
