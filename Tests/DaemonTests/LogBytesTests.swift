import Foundation
import Glibc
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// Issue 30 §3: `--log-bytes` bounds the log on disk and in memory, at run
/// time and at restart; and (issue 36) a group row never passes what SQLite
/// stores in one value.
final class LogBytesTests: XCTestCase {
    typealias Client = DepthLimitTests.RawClient

    private func newDirectory() throws -> String {
        return try temporaryDirectory("tether-logbytes")
    }

    private func fileSize(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
    }

    /// 200 rewrites of a 256 KiB state with --log-bytes 4 MiB: the store
    /// (checkpointed at the clean stop) stays within the bound plus the
    /// live state and SQLite's slack, and a restart loads only the newest
    /// commits within it (before: a 50 MiB store, all 200 commits loaded).
    func testTheLogOnDiskAndARestartStayWithinLogBytes() throws {
        let root = try newDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        let bound = 4 << 20, stateBytes = 256 << 10, rewrites = 200
        let arguments = ["--durability", "normal", "--log-bytes", "\(bound)"]

        // The same daemon over an empty store: its peak memory at start.
        let empty = try DaemonFixture(arguments: arguments, dataDirectory: root + "/empty")
        let baseline = empty.memory("VmHWM")
        empty.stop()

        var daemon = try DaemonFixture(arguments: arguments, dataDirectory: data)
        let c = try Client(daemon)
        let filler = String(repeating: "x", count: stateBytes)
        for i in 0..<rewrites {
            XCTAssertNil(try c.call("Set", #"{"name":"big","value":"\#(i)\#(filler)"}"#).error)
        }
        XCTAssertEqual(daemon.stop().status, 0)
        XCTAssertEqual(fileSize(data + "/tether.db-wal"), 0, "the clean stop checkpointed the WAL")
        let store = fileSize(data + "/tether.db")
        XCTAssertLessThan(store, bound + 4 * stateBytes + (1 << 20),
                          "the store holds the log within --log-bytes and the live state; it held every rewrite (\(rewrites * stateBytes) bytes)")

        daemon = try DaemonFixture(arguments: arguments, dataDirectory: data)
        let growth = daemon.memory("VmHWM") - baseline
        let get = try Client(daemon).call("Get", #"{"name":"big"}"#)
        XCTAssertEqual(get.parameters["value"], .string("\(rewrites - 1)" + filler))
        let log = daemon.stop().log
        // The log loaded holds at most the bound's worth of commits.
        let line = try XCTUnwrap(log.split(separator: "\n").first { $0.hasPrefix("tetherd: store ") })
        let from = try XCTUnwrap(line.split(separator: " ").first { $0.hasPrefix("resumable-from=") }?.dropFirst("resumable-from=".count))
        let kept = rewrites - (Int(from) ?? 0)
        XCTAssertLessThanOrEqual(kept, bound / stateBytes + 1, line.description)
        XCTAssertGreaterThanOrEqual(kept, 1)
        XCTAssertLessThan(growth, 4 * bound, "a restart's peak memory grew \(growth) bytes over an empty store's")
        print("LogBytesTests: store \(store) bytes, restart peak RSS +\(growth) bytes over \(baseline), \(kept) commits kept")
    }

    /// A group whose row would pass SQLite's length limit is written a row
    /// per commit, every commit and image read back; a single value past
    /// the limit fails the group with an error, never a NULL column.
    func testAGroupPastSQLitesLengthLimitIsSplit() throws {
        let dir = try newDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let value = Value.string(String(repeating: "v", count: 3000))
        do {
            let sqlite = try SQLiteStore(directory: dir, durability: .normal, logCapacity: 10_000, flushEvery: 1_000_000)
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            sqlite.setLengthLimit(10_000)
            for revision in UInt64(1)...8 {
                let name = "s\(revision)"
                // A tag-less, origin-less, consecutive group: one row if it fits.
                try sqlite.record(Commit(revision: revision, changes: [TetherWire.Change(name: name, write: .set(value))], tag: nil, origin: nil),
                                  state: StateImage(name: name, value: value, modified: revision, descriptor: Descriptor(readOnly: true)))
            }
            try sqlite.sync()
            XCTAssertEqual(try sqlite.logRows().map(\.commits), Array(repeating: 1, count: 8), "split: a row per commit")

            let huge = Value.string(String(repeating: "h", count: 20_000))
            try sqlite.record(Commit(revision: 9, changes: [TetherWire.Change(name: "h", write: .set(huge))], tag: nil, origin: nil),
                              state: StateImage(name: "h", value: huge, modified: 9, descriptor: Descriptor()))
            XCTAssertThrowsError(try sqlite.sync()) { error in
                XCTAssertTrue("\(error)".contains("too big"), "\(error)")
            }
        }
        let contents = try SQLiteStore(directory: dir, durability: .normal, logCapacity: 10_000).load()
        XCTAssertEqual(contents.revision, 8)
        XCTAssertEqual(contents.log.map(\.revision), Array(UInt64(1)...8))
        XCTAssertEqual(contents.states.count, 8)
        XCTAssertTrue(contents.states.allSatisfy { $0.value == value && $0.descriptor.readOnly })
    }
}
