import Foundation
import Glibc
import TetherCore
import TetherDaemon
import TetherWire
import XCTest

/// Found by LeakSanitizer on tetherd (`make asan-daemon`): the loop and
/// its handles were never freed once the daemon stopped. A stopped daemon
/// closes its loop and goes away (its deinit frees them), and a durable
/// one also ends its store's sync thread.
final class DaemonLifetimeTests: XCTestCase {
    func testAStoppedDaemonClosesItsLoopAndIsReleased() throws {
        let template = NSTemporaryDirectory() + "tether-life.XXXXXX"
        var bytes = Array(template.utf8CString)
        let directory = String(cString: try XCTUnwrap(mkdtemp(&bytes)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        weak var released: Daemon?
        weak var committerReleased: GroupCommitter?
        do {
            let sqlite = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 10)
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            let committer = GroupCommitter(inner: sqlite)
            committerReleased = committer
            let store = try Store(epoch: "e1", sink: committer)
            let service = Service(store: store, policy: AccessPolicy(owner: getuid()), log: EventLog(quiet: true))
            let daemon = try Daemon(service: service, options: .init(address: DaemonAddress(path: directory + "/s.sock")))
            released = daemon
            daemon.stop()  // before run: run only finishes closing the handles
            daemon.run()
            XCTAssertTrue(daemon.loopClosed)
        }
        XCTAssertNil(released, "nothing keeps a stopped daemon (and its handles) alive")
        XCTAssertNil(committerReleased, "the sync thread ended and let its committer go")
    }
}
