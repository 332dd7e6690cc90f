import Foundation
import Glibc
import TetherCore
import TetherWire
import XCTest

/// A watch that falls behind (more than --watch-buffer unread) catches up
/// when its peer reads again: the write callback of its pending output says
/// so. Found on the durable branch (main had it too): when the kernel took
/// the pending output whole (uv_try_write), there was no callback, and the
/// watch stayed behind for good, told nothing of later commits.
final class WatchCatchUpTests: XCTestCase {
    private func send(_ fd: Int32, _ calls: [Call]) throws {
        var bytes: [UInt8] = []
        for call in calls { try MessageEncoder.append(call, to: &bytes) }
        XCTAssertEqual(bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }, bytes.count)
    }

    func testAWatchBehindAfterOneTurnCatchesUpWhenItsOutputWasWrittenWhole() throws {
        for durability in ["normal", "full"] {
            let daemon = try DaemonFixture(arguments: ["--durability", durability, "--watch-buffer", "65536",
                                                       "--progress-interval", "600000"])
            defer { daemon.stop() }
            let writer = try connectStream(daemon.socketPath), watcher = try connectStream(daemon.socketPath)
            defer { close(writer); close(watcher) }
            try send(writer, [Call(method: "io.tether.Set", parameters: SetParameters(name: "blob", value: "x").parameters)])
            try send(watcher, [Call(method: "io.tether.Watch", parameters: WatchParameters(names: ["blob"]).parameters, more: true)])
            // Five 100 KB changes in one read: after the first, the watch has
            // more than its 64 KiB buffer waiting, and falls behind; the
            // first is then written whole (under the socket's buffer).
            let big = String(repeating: "y", count: 100_000)
            try send(writer, (1...5).map { i in
                Call(method: "io.tether.Set", parameters: SetParameters(name: "blob", value: .string("\(i):" + big)).parameters)
            })
            // The watcher reads: it must reach revision 6 (the last Set),
            // as changes or a flagged resync. A recv timeout ends the wait
            // (the bug: nothing more ever came).
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(watcher, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var decoder = MessageDecoder(maxMessage: Limits.defaults.maxReply)
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var newest: Int64 = 0
            var lastValue: Value?
            reading: while newest < 6 {
                let n = buffer.withUnsafeMutableBytes { recv(watcher, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { break reading }
                decoder.append(buffer[..<n])
                while let message = try decoder.next() {
                    let reply = try Reply(parsing: message)
                    if let r = reply.parameters.int("revision") { newest = max(newest, r) }
                    if case .array(let changes)? = reply.parameters["changes"], case .object(let c)? = changes.last { lastValue = c["value"] }
                    if case .object(let e)? = reply.parameters["state"] { lastValue = e["value"] }
                }
            }
            XCTAssertEqual(newest, 6, "\(durability): the watch caught up to the last commit")
            if case .string(let s)? = lastValue { XCTAssertTrue(s.hasPrefix("5:"), "\(durability): the last value") } else {
                XCTFail("\(durability): no value seen")
            }
        }
    }
}
