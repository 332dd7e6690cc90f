import Foundation
import Glibc
import TetherCore
import TetherWire
import XCTest

/// Issue 30 §7: a damaged store is never silent. The marker beside the
/// store (`tether.db.marker`) says a store was there and the last revision
/// made durable in it: an emptied store is refused, a store found at a
/// lower revision starts a new epoch, a damaged table is named, and
/// `tetherd --salvage` keeps what is readable under a new epoch.
final class DamagedStoreTests: XCTestCase {
    typealias Client = DepthLimitTests.RawClient

    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
        directories = []
    }

    private func newDataDirectory() throws -> String {
        let directory = try temporaryDirectory("tether-damaged")
        directories.append(directory)
        return directory + "/data"
    }

    /// The epoch the daemon announced when it started.
    private func epoch(in log: String) -> String? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains("listening on") }),
              let range = line.range(of: "epoch ") else { return nil }
        return String(line[range.upperBound...].prefix(while: { $0 != "," }))
    }

    private func python(_ script: String, _ arguments: [String]) throws {
        let py = try DaemonFixture.run("/usr/bin/env", ["python3", "-c", script] + arguments)
        XCTAssertEqual(py.status, 0, py.stderr)
    }

    private func startFails(_ data: String, _ arguments: [String] = []) -> String? {
        do {
            let d = try DaemonFixture(arguments: arguments, dataDirectory: data)
            d.stop()
            return nil
        } catch {
            return "\(error)"
        }
    }

    func testAnEmptiedStoreIsRefusedAndSalvageStartsANewEpoch() throws {
        let data = try newDataDirectory()
        var daemon = try DaemonFixture(dataDirectory: data)
        let c = try Client(daemon)
        XCTAssertNil(try c.call("Set", #"{"name":"a","value":1}"#).error)
        let first = daemon.stop()
        XCTAssertEqual(first.status, 0)
        var st = stat()
        XCTAssertEqual(stat(data + "/tether.db.marker", &st), 0, "the marker is written")
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertEqual(truncate(data + "/tether.db", 0), 0)

        let refusal = startFails(data)
        XCTAssertNotNil(refusal, "an emptied store must not start as an empty one")
        XCTAssertTrue(refusal?.contains("holds no store") == true, refusal ?? "")
        XCTAssertTrue(refusal?.contains("tether.db.marker") == true, refusal ?? "")
        XCTAssertTrue(refusal?.contains("--salvage") == true, refusal ?? "")

        daemon = try DaemonFixture(arguments: ["--salvage"], dataDirectory: data)
        let d = try Client(daemon)
        XCTAssertEqual(try d.call("Get", #"{"name":"a"}"#).error, "io.tether.NotFound")
        XCTAssertNil(try d.call("Set", #"{"name":"b","value":2}"#).error)
        let salvaged = daemon.stop().log
        XCTAssertTrue(salvaged.contains("tetherd: salvaged states=0 "), salvaged)
        XCTAssertNotNil(epoch(in: salvaged))
        XCTAssertNotEqual(epoch(in: salvaged), epoch(in: first.log), "a salvaged store is a new epoch")

        // And it starts again, plainly.
        daemon = try DaemonFixture(dataDirectory: data)
        XCTAssertEqual(try Client(daemon).call("Get", #"{"name":"b"}"#).parameters["value"], .int(2))
    }

    func testADeletedWALAfterSIGKILLIsRefused() throws {
        let data = try newDataDirectory()
        let daemon = try DaemonFixture(dataDirectory: data)
        let c = try Client(daemon)
        for i in 0..<20 { XCTAssertNil(try c.call("Set", #"{"name":"k\#(i)","value":\#(i)}"#).error) }
        kill(daemon.process.processIdentifier, SIGKILL)
        daemon.process.waitUntilExit()
        XCTAssertEqual(unlink(data + "/tether.db-wal"), 0)
        let refusal = startFails(data)
        XCTAssertNotNil(refusal, "a store whose WAL was deleted must not start as an empty one")
        XCTAssertTrue(refusal?.contains("tether.db.marker") == true, refusal ?? "")
    }

    /// The issue's dropped log table: the revision went from 600 to 512
    /// under the same epoch.
    func testALowerRevisionThanTheMarkerStartsANewEpoch() throws {
        let data = try newDataDirectory()
        var daemon = try DaemonFixture(arguments: ["--durability", "normal"], dataDirectory: data)
        let c = try Client(daemon)
        for i in 0..<300 { XCTAssertNil(try c.call("Set", #"{"name":"k\#(i % 5)","value":\#(i)}"#).error) }
        let first = daemon.stop()
        XCTAssertEqual(first.status, 0)
        try python("""
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("DROP TABLE log")
            db.commit()
            """, [data + "/tether.db"])
        daemon = try DaemonFixture(dataDirectory: data)
        let d = try Client(daemon)
        XCTAssertNil(try d.call("Get", #"{"name":"k0"}"#).error)
        let second = daemon.stop().log
        XCTAssertNotNil(epoch(in: second))
        XCTAssertNotEqual(epoch(in: second), epoch(in: first.log), "revisions would be reused under the same epoch")
        XCTAssertTrue(second.contains("tetherd: new-epoch "), second)
        XCTAssertTrue(second.contains("lower than revision 300"), second)
    }

    /// The issue's bit flips in the WAL after SIGKILL: SQLite replays the
    /// frames before the first bad checksum, and the store went back to an
    /// early revision under the same epoch.
    func testAWALDamagedAfterSIGKILLStartsANewEpoch() throws {
        let data = try newDataDirectory()
        var daemon = try DaemonFixture(arguments: ["--marker-interval", "0"], dataDirectory: data)
        let c = try Client(daemon)
        let filler = String(repeating: "x", count: 3000)
        for i in 0..<60 { XCTAssertNil(try c.call("Set", #"{"name":"k\#(i)","value":"\#(filler)"}"#).error) }
        kill(daemon.process.processIdentifier, SIGKILL)
        daemon.process.waitUntilExit()
        let first = daemon.stop().log
        let wal = data + "/tether.db-wal"
        var st = stat()
        XCTAssertEqual(stat(wal, &st), 0)
        try python("""
            import sys
            path = sys.argv[1]
            data = bytearray(open(path, 'rb').read())
            for at in range(len(data) // 2, len(data) // 2 + 64, 8):
                data[at] ^= 0x5A
            open(path, 'wb').write(data)
            """, [wal])
        daemon = try DaemonFixture(dataDirectory: data)
        let second = daemon.stop().log
        XCTAssertNotEqual(epoch(in: second), epoch(in: first), second)
        XCTAssertTrue(second.contains("tetherd: new-epoch "), second)
        XCTAssertTrue(second.contains("lower than revision 60"), second)
    }

    func testADamagedTableIsNamedAndSalvageKeepsTheRest() throws {
        let data = try newDataDirectory()
        var daemon = try DaemonFixture(arguments: ["--durability", "normal"], dataDirectory: data)
        let c = try Client(daemon)
        for i in 0..<300 { XCTAssertNil(try c.call("Set", #"{"name":"k\#(i % 5)","value":\#(i)}"#).error) }
        let first = daemon.stop()
        XCTAssertEqual(first.status, 0)
        // The log table's root made to point at another table's page: SQLite
        // finds it malformed when it reads it.
        try python("""
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            meta = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'meta'").fetchone()[0]
            db.execute("PRAGMA writable_schema = ON")
            db.execute("UPDATE sqlite_master SET rootpage = ? WHERE name = 'log'", (meta,))
            db.commit()
            """, [data + "/tether.db"])
        let refusal = startFails(data)
        XCTAssertNotNil(refusal)
        XCTAssertTrue(refusal?.contains("table log") == true, refusal ?? "")

        daemon = try DaemonFixture(arguments: ["--salvage"], dataDirectory: data)
        let d = try Client(daemon)
        // The states table was brought up to date at revision 256.
        for i in 0..<5 {
            let r = try d.call("Get", #"{"name":"k\#(i)"}"#)
            XCTAssertNil(r.error, "k\(i) is kept")
        }
        let set = try d.call("Set", #"{"name":"after","value":1}"#)
        XCTAssertEqual(set.parameters["revision"], .int(301), "revisions go on past the marker's")
        let log = daemon.stop().log
        XCTAssertTrue(log.contains("tetherd: salvage-dropped what=\"table log:"), log)
        XCTAssertTrue(log.contains("tetherd: salvaged states=5 "), log)
        XCTAssertNotEqual(epoch(in: log), epoch(in: first.log))
        XCTAssertEqual(access(data + "/tether.db.damaged-" + (epoch(in: log) ?? ""), F_OK), 0, "the damaged store is kept aside")
    }

    /// Issue 36: a log row at revision 0 made the start compute 0 - 1 in
    /// UInt64 (the first revision the log holds, less one): a trap.
    func testALogRowAtRevisionZeroDoesNotCrashTheStart() throws {
        let data = try newDataDirectory()
        var daemon = try DaemonFixture(dataDirectory: data)
        XCTAssertNil(try Client(daemon).call("Set", #"{"name":"a","value":1}"#).error)
        XCTAssertEqual(daemon.stop().status, 0)
        try python("""
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("INSERT INTO log(revision, changes) VALUES(0, '[]')")
            db.commit()
            """, [data + "/tether.db"])
        daemon = try DaemonFixture(dataDirectory: data)
        XCTAssertEqual(try Client(daemon).call("Get", #"{"name":"a"}"#).parameters["value"], .int(1))
        XCTAssertEqual(daemon.stop().status, 0)
    }
}
