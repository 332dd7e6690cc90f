import CTether
import Dispatch
import Foundation
import Glibc
import TetherCore
@testable import TetherRuntime
import TetherWire
import XCTest

/// Issue 30 §6: no client hangs on a daemon that does not answer. A fake
/// daemon that accepts and never answers, and a real tetherd stopped with
/// SIGSTOP, make libtether's connect, first value, writes and sync fail
/// with TETHER_ETIMEDOUT after the remote's timeout, and tetherctl exit 3
/// naming --timeout; after SIGCONT the same remote goes on. Every blocking
/// step runs under a guard, so that the old code (which blocked for ever)
/// fails instead of hanging the suite.
final class RemoteTimeoutTests: XCTestCase {
    final class Box: @unchecked Sendable {
        var error: Error?
        var done = false
    }

    private func code(_ error: Error?) -> ErrorCode? { (error as? TetherError)?.code }
    private func message(_ error: Error?) -> String { (error as? TetherError)?.message ?? "\(String(describing: error))" }

    /// A daemon that accepts and reads but answers nothing: connect fails
    /// with TETHER_ETIMEDOUT (not 0, not EUV) within the timeout, through
    /// Swift and through the C face; nothing listening is still EUV.
    func testConnectToADaemonThatNeverAnswersTimesOut() throws {
        let silent = try ScriptedDaemon { _, _, _ in }
        defer { silent.stop() }
        let runtime = try Runtime()
        let box = Box()
        guarded(60, "connect to a daemon that never answers") {
            do {
                _ = try runtime.connect(to: silent.address, timeoutMilliseconds: 300)
            } catch {
                box.error = error
            }
        }
        XCTAssertEqual(code(box.error), .timedOut, message(box.error))
        XCTAssertTrue(message(box.error).contains("did not answer within 300 ms"), message(box.error))

        // The C face: tether_remote_connect_timeout, the same code.
        var remote = tether_remote_t()
        let rt = tether_runtime_t(id: runtime.handle)
        let rc = silent.address.withCString { tether_remote_connect_timeout(rt, $0, 300, &remote) }
        XCTAssertEqual(rc, TETHER_ETIMEDOUT.rawValue, String(cString: tether_last_error()))
        XCTAssertEqual(String(cString: tether_strerror(rc)), "timed out waiting for the daemon")

        // A listener that never even accepts (a stopped daemon's backlog).
        let stuck = try ScriptedDaemon(accepting: false) { _, _, _ in }
        defer { stuck.stop() }
        let rc2 = stuck.address.withCString { tether_remote_connect_timeout(rt, $0, 300, &remote) }
        XCTAssertEqual(rc2, TETHER_ETIMEDOUT.rawValue, String(cString: tether_last_error()))

        // Nothing listening: TETHER_EUV, as before.
        XCTAssertThrowsError(try runtime.connect(to: "unix:" + silent.directory + "/none.sock", timeoutMilliseconds: 300)) { error in
            XCTAssertEqual(self.code(error), .loopFailure, "\(error)")
        }
    }

    /// tetherctl --timeout against a daemon that never answers: exit 3, a
    /// message naming the timeout, and for a write that its outcome is
    /// unknown. `timeout 60` guards the old tetherctl, which hung.
    func testTetherctlTimeoutAgainstADaemonThatNeverAnswers() throws {
        let silent = try ScriptedDaemon { _, _, _ in }
        defer { silent.stop() }
        let ctl = DaemonFixture.product("tetherctl")
        let get = try DaemonFixture.run("/usr/bin/timeout", ["60", ctl, "--timeout", "1", "--address", silent.address, "get", "x"])
        XCTAssertEqual(get.status, 3, get.stderr)
        XCTAssertTrue(get.stderr.contains("did not answer within 1 s (--timeout 1)"), get.stderr)
        XCTAssertFalse(get.stderr.contains("may or may not"), get.stderr)

        let set = try DaemonFixture.run("/usr/bin/timeout", ["60", ctl, "--address", silent.address, "--timeout", "0.5", "set", "x", "1"])
        XCTAssertEqual(set.status, 3, set.stderr)
        XCTAssertTrue(set.stderr.contains("within 0.5 s"), set.stderr)
        XCTAssertTrue(set.stderr.contains("may or may not have been applied"), set.stderr)

        // watch: the first reply is waited for as long.
        let watch = try DaemonFixture.run("/usr/bin/timeout", ["60", ctl, "--timeout", "1", "--address", silent.address, "watch", "x"])
        XCTAssertEqual(watch.status, 3, watch.stderr)
        XCTAssertTrue(watch.stderr.contains("--timeout 1"), watch.stderr)

        let bad = try DaemonFixture.run(ctl, ["--timeout", "-1", "--address", silent.address, "get", "x"])
        XCTAssertEqual(bad.status, 2, bad.stderr)
    }

