import Dispatch
import Foundation
import Observation
import TetherSharing
import XCTest

/// `@Shared(.tether(...))` against a real tetherd, with tetherctl as the
/// other process; and without any daemon. Also a remote state's `changes`.
final class SharedTests: XCTestCase {
    struct Settings: Codable, Equatable, Sendable {
        var theme = "light"
        var size = 12
    }

    /// Runs tetherctl against `daemon`, expecting success.
    private func ctl(_ daemon: DaemonFixture, _ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let r = try DaemonFixture.run("tetherctl", ["--address", daemon.address] + arguments)
        XCTAssertEqual(r.status, 0, "tetherctl \(arguments.joined(separator: " ")): \(r.stderr)", file: file, line: line)
        return r.stdout
    }

    /// What a task iterating an AsyncSequence saw; the test thread waits on
    /// it with a deadline (these tests are not async: Foundation's Process,
    /// which runs tetherctl, waits on the main run loop).
    final class Seen<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [T] = []
        private let arrived = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)

        func append(_ item: T) {
            lock.lock(); items.append(item); lock.unlock()
            arrived.signal()
        }

        /// The next element, or nil when none came in time.
        func next(file: StaticString = #filePath, line: UInt = #line) -> T? {
            guard arrived.wait(timeout: .now() + 30) == .success else {
                XCTFail("an expected element never came", file: file, line: line)
                return nil
            }
            lock.lock(); defer { lock.unlock() }
            return items.last
        }

        func iterate<S: AsyncSequence & Sendable>(_ sequence: S) -> Task<Void, Never> where S.Element == T, S.Failure == Never {
            Task {
                for await element in sequence { self.append(element) }
                self.ended.signal()
            }
        }
    }

    func testAValueChangedByTetherctlShowsUpInSwift() throws {
        let daemon = try DaemonFixture()
        @Shared(.tether("shared-test.settings", address: daemon.address)) var settings = Settings()
        XCTAssertFalse(_settings.isUsingDefault, "a daemon answered")
        XCTAssertEqual(settings, Settings(), "the default while the daemon has no such state")

        settings.theme = "dark"  // written to the daemon
        XCTAssertTrue(try ctl(daemon, "get", "shared-test.settings").contains(#""theme":"dark""#))

        // Observation sees another process's write (the calls owed for
        // this process's own write have run first).
        try SharedDaemon.runtime.flush()
        let reference = _settings.reference
        let fired = expectation(description: "onChange")
        withObservationTracking { _ = reference.value } onChange: { fired.fulfill() }
        _ = try ctl(daemon, "set", "shared-test.settings", #"{"theme":"solarized","size":14}"#)
        wait(for: [fired], timeout: 30)
        try _settings.reference.sync()
        XCTAssertEqual(settings, Settings(theme: "solarized", size: 14), "tetherctl's write reads here")

        // So does the AsyncSequence, and the projected Binding writes.
        let seen = Seen<Settings>()
        let task = seen.iterate(_settings.changes)
        XCTAssertEqual(seen.next(), Settings(theme: "solarized", size: 14), "the sequence starts with the value")
        _ = try ctl(daemon, "set", "shared-test.settings", "/size", "16")
        XCTAssertEqual(seen.next()?.size, 16)
        let binding = $settings
        binding.theme.wrappedValue = "high-contrast"
        XCTAssertTrue(try ctl(daemon, "get", "shared-test.settings", "/theme").contains("high-contrast"))
        task.cancel()
        XCTAssertEqual(seen.ended.wait(timeout: .now() + 30), .success, "cancelling the task ends the loop")
    }

    func testTheDefaultIsUsedAndSaidToBeWhenNoDaemonAnswers() throws {
        let nowhere = try temporaryDirectory("tether-shared") + "/nothing.sock"
        final class Lines: @unchecked Sendable { var all: [String] = [] }
        let lines = Lines()
        let previous = SharedDaemon.log
        SharedDaemon.log = { lines.all.append($0) }
        defer { SharedDaemon.log = previous }

        @Shared(.tether("shared-test.offline", address: "unix:" + nowhere)) var settings = Settings(theme: "default", size: 1)
        XCTAssertTrue(_settings.isUsingDefault)
        XCTAssertNotNil(_settings.reference.unavailable)
        XCTAssertEqual(settings, Settings(theme: "default", size: 1))
        XCTAssertEqual(lines.all.count, 1, "one line says the default is in use")
        XCTAssertTrue(lines.all.first?.contains("using the default value") ?? false, lines.all.first ?? "")
        XCTAssertTrue(lines.all.first?.contains("shared-test.offline") ?? false, "it names the key")

        settings.size = 2  // kept in this process
        XCTAssertEqual(settings.size, 2)
        XCTAssertNoThrow(try _settings.reference.sync(), "nothing to wait for")
    }

    func testARemoteStatesChangesEndWhenItsRemoteIsFreed() throws {
        let daemon = try DaemonFixture()
        let rt = try Runtime()
        let remote = try rt.connect(to: daemon.address)
        let jobs = try remote.state("shared-test.jobs", as: Int?.self)
        let seen = Seen<Int?>()
        _ = seen.iterate(jobs.changes)
        XCTAssertEqual(seen.next(), .some(nil), "null while the daemon has none")
        _ = try ctl(daemon, "set", "shared-test.jobs", "3")
        XCTAssertEqual(seen.next(), 3, "another process's write arrives")
        remote.free()
        XCTAssertEqual(seen.ended.wait(timeout: .now() + 30), .success,
                       "freeing the remote frees its states and ends their sequences")
    }
}

/// A remote state's root removed: the daemon's state is deleted.
final class RemoteRemoveTests: XCTestCase {
    func testRemovingTheRootOfARemoteStateDeletesItInTheDaemon() throws {
        let daemon = try DaemonFixture()
        let rt = try Runtime()
        let remote = try rt.connect(to: daemon.address)
        let scratch = try remote.state("remove-test.scratch", as: Int?.self)
        try scratch.set(7)
        XCTAssertEqual(try DaemonFixture.run("tetherctl", ["--address", daemon.address, "get", "remove-test.scratch"]).status, 0)
        try scratch.remove(at: .root)
        XCTAssertNil(scratch.value, "it reads as a state the daemon does not have")
        let gone = try DaemonFixture.run("tetherctl", ["--address", daemon.address, "get", "remove-test.scratch"])
        XCTAssertEqual(gone.status, 5, "the daemon has no such state: \(gone.stdout) \(gone.stderr)")

        // A local state's root still cannot be removed.
        let local = rt.state(1)
        XCTAssertThrowsError(try local.remove(at: .root)) { error in
            XCTAssertEqual((error as? TetherError)?.code, .invalidArgument)
        }
    }
}
