import Dispatch
import Foundation
import TetherRuntime
import XCTest

/// Remote states through the Swift API against a real tetherd: two
/// runtimes stand for two processes (each has its own connections).
final class RemoteStateTests: XCTestCase {
    struct Settings: Codable, Equatable {
        var theme: String
        var size: Int
    }

    /// Waits for `count` signals, up to a deadline (a failure, not a sleep).
    private func wait(_ semaphore: DispatchSemaphore, _ count: Int = 1, file: StaticString = #filePath, line: UInt = #line) {
        for _ in 0..<count {
            XCTAssertEqual(semaphore.wait(timeout: .now() + 30), .success, "an expected callback never came", file: file, line: line)
        }
    }

    func testTwoRuntimesShareAState() throws {
        let daemon = try DaemonFixture()
        let a = try Runtime(), b = try Runtime()
        let da = try a.connect(to: daemon.address), db = try b.connect(to: daemon.address)
        let mine = try da.state("settings", as: Settings?.self)
        XCTAssertNil(mine.value, "a state the daemon does not have reads as null")
        try mine.set(Settings(theme: "light", size: 3))
        XCTAssertEqual(mine.value, Settings(theme: "light", size: 3), "the writer reads its own write")

        let theirs = try db.state("settings", as: Settings.self)
        XCTAssertEqual(theirs.value.theme, "light")
        let seen = DispatchSemaphore(value: 0)
        final class Log: @unchecked Sendable { var changes: [(String?, String?, String?)] = [] }
        let log = Log()
        let token = theirs.observe(\.theme) { change in
            log.changes.append((change.old, change.new, change.transaction?.tag))
            seen.signal()
        }
        try a.transaction(tag: "ui") { mine.value?.theme = "dark" }
        wait(seen)
        XCTAssertEqual(log.changes.count, 1)
        XCTAssertEqual(log.changes.first?.0, "light")
        XCTAssertEqual(log.changes.first?.1, "dark")
        XCTAssertEqual(log.changes.first?.2, "ui", "the daemon commit's tag reaches observers elsewhere")
        XCTAssertEqual(theirs.value, Settings(theme: "dark", size: 3))
        withExtendedLifetime(token) {}

        // A computed over a remote state is an ordinary computed.
        let label = b.computed { "\(theirs.value.theme)/\(theirs.value.size)" }
        XCTAssertEqual(label.value, "dark/3")
        try mine.set(Settings(theme: "blue", size: 4), at: .root)
        try a.flush()
        let changed = DispatchSemaphore(value: 0)
        let effect = b.effect { if label.value == "blue/4" { changed.signal() } }
        wait(changed)
        withExtendedLifetime(effect) {}
    }

    func testCompareOnRevisionLosesTheRaceAndRetries() throws {
        let daemon = try DaemonFixture()
        let a = try Runtime(), b = try Runtime()
        let counterA = try a.connect(to: daemon.address).state("counter", as: Int?.self)
        let db = try b.connect(to: daemon.address)
        let counterB = try db.state("counter", as: Int?.self)
        try counterA.set(1)
        try b.flush()
        // b read revision r; a commits meanwhile; b's commit must fail.
        let seen = try counterA.daemonRevision
        try counterA.set(2)
        XCTAssertThrowsError(try a.transaction {
            try counterA.expect(revision: seen)
            counterA.value = 10
        }) { error in
            XCTAssertEqual((error as? TetherError)?.code, .rejected)
        }
        XCTAssertEqual(counterA.value, 2, "a failed precondition changes nothing")
        try a.transaction {
            try counterA.expect(revision: try counterA.daemonRevision)
            counterA.value = (counterA.value ?? 0) + 1
        }
        XCTAssertEqual(counterA.value, 3)
        withExtendedLifetime(counterB) {}
    }

    func testDescriptorsAreTheDaemons() throws {
        let daemon = try DaemonFixture()
        let ctl = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "declare", "volume", "--type", "double",
                                                      "--min", "0", "--max", "1", "--value", "0.5"])
        XCTAssertEqual(ctl.status, 0, ctl.stderr)
        let rt = try Runtime()
        let volume = try rt.connect(to: daemon.address).state("volume", as: Double.self)
        XCTAssertThrowsError(try volume.set(2)) { XCTAssertEqual(($0 as? TetherError)?.code, .outOfRange) }
        XCTAssertEqual(volume.value, 0.5)
        XCTAssertThrowsError(try volume.describe(readOnly: true)) { XCTAssertEqual(($0 as? TetherError)?.code, .invalidArgument) }
        try volume.set(1)
        XCTAssertEqual(volume.value, 1.0)
    }

    func testAWriteFailsAtOnceWhenTheDaemonIsGone() throws {
        let daemon = try DaemonFixture()
        let rt = try Runtime()
        let remote = try rt.connect(to: daemon.address)
        let n = try remote.state("n", as: Int?.self)
        try n.set(1)
        daemon.stop()
        XCTAssertThrowsError(try n.set(2)) { XCTAssertEqual(($0 as? TetherError)?.code, .loopFailure) }
        XCTAssertEqual(n.value, 1, "a failed write changes nothing")
        XCTAssertThrowsError(try rt.connect(to: daemon.address)) { XCTAssertEqual(($0 as? TetherError)?.code, .loopFailure) }
    }
}
