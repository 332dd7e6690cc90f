import Foundation
import Glibc
import TetherRuntime
import TetherWire
import XCTest

/// A watcher that stops reading while 64 MiB are written must not make the
/// daemon buffer them: past its watch buffer it becomes a cursor into the
/// commit log, and when it reads again it catches up (or, the log having
/// moved on, gets a flagged resync). Nothing is lost silently, memory stays
/// bounded, and other clients are served meanwhile.
final class SlowConsumerTests: XCTestCase {
    func testAStalledWatcherCostsABoundedAmountAndCatchesUp() throws {
        let daemon = try DaemonFixture(arguments: ["--durability", "normal", "--log-bytes", String(8 << 20),
                                                   "--watch-buffer", String(4 << 20)])
        let rt = try Runtime()
        let remote = try rt.connect(to: daemon.address)
        let blob = try remote.state("blob", as: String?.self)
        let megabyte = String(repeating: "x", count: 1 << 20)
        // First without the watcher: what 64 MiB of writes cost anyway (the
        // log's 8 MiB, buffers, the allocator).
        let start = daemon.memory("VmRSS")
        for i in 0..<64 { try blob.set("warm \(i):" + megabyte) }
        let warm = daemon.memory("VmRSS")

        let watcher = try connectStream(daemon.socketPath, receiveBuffer: 64 << 10)
        defer { close(watcher) }
        var call: [UInt8] = []
        try MessageEncoder.append(Call(method: "io.tether.Watch",
                                       parameters: WatchParameters(names: ["blob"]).parameters, more: true), to: &call)
        XCTAssertEqual(call.withUnsafeBytes { send(watcher, $0.baseAddress, $0.count, 0) }, call.count)
        for i in 0..<64 { try blob.set("\(i):" + megabyte) }  // 64 MiB while the watcher reads nothing
        let stalled = daemon.memory("VmRSS")
        let added = stalled - warm
        print("slow consumer: 64 MiB of writes grew the daemon by \((warm - start) >> 10) KiB; 64 more with a stalled watcher by \(added >> 10) KiB")
        XCTAssertLessThan(added, 16 << 20, "a stalled watcher must add at most 16 MiB, whatever is written")
        XCTAssertTrue(blob.value?.hasPrefix("63:") ?? false, "the writer was served all along")

        // The watcher reads again: it ends at the last revision, with the
        // last value, through changes or a flagged resync, never a gap.
        let final = try blob.daemonRevision
        var decoder = MessageDecoder(maxMessage: Limits.defaults.maxReply)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var lastValue: Value?
        var resynced = false
        var lastRevision: UInt64 = 0
        var done = false
        let deadline = Date().addingTimeInterval(60)
        while !done && Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(watcher, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            decoder.append(buffer[..<n])
            while let message = try decoder.next() {
                let reply = try WatchReply(parameters: try Reply(parsing: message).parameters)
                XCTAssertGreaterThanOrEqual(reply.revision, lastRevision, "revisions never go back")
                lastRevision = reply.revision
                switch reply.event {
                case .snapshot(let entry, let resync):
                    lastValue = entry.value
                    resynced = resynced || resync
                case .change(let changes, _, _):
                    for change in changes { if case .set(let v) = change.write { lastValue = v } }
                case .progress:
                    if reply.revision >= final { done = true }
                }
            }
        }
        XCTAssertTrue(done, "the watcher caught up to revision \(final)")
        if case .string(let s)? = lastValue { XCTAssertTrue(s.hasPrefix("63:")) } else { XCTFail("no final value") }
        XCTAssertTrue(resynced, "8 MiB of log cannot hold 64 MiB of history: the watcher must be told it resynced")
        let (_, log) = daemon.stop()
        XCTAssertTrue(log.contains("watch-behind"), log)
    }
}
