import CLibUV
import Glibc
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// A ledger in memory that decides as etcd does (Ledger.swift): a proposal
/// commits when every state it expected still has the revision it
/// expected, and each commit reaches every host's store in order. The
/// test says when proposals are decided (`decide`) and when each host
/// receives what was committed (`deliver`), so that two hosts' races are
/// played out exactly. (The real one, on a real etcd cluster, is
/// Tests/etcd/etcd_test.py.)
final class MemoryLedger: Ledger {
    var summary: String { "memory" }
    private(set) var revision: UInt64 = 0
    private var modified: [String: UInt64] = [:]
    private var waiting: [(Proposal, (ProposalOutcome) -> Void)] = []
    private var hosts: [(store: Store, inbox: [Proposal], revisions: [UInt64])] = []
    /// Proposals made so far (refused locally: never proposed).
    private(set) var proposals = 0
    /// The outcome every proposal gets instead of a decision, when set.
    var failure: VarlinkError?

    /// Reads answer from the host's copy (`readsAfterBarrier` off), so the
    /// tests of writes read synchronously; the barrier has tests of its own.
    func add(_ store: Store) {
        store.ledger = self
        store.readsAfterBarrier = false
        hosts.append((store, [], []))
    }

    func attach(loop: UnsafeMutablePointer<uv_loop_t>, store: Store, log: EventLog) throws(TetherError) {}
    func detach() {}
    func compact(through revision: UInt64) {}

    /// Barriers asked and not answered yet (`answerBarriers`).
    private var barriers: [(Result<UInt64, VarlinkError>) -> Void] = []

    func readBarrier(done: @escaping (Result<UInt64, VarlinkError>) -> Void) {
        barriers.append(done)
    }

    /// Answers every barrier asked, with the ledger's revision now.
    func answerBarriers() {
        let batch = barriers
        barriers.removeAll()
        for done in batch { done(.success(revision)) }
    }

    func propose(_ proposal: Proposal, done: @escaping (ProposalOutcome) -> Void) {
        proposals += 1
        waiting.append((proposal, done))
    }

    /// Decides every waiting proposal, in the order they came.
    func decide() {
        let batch = waiting
        waiting.removeAll()
        for (proposal, done) in batch {
            if let failure { done(.failed(failure)); continue }
            guard proposal.expected.allSatisfy({ (modified[$0.name] ?? 0) == $0.modified }) else {
                done(.stale(revision: revision))
                continue
            }
            revision += 1
            for image in proposal.images { modified[image.name] = image.value == nil ? nil : revision }
            for i in hosts.indices {
                hosts[i].inbox.append(proposal)
                hosts[i].revisions.append(revision)
            }
            done(.committed(revision: revision))
        }
    }

    /// Hands host `index` every commit it has not received.
    func deliver(to index: Int) {
        let host = hosts[index]
        hosts[index].inbox.removeAll()
        hosts[index].revisions.removeAll()
        for (proposal, revision) in zip(host.inbox, host.revisions) {
            host.store.install(revision: revision, states: proposal.images, descriptors: proposal.descriptors,
                               changes: proposal.changes, tag: proposal.tag, origin: proposal.origin)
        }
    }

    /// Decides, then delivers to every host, until nothing waits.
    func settle() {
        repeat {
            decide()
            for i in hosts.indices { deliver(to: i) }
            answerBarriers()
        } while !waiting.isEmpty || !barriers.isEmpty
    }
}

final class LedgerTests: XCTestCase {
    /// Both hosts stay alive as long as the test (the ledger delivers to
    /// both).
    private var kept: [InProcessDaemon] = []

    private func twoHosts() throws -> (MemoryLedger, InProcessDaemon, InProcessDaemon) {
        let ledger = MemoryLedger()
        let a = try InProcessDaemon()
        let b = try InProcessDaemon()
        ledger.add(a.store)
        ledger.add(b.store)
        kept = [a, b]
        return (ledger, a, b)
    }

