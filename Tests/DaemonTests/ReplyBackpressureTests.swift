import Foundation
import Glibc
@testable import TetherDaemon
import TetherCore
import TetherRuntime
import TetherWire
import XCTest

/// A connection's calls are answered in slices, and not at all while its
/// peer has more output unread than the watch buffer: pipelined calls whose
/// replies nobody reads cost the daemon a bounded amount, stall nobody
/// else, and are all answered once the peer reads (issue 30 §4).
final class ReplyBackpressureTests: XCTestCase {
    private func getCall(_ name: String) throws -> [UInt8] {
        var out: [UInt8] = []
        try MessageEncoder.append(Call(method: "io.tether.Get", parameters: GetParameters(name: name).parameters), to: &out)
        return out
    }

    func testASliceHandlesAtMostItsCallsAndTheRestWait() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        c.ok("io.tether.Set", ["name": "a", "value": 1])
        var batch: [UInt8] = []
        for _ in 0..<200 { batch += try getCall("a") }
        batch.withUnsafeBytes { c.session.receive($0, sliced: true) }
        XCTAssertTrue(c.session.inputWaits)
        XCTAssertEqual(c.replies().count, Session.sliceCalls)
        var answered = Session.sliceCalls
        while c.session.inputWaits {
            c.session.drainInput()
            answered += c.replies().count
        }
        XCTAssertEqual(answered, 200, "every call answered, over \(200 / Session.sliceCalls + 1) slices")
    }

    func testBigRepliesStopTheSliceAndBackedUpOutputStopsTheCalls() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        let big = String(repeating: "x", count: 1_500_000)
        c.ok("io.tether.Set", ["name": "big", "value": .string(big)])
        var batch: [UInt8] = []
        for _ in 0..<200 { batch += try getCall("big") }
        batch.withUnsafeBytes { c.session.receive($0, sliced: true) }
        // A slice ends once it made 1 MiB: one Get of 1.5 MB.
        XCTAssertEqual(c.session.output.count / 1_500_000, 1)
        // Output nobody takes: slices go on until the watch buffer is
        // full, then no call is handled at all.
        for _ in 0..<50 { c.session.drainInput() }
        XCTAssertTrue(c.session.inputWaits)
        XCTAssertLessThanOrEqual(c.session.output.count, d.service.watchBuffer + 1_600_000,
                                 "at most the watch buffer and one reply")
        XCTAssertEqual(c.replies().count, d.service.watchBuffer / 1_500_000 + 1)
    }

    func testPipelinedBigGetsNobodyReadsAreBoundedAndAnsweredWhenRead() throws {
        let daemon = try DaemonFixture(arguments: ["--memory"])
        let rt = try Runtime()
        let remote = try rt.connect(to: daemon.address)
        let blob = try remote.state("blob", as: String?.self)
        try blob.set(String(repeating: "y", count: 1_500_000))
        _ = blob.value
        let before = daemon.memory("VmHWM")

        // 200 Gets of the 1.5 MB state (300 MB of replies), nothing read.
        let reader = try connectStream(daemon.socketPath, receiveBuffer: 64 << 10)
        defer { close(reader) }
        var batch: [UInt8] = []
        for _ in 0..<200 { batch += try getCall("blob") }
        XCTAssertEqual(batch.withUnsafeBytes { send(reader, $0.baseAddress, $0.count, 0) }, batch.count)

        // Another client is served meanwhile, and writes go on.
        let other = try remote.state("other", as: Int?.self)
        for i in 0..<20 { try other.set(i) }
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", daemon.address, "get", "other"]).status, 0)
        let during = daemon.memory("VmHWM")
        print("pipelined big gets: peak grew \((during - before) >> 20) MiB while 300 MB of replies waited")
        XCTAssertLessThan(during - before, 64 << 20, "the replies nobody reads are bounded (876 MB before)")

        // It reads: every reply comes, none cut off as a slow peer.
        var decoder = MessageDecoder(maxMessage: Limits.defaults.maxReply)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var replies = 0
        while replies < 200 {
            let n = buffer.withUnsafeMutableBytes { recv(reader, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            decoder.append(buffer[..<n])
            while let message = try decoder.next() {
                let reply = try Reply(parsing: message)
                XCTAssertNil(reply.error)
                replies += 1
            }
        }
        XCTAssertEqual(replies, 200, "every Get answered to a peer that reads")
        let (_, log) = daemon.stop()
        XCTAssertFalse(log.contains("slow-peer"), log)
    }
}
