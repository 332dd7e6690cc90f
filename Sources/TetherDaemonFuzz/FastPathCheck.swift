import Glibc
import TetherCore
import TetherDaemon
import TetherWire

/// The daemon's fast paths against its slow path, on every fuzz input: two
/// in-process daemons (the fuzzer's limits and grants, no store), one as
/// built and one with `Service.simpleCalls` and `Store.setsWholeStates`
/// off, are sent the input's messages one by one; after each, both must
/// have answered with the same bytes, be at the same revision and agree on
/// closing the connection. A connection that closes is followed by a new
/// one whose peer rotates as in `SessionRun`.
enum FastPathCheck {
    static func run(_ input: UnsafeRawBufferPointer, _ problems: inout [String]) {
        // Without a whole message there is nothing to compare (and two
        // daemons cost a third of an empty input).
        guard input.count > 0, memchr(input.baseAddress!, 0, input.count) != nil else { return }
        let (fast, slow) = kept.take()
        var start = 0
        var peers = 0
        for i in NULs(in: input) {
            let message = UnsafeRawBufferPointer(rebasing: input[start...i])
            start = i + 1
            let a = fast.send(message), b = slow.send(message)
            if a != b {
                problems.append("fast path: the reply to \(quoted(message)) is \(quoted(a)); the slow path's is \(quoted(b))")
                return
            }
            if fast.store.revision != slow.store.revision {
                problems.append("fast path: after \(quoted(message)) the revision is \(fast.store.revision); the slow path's is \(slow.store.revision)")
                return
            }
            if (fast.session.closeReason == nil) != (slow.session.closeReason == nil) {
                problems.append("fast path: after \(quoted(message)) one path closed the connection and the other did not")
                return
            }
            if fast.session.closeReason != nil {
                peers += 1
                fast.reconnect(peers)
                slow.reconnect(peers)
            }
        }
    }

    /// The two daemons, kept across inputs and emptied between them
    /// (`Kept`; each then answers as a new one would).
    nonisolated(unsafe) static let kept = Kept<(fast: Side, slow: Side)>(
        make: { (fast: Side(fastPaths: true), slow: Side(fastPaths: false)) },
        empty: { $0.fast.reset(); $0.slow.reset() })

    final class Side {
        let store: Store
        let service: Service
        var session: Session

        init(fastPaths: Bool) {
            store = try! Store(limits: DaemonFuzzer.limits, logCapacity: DaemonFuzzer.logCapacity, epoch: DaemonFuzzer.epoch)
            store.setsWholeStates = fastPaths
            service = Service(store: store, policy: SessionRun.policy, log: EventLog(quiet: true))
            service.simpleCalls = fastPaths
            session = service.open(peer: Peer(pid: 3, uid: SessionRun.owner, gid: getgid()))
        }

        /// Empty again, with a new connection from the owner.
        func reset() {
            try! service.reset()
            session = service.open(peer: Peer(pid: 3, uid: SessionRun.owner, gid: getgid()))
        }

        func send(_ message: UnsafeRawBufferPointer) -> [UInt8] {
            session.receive(message)
            return session.takeOutput()
        }

        func reconnect(_ n: Int) {
            service.closed(session)
            let uid = [SessionRun.owner, SessionRun.granted, SessionRun.stranger][n % 3]
            session = service.open(peer: Peer(pid: 3, uid: uid, gid: getgid()))
        }
    }

    static func quoted(_ bytes: some Collection<UInt8>) -> String {
        text(.string(String(decoding: bytes.prefix(300), as: UTF8.self)))
    }
}
