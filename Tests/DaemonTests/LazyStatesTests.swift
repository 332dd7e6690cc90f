import Foundation
import Glibc
import TetherCore
import TetherDaemon
import TetherWire
import XCTest

/// One page per commit: a commit writes only its log row (with the states
/// as it left them); the states table catches up in batches, a restart
/// replays the log rows after it, and pruning and Compact never drop a row
/// the states table does not cover yet.
final class LazyStatesTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        let template = NSTemporaryDirectory() + "tether-lazy.XXXXXX"
        var bytes = Array(template.utf8CString)
        directory = String(cString: try XCTUnwrap(mkdtemp(&bytes)))
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func open(logCapacity: Int = 1000, flushEvery: Int = 1000) throws -> SQLiteStore {
        try SQLiteStore(directory: directory, durability: .normal, logCapacity: logCapacity, flushEvery: flushEvery)
    }

    private func set(_ sqlite: SQLiteStore, _ revision: UInt64, _ name: String, _ value: Value?,
                     descriptor: Descriptor = Descriptor()) throws {
        let write: Write = value.map { .set($0) } ?? .remove
        try sqlite.record(Commit(revision: revision, changes: [Change(name: name, write: write)], tag: nil, origin: nil),
                          states: [StateImage(name: name, value: value, modified: revision, descriptor: descriptor)])
        try sqlite.sync()
    }

    private func values(_ contents: SQLiteStore.Contents) -> [String: Value] {
        var result: [String: Value] = [:]
        for s in contents.states { result[s.name] = s.value }
        return result
    }

    func testARestartReplaysTheLogRowsTheStatesTableDoesNotHoldYet() throws {
        do {
            let sqlite = try open()
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            try set(sqlite, 1, "a", 1)
            try set(sqlite, 2, "b", .bytes([0, 1]))
            try set(sqlite, 3, "a", 3, descriptor: Descriptor(type: .int))
            try set(sqlite, 4, "c", "gone soon")
            try set(sqlite, 5, "c", nil)
            XCTAssertEqual(sqlite.applied, 0, "nothing flushed: the states table is behind")
        }
        let sqlite = try open()
        let contents = try sqlite.load()
        XCTAssertEqual(contents.revision, 5)
        XCTAssertEqual(values(contents), ["a": 3, "b": .bytes([0, 1])])
        XCTAssertEqual(contents.states.map(\.name), ["a", "b"], "in name order")
        XCTAssertEqual(contents.states.first?.modified, 3)
        XCTAssertEqual(contents.states.first?.descriptor.type, .int)
        XCTAssertEqual(contents.log.map(\.revision), [1, 2, 3, 4, 5])
    }

    func testTheStatesTableCatchesUpInBatchesAndBothHalvesAgree() throws {
        do {
            let sqlite = try open(flushEvery: 4)
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            for r in UInt64(1)...10 { try set(sqlite, r, "s\(r % 3)", .int(Int64(r))) }
            XCTAssertEqual(sqlite.applied, 8, "flushed after 4 and 8 commits")
        }
        let contents = try open(flushEvery: 4).load()
        XCTAssertEqual(values(contents), ["s0": 9, "s1": 10, "s2": 8])
    }

    func testPruningNeverDropsRowsTheStatesTableDoesNotCover() throws {
        do {
            let sqlite = try open(logCapacity: 3, flushEvery: 1000)
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            for r in UInt64(1)...50 { try set(sqlite, r, "s\(r)", .int(Int64(r))) }
        }
        let contents = try open(logCapacity: 3, flushEvery: 1000).load()
        XCTAssertEqual(contents.states.count, 50, "every state, though the log keeps 3 for watches")
        XCTAssertEqual(values(contents)["s1"], 1)
        XCTAssertEqual(values(contents)["s50"], 50)
    }

    func testCompactFlushesTheStatesFirst() throws {
        do {
            let sqlite = try open()
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            for r in UInt64(1)...10 { try set(sqlite, r, "s\(r)", .int(Int64(r))) }
            try sqlite.compact(through: 9)
            XCTAssertEqual(sqlite.applied, 10)
        }
        let contents = try open().load()
        XCTAssertEqual(contents.states.count, 10)
        XCTAssertEqual(contents.log.map(\.revision), [10])
    }

    func testADescriptorChangeOfAStateNotYetInTheStatesTableSurvives() throws {
        do {
            let sqlite = try open()
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            try set(sqlite, 1, "a", 1)
            try sqlite.describe("a", Descriptor(readOnly: true))
            try sqlite.sync()
        }
        let contents = try open().load()
        XCTAssertEqual(contents.states.first?.descriptor.readOnly, true)
        XCTAssertEqual(values(contents), ["a": 1])
    }
}
