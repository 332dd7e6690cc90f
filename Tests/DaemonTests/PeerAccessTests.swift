import Foundation
import Glibc
import XCTest

/// Access by peer credentials with a real second uid: the test (as root)
/// runs tetherctl as `nobody`. Skipped, with the reason, when the test does
/// not run as root or `setpriv` is missing.
final class PeerAccessTests: XCTestCase {
    private func asNobody(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try DaemonFixture.run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                                   DaemonFixture.product("tetherctl")] + arguments,
                              environment: ["HOME": "/"])
    }

    private func requireRoot() throws {
        guard getuid() == 0 else { throw XCTSkip("runs a client as nobody, which needs root; this test runs as uid \(getuid())") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { throw XCTSkip("setpriv (util-linux) is not installed") }
    }

    /// A daemon whose socket another uid can reach (a grant exists, so the
    /// socket is 0666), in a directory it can traverse.
    private func daemon(grants: String) throws -> DaemonFixture {
        let config = NSTemporaryDirectory() + "tetherd-grants-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        try grants.write(toFile: config, atomically: true, encoding: .utf8)
        addTeardownBlock { unlink(config) }
        let d = try DaemonFixture(arguments: ["--config", config])
        chmod(d.directory, 0o755)
        return d
    }

    func testAnotherUidWithoutAGrantIsRefused() throws {
        try requireRoot()
        let d = try daemon(grants: #"{"grants":[{"uid":4242,"access":"read","prefixes":["pub."]}]}"#)
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", d.address, "set", "pub.a", "1"]).status, 0)
        let refused = try asNobody(["--address", d.address, "get", "pub.a"])
        XCTAssertEqual(refused.status, 1, refused.stdout + refused.stderr)
        XCTAssertTrue(refused.stderr.contains("org.varlink.service.PermissionDenied"), refused.stderr)
        let (_, log) = d.stop()
        XCTAssertTrue(log.contains("refused") && log.contains("uid=65534"), log)
    }

    /// libtether as an ungranted uid: refused at accept, its connect says
    /// so (TETHER_EREADONLY, the daemon's refusal named), not "tetherd
    /// closed the connection" nor a wait for a timeout. The C face is
    /// driven through python3's ctypes, so that the client is a process of
    /// nobody's.
    func testLibtetherAsAnUngrantedUidIsToldItWasRefused() throws {
        try requireRoot()
        let d = try daemon(grants: #"{"grants":[{"uid":4242,"access":"read","prefixes":["pub."]}]}"#)
        let library = DaemonFixture.productsDirectory + "/libtether.so"
        let script = """
            import ctypes
            lib = ctypes.CDLL("\(library)")
            lib.tether_last_error.restype = ctypes.c_char_p
            rt, remote = ctypes.c_uint64(), ctypes.c_uint64()
            assert lib.tether_runtime_new(None, ctypes.byref(rt)) == 0
            rc = lib.tether_remote_connect(rt, b"\(d.address)", ctypes.byref(remote))
            print(rc, lib.tether_last_error().decode())
            """
        let r = try DaemonFixture.run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                                           "/usr/bin/python3", "-c", script], environment: ["HOME": "/"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("-13 "), "TETHER_EREADONLY: \(r.stdout)")
        XCTAssertTrue(r.stdout.contains("PermissionDenied") && r.stdout.contains("no grant"), r.stdout)
    }

    func testAGrantedUidReadsItsPrefixOnly() throws {
        try requireRoot()
        let d = try daemon(grants: #"{"grants":[{"user":"nobody","access":"read","prefixes":["pub."]}]}"#)
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", d.address, "set", "pub.a", "1"]).status, 0)
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", d.address, "set", "secret", "2"]).status, 0)
        let read = try asNobody(["--address", d.address, "get", "pub.a"])
        XCTAssertEqual(read.status, 0, read.stderr)
        XCTAssertTrue(read.stdout.contains(#""value":1"#), read.stdout)
        let hidden = try asNobody(["--address", d.address, "get", "secret"])
        XCTAssertTrue(hidden.stderr.contains("io.tether.AccessDenied"), hidden.stderr)
        let write = try asNobody(["--address", d.address, "set", "pub.a", "3"])
        XCTAssertTrue(write.stderr.contains("io.tether.AccessDenied"), write.stderr)
        let list = try asNobody(["--address", d.address, "list"])
        XCTAssertTrue(list.stdout.contains("pub.a") && !list.stdout.contains("secret"), list.stdout)
        let (_, log) = d.stop()
        XCTAssertTrue(log.contains("denied"), log)
    }
}