    func testAWriteIsAnsweredOnceItsHostInstalledItAndReachesTheOtherHost() throws {
        let (ledger, a, b) = try twoHosts()
        let ca = a.connect()
        let cb = b.connect()
        ca.send("io.tether.Set", ["name": "theme", "value": "dark"])
        XCTAssertTrue(ca.replies().isEmpty, "answered before the ledger decided")
        ledger.decide()
        XCTAssertTrue(ca.replies().isEmpty, "answered before its host installed the commit")
        ledger.deliver(to: 0)
        let reply = ca.replies()
        XCTAssertEqual(reply.count, 1)
        XCTAssertEqual(reply.first?.parameters.int("revision"), 1)
        XCTAssertEqual(reply.first?.parameters.bool("changed"), true)
        // B has not received it yet: it still reads its own mirror.
        cb.fails("io.tether.Get", ["name": "theme"], with: "io.tether.NotFound")
        ledger.deliver(to: 1)
        let got = cb.ok("io.tether.Get", ["name": "theme"])
        XCTAssertEqual(got["value"], "dark")
        XCTAssertEqual(got.int("modified"), 1)
        XCTAssertEqual(b.store.revision, 1)
    }

    func testCallsBehindAPendingWriteWaitAndAreAnsweredInOrder() throws {
        let (ledger, a, _) = try twoHosts()
        let c = a.connect()
        c.send("io.tether.Set", ["name": "n", "value": 1])
        c.send("io.tether.Get", ["name": "n"])
        XCTAssertTrue(c.replies().isEmpty, "the Get was answered before the Set it follows")
        ledger.settle()
        let replies = c.replies()
        XCTAssertEqual(replies.count, 2)
        XCTAssertEqual(replies.first?.parameters.int("revision"), 1)
        XCTAssertEqual(replies.last?.parameters["value"], 1, "the Get did not see the Set before it")
    }

