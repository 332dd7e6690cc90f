import Foundation
import Glibc
import XCTest

/// Issue 29 §4 and its "Also" items: the store, its WAL, its lock and
/// snapshots are the daemon's alone (0600 in a 0700 directory), whatever
/// the grants say; snapshots never overwrite or follow; the access
/// configuration must be the daemon's or root's and not writable by
/// others (sshd's StrictModes); a daemon removes only its own socket.
final class StoreModeTests: XCTestCase {
    private func requireRoot() throws {
        guard getuid() == 0 else { throw XCTSkip("reads files as nobody, which needs root; this test runs as uid \(getuid())") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { throw XCTSkip("setpriv (util-linux) is not installed") }
    }

    private func catAsNobody(_ path: String) throws -> (status: Int32, stdout: String, stderr: String) {
        try DaemonFixture.run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "/bin/cat", path])
    }

    func testNoStoreFileIsReadableByAnotherUid() throws {
        try requireRoot()
        let daemon = try DaemonFixture()
        chmod(daemon.directory, 0o755)  // only the data directory and the files' modes stand in the way
        let ctl = { (args: [String]) in try DaemonFixture.run("tetherctl", ["--address", daemon.address] + args) }
        XCTAssertEqual(try ctl(["set", "secret.root-only", #""hunter2""#]).status, 0)
        let snapshot = daemon.directory + "/snapshot.db"
        let made = try ctl(["snapshot", snapshot])
        XCTAssertEqual(made.status, 0, made.stderr)

        let data = daemon.directory + "/data"
        XCTAssertEqual(try mode(data), 0o700, "the data directory")
        var checked: [String] = []
        for name in ["tether.db", "tether.db-wal", "tether.db-shm", "tetherd.lock"] {
            let path = data + "/" + name
            guard access(path, F_OK) == 0 else { continue }
            checked.append(name)
            XCTAssertEqual(try mode(path), 0o600, name)
            XCTAssertNotEqual(try catAsNobody(path).status, 0, "nobody read \(name)")
        }
        XCTAssertTrue(checked.contains("tether.db") && checked.contains("tether.db-wal") && checked.contains("tetherd.lock"), "\(checked)")
        XCTAssertEqual(try mode(snapshot), 0o600, "the snapshot")
        let read = try catAsNobody(snapshot)
        XCTAssertNotEqual(read.status, 0, "nobody read the snapshot")
        XCTAssertFalse(read.stdout.contains("hunter2"))
        // Nothing of the snapshot's making is left beside it.
        let left = try FileManager.default.contentsOfDirectory(atPath: daemon.directory).filter { $0.hasPrefix(".tether-snapshot") }
        XCTAssertEqual(left, [])
    }

    /// An existing data directory of ours that others could read (0755, as
    /// systemd's StateDirectory= makes it by default), with a 0644 store in
    /// it from an older daemon: made 0700 and 0600 at start.
    func testAnExistingReadableDataDirectoryIsMadePrivate() throws {
        try requireRoot()
        let first = try DaemonFixture()
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", first.address, "set", "a", "1"]).status, 0)
        first.stop()
        let data = first.directory + "/data"
        chmod(data, 0o755)
        for name in ["tether.db", "tetherd.lock"] { chmod(data + "/" + name, 0o644) }
        let second = try DaemonFixture(dataDirectory: data)
        XCTAssertEqual(try mode(data), 0o700)
        XCTAssertEqual(try mode(data + "/tether.db"), 0o600)
        XCTAssertEqual(try mode(data + "/tetherd.lock"), 0o600)
        let got = try DaemonFixture.run("tetherctl", ["--address", second.address, "get", "a"])
        XCTAssertTrue(got.stdout.contains(#""value":1"#), got.stdout + got.stderr)
        second.stop()

        // Another uid's data directory is refused, with its owner named.
        let theirs = first.directory + "/theirs"
        XCTAssertEqual(mkdir(theirs, 0o700), 0)
        chown(theirs, 65534, 65534)
        XCTAssertThrowsError(try DaemonFixture(dataDirectory: theirs)) {
            XCTAssertTrue("\($0)".contains(theirs) && "\($0)".contains("uid 65534 (nobody)"), "\($0)")
        }
    }

    /// A snapshot onto a dangling symbolic link is refused and does not
    /// create the link's target; one onto an existing file is refused and
    /// leaves the file as it was.
    func testASnapshotNeverFollowsALinkNorOverwrites() throws {
        let daemon = try DaemonFixture()
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", daemon.address, "set", "a", "1"]).status, 0)
        let target = daemon.directory + "/created-by-the-link"
        let link = daemon.directory + "/link.db"
        XCTAssertEqual(symlink(target, link), 0)
        let viaLink = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "snapshot", link])
        XCTAssertNotEqual(viaLink.status, 0, viaLink.stdout)
        XCTAssertTrue(viaLink.stderr.contains("symbolic link"), viaLink.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: target), "the snapshot created the link's target")

        let existing = daemon.directory + "/existing.db"
        try "keep me".write(toFile: existing, atomically: false, encoding: .utf8)
        let onFile = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "snapshot", existing])
        XCTAssertNotEqual(onFile.status, 0, onFile.stdout)
        XCTAssertTrue(onFile.stderr.contains("exists"), onFile.stderr)
        XCTAssertEqual(try String(contentsOfFile: existing, encoding: .utf8), "keep me")
        let left = try FileManager.default.contentsOfDirectory(atPath: daemon.directory).filter { $0.hasPrefix(".tether-snapshot") }
        XCTAssertEqual(left, [])
    }

    /// Daemon A's socket file is deleted; daemon B takes the path; A's
    /// SIGTERM must leave B's socket, and B goes on answering.
    func testAStoppingDaemonLeavesTheSocketOfTheDaemonThatTookItsPath() throws {
        let a = try DaemonFixture()
        XCTAssertEqual(unlink(a.socketPath), 0)
        let b = try DaemonFixture(socketPath: a.socketPath)
        var before = stat()
        XCTAssertEqual(lstat(b.socketPath, &before), 0)
        let (status, _) = a.stop()
        XCTAssertEqual(status, 0)
        var after = stat()
        XCTAssertEqual(lstat(b.socketPath, &after), 0, "A removed B's socket")
        XCTAssertEqual(after.st_ino, before.st_ino)
        let set = try DaemonFixture.run("tetherctl", ["--address", b.address, "set", "still", "true"])
        XCTAssertEqual(set.status, 0, set.stderr)
        b.stop()
        XCTAssertFalse(FileManager.default.fileExists(atPath: b.socketPath), "B removes its own socket")
    }

    /// The access configuration, as sshd's StrictModes: writable by others,
    /// or owned by another uid, and the daemon refuses to start, naming the
    /// file, its owner and its mode.
    func testAnAccessConfigurationOthersCouldWriteIsRefused() throws {
        let dir = try temporaryDirectory("tetherd-config")
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let config = dir + "/tetherd.json"
        try #"{"grants":[{"uid":4242,"access":"read","prefixes":["pub."]}]}"#.write(toFile: config, atomically: false, encoding: .utf8)

        chmod(config, 0o666)
        XCTAssertThrowsError(try DaemonFixture(arguments: ["--config", config])) {
            let text = "\($0)"
            XCTAssertTrue(text.contains(config) && text.contains("0666") && text.contains("uid \(getuid())"), text)
        }
        chmod(config, 0o620)
        XCTAssertThrowsError(try DaemonFixture(arguments: ["--config", config])) {
            XCTAssertTrue("\($0)".contains("0620"), "\($0)")
        }
        if getuid() == 0 {
            chmod(config, 0o644)
            chown(config, 65534, 65534)
            XCTAssertThrowsError(try DaemonFixture(arguments: ["--config", config])) {
                let text = "\($0)"
                XCTAssertTrue(text.contains(config) && text.contains("uid 65534 (nobody)") && text.contains("0644"), text)
            }
            chown(config, 0, 0)
        }
        chmod(config, 0o644)
        let daemon = try DaemonFixture(arguments: ["--config", config])
        XCTAssertTrue(daemon.stop().log.contains("grants=1"))
    }
}
