import Foundation
import Glibc
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// Pipelined group commit (GroupCommitter, Service.endOfTurn): no reply,
/// Get or watch event leaves before the group commit it may reveal is
/// durable, replies stay in call order, and the loop applies the next turn
/// while a group syncs. Driven in process: a sink whose sync waits for the
/// test stands for SQLite's fsync.
final class GroupCommitTests: XCTestCase {
    /// A durable sink whose `makeDurable` (the fsync) blocks until the test
    /// lets it through; `commit` (SQLite's COMMIT) does not.
    final class GatedSink: SplitSyncSink {
        private let lock = NSCondition()
        private var opened = 0
        private var syncs = 0
        private var entered = 0
        private(set) var recorded: [UInt64] = []
        private(set) var committed: [UInt64] = []
        private(set) var durable: [UInt64] = []
        /// Threads inside `makeDurable` at once (must stay ≤ 1).
        private var inside = 0
        private(set) var overlapped = false

        /// Lets one more sync through.
        func open() {
            lock.lock(); opened += 1; lock.broadcast(); lock.unlock()
        }

        func record(_ commit: Commit, states: [StateImage]) throws {
            lock.lock(); recorded.append(commit.revision); lock.unlock()
        }

        func describe(_ name: String, _ descriptor: Descriptor) throws {}

        private(set) var commits = 0
        var syncsInTwoHalves: Bool { true }

        func commit() throws {
            lock.lock(); committed = recorded; commits += 1; lock.unlock()
        }

        /// Makes what was committed before it began durable.
        func makeDurable() throws {
            lock.lock()
            let covered = committed
            entered += 1
            inside += 1
            if inside > 1 { overlapped = true }
            lock.broadcast()
            while opened <= syncs { lock.wait() }
            syncs += 1
            inside -= 1
            durable = covered
            lock.unlock()
        }

        func sync() throws {
            try commit()
            try makeDurable()
        }

        /// Waits until the sync thread is inside its `n`th sync (so what is
        /// queued from now on is the next group, not part of this one).
        func waitUntilSyncing(_ n: Int) {
            lock.lock()
            while entered < n { lock.wait() }
            lock.unlock()
        }

        func compact(through revision: UInt64) throws {}
        func snapshot(to path: String) throws -> UInt64 { 0 }

        var durableRevisions: [UInt64] {
            lock.lock(); defer { lock.unlock() }
            return durable
        }
    }

    final class Harness {
        let sink = GatedSink()
        let committer: GroupCommitter
        let store: Store
        let service: Service
        let groupDone = DispatchSemaphore(value: 0)

        init(syncLoneCommitsHere: Bool = false) throws {
            committer = GroupCommitter(inner: sink, syncLoneCommitsHere: syncLoneCommitsHere)
            store = try Store(epoch: "e1", sink: committer)
            service = Service(store: store, policy: AccessPolicy(owner: getuid()), log: EventLog(quiet: true))
            let done = groupDone
            committer.setNotify { done.signal() }
        }

        func connect() -> Client { Client(session: service.open(peer: Peer(pid: 1, uid: getuid(), gid: getgid()))) }

        /// Lets the group in flight sync and waits until the loop side
        /// knows (what the daemon's uv_async does).
        func syncOneGroup() -> [Session] {
            sink.open()
            groupDone.wait()
            return service.groupsDurable()
        }

        deinit {
            // The sync thread ends only once everything is durable.
            for _ in 0..<8 { sink.open() }
            committer.close()
        }
    }

    final class Client {
        let session: Session
        private var decoder = MessageDecoder(maxMessage: Limits.defaults.maxReply)
        init(session: Session) { self.session = session }

        func send(_ method: String, _ parameters: [String: Value] = [:], more: Bool = false) {
            var out: [UInt8] = []
            try! MessageEncoder.append(Call(method: method, parameters: object(parameters), more: more), to: &out)
            out.withUnsafeBytes { session.receive($0) }
        }

        /// What the transport would write now.
        func written() -> [Reply] {
            decoder.append(session.takeReady())
            var result: [Reply] = []
            while let message = try! decoder.next() { result.append(try! Reply(parsing: message)) }
            return result
        }
    }

