import Foundation
import Glibc
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// Issue 30 §2: a full disk is an error, not a crash. The store's SQLite
/// is the real one; the full disk is SQLite's own SQLITE_FULL, met through
/// `max_page_count` (`SQLiteStore.setMaxPageCount`), in both group-commit
/// modes. The writes of the refused group get io.tether.StorageFull; reads
/// and an open Watch go on; once there is room again writes succeed; a
/// restart shows every acknowledged write and none of the refused ones.
/// (`testATmpfsThatFillsUp` does the same to a real tetherd on a 4 MiB
/// tmpfs when this process may mount one.)
final class StorageFullTests: XCTestCase {
    final class Daemon {
        let directory: String
        let sqlite: SQLiteStore
        let committer: GroupCommitter
        let store: Store
        let service: Service

        init(directory: String, mode: GroupCommitter.Mode) throws {
            self.directory = directory
            sqlite = try SQLiteStore(directory: directory, durability: .full, logCapacity: 1000,
                                     walSync: mode == .pipelined ? .separate : .inCommit)
            let contents = try sqlite.load()
            if contents.epoch == nil { try sqlite.start(epoch: "e1") }
            committer = GroupCommitter(inner: sqlite, mode: mode)
            store = try Store(logCapacity: 1000, epoch: contents.epoch ?? "e1", sink: committer)
            try store.restore(states: contents.states, log: contents.log, revision: contents.revision)
            service = Service(store: store, policy: AccessPolicy(owner: getuid()), log: EventLog(quiet: true))
        }

        func connect() -> GroupCommitTests.Client { GroupCommitTests.Client(session: service.open(peer: Peer(pid: 1, uid: getuid(), gid: getgid()))) }

        /// Ends the turn and waits until its output may be written.
        func turn() { _ = service.drain() }

        func close() { committer.close() }
    }

