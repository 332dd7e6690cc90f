import Glibc
import TetherCore
import TetherDaemon
import TetherWire
import XCTest

/// io.tether.Watchers (what `tetherctl graph` draws): who watches what,
/// filtered by prefix, for the daemon's uid and root only.
final class WatcherListTests: XCTestCase {
    private func watchers(_ reply: ValueObject) throws -> [WatcherInfo] {
        try WatchersReply(parameters: reply).watchers
    }

    func testListsWatchesWithTheirProcessAndFiltersByPrefix() throws {
        let d = try InProcessDaemon()
        let byName = d.connect()
        byName.send("io.tether.Watch", ["names": json(#"["app.theme","sys.clock"]"#), "path": "/x"], more: true)
        let byPrefix = d.connect()
        byPrefix.send("io.tether.Watch", ["prefix": "app."], more: true)
        let all = try watchers(d.connect().ok("io.tether.Watchers"))
        XCTAssertEqual(all.count, 2)
        XCTAssertEqual(all.first?.names, ["app.theme", "sys.clock"])
        XCTAssertEqual(all.first?.path, "/x")
        XCTAssertEqual(all.first?.pid, 1)  // InProcessDaemon's peers
        XCTAssertEqual(all.first?.uid, Int64(getuid()))
        XCTAssertEqual(all.last?.prefix, "app.")
        XCTAssertNil(all.last?.path)

        let app = try watchers(d.connect().ok("io.tether.Watchers", ["prefix": "app.t"]))
        XCTAssertEqual(app.map(\.names), [["app.theme"], []])  // a name kept, and an overlapping prefix
        let sys = try watchers(d.connect().ok("io.tether.Watchers", ["prefix": "sys."]))
        XCTAssertEqual(sys.map(\.names), [["sys.clock"]])
        XCTAssertEqual(try watchers(d.connect().ok("io.tether.Watchers", ["prefix": "zzz"])).count, 0)
    }

    func testOthersMayNotListThem() throws {
        let other: UInt32 = getuid() == 4242 ? 4343 : 4242
        let policy = AccessPolicy(owner: getuid(), entries: [.init(subject: .uid(other), write: true, prefixes: [""])])
        let d = try InProcessDaemon(policy: policy)
        d.connect(uid: other).fails("io.tether.Watchers", with: "io.tether.AccessDenied")
        d.connect().fails("io.tether.Watchers", ["bogus": 1], with: "org.varlink.service.InvalidParameter")
    }
}