    func testTwoHostsWritingOneStateAtOncePlanAgainAndBothWritesLand() throws {
        let (ledger, a, b) = try twoHosts()
        let ca = a.connect()
        let cb = b.connect()
        ca.send("io.tether.Set", ["name": "doc", "value": json(#"{"x":0,"y":0}"#)])
        ledger.settle()
        _ = ca.replies()
        // Both plan against revision 1; A's path write commits first, B's
        // is stale, planned again on the new value, and commits too.
        ca.send("io.tether.Set", ["name": "doc", "path": "/x", "value": 1])
        cb.send("io.tether.Set", ["name": "doc", "path": "/y", "value": 2])
        XCTAssertEqual(ledger.proposals, 3)
        ledger.settle()
        XCTAssertEqual(ledger.proposals, 4, "the stale proposal was not planned again")
        XCTAssertEqual(ca.replies().first?.parameters.int("revision"), 2)
        XCTAssertEqual(cb.replies().first?.parameters.int("revision"), 3)
        for c in [ca, cb] {
            XCTAssertEqual(c.ok("io.tether.Get", ["name": "doc"])["value"], json(#"{"x":1,"y":2}"#))
        }
    }

    func testCompareAndSetFromTwoHostsCommitsOnce() throws {
        let (ledger, a, b) = try twoHosts()
        let ca = a.connect()
        let cb = b.connect()
        ca.send("io.tether.Set", ["name": "lock", "value": "free"])
        ledger.settle()
        _ = ca.replies()
        for (c, who) in [(ca, "a"), (cb, "b")] {
            c.send("io.tether.Transaction", ["preconditions": .array([.object(object(["name": "lock", "revision": 1]))]),
                                             "ops": .array([.object(object(["name": "lock", "op": "set", "value": .string(who)]))])])
        }
        ledger.settle()
        XCTAssertNil(ca.replies().first?.error)
        let loser = cb.replies().first
        XCTAssertEqual(loser?.error, "io.tether.RevisionMismatch")
        XCTAssertEqual(loser?.parameters.int("actual"), 2)
        XCTAssertEqual(cb.ok("io.tether.Get", ["name": "lock"])["value"], "a")
    }

    func testADescriptorDeclaredOnOneHostRefusesAWrongWriteOnTheOtherWithoutProposingIt() throws {
        let (ledger, a, b) = try twoHosts()
        let ca = a.connect()
        let cb = b.connect()
        ca.send("io.tether.Declare", ["name": "count", "descriptor": .object(object(["type": "int", "read_only": .bool(false)])), "value": 1])
        ledger.settle()
        XCTAssertEqual(ca.replies().first?.parameters.bool("created"), true)
        let before = ledger.proposals
        cb.fails("io.tether.Set", ["name": "count", "value": "text"], with: "io.tether.WrongType")
        XCTAssertEqual(ledger.proposals, before, "a write the mirror refuses was proposed")
        // An int written to a double state is stored as a double on both hosts.
        ca.send("io.tether.Declare", ["name": "ratio", "descriptor": .object(object(["type": "double", "read_only": .bool(false)])), "value": 1.5])
        ledger.settle()
        _ = ca.replies()
        cb.send("io.tether.Set", ["name": "ratio", "value": 2])
        ledger.settle()
        XCTAssertNil(cb.replies().first?.error)
        XCTAssertEqual(ca.ok("io.tether.Get", ["name": "ratio"])["value"], .double(2))
    }

    func testALinearizableReadWaitsUntilItsHostInstalledWhatTheLedgerHadCommitted() throws {
        let (ledger, a, b) = try twoHosts()
        b.store.readsAfterBarrier = true
        let ca = a.connect()
        let cb = b.connect()
        ca.send("io.tether.Set", ["name": "theme", "value": "dark"])
        ledger.decide()
        ledger.deliver(to: 0)
        XCTAssertEqual(ca.replies().first?.parameters.int("revision"), 1)
        // B has not received revision 1: its Get (and the Stats behind it)
        // waits for the barrier, then for B to install what it said.
        cb.send("io.tether.Get", ["name": "theme"])
        cb.send("io.tether.Stats")
        XCTAssertTrue(cb.replies().isEmpty, "a read was answered before its barrier")
        ledger.answerBarriers()
        XCTAssertTrue(cb.replies().isEmpty, "a read was answered before its host installed the barrier's revision")
        ledger.deliver(to: 1)
        ledger.answerBarriers()
        let replies = cb.replies()
        XCTAssertEqual(replies.count, 2)
        XCTAssertEqual(replies.first?.parameters["value"], "dark")
        XCTAssertEqual(replies.last?.parameters.int("revision"), 1)
    }

    func testAReadWhoseBarrierFailsSaysSoAndTheNextCallIsAnswered() throws {
        final class FailingBarrier: Ledger {
            var summary: String { "failing" }
            func attach(loop: UnsafeMutablePointer<uv_loop_t>, store: Store, log: EventLog) throws(TetherError) {}
            func detach() {}
            func compact(through revision: UInt64) {}
            func propose(_ proposal: Proposal, done: @escaping (ProposalOutcome) -> Void) { done(.committed(revision: 1)) }
            func readBarrier(done: @escaping (Result<UInt64, VarlinkError>) -> Void) {
                done(.failure(VarlinkError(TetherError(.busy, "no quorum"))))
            }
        }
        let host = try InProcessDaemon()
        let ledger = FailingBarrier()
        host.store.ledger = ledger
        let c = host.connect()
        c.send("io.tether.Get", ["name": "x"])
        c.send("io.tether.List", ["prefix": ""])
        let replies = c.replies()
        XCTAssertEqual(replies.map(\.error), ["io.tether.Busy", "io.tether.Busy"])
        withExtendedLifetime(ledger) {}
    }

    func testARangeRefusesAWriteOutsideItWithoutProposingIt() throws {
        let (ledger, a, _) = try twoHosts()
        let c = a.connect()
        c.send("io.tether.Declare", ["name": "volume", "value": 5,
                                     "descriptor": .object(object(["range": .object(object(["minimum": 0, "maximum": 10])), "read_only": .bool(false)]))])
        ledger.settle()
        XCTAssertNil(c.replies().first?.error)
        let before = ledger.proposals
        c.fails("io.tether.Set", ["name": "volume", "value": 11], with: "io.tether.OutOfRange")
        let error = c.fails("io.tether.Transaction", ["ops": .array([.object(object(["name": "other", "op": "set", "value": 1])),
                                                                     .object(object(["name": "volume", "op": "set", "value": -1]))])],
                            with: "io.tether.OutOfRange")
        XCTAssertEqual(error.int("op"), 1)
        XCTAssertEqual(ledger.proposals, before, "a write outside the range was proposed")
        XCTAssertEqual(c.ok("io.tether.Get", ["name": "volume"])["value"], 5)
    }

    func testAnEqualValueIsNotProposed() throws {
        let (ledger, a, _) = try twoHosts()
        let c = a.connect()
        c.send("io.tether.Set", ["name": "n", "value": 1])
        ledger.settle()
        _ = c.replies()
        let before = ledger.proposals
        let same = c.ok("io.tether.Set", ["name": "n", "value": 1])
        XCTAssertEqual(same.bool("changed"), false)
        XCTAssertEqual(same.int("revision"), 1)
        XCTAssertEqual(ledger.proposals, before)
    }

    func testAnUnknownOutcomeIsSaidAndChangesNothing() throws {
        let (ledger, a, _) = try twoHosts()
        let c = a.connect()
        ledger.failure = VarlinkError(TetherError(.timedOut, "the ledger did not answer"))
        c.send("io.tether.Set", ["name": "n", "value": 1])
        ledger.settle()
        XCTAssertEqual(c.replies().first?.error, "io.tether.TimedOut")
        c.fails("io.tether.Get", ["name": "n"], with: "io.tether.NotFound")
        XCTAssertEqual(a.store.revision, 0)
    }

    func testAWatchOnOneHostIsSentWhatTheOtherCommitted() throws {
        let (ledger, a, b) = try twoHosts()
        let ca = a.connect()
        let w = b.connect()
        w.send("io.tether.Watch", ["prefix": "w."], more: true)
        XCTAssertEqual(w.replies().last?.parameters.string("event"), "progress")
        ca.send("io.tether.Set", ["name": "w.1", "value": json(#"{"a":1}"#), "tag": "t", "origin": 7])
        ca.send("io.tether.Remove", ["name": "w.1"])
        ledger.settle()
        ledger.settle()
        let events = w.replies().filter { $0.parameters.string("event") == "change" }
        XCTAssertEqual(events.count, 2)
        XCTAssertEqual(events.first?.parameters.int("revision"), 1)
        XCTAssertEqual(events.first?.parameters.string("tag"), "t")
        XCTAssertEqual(events.first?.parameters.int("origin"), 7)
        guard case .array(let removed)? = events.last?.parameters["changes"], case .object(let change)? = removed.first else {
            return XCTFail("no change in the Remove's event")
        }
        XCTAssertEqual(change.string("op"), "remove")
    }

    func testARevisionGapMakesOlderResumesResync() throws {
        let (ledger, a, _) = try twoHosts()
        let c = a.connect()
        c.send("io.tether.Set", ["name": "g", "value": 1])
        ledger.settle()
        _ = c.replies()
        // Something else wrote the ledger: revision 5 follows 1.
        a.store.install(revision: 5, states: [StateImage(name: "g", value: 2, modified: 5, descriptor: Descriptor())],
                        descriptors: [], changes: nil, tag: nil, origin: nil)
        XCTAssertEqual(c.ok("io.tether.Get", ["name": "g"])["value"], 2)
        let w = a.connect()
        w.send("io.tether.Watch", ["names": .array(["g"]), "from_revision": 1, "epoch": "e1"], more: true)
        XCTAssertEqual(w.replies().first?.parameters.bool("resync"), true, "a resume across the gap was not a resync")
    }

    func testAValueTheLedgerHoldsButTheHostCannotReadIsQuarantined() throws {
        let (_, a, _) = try twoHosts()
        a.store.install(revision: 1, states: [], descriptors: [], changes: [], tag: nil, origin: nil,
                        unreadable: [("bad", "etcd's value at /tether/s/bad is not JSON tetherd wrote")])
        let c = a.connect()
        let error = c.fails("io.tether.Get", ["name": "bad"], with: "io.tether.BadJSON")
        XCTAssertTrue(error.string("message")?.contains("not JSON tetherd wrote") == true)
    }
}