    func testAReplyWaitsForItsGroupToBeDurable() throws {
        let h = try Harness()
        let c = h.connect()
        c.send("io.tether.Set", ["name": "a", "value": 1])
        XCTAssertTrue(h.service.endOfTurn().isEmpty, "nothing may be written before the sync")
        XCTAssertTrue(c.written().isEmpty)
        XCTAssertEqual(h.sink.durableRevisions, [])

        let ready = h.syncOneGroup()
        XCTAssertEqual(h.sink.durableRevisions, [1])
        XCTAssertTrue(ready.contains { $0 === c.session })
        let replies = c.written()
        XCTAssertEqual(replies.count, 1)
        XCTAssertEqual(replies.first?.parameters.int("revision"), 1)
    }

    func testTheNextTurnIsAppliedWhileAGroupSyncsAndRepliesStayInOrder() throws {
        let h = try Harness()
        let writer = h.connect(), other = h.connect()
        writer.send("io.tether.Set", ["name": "a", "value": 1])
        _ = h.service.endOfTurn()  // group 1 in flight, its sync held
        h.sink.waitUntilSyncing(1)

        // Turn 2, while group 1 syncs: a Get on the same connection reads
        // in memory at once, but is written after the Set's reply; another
        // client's Set is applied now and goes into group 2.
        writer.send("io.tether.Get", ["name": "a"])
        other.send("io.tether.Set", ["name": "b", "value": 2])
        XCTAssertTrue(h.service.endOfTurn().isEmpty)
        XCTAssertEqual(h.committer.submitted, 2, "turn 2 is committed and handed over at once")
        XCTAssertEqual(h.store.revision, 2, "turn 2 was applied in memory")
        XCTAssertEqual(h.sink.durableRevisions, [])

        _ = h.syncOneGroup()  // group 1 durable; the sync thread took group 2 by itself
        XCTAssertEqual(h.sink.durableRevisions, [1])
        XCTAssertEqual(h.committer.completed, 1)
        XCTAssertEqual(h.committer.submitted, 2)
        let first = writer.written()
        XCTAssertEqual(first.count, 1, "the Get waits: it was answered after revision 2 was applied")
        XCTAssertEqual(first.first?.parameters.int("revision"), 1)
        XCTAssertTrue(other.written().isEmpty, "revision 2 is not durable yet")

        _ = h.syncOneGroup()
        XCTAssertEqual(h.sink.durableRevisions, [1, 2])
        let second = writer.written()
        XCTAssertEqual(second.count, 1)
        XCTAssertEqual(second.first?.parameters["value"], 1)
        XCTAssertEqual(other.written().first?.parameters.int("revision"), 2)
    }

