import CTether
import Foundation
import Glibc
import TetherCore
import TetherRuntime
import XCTest

/// Issue 29 §3: another uid's directory or server where a client looks for
/// tetherd. Every client (tetherctl, the C face, the Swift API) refuses it
/// before sending a byte: the socket's directory (a private one must be
/// ours and 0700, none may be a symbolic link) and the listener's
/// SO_PEERCRED uid (ours, root, or TETHER_DAEMON_UID). The attacker is
/// played by a small Python server that binds as root, then becomes
/// `nobody` (or another uid) before it listens, so that SO_PEERCRED shows
/// that uid; it counts the bytes it receives. Needs root (chown, setuid).
final class HijackTests: XCTestCase {
    private func requireRoot() throws {
        guard getuid() == 0 else { throw XCTSkip("makes directories and servers of other uids, which needs root; this test runs as uid \(getuid())") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { throw XCTSkip("setpriv (util-linux) is not installed") }
        guard (try? DaemonFixture.run("/usr/bin/env", ["python3", "-c", "pass"]))?.status == 0 else { throw XCTSkip("python3 is needed for the fake server") }
    }

    /// A fresh directory, 0755 and root's (others may traverse it).
    private func base() throws -> String {
        let path = try temporaryDirectory("tether-hijack")
        chmod(path, 0o755)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    /// An attacker's directory: made, chowned to `owner`, given `mode`.
    private func directory(_ path: String, owner: UInt32, mode: mode_t) throws {
        guard mkdir(path, 0o700) == 0 else { throw FixtureError("mkdir \(path): errno \(errno)") }
        chown(path, owner, owner)
        chmod(path, mode)
    }

    // MARK: The scenario of the issue

    /// The victim (nobody, XDG_RUNTIME_DIR unset) falls back to
    /// ${TMPDIR}/tether-65534, which uid 4242 made first, with its server
    /// in it. Before: `set secret.password` returned 0 and the attacker
    /// logged the call.
    func testTheFallbackDirectoryOfAnotherUidIsRefused() throws {
        try requireRoot()
        let tmp = try base()
        let hijacked = tmp + "/tether-65534"
        // Made so that the victim can reach the socket (0755, the socket 0777).
        try directory(hijacked, owner: 4242, mode: 0o755)
        let server = try FakeServer(path: hijacked + "/tetherd.sock", uid: 4242)
        let result = try DaemonFixture.run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                                               DaemonFixture.product("tetherctl"), "set", "secret.password", #""hunter2""#],
                                           environment: ["HOME": "/", "TMPDIR": tmp], unset: ["XDG_RUNTIME_DIR", "TETHER_ADDRESS", "TETHER_DAEMON_UID"])
        XCTAssertEqual(result.status, 3, result.stdout + result.stderr)
        XCTAssertTrue(result.stderr.contains(hijacked), result.stderr)
        XCTAssertTrue(result.stderr.contains("uid 4242"), result.stderr)
        XCTAssertEqual(server.finish().bytes, 0, "the attacker received bytes")
    }

    /// The private directory ($XDG_RUNTIME_DIR/tether) belongs to nobody,
    /// whose server listens in it: tetherctl, the C face and the Swift API
    /// all refuse, and the server gets nothing.
    func testAPrivateDirectoryOfAnotherUidIsRefusedByEveryClient() throws {
        try requireRoot()
        let runtime = try base()
        let hijacked = runtime + "/tether"
        try directory(hijacked, owner: 65534, mode: 0o700)
        let server = try FakeServer(path: hijacked + "/tetherd.sock", uid: 65534)
        let address = "unix:" + hijacked + "/tetherd.sock"

        let ctl = try DaemonFixture.run("tetherctl", ["--address", address, "get", "config.server"],
                                        environment: ["XDG_RUNTIME_DIR": runtime], unset: ["TETHER_DAEMON_UID"])
        XCTAssertEqual(ctl.status, 3, ctl.stdout + ctl.stderr)
        XCTAssertEqual(ctl.stdout, "")
        XCTAssertTrue(ctl.stderr.contains(hijacked) && ctl.stderr.contains("uid 65534 (nobody)"), ctl.stderr)

        try withEnvironment(["XDG_RUNTIME_DIR": runtime]) {
            try assertCAndSwiftRefuse(address, mentioning: "uid 65534 (nobody)")
        }
        XCTAssertEqual(server.finish().bytes, 0, "the attacker received bytes")
    }

    /// A directory of ours (root's, 0700, not a private one) holds a
    /// socket whose listener runs as nobody: only SO_PEERCRED tells; every
    /// client refuses before sending. TETHER_DAEMON_UID=nobody trusts it.
    func testAListenerOfAnotherUidIsRefusedByEveryClient() throws {
        try requireRoot()
        let dir = try base()
        chmod(dir, 0o700)
        let server = try FakeServer(path: dir + "/tetherd.sock", uid: 65534)
        let address = "unix:" + dir + "/tetherd.sock"
        let ctl = try DaemonFixture.run("tetherctl", ["--address", address, "set", "secret.password", #""hunter2""#],
                                        unset: ["TETHER_DAEMON_UID"])
        XCTAssertEqual(ctl.status, 3, ctl.stdout + ctl.stderr)
        XCTAssertTrue(ctl.stderr.contains("runs as uid 65534 (nobody)") && ctl.stderr.contains(dir), ctl.stderr)
        try assertCAndSwiftRefuse(address, mentioning: "runs as uid 65534 (nobody)")
        XCTAssertEqual(server.finish().bytes, 0, "the fake server received bytes")

        // Named as the daemon's uid, it is trusted (and gets the call).
        let trusting = try FakeServer(path: dir + "/other.sock", uid: 65534)
        let told = try DaemonFixture.run("tetherctl", ["--address", "unix:" + dir + "/other.sock", "get", "x"],
                                         environment: ["TETHER_DAEMON_UID": "nobody"])
        XCTAssertEqual(told.status, 1, "the fake server answers every call with an error: " + told.stderr)
        XCTAssertGreaterThan(trusting.finish().bytes, 0)
    }

    /// A private socket directory that is a symbolic link (to a real
    /// daemon's directory, even) is refused.
    func testASymlinkedSocketDirectoryIsRefused() throws {
        try requireRoot()
        let daemon = try DaemonFixture()
        let runtime = try base()
        XCTAssertEqual(symlink(daemon.directory, runtime + "/tether"), 0)
        let address = "unix:" + runtime + "/tether/tetherd.sock"
        let ctl = try DaemonFixture.run("tetherctl", ["--address", address, "set", "a", "1"], environment: ["XDG_RUNTIME_DIR": runtime])
        XCTAssertEqual(ctl.status, 3, ctl.stdout + ctl.stderr)
        XCTAssertTrue(ctl.stderr.contains(runtime + "/tether") && ctl.stderr.contains("symbolic link"), ctl.stderr)
        // Not a private directory: a link is refused there too.
        let other = try base()
        XCTAssertEqual(symlink(daemon.directory, other + "/elsewhere"), 0)
        let ctl2 = try DaemonFixture.run("tetherctl", ["--address", "unix:" + other + "/elsewhere/tetherd.sock", "get", "a"])
        XCTAssertEqual(ctl2.status, 3, ctl2.stdout + ctl2.stderr)
        XCTAssertTrue(ctl2.stderr.contains("symbolic link"), ctl2.stderr)
        try withEnvironment(["XDG_RUNTIME_DIR": runtime]) {
            try assertCAndSwiftRefuse(address, mentioning: "symbolic link")
        }
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", daemon.address, "get", "a"]).status, 5,
                       "the write through the link never reached the daemon")
    }

    /// The daemon makes its private directory 0700 (fixing an existing
    /// 0755 one of its own); a client refuses one that lets others in.
    func testAPrivateDirectoryWithGroupOrOtherAccessIsFixedByTheDaemonAndRefusedByClients() throws {
        try requireRoot()
        let runtime = try base()
        let dir = runtime + "/tether"
        XCTAssertEqual(mkdir(dir, 0o755), 0)
        chmod(dir, 0o755)
        let daemon = try DaemonFixture(environment: ["XDG_RUNTIME_DIR": runtime], socketPath: dir + "/tetherd.sock")
        XCTAssertEqual(try mode(dir), 0o700, "the daemon makes its private directory 0700")
        let address = "unix:" + dir + "/tetherd.sock"
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", address, "set", "a", "1"],
                                             environment: ["XDG_RUNTIME_DIR": runtime]).status, 0)
        chmod(dir, 0o755)
        let ctl = try DaemonFixture.run("tetherctl", ["--address", address, "get", "a"], environment: ["XDG_RUNTIME_DIR": runtime])
        XCTAssertEqual(ctl.status, 3, ctl.stdout + ctl.stderr)
        XCTAssertTrue(ctl.stderr.contains(dir) && ctl.stderr.contains("mode 0755") && ctl.stderr.contains("uid 0 (root)"), ctl.stderr)
        try withEnvironment(["XDG_RUNTIME_DIR": runtime]) {
            try assertCAndSwiftRefuse(address, mentioning: "mode 0755")
        }
        chmod(dir, 0o700)
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", address, "get", "a"],
                                             environment: ["XDG_RUNTIME_DIR": runtime]).status, 0)
        daemon.stop()

        // A private directory of another uid: the daemon refuses to start.
        let theirs = try base()
        try directory(theirs + "/tether", owner: 65534, mode: 0o700)
        XCTAssertThrowsError(try DaemonFixture(environment: ["XDG_RUNTIME_DIR": theirs], socketPath: theirs + "/tether/tetherd.sock")) {
            XCTAssertTrue("\($0)".contains("belongs to uid 65534 (nobody)"), "\($0)")
        }
    }

    // MARK: Helpers

    /// tether_remote_connect (the C face) and Runtime.connect (Swift) at
    /// `address`: both refuse with TETHER_EUNTRUSTED, saying `mentioning`.
    private func assertCAndSwiftRefuse(_ address: String, mentioning: String, file: StaticString = #filePath, line: UInt = #line) throws {
        var rt = tether_runtime_t()
        XCTAssertEqual(tether_runtime_new(nil, &rt), 0, file: file, line: line)
        var remote = tether_remote_t()
        let rc = tether_remote_connect(rt, address, &remote)
        let message = String(cString: tether_last_error())
        XCTAssertEqual(rc, TETHER_EUNTRUSTED.rawValue, message, file: file, line: line)
        XCTAssertTrue(message.contains(mentioning), message, file: file, line: line)
        XCTAssertEqual(String(cString: tether_strerror(rc)), "untrusted daemon socket", file: file, line: line)
        if rc == 0 { _ = tether_remote_free(remote) }
        XCTAssertEqual(tether_runtime_free(rt), 0, file: file, line: line)

        let runtime = try Runtime()
        do {
            let connected = try runtime.connect(to: address)
            XCTFail("the Swift API connected to \(address)", file: file, line: line)
            withExtendedLifetime(connected) {}
        } catch {
            XCTAssertEqual(error.code, .untrusted, error.message, file: file, line: line)
            XCTAssertTrue(error.message.contains(mentioning), error.message, file: file, line: line)
        }
    }

    private func withEnvironment(_ values: [String: String], _ body: () throws -> Void) throws {
        var saved: [String: String?] = [:]
        for (key, value) in values {
            saved[key] = getenv(key).map { String(cString: $0) }
            setenv(key, value, 1)
        }
        defer {
            for (key, value) in saved {
                if let value { setenv(key, value, 1) } else { unsetenv(key) }
            }
        }
        try body()
    }
}

