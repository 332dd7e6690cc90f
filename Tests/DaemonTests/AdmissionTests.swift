import Glibc
@testable import TetherDaemon
import TetherCore
import TetherWire
import XCTest

/// A peer's right to a connection is decided from its credentials before
/// any of its bytes is read, and each uid other than the daemon's and root
/// is held to caps (issue 29 §1 and §2; docs/daemon.md, "Security").
final class AdmissionTests: XCTestCase {
    private let stranger: UInt32 = 4241
    private let reader: UInt32 = 4242

    private func daemon(_ admission: AdmissionLimits = .defaults) throws -> InProcessDaemon {
        let policy = AccessPolicy(owner: getuid(), entries: [.init(subject: .uid(reader), write: true, prefixes: ["pub."])])
        return try InProcessDaemon(policy: policy, admission: admission)
    }

    /// A call of `count` bytes without its NUL: an unfinished message.
    private func partial(_ count: Int) -> [UInt8] {
        Array(#"{"method":"io.tether.Get","parameters":{"name":""#.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: count)
    }

    func testAnUngrantedPeerIsRefusedBeforeItsFirstByteAndNeverRead() throws {
        let d = try daemon()
        let refused = d.connect(uid: stranger)
        // The refusal is there before the peer sent anything.
        let first = refused.replies()
        XCTAssertEqual(first.map(\.error), ["org.varlink.service.PermissionDenied"])
        XCTAssertNotNil(refused.session.closeReason)
        XCTAssertTrue(refused.session.isRefused)
        // What it sends is not buffered, decoded or answered: a 2 MiB
        // message (bigger than the message limit), then a whole call.
        refused.send(raw: partial(2 << 20))
        refused.send("io.tether.Get", ["name": "pub.a"])
        XCTAssertEqual(refused.session.pendingInput, 0)
        XCTAssertEqual(refused.replies().count, 0)
        XCTAssertEqual(d.service.admission.connectionCount(of: stranger), 0, "a refused peer holds no slot")
        d.service.closed(refused.session)
        XCTAssertEqual(d.service.connectionCount, 0)
    }

    func testConnectionsPerUidAreCappedAndTheOwnerAndRootAreNot() throws {
        let d = try daemon(AdmissionLimits(connectionsPerUid: 3))
        let granted = (0..<3).map { _ in d.connect(uid: reader) }
        for c in granted { XCTAssertFalse(c.session.isRefused) }
        let fourth = d.connect(uid: reader)
        XCTAssertTrue(fourth.session.isRefused)
        let error = try XCTUnwrap(fourth.replies().first)
        XCTAssertEqual(error.error, "io.tether.LimitExceeded")
        XCTAssertEqual(error.parameters["limit"], .string("connections"))
        XCTAssertEqual(error.parameters["maximum"], .int(3))
        d.service.closed(fourth.session)
        // The owner and root are not held to the cap.
        let owners = (0..<5).map { _ in d.connect(uid: getuid()) } + (0..<5).map { _ in d.connect(uid: 0) }
        for c in owners { XCTAssertFalse(c.session.isRefused) }
        // A slot given back is a slot free again.
        d.service.closed(granted[0].session)
        let again = d.connect(uid: reader)
        XCTAssertFalse(again.session.isRefused)
        again.ok("io.tether.Set", ["name": "pub.a", "value": 1])
        XCTAssertEqual(d.service.admission.connectionCount(of: reader), 3)
    }

    func testUnfinishedInputOfAUidIsCappedAcrossItsConnections() throws {
        let cap = 1 << 20
        let d = try daemon(AdmissionLimits(inputBytesPerUid: cap))
        let clients = (0..<4).map { _ in d.connect(uid: reader) }
        // Three partial calls of 300 KiB each stay under the cap together...
        for c in clients.prefix(3) {
            c.send(raw: partial(300 << 10))
            XCTAssertNil(c.session.closeReason)
            XCTAssertEqual(c.replies().count, 0)
        }
        XCTAssertGreaterThan(d.service.admission.inputBytes(of: reader), 900 << 10)
        // ...the fourth takes the uid past it, and that connection is closed.
        clients[3].send(raw: partial(300 << 10))
        let error = try XCTUnwrap(clients[3].replies().first)
        XCTAssertEqual(error.error, "io.tether.LimitExceeded")
        XCTAssertEqual(error.parameters["limit"], .string("input"))
        XCTAssertEqual(error.parameters["maximum"], .int(Int64(cap)))
        XCTAssertNotNil(clients[3].session.closeReason)
        for c in clients.prefix(3) { XCTAssertNil(c.session.closeReason, "the others are not cut off") }
        // Its buffer no longer counts once it is gone; a finished call
        // frees what it held.
        d.service.closed(clients[3].session)
        XCTAssertLessThan(d.service.admission.inputBytes(of: reader), cap)
        clients[0].send(raw: Array(#"","path":""}}"#.utf8) + [0])
        XCTAssertEqual(clients[0].replies().count, 1)
        XCTAssertEqual(clients[0].session.pendingInput, 0)
        XCTAssertLessThan(d.service.admission.inputBytes(of: reader), 700 << 10)
        // The owner is not held to the cap.
        let owner = d.connect(uid: getuid())
        owner.send(raw: partial(1536 << 10))
        XCTAssertNil(owner.session.closeReason)
        for c in clients.prefix(3) { d.service.closed(c.session) }
        d.service.closed(owner.session)
        XCTAssertEqual(d.service.admission.inputBytes(of: reader), 0, "every byte given back")
        XCTAssertEqual(d.service.admission.inputBytes(of: getuid()), 0)
    }

    func testTheLastDescriptorsAreKeptForTheOwnerAndRoot() throws {
        let d = try daemon(AdmissionLimits(reservedDescriptors: 4))
        d.service.admission.descriptorLimit = 20
        d.service.admission.descriptorBase = 10
        // 20 - 4 - 10 = 6 connections for everybody else.
        let others = (0..<6).map { _ in d.connect(uid: reader) }
        for c in others { XCTAssertFalse(c.session.isRefused) }
        let seventh = d.connect(uid: reader)
        XCTAssertTrue(seventh.session.isRefused)
        XCTAssertEqual(seventh.replies().first?.parameters["limit"], .string("connections"))
        let owner = d.connect(uid: getuid())
        let root = d.connect(uid: 0)
        XCTAssertFalse(owner.session.isRefused)
        XCTAssertFalse(root.session.isRefused)
        owner.ok("io.tether.Stats")
    }

    func testAFloodOfRefusalsIsLoggedOnceASecondWithItsCount() throws {
        let admission = Admission(limits: .defaults, owner: getuid())
        nonisolated(unsafe) var clock: UInt64 = 10_000
        admission.now = { clock }
        XCTAssertEqual(admission.shouldLogRefusal(of: stranger), 1)
        for _ in 0..<1000 { XCTAssertNil(admission.shouldLogRefusal(of: stranger), "within the second: no line") }
        XCTAssertEqual(admission.shouldLogRefusal(of: reader), 1, "another uid has its own line")
        clock += 999
        XCTAssertNil(admission.shouldLogRefusal(of: stranger))
        clock += 1
        XCTAssertEqual(admission.shouldLogRefusal(of: stranger), 1002, "a second later: one line with every refusal since the last")
    }

    func testPeerGroupsComeFromTheConnectedProcess() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        let peer = try XCTUnwrap(Peer.of(socket: fds[0]))
        XCTAssertEqual(peer.uid, getuid())
        var mine = [gid_t](repeating: 0, count: 256)
        let n = getgroups(Int32(mine.count), &mine)
        XCTAssertGreaterThanOrEqual(n, 0)
        // SO_PEERGROUPS exists since Linux 4.13.
        let groups = try XCTUnwrap(peer.groups, "SO_PEERGROUPS answered nothing")
        XCTAssertEqual(Set(groups), Set(mine.prefix(Int(n))))
        // A group grant applies through the process's groups.
        let policy = AccessPolicy(owner: 1, entries: [.init(subject: .gid(424_242), write: false, prefixes: ["g."])])
        let stranger = Peer(pid: 1, uid: 4243, gid: 4243, groups: [424_242])
        XCTAssertEqual(policy.grant(for: stranger)?.mayRead("g.x"), true)
        XCTAssertNil(policy.grant(for: Peer(pid: 1, uid: 4243, gid: 4243, groups: [])))
    }
}