    func testWatchersSeeOnlyDurableCommits() throws {
        let h = try Harness()
        let watcher = h.connect(), writer = h.connect()
        watcher.send("io.tether.Watch", ["names": json(#"["a"]"#)], more: true)
        _ = h.service.endOfTurn()
        XCTAssertEqual(watcher.written().count, 2, "snapshot and progress: nothing to wait for")

        writer.send("io.tether.Set", ["name": "a", "value": 7])
        _ = h.service.endOfTurn()
        XCTAssertTrue(watcher.written().isEmpty, "a change a crash could lose is not shown")
        _ = h.syncOneGroup()
        let events = watcher.written()
        XCTAssertEqual(events.count, 1)
        XCTAssertEqual(events.first?.parameters.int("revision"), 1)
        XCTAssertEqual(writer.written().count, 1)
    }

    func testACloseWaitsForTheHeldReplies() throws {
        let h = try Harness()
        let c = h.connect()
        c.send("io.tether.Set", ["name": "a", "value": 1])
        _ = h.service.endOfTurn()
        // An oversize frame: its error is sent and the connection closes.
        let huge = [UInt8](repeating: UInt8(ascii: " "), count: Limits.defaults.maxMessage + 10)
        huge.withUnsafeBytes { c.session.receive($0) }
        XCTAssertNotNil(c.session.closeReason)
        XCTAssertTrue(h.service.endOfTurn().isEmpty, "the close waits behind the held reply")
        XCTAssertTrue(c.session.isHolding)
        _ = h.syncOneGroup()
        let replies = c.written()
        XCTAssertEqual(replies.count, 2, "the Set's reply, then the error that closes")
        XCTAssertNil(replies.first?.error)
        XCTAssertEqual(replies.last?.error, "io.tether.LimitExceeded")
        XCTAssertFalse(c.session.isHolding)
    }

    func testLoneCommitsOfASerialLoadAreSyncedOnTheLoopThread() throws {
        let h = try Harness(syncLoneCommitsHere: true)
        let c = h.connect()
        // The first lone commit goes to the sync thread: nothing says yet
        // that the load is serial.
        c.send("io.tether.Set", ["name": "a", "value": 1])
        XCTAssertTrue(h.service.endOfTurn().isEmpty)
        _ = h.syncOneGroup()
        XCTAssertEqual(c.written().count, 1)

        // It held one commit and nothing arrived meanwhile: the next lone
        // commit is synced here, before the turn ends.
        h.sink.open()  // the sync below runs on this thread: let it through first
        c.send("io.tether.Set", ["name": "a", "value": 2])
        let ready = h.service.endOfTurn()
        XCTAssertEqual(h.sink.durableRevisions, [1, 2], "synced before the turn ended")
        XCTAssertTrue(ready.contains { $0 === c.session }, "no wait for the sync thread")
        XCTAssertEqual(c.written().first?.parameters.int("revision"), 2)

        // Two commits in a turn: the sync thread, and the load is no
        // longer taken for serial.
        let d = h.connect()
        c.send("io.tether.Set", ["name": "a", "value": 3])
        d.send("io.tether.Set", ["name": "b", "value": 3])
        XCTAssertTrue(h.service.endOfTurn().isEmpty)
        _ = h.syncOneGroup()
        XCTAssertEqual(c.written().count, 1)
        XCTAssertEqual(d.written().count, 1)
        c.send("io.tether.Set", ["name": "a", "value": 5])
        XCTAssertTrue(h.service.endOfTurn().isEmpty, "a lone commit of a busy load waits for the sync thread")
        _ = h.syncOneGroup()
        XCTAssertEqual(h.sink.durableRevisions, [1, 2, 3, 4, 5])
        XCTAssertEqual(c.written().count, 1)
    }

    func testInlineModeSyncsEveryTurnBeforeItsOutputIsWritten() throws {
        let sink = GatedSink()
        let committer = GroupCommitter(inner: sink, mode: .inline)
        defer { committer.close() }
        let store = try Store(epoch: "e1", sink: committer)
        let service = Service(store: store, policy: AccessPolicy(owner: getuid()), log: EventLog(quiet: true))
        let c = Client(session: service.open(peer: Peer(pid: 1, uid: getuid(), gid: getgid())))
        let d = Client(session: service.open(peer: Peer(pid: 1, uid: getuid(), gid: getgid())))
        sink.open()  // the sync runs on this thread, inside endOfTurn
        c.send("io.tether.Set", ["name": "a", "value": 1])
        d.send("io.tether.Set", ["name": "b", "value": 2])
        XCTAssertEqual(sink.durableRevisions, [], "nothing synced before the end of the turn")
        let ready = service.endOfTurn()
        XCTAssertEqual(sink.durableRevisions, [1, 2], "one sync for the turn's two commits")
        XCTAssertEqual(ready.count, 2)
        XCTAssertEqual(c.written().first?.parameters.int("revision"), 1)
        XCTAssertEqual(d.written().first?.parameters.int("revision"), 2)
    }

    /// The daemon's end of a turn (`endOfTurn(write:)`): with the inline
    /// group commit, a turn's output is written at its end, without being
    /// held; with a group in flight it is held as `endOfTurn()` holds it,
    /// and once older output waits, newer output waits behind it.
    func testTheDaemonsEndOfTurnWritesWhatIsDurableAndHoldsTheRest() throws {
        let sink = GatedSink()
        let inline = GroupCommitter(inner: sink, mode: .inline)
        defer { inline.close() }
        let store = try Store(epoch: "e1", sink: inline)
        let service = Service(store: store, policy: AccessPolicy(owner: getuid()), log: EventLog(quiet: true))
        let c = Client(session: service.open(peer: Peer(pid: 1, uid: getuid(), gid: getgid())))
        let d = Client(session: service.open(peer: Peer(pid: 1, uid: getuid(), gid: getgid())))
        for _ in 0..<3 { sink.open() }
        for round in 1...3 {
            c.send("io.tether.Set", ["name": "a", "value": .int(Int64(round))])
            d.send("io.tether.Get", ["name": "a"])
            var written: [Session] = []
            service.endOfTurn { written.append($0) }
            XCTAssertEqual(sink.durableRevisions.last, UInt64(round), "synced before anything is written")
            XCTAssertTrue(written.count == 2 && written[0] === c.session && written[1] === d.session)
            XCTAssertEqual(c.written().map { $0.parameters.int("revision") }, [Int64(round)])
            XCTAssertEqual(d.written().first?.parameters.int("revision"), Int64(round))
            XCTAssertFalse(service.hasPending)
        }

        let h = try Harness()  // pipelined: the group is synced on the sync thread
        let e = h.connect()
        e.send("io.tether.Set", ["name": "b", "value": 1])
        var written: [Session] = []
        h.service.endOfTurn { written.append($0) }
        XCTAssertTrue(written.isEmpty, "held: its group is not durable")
        h.sink.waitUntilSyncing(1)
        e.send("io.tether.Get", ["name": "b"])
        h.service.endOfTurn { written.append($0) }
        XCTAssertTrue(written.isEmpty, "held behind the group in flight")
        XCTAssertTrue(h.syncOneGroup().contains { $0 === e.session })
        XCTAssertEqual(e.written().map { $0.parameters.int("revision") }, [1, 1], "in call order")
    }

    /// Every turn that ends while a group syncs is committed at its end,
    /// and the next fsync covers all of them; never two fsyncs at once.
    func testTurnsDuringASyncShareTheNextFsync() throws {
        let h = try Harness()
        let clients = (0..<5).map { _ in h.connect() }
        clients[0].send("io.tether.Set", ["name": "a", "value": 0])
        _ = h.service.endOfTurn()
        h.sink.waitUntilSyncing(1)
        for (i, c) in clients.enumerated().dropFirst() {
            c.send("io.tether.Set", ["name": .string("s\(i)"), "value": .int(Int64(i))])
            XCTAssertTrue(h.service.endOfTurn().isEmpty, "turn \(i) waits for the group after the one syncing")
        }
        XCTAssertEqual(h.sink.commits, 5, "each turn committed at its end")
        XCTAssertEqual(h.committer.submitted, 5)
        _ = h.syncOneGroup()
        XCTAssertTrue(clients.dropFirst().allSatisfy { $0.written().isEmpty })
        XCTAssertEqual(clients[0].written().count, 1)
        h.sink.waitUntilSyncing(2)
        let ready = h.syncOneGroup()
        XCTAssertEqual(h.sink.durableRevisions, [1, 2, 3, 4, 5])
        XCTAssertEqual(ready.count, 4)
        for (i, c) in clients.enumerated().dropFirst() {
            XCTAssertEqual(c.written().first?.parameters.int("revision"), Int64(i + 1))
        }
        XCTAssertFalse(h.sink.overlapped)
    }

    /// A group's sync ending mid-turn (the uv_async between two reads):
    /// the older output goes, the turn's own commit stays uncommitted and
    /// its reply held until the turn's end hands it over and it syncs.
    func testASyncEndingMidTurnReleasesOnlyOlderOutput() throws {
        let h = try Harness()
        let a = h.connect(), b = h.connect()
        a.send("io.tether.Set", ["name": "a", "value": 1])
        _ = h.service.endOfTurn()
        h.sink.waitUntilSyncing(1)
        b.send("io.tether.Set", ["name": "b", "value": 2])  // this turn, not ended
        XCTAssertTrue(h.syncOneGroup().contains { $0 === a.session })
        XCTAssertEqual(a.written().count, 1)
        XCTAssertEqual(h.committer.submitted, 1, "the turn's commit waits for the turn's end")
        XCTAssertTrue(b.written().isEmpty)
        XCTAssertTrue(h.service.endOfTurn().isEmpty)
        XCTAssertEqual(h.committer.submitted, 2)
        XCTAssertTrue(b.written().isEmpty, "revision 2 is not durable yet")
        _ = h.syncOneGroup()
        XCTAssertEqual(h.sink.durableRevisions, [1, 2])
        XCTAssertEqual(b.written().map { $0.parameters.int("revision") }, [2])
    }

    func testDrainMakesEverythingDurable() throws {
        let h = try Harness()
        let c = h.connect()
        c.send("io.tether.Set", ["name": "a", "value": 1])
        _ = h.service.endOfTurn()
        c.send("io.tether.Set", ["name": "a", "value": 2])
        h.sink.open()
        h.sink.open()
        let ready = h.service.drain()
        XCTAssertEqual(h.sink.durableRevisions, [1, 2])
        XCTAssertTrue(ready.contains { $0 === c.session })
        XCTAssertEqual(c.written().map { $0.parameters.int("revision") }, [1, 2])
    }
}

/// The writer checkpoints after the commit that takes the WAL past its
/// threshold (never inside a COMMIT), so the WAL stays bounded and starts
/// over; the store's connection keeps SQLite's locks (exclusive).
final class CheckpointTests: XCTestCase {
    func makeDirectory() throws -> String {
        let template = NSTemporaryDirectory() + "tether-wal.XXXXXX"
        var bytes = Array(template.utf8CString)
        return String(cString: try XCTUnwrap(mkdtemp(&bytes)))
    }

    func commit(_ sqlite: SQLiteStore, _ revision: UInt64, _ value: Value) throws {
        let name = "s\(revision % 10)"
        try sqlite.record(Commit(revision: revision, changes: [Change(name: name, write: .set(value))], tag: nil, origin: nil),
                          states: [StateImage(name: name, value: value, modified: revision, descriptor: Descriptor())])
        try sqlite.sync()
    }

    func testTheWALStaysBoundedWithoutAutomaticCheckpoints() throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // (A log that keeps everything: pruning 256 rows of 10 KB at once is
        // one large transaction of its own, beside the point here.)
        let sqlite = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 10_000, checkpointPages: 50)
        _ = try sqlite.load()
        try sqlite.start(epoch: "e1")
        var largest: Int32 = 0
        let value = Value.string(String(repeating: "x", count: 5000))  // more than a page per commit
        for revision in UInt64(1)...1500 {
            try commit(sqlite, revision, value)
            largest = max(largest, sqlite.walPages)
        }
        XCTAssertGreaterThan(sqlite.checkpoints, 20, "a checkpoint every 50 pages or so")
        XCTAssertLessThan(largest, 50, "copied back after the commit that reached 50 pages")
        var st = stat()
        XCTAssertEqual(stat(directory + "/tether.db-wal", &st), 0)
        XCTAssertLessThan(Int(st.st_size), (50 + 20) * 4200, "the WAL file starts over instead of growing")
    }

    /// A checkpoint copies all of the WAL (nobody else reads the store), so
    /// the next commit starts the WAL over at the beginning of the file (a
    /// WAL that only grows makes every commit's fdatasync also commit the
    /// file's size).
    func testTheWALStartsOverAfterEachCheckpoint() throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sqlite = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 10_000, checkpointPages: 50)
        _ = try sqlite.load()
        try sqlite.start(epoch: "e1")
        var revision: UInt64 = 0
        var pages: Int32 = 0
        while sqlite.checkpoints == 0 {
            pages = sqlite.walPages
            revision += 1
            try commit(sqlite, revision, .int(Int64(revision)))
        }
        XCTAssertGreaterThanOrEqual(pages, 45, "no checkpoint before the threshold")
        revision += 1
        try commit(sqlite, revision, .int(Int64(revision)))
        XCTAssertLessThanOrEqual(sqlite.walPages, 3, "the WAL started over (it held \(pages) pages)")
        for _ in 0..<20 {
            revision += 1
            try commit(sqlite, revision, .int(Int64(revision)))
        }
        var st = stat()
        XCTAssertEqual(stat(directory + "/tether.db-wal", &st), 0)
        XCTAssertLessThan(Int(st.st_size), (Int(pages) + 5) * 4200, "the WAL file was reused, not grown")
    }

    /// The store keeps its locks: a second store on the same directory
    /// (a second tetherd) cannot read it until the first is closed. Not
    /// exclusive, two can (the fuzzer reads its store while it is open).
    func testAStoreIsOnlyOpenOnceUnlessNotExclusive() throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let first = try SQLiteStore(directory: directory, durability: .full, logCapacity: 100)
            _ = try first.load()
            try first.start(epoch: "e1")
            try commit(first, 1, .int(1))
            XCTAssertThrowsError(try SQLiteStore(directory: directory, durability: .full, logCapacity: 100).load())
        }
        let again = try SQLiteStore(directory: directory, durability: .full, logCapacity: 100, exclusive: false)
        XCTAssertEqual(try again.load().revision, 1, "closed: the next one opens it")
        try commit(again, 2, .int(2))
        let reader = try SQLiteStore(directory: directory, durability: .full, logCapacity: 100, exclusive: false)
        XCTAssertEqual(try reader.load().revision, 2)
    }
}
