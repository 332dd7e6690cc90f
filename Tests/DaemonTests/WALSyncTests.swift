import Foundation
import Glibc
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// `SQLiteStore.WALSync.separate`, the store behind the pipelined group
/// commit: SQLite commits without an fsync and `makeDurable` fdatasyncs
/// the WAL file, from another thread while the loop commits. What can be
/// checked in process: the pragma it runs under, the halves' contract
/// (fsyncs on a second thread across commits and checkpoints lose
/// nothing on reopen), and the WAL file it syncs being SQLite's own.
final class WALSyncTests: XCTestCase {
    func makeDirectory() throws -> String {
        let template = NSTemporaryDirectory() + "tether-walsync.XXXXXX"
        var bytes = Array(template.utf8CString)
        return String(cString: try XCTUnwrap(mkdtemp(&bytes)))
    }

    /// The sync thread's part: `makeDurable` over and over until told to stop.
    final class Fsyncer: @unchecked Sendable {
        private let store: SQLiteStore
        private let lock = NSLock()
        private let done = DispatchSemaphore(value: 0)
        private var stop = false
        private var fsyncs = 0
        private var failure: Error?

        init(_ store: SQLiteStore) { self.store = store }

        /// At least once, however late the thread starts.
        func run() {
            repeat {
                do {
                    try store.makeDurable()
                } catch {
                    lock.withLock { failure = error }
                    break
                }
                lock.withLock { fsyncs += 1 }
            } while !lock.withLock({ stop })
            done.signal()
        }

        func finish() -> (fsyncs: Int, failure: Error?) {
            lock.withLock { stop = true }
            done.wait()
            return lock.withLock { (fsyncs, failure) }
        }
    }

    func record(_ sqlite: SQLiteStore, _ revision: UInt64) throws {
        let name = "s\(revision % 7)"
        let value = Value.int(Int64(revision))
        try sqlite.record(Commit(revision: revision, changes: [Change(name: name, write: .set(value))], tag: nil, origin: nil),
                          state: StateImage(name: name, value: value, modified: revision, descriptor: Descriptor()))
    }

    func testOnlyFullSeparateStoresSyncInTwoHalves() throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (durability, walSync, expected) in [(SQLiteStore.Durability.full, SQLiteStore.WALSync.separate, true),
                                                (.full, .inCommit, false), (.normal, .separate, false), (.normal, .inCommit, false)] {
            let sqlite = try SQLiteStore(directory: directory, durability: durability, logCapacity: 100, walSync: walSync)
            XCTAssertEqual(sqlite.syncsInTwoHalves, expected, "\(durability) \(walSync)")
            let committer = GroupCommitter(inner: sqlite, mode: .pipelined)
            XCTAssertEqual(committer.mode, expected ? .pipelined : .inline, "nothing to overlap runs inline")
            committer.close()
        }
    }

    /// The loop commits groups (crossing checkpoints, so the WAL starts
    /// over in place) while another thread runs `makeDurable` over and
    /// over, as the sync thread does; everything reads back on reopen.
    func testFsyncsOnAnotherThreadWhileCommittingLoseNothing() throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var last: UInt64 = 0
        do {
            let sqlite = try SQLiteStore(directory: directory, durability: .full, logCapacity: 100_000,
                                         checkpointPages: 20, walSync: .separate)
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            let fsyncer = Fsyncer(sqlite)
            let thread = Thread { fsyncer.run() }
            thread.start()
            for group in 0..<300 {
                for _ in 0..<(1 + group % 5) {
                    last += 1
                    try record(sqlite, last)
                }
                try sqlite.commit()
            }
            let (fsyncs, failure) = fsyncer.finish()
            XCTAssertGreaterThan(fsyncs, 0)
            XCTAssertNil(failure)
            try sqlite.makeDurable()
            XCTAssertGreaterThan(sqlite.checkpoints, 3, "the WAL started over several times meanwhile")
        }
        let reopened = try SQLiteStore(directory: directory, durability: .full, logCapacity: 100_000, walSync: .separate)
        let contents = try reopened.load()
        XCTAssertEqual(contents.revision, last)
        XCTAssertEqual(contents.log.count, Int(last))
        XCTAssertEqual(contents.log.map(\.revision), Array(1...last))
        for state in contents.states {
            let k = UInt64(state.name.dropFirst())!
            let newest = last - (last + 7 - k) % 7  // the last revision r <= last with r % 7 == k
            XCTAssertEqual(state.value, .int(Int64(newest)), state.name)
            XCTAssertEqual(state.modified, newest, state.name)
        }
        XCTAssertEqual(contents.states.count, 7)
    }

    /// The descriptor `makeDurable` syncs must stay SQLite's WAL file: one
    /// replaced behind the store's back is found at the next checkpoint,
    /// and the sync fails instead of acknowledging what it cannot sync (the
    /// COMMIT itself took: a failure after it is the sync's, which stops
    /// the daemon — docs/robustness.md, "A full disk").
    func testAReplacedWALFileFailsTheCommit() throws {
        let directory = try makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sqlite = try SQLiteStore(directory: directory, durability: .full, logCapacity: 100_000,
                                     checkpointPages: 5, walSync: .separate)
        _ = try sqlite.load()
        try sqlite.start(epoch: "e1")
        try record(sqlite, 1)
        try sqlite.sync()
        let wal = directory + "/tether.db-wal"
        XCTAssertEqual(rename(wal, wal + ".moved"), 0)
        let fd = open(wal, O_CREAT | O_WRONLY, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        close(fd)
        var revision: UInt64 = 1
        var caught: TetherError?
        while caught == nil && revision < 2000 {
            revision += 1
            do {
                try record(sqlite, revision)
                try sqlite.commit()
                XCTAssertFalse(sqlite.hasOpenGroup, "the group committed")
                try sqlite.makeDurable()
            } catch let error as TetherError {
                caught = error
            }
        }
        XCTAssertNotNil(caught, "a checkpoint came and the sync failed")
        XCTAssertTrue(caught?.message.contains("replaced") ?? false, "\(String(describing: caught))")
    }
}