    private func newDirectory() throws -> String {
        let directory = try temporaryDirectory("tether-full")
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    private static let payload = Value.string(String(repeating: "x", count: 3000))

    private func changeRevisions(_ replies: [Reply]) -> [Int64] {
        replies.filter { $0.parameters.string("event") == "change" }.compactMap { $0.parameters.int("revision") }
    }

    func testAFullDiskRefusesTheGroupAndServesReadsPipelined() throws { try fullDisk(.pipelined) }
    func testAFullDiskRefusesTheGroupAndServesReadsInline() throws { try fullDisk(.inline) }

    private func fullDisk(_ mode: GroupCommitter.Mode) throws {
        let directory = try newDirectory()
        var d: Daemon? = try Daemon(directory: directory, mode: mode)
        let writer = d!.connect(), second = d!.connect(), reader = d!.connect(), watcher = d!.connect()
        watcher.send("io.tether.Watch", ["prefix": ""], more: true)
        d!.turn()
        XCTAssertEqual(watcher.written().map { $0.parameters.string("event") }, ["progress"])

        // Room for a few dozen writes of 3 kB.
        try d!.sqlite.setMaxPageCount(try d!.sqlite.pageCount() + 40)
        var acknowledged: [String: Int64] = [:]
        var refused: [String] = []
        var i = 0
        while refused.isEmpty {
            XCTAssertLessThan(i, 1000, "the disk never filled")
            if i >= 1000 { return }
            // Two writers in one turn: one group.
            writer.send("io.tether.Set", ["name": .string("a\(i)"), "value": Self.payload])
            second.send("io.tether.Set", ["name": .string("b\(i)"), "value": Self.payload])
            d!.turn()
            for (client, name) in [(writer, "a\(i)"), (second, "b\(i)")] {
                let r = client.written()
                XCTAssertEqual(r.count, 1)
                if let error = r.first?.error {
                    XCTAssertEqual(error, "io.tether.StorageFull", "\(r.first!.parameters)")
                    refused.append(name)
                } else {
                    acknowledged[name] = r.first?.parameters.int("revision")
                }
            }
            i += 1
        }
        XCTAssertEqual(refused.count, 2, "both writes of the refused group are refused: \(refused)")
        XCTAssertGreaterThan(acknowledged.count, 4)
        let lastAcknowledged = acknowledged.values.max() ?? 0
        XCTAssertEqual(Int64(d!.store.revision), lastAcknowledged, "the refused commits are undone in memory")

        // Reads go on, and see nothing refused.
        reader.send("io.tether.Get", ["name": "a0"])
        reader.send("io.tether.Get", ["name": .string(refused[0])])
        d!.turn()
        let reads = reader.written()
        XCTAssertEqual(reads.count, 2)
        XCTAssertEqual(reads.first?.parameters["value"], Self.payload)
        XCTAssertEqual(reads.last?.error, "io.tether.NotFound", "a refused write left nothing behind")

        // Still full: the same group is refused again.
        writer.send("io.tether.Set", ["name": "late1", "value": Self.payload])
        second.send("io.tether.Set", ["name": "late2", "value": Self.payload])
        d!.turn()
        XCTAssertEqual(writer.written().first?.error, "io.tether.StorageFull")
        XCTAssertEqual(second.written().first?.error, "io.tether.StorageFull")

        // The watch saw exactly the acknowledged commits.
        XCTAssertEqual(Set(changeRevisions(watcher.written())), Set(acknowledged.values))

        // Room again: writes succeed, under the next revision (no gap).
        try d!.sqlite.setMaxPageCount(0)
        writer.send("io.tether.Set", ["name": "after", "value": 1])
        d!.turn()
        let after = writer.written()
        XCTAssertNil(after.first?.error, "\(String(describing: after.first?.parameters))")
        XCTAssertEqual(after.first?.parameters.int("revision"), lastAcknowledged + 1)
        XCTAssertEqual(changeRevisions(watcher.written()), [lastAcknowledged + 1], "the watch goes on")
        acknowledged["after"] = lastAcknowledged + 1

        // A restart holds every acknowledged write and none of the refused.
        d!.close()
        d = nil
        let reopened = try SQLiteStore(directory: directory, durability: .full, logCapacity: 1000)
        let contents = try reopened.load()
        let names = Set(contents.states.map(\.name))
        XCTAssertEqual(names, Set(acknowledged.keys))
        for name in refused + ["late1", "late2"] { XCTAssertFalse(names.contains(name), name) }
        XCTAssertEqual(Int64(contents.revision), lastAcknowledged + 1)
        for image in contents.states where image.name != "after" {
            XCTAssertEqual(image.value, Self.payload, image.name)
            XCTAssertEqual(Int64(image.modified), acknowledged[image.name], image.name)
        }
    }

    /// A real tetherd on a 4 MiB tmpfs (needs the right to mount one;
    /// skipped without it), in both group-commit modes.
    func testATmpfsThatFillsUp() throws {
        for mode in ["pipelined", "inline"] {
            let top = try newDirectory()
            let mountPoint = top + "/fs"
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
            let mounted = try DaemonFixture.run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint])
            guard mounted.status == 0 else { throw XCTSkip("cannot mount a tmpfs here: \(mounted.stderr)") }
            defer { _ = try? DaemonFixture.run("/bin/umount", [mountPoint]) }
            // A filler to remove when the disk is full (space comes back).
            let filler = mountPoint + "/filler"
            XCTAssertTrue(FileManager.default.createFile(atPath: filler, contents: Data(count: 1 << 20)))

            let data = mountPoint + "/data"
            var daemon = try DaemonFixture(arguments: ["--data-dir", data, "--group-commit", mode])
            let c = try DepthLimitTests.RawClient(daemon)
            let watcher = try DepthLimitTests.RawClient(daemon)
            try watcher.send(#"{"method":"io.tether.Watch","parameters":{"prefix":""},"more":true}"#)
            while try watcher.next().parameters.string("event") != "progress" {}

            let value = "\"" + String(repeating: "y", count: 20_000) + "\""
            var acknowledged: [String] = []
            var refused: String?
            for i in 0..<1000 {
                let r = try c.call("Set", #"{"name":"k\#(i)","value":\#(value)}"#)
                if let error = r.error {
                    XCTAssertEqual(error, "io.tether.StorageFull", "\(mode): \(r.parameters)")
                    refused = "k\(i)"
                    break
                }
                acknowledged.append("k\(i)")
            }
            let full = try XCTUnwrap(refused, "\(mode): the disk never filled")
            // Reads go on.
            XCTAssertEqual(try c.call("Get", #"{"name":"k0"}"#).error, nil)
            XCTAssertEqual(try c.call("Get", #"{"name":"\#(full)"}"#).error, "io.tether.NotFound")
            // The watch got every acknowledged change (and is still open).
            var seen = 0
            while seen < acknowledged.count {
                let r = try watcher.next()
                if r.parameters.string("event") == "change" { seen += 1 }
            }
            // Space comes back: writes succeed.
            try FileManager.default.removeItem(atPath: filler)
            XCTAssertNil(try c.call("Set", #"{"name":"after","value":1}"#).error, mode)
            while try watcher.next().parameters.string("event") != "change" {}
            acknowledged.append("after")

            // A restart: every acknowledged write, none refused.
            let stopped = daemon.stop()
            XCTAssertEqual(stopped.status, 0, stopped.log)
            XCTAssertTrue(stopped.log.contains("storage-full"), stopped.log)
            daemon = try DaemonFixture(arguments: ["--data-dir", data])
            let list = try DepthLimitTests.RawClient(daemon).call("List", "{}")
            guard case .array(let states)? = list.parameters["states"] else { return XCTFail("\(list.parameters)") }
            let names = states.compactMap { state -> String? in
                if case .object(let o) = state { return o.string("name") }
                return nil
            }
            XCTAssertEqual(Set(names), Set(acknowledged), mode)
            XCTAssertFalse(names.contains(full), mode)
            daemon.stop()
        }
    }
}
