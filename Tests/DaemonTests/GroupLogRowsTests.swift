import Foundation
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// A group's untagged, consecutive commits go into the log as one row
/// (`SQLiteStore.insertGroupRow`): `revision` the last one's, `commits`
/// how many. Every commit reads back from it as from a row of its own, in
/// stores that mix both kinds; Compact and pruning never keep less than
/// they promise.
final class GroupLogRowsTests: XCTestCase {
    private func directory() throws -> String {
        let template = NSTemporaryDirectory() + "tether-groups.XXXXXX"
        var bytes = Array(template.utf8CString)
        return String(cString: try XCTUnwrap(mkdtemp(&bytes)))
    }

    /// Commit `revision`: state s<revision % 5> set to its revision (an
    /// int, or a string every fourth: values of more than one shape).
    private func commit(_ sqlite: SQLiteStore, _ revision: UInt64, tagged: Bool = false) throws {
        let name = "s\(revision % 5)"
        let value: Value = revision % 4 == 0 ? .string("v\(revision)") : .int(Int64(revision))
        try sqlite.record(Commit(revision: revision, changes: [TetherWire.Change(name: name, write: .set(value))],
                                 tag: tagged ? "t\(revision)" : nil, origin: tagged ? revision : nil),
                          state: StateImage(name: name, value: value, modified: revision, descriptor: Descriptor()))
    }

    private func expectedValue(_ revision: UInt64) -> Value {
        revision % 4 == 0 ? .string("v\(revision)") : .int(Int64(revision))
    }

    /// A new store in `dir`, loaded and started (the states table flushed
    /// every `flushEvery` commits: never, by default).
    private func newStore(_ dir: String, logCapacity: Int = 10_000, flushEvery: Int = 1_000_000) throws -> SQLiteStore {
        let sqlite = try SQLiteStore(directory: dir, durability: .normal, logCapacity: logCapacity, flushEvery: flushEvery)
        _ = try sqlite.load()
        try sqlite.start(epoch: "e1")
        return sqlite
    }

    /// Every state holds what the newest of commits 1...last wrote to it,
    /// and that commit's revision as its `modified`.
    private func assertNewest(_ states: [StateImage], through last: UInt64,
                              file: StaticString = #filePath, line: UInt = #line) {
        for state in states {
            let newest = (1...last).last { "s\($0 % 5)" == state.name }!
            XCTAssertEqual(state.value, expectedValue(newest), state.name, file: file, line: line)
            XCTAssertEqual(state.modified, newest, state.name, file: file, line: line)
        }
    }

    /// Groups of 1, 2, 7, a tagged one (a row per commit), 64 + 3 (a
    /// row per 64, as the pending rows are inserted), then 9: the rows are
    /// as described, and every commit and the newest image of every state
    /// read back.
    func testGroupsAreOneRowAndReadBackAsCommits() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var revision: UInt64 = 0
        let groups: [(size: Int, tagged: Bool)] = [(1, false), (2, false), (7, false), (3, true),
                                                     (SQLiteStore.rowsPerInsert + 3, false), (9, false)]
        var rows: [(revision: UInt64, commits: Int)] = []
        do {
            let sqlite = try newStore(dir)
            for group in groups {
                for _ in 0..<group.size {
                    revision += 1
                    try commit(sqlite, revision, tagged: group.tagged)
                }
                try sqlite.sync()
            }
            rows = try sqlite.logRows()
        }
        XCTAssertEqual(rows.map(\.commits), [1, 2, 7, 1, 1, 1, SQLiteStore.rowsPerInsert, 3, 9])
        XCTAssertEqual(rows.map(\.revision), [1, 3, 10, 11, 12, 13, 77, 80, 89])
        XCTAssertEqual(revision, 89)