    /// A real tetherd under SIGSTOP: a write, sync, a new remote state and
    /// a new connection fail with TETHER_ETIMEDOUT within the remote's
    /// timeout, and tetherctl --timeout 1 exits 3; after SIGCONT the same
    /// remote writes, reads its own write and syncs, and tetherctl works.
    func testCallsTimeOutWhileTheDaemonIsStoppedAndRecoverAfterSIGCONT() throws {
        let daemon = try DaemonFixture()
        let pid = daemon.process.processIdentifier
        let runtime = try Runtime()
        let remote = try runtime.connect(to: daemon.address)
        XCTAssertEqual(remote.timeoutMilliseconds, 10_000, "the documented default")
        let x = try remote.state("x", as: Int?.self)
        try x.set(1)
        XCTAssertEqual(x.value, 1)

        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        var continued = false
        let resume = { if !continued { continued = true; kill(pid, SIGCONT) } }
        defer { resume() }
        remote.timeoutMilliseconds = 400
        XCTAssertEqual(remote.timeoutMilliseconds, 400)

        let write = Box(), sync = Box(), state = Box(), connect = Box()
        guarded(60, "a write to a stopped daemon", unstick: resume) {
            do { try x.set(2) } catch { write.error = error }
        }
        XCTAssertEqual(code(write.error), .timedOut, message(write.error))
        XCTAssertTrue(message(write.error).contains("within 400 ms"), message(write.error))
        XCTAssertTrue(message(write.error).contains("may or may not have been applied"), message(write.error))

        guarded(60, "sync with a stopped daemon", unstick: resume) {
            do { try Runtimes.syncRemote(remote.handle) } catch { sync.error = error }
        }
        XCTAssertEqual(code(sync.error), .timedOut, message(sync.error))

        guarded(60, "a new remote state of a stopped daemon", unstick: resume) {
            do { _ = try remote.state("y", as: Int?.self) } catch { state.error = error }
        }
        XCTAssertEqual(code(state.error), .timedOut, message(state.error))
        XCTAssertTrue(message(state.error).contains("'y'"), message(state.error))

        // A write made inside a callback (an observer of a local state)
        // is sent without waiting; flush waits for it, as long as the
        // remote's timeout.
        let trigger = runtime.state(0)
        let observer = trigger.observe { change in if change.new == 1 { try? x.set(4) } }
        let flush = Box()
        trigger.value = 1
        // The first flush runs the observer (or, if the loop ran it
        // already, times out on its write); the second finds it sent.
        guarded(60, "flush running the observer", unstick: resume) { try? runtime.flush() }
        guarded(60, "flush with a write made inside a callback to a stopped daemon", unstick: resume) {
            do { try runtime.flush() } catch { flush.error = error }
        }
        XCTAssertEqual(code(flush.error), .timedOut, message(flush.error))
        XCTAssertTrue(message(flush.error).contains("may or may not have been applied"), message(flush.error))

        let address = daemon.address
        guarded(60, "connecting to a stopped daemon", unstick: resume) {
            do { _ = try runtime.connect(to: address, timeoutMilliseconds: 400) } catch { connect.error = error }
        }
        XCTAssertEqual(code(connect.error), .timedOut, message(connect.error))

        let ctl = DaemonFixture.product("tetherctl")
        let get = try DaemonFixture.run("/usr/bin/timeout", ["60", ctl, "--timeout", "1", "--address", daemon.address, "get", "x"])
        XCTAssertEqual(get.status, 3, get.stderr)
        XCTAssertTrue(get.stderr.contains("did not answer within 1 s"), get.stderr)

        resume()
        // The connection was kept: the daemon answers what waited (the
        // timed-out write of 2 is applied after all), then the rest.
        try Runtimes.waitRemote(remote.handle, milliseconds: 30_000)
        remote.timeoutMilliseconds = 30_000
        try runtime.flush()  // the write made in the callback: acknowledged and shown
        XCTAssertEqual(x.value, 4)
        try x.set(3)
        XCTAssertEqual(x.value, 3, "the writer reads its own write again")
        try Runtimes.syncRemote(remote.handle)
        let y = try remote.state("y", as: Int?.self)
        XCTAssertNil(y.value)
        XCTAssertTrue(remote.isConnected)
        let after = try DaemonFixture.run(ctl, ["--timeout", "30", "--address", daemon.address, "get", "x"])
        XCTAssertEqual(after.status, 0, after.stderr)
        XCTAssertTrue(after.stdout.contains(#""value":3"#), after.stdout)
        withExtendedLifetime((x, y, observer)) {}
    }

    /// tether_remote_set_timeout through the C face: a stale remote.
    func testSetTimeoutOfAStaleRemote() throws {
        XCTAssertEqual(tether_remote_set_timeout(tether_remote_t(id: 987_654_321), 100), TETHER_ESTALE.rawValue)
    }
}
