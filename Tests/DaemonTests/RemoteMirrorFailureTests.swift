import Dispatch
import Foundation
import Glibc
import TetherCore
@testable import TetherRuntime
import TetherWire
import XCTest

/// Issue 30 §1, the client's side: a libtether mirror that receives a
/// change it cannot read stops and says so (tether_remote_connected false,
/// an error from sync, revision and writes) instead of reconnecting into
/// the same commit for ever while serving the old value as current. The
/// daemon no longer sends such a change (DepthLimitTests), so a fake
/// daemon on a socket of the test's sends one: 600 levels deep, past every
/// client's 520.
final class RemoteMirrorFailureTests: XCTestCase {
    /// Answers Watch with a snapshot (x = 1) and progress, then, once
    /// `trigger` is signalled, the unreadable change; Get with x = 1.
    final class FakeDaemon: @unchecked Sendable {
        let path: String
        let listener: Int32
        let trigger = DispatchSemaphore(value: 0)
        /// Signalled when the first Watch connection is closed by the client.
        let watchClosed = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var watchCount = 0
        var watches: Int { lock.lock(); defer { lock.unlock() }; return watchCount }

        init(path: String) throws {
            self.path = path
            listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard listener >= 0 else { throw FixtureError("socket: errno \(errno)") }
            guard withUnixAddress(path, { bind(listener, $0, $1) }) == 0, listen(listener, 16) == 0 else {
                throw FixtureError("bind/listen: errno \(errno)")
            }
            Thread.detachNewThread { [self] in
                while true {
                    let fd = accept(listener, nil, nil)
                    if fd < 0 { return }
                    Thread.detachNewThread { [self] in serve(fd) }
                }
            }
        }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }

        private func send(_ fd: Int32, _ bytes: [UInt8]) {
            var done = 0
            while done < bytes.count {
                let n = bytes[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n <= 0 { return }
                done += n
            }
        }

        private func reply(_ fd: Int32, _ parameters: ValueObject, continues: Bool = false) {
            var out: [UInt8] = []
            try! MessageEncoder.append(Reply(parameters: parameters, continues: continues), to: &out)
            send(fd, out)
        }

        private func serve(_ fd: Int32) {
            defer { close(fd) }
            var decoder = MessageDecoder()
            var buffer = [UInt8](repeating: 0, count: 65536)
            var isFirstWatch = false
            while true {
                while let message = try? decoder.next() {
                    guard let call = try? Call(parsing: message) else { return }
                    switch call.method {
                    case "io.tether.Watch":
                        lock.lock(); watchCount += 1; isFirstWatch = watchCount == 1; lock.unlock()
                        reply(fd, WatchReply(event: .snapshot(Entry(name: "x", value: .int(1), modified: 1), resync: false),
                                             revision: 1, epoch: "e").parameters, continues: true)
                        reply(fd, WatchReply(event: .progress(resync: false), revision: 1, epoch: "e").parameters, continues: true)
                        if isFirstWatch {
                            trigger.wait()
                            let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
                            send(fd, Array(#"{"parameters":{"event":"change","revision":2,"epoch":"e","changes":[{"name":"x","path":"","op":"set","value":\#(deep)}]},"continues":true}"#.utf8) + [0])
                        }
                    case "io.tether.Get":
                        reply(fd, GetReply(value: .int(1), revision: 1, modified: 1).parameters)
                    default:
                        reply(fd, ValueObject())
                    }
                }
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 {
                    if isFirstWatch { watchClosed.signal() }
                    return
                }
                decoder.append(buffer[..<n])
            }
        }
    }

    func testAChangeTheMirrorCannotReadBreaksItInsteadOfLooping() throws {
        let directory = try temporaryDirectory("tether-fake")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try FakeDaemon(path: directory + "/fake.sock")
        defer { server.stop() }

        let runtime = try Runtime()
        let remote = try runtime.connect(to: "unix:" + server.path)
        let state = try remote.state("x", as: Int.self)
        XCTAssertEqual(state.value, 1)
        XCTAssertTrue(remote.isConnected)
        XCTAssertEqual(try state.daemonRevision, 1)

        server.trigger.signal()
        XCTAssertEqual(server.watchClosed.wait(timeout: .now() + 30), .success, "the mirror closed its watch")

        // The loop thread broke the mirror in the callback that closed the
        // watch, before it runs the sync queued after it: no race.
        XCTAssertThrowsError(try Runtimes.syncRemote(remote.handle)) { error in
            XCTAssertEqual((error as? TetherError)?.code, .badJSON, "\(error)")
            XCTAssertTrue((error as? TetherError)?.message.contains("'x'") == true, "\(error)")
        }
        XCTAssertFalse(remote.isConnected, "a broken mirror is not connected")
        XCTAssertThrowsError(try state.daemonRevision)
        XCTAssertThrowsError(try state.set(5)) { error in
            XCTAssertEqual((error as? TetherError)?.code, .badJSON, "\(error)")
        }
        XCTAssertEqual(server.watches, 1, "no reconnection into the same commit")
        withExtendedLifetime(state) {}
    }
}