        let contents = try SQLiteStore(directory: dir, durability: .normal, logCapacity: 10_000).load()
        XCTAssertEqual(contents.revision, revision)
        XCTAssertEqual(contents.log.map(\.revision), Array(1...revision))
        for c in contents.log {
            let tagged = (11...13).contains(c.revision)
            XCTAssertEqual(c.tag, tagged ? "t\(c.revision)" : nil, "\(c.revision)")
            XCTAssertEqual(c.origin, tagged ? c.revision : nil, "\(c.revision)")
            XCTAssertEqual(c.changes, [TetherWire.Change(name: "s\(c.revision % 5)", write: .set(expectedValue(c.revision)))])
        }
        // Never flushed (flushEvery): every state comes from the rows' images.
        XCTAssertEqual(contents.states.count, 5)
        assertNewest(contents.states, through: revision)
    }

    /// Compact through a commit inside a group row deletes the whole row:
    /// nothing through that revision stays in the log (the states table,
    /// flushed first, has the rest); a restart reads the rest back.
    func testCompactInsideAGroupRowKeepsNothingThroughIt() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let sqlite = try newStore(dir)
            for r in UInt64(1)...10 { try commit(sqlite, r) }
            try sqlite.sync()  // one row: 1...10
            for r in UInt64(11)...14 { try commit(sqlite, r) }
            try sqlite.sync()  // one row: 11...14
            try sqlite.compact(through: 4)
            XCTAssertEqual(try sqlite.logRows().map(\.revision), [14])
        }
        let contents = try SQLiteStore(directory: dir, durability: .normal, logCapacity: 10_000).load()
        XCTAssertEqual(contents.revision, 14)
        XCTAssertEqual(contents.log.map(\.revision), Array(11...14))
        assertNewest(contents.states, through: 14)
        XCTAssertEqual(contents.states.count, 5)
    }

    /// A store made before group rows (its log without the `commits`
    /// column: Python's sqlite3 drops it from one made now) opens, reads
    /// its rows back, and then takes group rows beside them.
    func testAStoreWithoutTheCommitsColumnOpensAndTakesGroups() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let sqlite = try newStore(dir)
            for r in UInt64(1)...3 {
                try commit(sqlite, r)
                try sqlite.sync()  // a row each
            }
        }
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                            + "c.execute('ALTER TABLE log DROP COLUMN commits'); c.commit()", dir + "/tether.db"]
        try python.run()
        python.waitUntilExit()
        XCTAssertEqual(python.terminationStatus, 0, "python3 could not drop the column")
        do {
            let sqlite = try SQLiteStore(directory: dir, durability: .normal, logCapacity: 10_000, flushEvery: 1_000_000)
            XCTAssertEqual(try sqlite.load().log.map(\.revision), [1, 2, 3])
            for r in UInt64(4)...8 { try commit(sqlite, r) }
            try sqlite.sync()
            XCTAssertEqual(try sqlite.logRows().map(\.commits), [1, 1, 1, 5])
        }
        let contents = try SQLiteStore(directory: dir, durability: .normal, logCapacity: 10_000).load()
        XCTAssertEqual(contents.log.map(\.revision), Array(1...8))
        assertNewest(contents.states, through: 8)
    }

    /// Pruning to the log's capacity deletes only rows wholly before the
    /// oldest commit kept: a group row holding it stays, so the log after
    /// a restart still begins at or before that commit, with no gap after.
    func testPruningKeepsTheRowHoldingTheOldestKeptCommit() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var revision: UInt64 = 0
        do {
            let sqlite = try newStore(dir, logCapacity: 20, flushEvery: 6)
            for size in [7, 7, 7, 7, 7, 7, 7, 7] {
                for _ in 0..<size {
                    revision += 1
                    try commit(sqlite, revision)
                }
                try sqlite.sync()
            }
        }
        let contents = try SQLiteStore(directory: dir, durability: .normal, logCapacity: 20).load()
        XCTAssertEqual(contents.revision, revision)
        let kept = contents.log.map(\.revision)
        XCTAssertEqual(kept.last, revision)
        XCTAssertEqual(kept, Array(try XCTUnwrap(kept.first)...revision), "no gap")
        XCTAssertLessThanOrEqual(try XCTUnwrap(kept.first), revision - 20 + 1, "at least the capacity kept")
        XCTAssertLessThan(kept.count, Int(revision), "something was pruned")
        assertNewest(contents.states, through: revision)
    }
}