func mode(_ path: String) throws -> mode_t {
    var st = stat()
    guard lstat(path, &st) == 0 else { throw FixtureError("lstat \(path): errno \(errno)") }
    return st.st_mode & 0o7777
}

/// A Varlink server that is not tetherd: it binds `path` as root, becomes
/// `uid` before it listens (so SO_PEERCRED says `uid`), answers every call
/// with an error, and counts what it receives. `finish()` ends it (a
/// connection that says END) and returns the counts.
final class FakeServer {
    private let process = Process()
    private let output = Pipe()
    let path: String
    private var result: (connections: Int, bytes: Int)?

    init(path: String, uid: UInt32) throws {
        self.path = path
        let script = #"""
        import os, socket, sys, threading
        path, uid = sys.argv[1], int(sys.argv[2])
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        os.chmod(path, 0o777)
        os.setgroups([]); os.setgid(uid); os.setuid(uid)
        s.listen(16)
        lock = threading.Lock()
        counts = [0, 0]
        def serve(c):
            data = b""
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
                if data == b"END":
                    with lock:
                        print(counts[0], counts[1], flush=True)
                    os._exit(0)
                with lock:
                    counts[1] += len(chunk)
                while b"\0" in data:
                    _, data = data.split(b"\0", 1)
                    c.sendall(b'{"error":"org.varlink.service.MethodNotImplemented","parameters":{"method":"x"}}\0')
            c.close()
        print("ready", flush=True)
        while True:
            c, _ = s.accept()
            with lock:
                counts[0] += 1
            threading.Thread(target=serve, args=(c,), daemon=True).start()
        """#
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, path, String(uid)]
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        guard readLine() == "ready" else { throw FixtureError("the fake server did not start") }
    }

    private var buffered = Data()
    private func readLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self)
                buffered = Data(buffered[(newline + 1)...])
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            buffered.append(chunk)
        }
    }

    /// Ends the server; what it received before (connections, bytes).
    @discardableResult
    func finish() -> (connections: Int, bytes: Int) {
        if let result { return result }
        var counts = (connections: -1, bytes: -1)
        if let fd = try? connectStream(path) {
            _ = "END".withCString { send(fd, $0, 3, 0) }
            if let line = readLine() {
                let parts = line.split(separator: " ").compactMap { Int($0) }
                if parts.count == 2 { counts = (parts[0], parts[1]) }
            }
            close(fd)
        }
        process.waitUntilExit()
        result = counts
        return counts
    }

    deinit {
        if result == nil {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }
}
