import Glibc
import TetherCore
import TetherDaemon
import TetherWire

/// The watches' checks (the `watch` and `store` targets): four sessions
/// watch the daemon from before the input's first message (every state;
/// every state at the paths `/0` and `/a/1`; the names `a` and `b`), and
/// at the end of the input:
/// - the watch of every state got one change reply per commit, with
///   revisions exactly 1...N, and applying them reproduces every state
///   (read back with List and Get; List names as many as the store holds);
/// - the path watches reproduce what Get at their path reads;
/// - a Watch from revision 0 replays what the live watch got (or resyncs,
///   flagged, when the log no longer holds revision 1), and the log holds
///   revision 1 unless it overflowed or was compacted.
/// Each watch reply is checked as it is read (`Client.drain`). These are
/// a target of their own, apart from `fast`: opening the watches and the
/// end-of-input reads cost an input with no message 0.44 ms.
struct WatchCheck {
    typealias F = DaemonFuzzer
    let service: Service
    let store: Store
    let everything: Client
    let pathWatchers: [Client]
    let named: Client

    init(service: Service, store: Store) {
        self.service = service
        self.store = store
        func watch(_ parameters: [String: Value]) -> Client {
            let c = Client(service.open(peer: Peer(pid: 2, uid: SessionRun.owner, gid: getgid())), store: store)
            c.call("io.tether.Watch", parameters, more: true)
            return c
        }
        everything = watch(["prefix": .string("")])
        pathWatchers = F.pathWatches.map { watch(["prefix": .string(""), "path": .string($0)]) }
        named = watch(["names": .array([.string("a"), .string("b")])])
    }

    /// What the end of the input left: the names List gave, the checker
    /// session (the restart check reads through it), and every session
    /// opened here, for the caller to close.
    struct End {
        var names: [String] = []
        var checker: Client?
        var opened: [Client] = []
    }

    /// The end-of-input checks; `compacted`: a Compact succeeded.
    func finish(compacted: Bool, _ problems: inout [String]) -> End {
        var end = End(opened: [everything, named] + pathWatchers)
        for w in [everything, named] + pathWatchers {
            w.drain(&problems)
        }
        let n = store.revision
        // One change per commit, in order, each revision once.
        let revisions = everything.changes.map(\.revision)
        if revisions != Array(stride(from: UInt64(1), through: n, by: 1)) {
            problems.append("the watch of every state got the commits \(revisions.prefix(20)); the store made 1...\(n)")
        }
        // The checker: every state, read back.
        let checker = Client(service.open(peer: Peer(pid: 3, uid: SessionRun.owner, gid: getgid())), store: store)
        end.opened.append(checker)
        var names: [String] = []
        var after: String?
        while true {
            var p: [String: Value] = ["prefix": .string(""), "limit": .int(1000)]
            if let after { p["after"] = .string(after) }
            guard let reply = checker.call("io.tether.List", p).first, reply.error == nil,
                  let list = try? ListReply(parameters: reply.parameters, limits: F.limits) else {
                problems.append("List failed")
                return end
            }
            names += list.states.map(\.name)
            if !list.truncated || list.states.isEmpty { break }
            after = list.states.last!.name
        }
        if names.count != store.count { problems.append("List gave \(names.count) states; the store holds \(store.count)") }
        end.names = names
        end.checker = checker

        func read(_ name: String, at path: String?) -> Value? {
            var p: [String: Value] = ["name": .string(name)]
            if let path { p["path"] = .string(path) }
            guard let reply = checker.call("io.tether.Get", p).first else { return nil }
            if reply.error != nil { return nil }
            return (try? GetReply(parameters: reply.parameters, limits: F.limits))?.value
        }

        var actual: [String: Value] = [:]
        for name in names { actual[name] = read(name, at: nil) }
        compare(everything.mirror, actual, "the watch of every state", &problems)
        for (i, path) in F.pathWatches.enumerated() {
            var atPath: [String: Value] = [:]
            for name in names { atPath[name] = read(name, at: path) }
            compare(pathWatchers[i].mirror, atPath, "the watch at \(path)", &problems)
        }
        var namedActual: [String: Value] = [:]
        for name in ["a", "b"] { namedActual[name] = actual[name] }
        compare(named.mirror, namedActual, "the watch of a and b", &problems)

        // A watch from revision 0 replays the live one, or resyncs.
        let replay = Client(service.open(peer: Peer(pid: 4, uid: SessionRun.owner, gid: getgid())), store: store)
        end.opened.append(replay)
        replay.call("io.tether.Watch", ["prefix": .string(""), "from_revision": .int(0), "epoch": .string(F.epoch)], more: true)
        replay.drain(&problems)
        // The log holds revision 1 unless it held more than its capacity
        // or was compacted (Compact): then a resync.
        let oldest = checker.call("io.tether.Stats", [:]).first.flatMap { try? StatsReply(parameters: $0.parameters) }?.oldestRevision ?? 0
        if oldest > 0 && n <= UInt64(F.logCapacity) && !compacted {
            problems.append("the log no longer holds revision 1 (oldest_revision \(oldest)) after \(n) commits, with room for \(F.logCapacity), and no Compact")
        }
        if oldest == 0 {
            if replay.changes != everything.changes || replay.resynced {
                problems.append("a Watch from revision 0 replayed \(replay.changes.count) commits\(replay.resynced ? " after a resync" : ""); the live watch got \(everything.changes.count)")
            }
        } else if !replay.resynced || replay.mirror != actual {
            problems.append("a Watch from revision 0, older than the log (oldest_revision \(oldest)), did not resync to the states")
        }
        return end
    }

    private func compare(_ mirror: [String: Value], _ actual: [String: Value], _ what: String, _ problems: inout [String]) {
        guard mirror != actual else { return }
        for name in Set(mirror.keys).union(actual.keys).sorted() where mirror[name] != actual[name] {
            problems.append("\(what): applying its changes gives \(name) = \(text(mirror[name])); the store has \(text(actual[name]))")
        }
    }
}
