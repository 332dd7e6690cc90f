import Dispatch
import Foundation
import Glibc
import TetherCore
@testable import TetherRuntime
import TetherWire
import XCTest

/// Issue 36: remote states across a daemon's epochs, and watches refused
/// for good. A mirror believed only ever-rising revisions (max()), so after
/// a daemon restarted with lower ones (--memory, --restore of an older
/// snapshot) it resumed from the old epoch's revision and counted writes
/// as shown before they were; and a Watch refused with AccessDenied was
/// reopened every 2 s for ever.
final class RemoteEpochTests: XCTestCase {
    final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [Int?] = []
        let changed = DispatchSemaphore(value: 0)
        func add(_ v: Int?) { lock.lock(); items.append(v); lock.unlock(); changed.signal() }
        var values: [Int?] { lock.lock(); defer { lock.unlock() }; return items }
        /// Waits (guarded) until `value` has been seen.
        func wait(for value: Int?, file: StaticString = #filePath, line: UInt = #line) {
            let end = Date().addingTimeInterval(60)
            while !values.contains(value) {
                if changed.wait(timeout: .now() + 60) == .timedOut || Date() > end {
                    XCTFail("the observer never saw \(String(describing: value)); it saw \(values)", file: file, line: line)
                    return
                }
            }
        }
    }

    /// The mirror's view of its state, read under the link's lock.
    private func applied(_ remote: Remote) throws -> (applied: UInt64, epoch: String?) {
        let link = try RemoteTable.find(remote.handle)
        guard let m = link.allMirrors.first else { throw FixtureError("no mirror") }
        link.lock.lock()
        defer { link.lock.unlock() }
        return (m.appliedRevision, m.epoch)
    }

    /// A fake daemon moves from epoch A at revision 100 to epoch B at
    /// revision 3 (a restart with a lower revision): the mirror applies
    /// B's snapshot and, when its watch is reopened, resumes from B's 3,
    /// not from A's 100 (which B would take for a later point of its own
    /// history, skipping every commit from 4 to 100).
    func testAMirrorResumesFromTheNewEpochsRevision() throws {
        let server = try ScriptedDaemon { call, watch, connection in
            switch call.method {
            case "io.tether.Watch":
                let (value, revision, epoch): (Int64, UInt64, String) = watch == 1 ? (1, 100, "A") : (2, 3, "B")
                connection.reply(WatchReply(event: .snapshot(Entry(name: "x", value: .int(value), modified: revision), resync: watch > 1),
                                            revision: revision, epoch: epoch).parameters, continues: true)
                connection.reply(WatchReply(event: .progress(resync: watch > 1), revision: revision, epoch: epoch).parameters, continues: true)
            case "io.tether.Get":
                connection.reply(GetReply(value: .int(2), revision: 3, modified: 3).parameters)
            default:
                connection.reply(ValueObject())
            }
        }
        defer { server.stop() }
        let runtime = try Runtime()
        let remote = try runtime.connect(to: server.address)
        let x = try remote.state("x", as: Int?.self)
        XCTAssertEqual(x.value, 1)
        XCTAssertEqual(try applied(remote).applied, 100)
        let log = Log()
        let token = x.observe { log.add($0.new ?? nil) }

        server.dropAll()  // "restart": every watch resumes
        log.wait(for: 2)
        let afterRestart = try applied(remote)
        XCTAssertEqual(afterRestart.epoch, "B")
        XCTAssertEqual(afterRestart.applied, 3, "what was applied is the new epoch's revision, not the old one's 100")

        server.dropAll()  // the watch is reopened once more, in epoch B
        XCTAssertEqual(server.watchAnswered.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(server.watchAnswered.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(server.watchAnswered.wait(timeout: .now() + 60), .success)
        let third = server.watches[2]
        XCTAssertEqual(third.epoch, "B")
        XCTAssertEqual(third.fromRevision, 3, "resumes from what it applied in epoch B")
        withExtendedLifetime(token) {}
    }

    /// A real --memory tetherd restarted (on the same socket) under a
    /// connected client: the client's writes read their own value again,
    /// every commit of another process reaches its observer, and the
    /// mirror's revision is the new daemon's.
    func testAMemoryDaemonRestartedUnderAClient() throws {
        let first = try DaemonFixture(arguments: ["--memory"])
        let runtime = try Runtime()
        let remote = try runtime.connect(to: first.address, timeoutMilliseconds: 30_000)
        let x = try remote.state("x", as: Int?.self)
        for i in 1...30 { try x.set(i) }
        XCTAssertEqual(x.value, 30)
        XCTAssertEqual(try applied(remote).applied, 30)
        let log = Log()
        let token = x.observe { log.add($0.new ?? nil) }

        first.stop()
        let second = try DaemonFixture(arguments: ["--memory"], socketPath: first.socketPath)
        try Runtimes.waitRemote(remote.handle, milliseconds: 60_000)
        try checkFollows(remote, x, log, second, base: 100)
        withExtendedLifetime((token, first)) {}
    }

    /// A stored tetherd replaced by one restored from an older snapshot
    /// (--restore: a new epoch, a lower revision) under a connected client.
    func testADaemonRestoredFromAnOlderSnapshotUnderAClient() throws {
        let first = try DaemonFixture()
        let runtime = try Runtime()
        let remote = try runtime.connect(to: first.address, timeoutMilliseconds: 30_000)
        let x = try remote.state("x", as: Int?.self)
        for i in 1...5 { try x.set(i) }
        let copy = first.directory + "/copy.db"
        let snap = try DaemonFixture.run("tetherctl", ["--address", first.address, "snapshot", copy])
        XCTAssertEqual(snap.status, 0, snap.stderr)
        for i in 6...40 { try x.set(i) }
        XCTAssertEqual(try applied(remote).applied, 40)
        let log = Log()
        let token = x.observe { log.add($0.new ?? nil) }

        first.stop()
        let second = try DaemonFixture(arguments: ["--restore", copy], socketPath: first.socketPath,
                                       dataDirectory: first.directory + "/restored")
        try Runtimes.waitRemote(remote.handle, milliseconds: 60_000)
        log.wait(for: 5)  // the resync: the snapshot's value
        try checkFollows(remote, x, log, second, base: 100)
        withExtendedLifetime((token, first)) {}
    }

    /// After a restart: the mirror resynced to the daemon's revision, the
    /// writer reads each of its writes, and every commit of another
    /// process (tetherctl) reaches the observer, in order.
    private func checkFollows(_ remote: Remote, _ x: State<Int?>, _ log: Log, _ daemon: DaemonFixture, base: Int,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        try Runtimes.syncRemote(remote.handle)
        let stats = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "stats"])
        XCTAssertEqual(stats.status, 0, stats.stderr, file: file, line: line)
        let mirror = try applied(remote)
        XCTAssertTrue(stats.stdout.contains(#""revision":\#(mirror.applied),"#),
                      "the mirror's revision \(mirror.applied) is the new daemon's: \(stats.stdout)", file: file, line: line)
        XCTAssertTrue(stats.stdout.contains(#""epoch":"\#(mirror.epoch ?? "")""#), "\(stats.stdout)", file: file, line: line)
        for i in 1...10 {
            try x.set(base + i)
            XCTAssertEqual(x.value, base + i, "the writer reads its own write after the restart", file: file, line: line)
        }
        for i in 1...10 {
            let set = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "set", "x", "\(2 * base + i)"])
            XCTAssertEqual(set.status, 0, set.stderr, file: file, line: line)
        }
        try Runtimes.syncRemote(remote.handle)
        XCTAssertEqual(x.value, 2 * base + 10, file: file, line: line)
        log.wait(for: 2 * base + 10, file: file, line: line)
        let seen = log.values.compactMap { $0 }.filter { $0 > 2 * base }
        XCTAssertEqual(seen, Array((2 * base + 1)...(2 * base + 10)), "every commit, in order", file: file, line: line)
    }

    /// The daemon's side: a from_revision above its revision, in its own
    /// epoch, gets a resync (snapshot and progress flagged resync), never
    /// an empty replay that would look like a clean resume.
    func testAFromRevisionAboveTheDaemonsIsResynced() throws {
        let daemon = try DaemonFixture(arguments: ["--memory"])
        let set = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "set", "x", "7"])
        XCTAssertEqual(set.status, 0, set.stderr)
        let first = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "watch", "x", "--count", "0"])
        XCTAssertEqual(first.status, 0, first.stderr)
        guard let progress = first.stdout.split(separator: "\n").last,
              let object = Array(progress.utf8).withUnsafeBytes({ try? Value(json: $0) }), case .object(let members) = object,
              case .string(let epoch)? = members["epoch"] else {
            return XCTFail("no progress line with an epoch: \(first.stdout)")
        }
        let resumed = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "watch", "x", "--from", "1000",
                                                          "--epoch", epoch, "--count", "0"])
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        let lines = resumed.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 2, resumed.stdout)
        XCTAssertTrue(lines.first?.contains(#""event":"snapshot""#) == true && lines.first?.contains(#""resync":true"#) == true, resumed.stdout)
        XCTAssertTrue(lines.first?.contains(#""value":7"#) == true, resumed.stdout)
        XCTAssertTrue(lines.last?.contains(#""event":"progress""#) == true && lines.last?.contains(#""resync":true"#) == true, resumed.stdout)
    }

    /// A watch the daemon refuses for good (AccessDenied, after the state
    /// was readable) stops: the mirror says why (sync and the revision
    /// fail with TETHER_EREADONLY, tether_remote_connected is false) and
    /// the Watch is not sent again, where the old client reopened it
    /// every 2 s or less for ever.
    func testAWatchRefusedForGoodIsNotReopened() throws {
        let server = try ScriptedDaemon { call, watch, connection in
            switch call.method {
            case "io.tether.Watch":
                if watch == 1 {
                    connection.reply(WatchReply(event: .snapshot(Entry(name: "x", value: .int(1), modified: 1), resync: false),
                                                revision: 1, epoch: "e").parameters, continues: true)
                    connection.reply(WatchReply(event: .progress(resync: false), revision: 1, epoch: "e").parameters, continues: true)
                } else {
                    connection.error("io.tether.AccessDenied", "uid 1000 may not read 'x'")
                }
            case "io.tether.Get":
                connection.reply(GetReply(value: .int(1), revision: 1, modified: 1).parameters)
            default:
                connection.reply(ValueObject())
            }
        }
        defer { server.stop() }
        let runtime = try Runtime()
        let remote = try runtime.connect(to: server.address)
        let x = try remote.state("x", as: Int?.self)
        XCTAssertEqual(x.value, 1)
        XCTAssertEqual(server.watchAnswered.wait(timeout: .now() + 60), .success)

        server.dropAll()  // the access changed meanwhile: the reopened watch is refused
        XCTAssertEqual(server.watchClosed.wait(timeout: .now() + 60), .success, "the first watch dropped")
        XCTAssertEqual(server.watchAnswered.wait(timeout: .now() + 60), .success, "the watch was reopened once")
        XCTAssertEqual(server.watchClosed.wait(timeout: .now() + 60), .success, "the client closed the refused watch")

        try Runtimes.waitRemote(remote.handle, milliseconds: 60_000)
        XCTAssertThrowsError(try Runtimes.syncRemote(remote.handle)) { error in
            XCTAssertEqual((error as? TetherError)?.code, .readOnly, "\(error)")
            XCTAssertTrue((error as? TetherError)?.message.contains("AccessDenied") == true, "\(error)")
        }
        XCTAssertThrowsError(try x.daemonRevision)
        XCTAssertFalse(remote.isConnected, "a mirror that stopped is not connected")
        XCTAssertEqual(x.value, 1, "plain reads keep the last value")
        // The old client reopened every watch not running whenever it
        // reconnected (and after each backoff). Make it reconnect: drop
        // the call connection and wait for the new one. The reconnection
        // opens the call connection and then, in the same loop turn, any
        // watch it reopens, so a watch opened afterwards (y's) is accepted
        // after such a reopened one: counting connections up to y's says,
        // without waiting for time to pass, whether x's was reopened.
        let before = server.accepted
        server.dropAll()
        XCTAssertTrue(server.waitAccepted(before + 1), "the call connection came back")
        guarded(60, "a state made after the reconnection") { _ = try? remote.state("y", as: Int?.self) }
        XCTAssertEqual(server.accepted, before + 2, "the call connection and y's watch, not x's again")
        XCTAssertEqual(server.watches.map(\.names), [["x"], ["x"], ["y"]])
        withExtendedLifetime(x) {}
    }
}
