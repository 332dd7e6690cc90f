import Glibc
import TetherCore
import TetherDaemon
import TetherWire

/// The `store` target's end-of-input check: the SQLite store the run's
/// daemon synced after each message, opened again as a restarted daemon
/// would, answers as the live one does.
extension SessionRun {
    /// A daemon restarted on the SQLite store holds what this one holds:
    /// the revision, the epoch, every state (value, modified, descriptor),
    /// and the log a Watch resumes from (changes, tags and origins).
    mutating func checkRestart(names: [String], checker: Client) {
        let restarted: Service
        do {
            let reopened = try SQLiteStore(directory: SessionRun.directory, durability: .normal, logCapacity: F.logCapacity, exclusive: false)
            let contents = try reopened.load()
            guard contents.epoch == F.epoch else {
                problems.append("after a restart the epoch is \(contents.epoch ?? "(none)"), not \(F.epoch)")
                return
            }
            let store2 = try Store(limits: F.limits, logCapacity: F.logCapacity, epoch: F.epoch, startRevision: 0)
            try store2.restore(states: contents.states, log: contents.log, revision: contents.revision)
            restarted = Service(store: store2, policy: AccessPolicy(owner: SessionRun.owner), log: EventLog(quiet: true))
        } catch {
            problems.append("the SQLite store does not open again: \(error)")
            return
        }
        let after = Client(restarted.open(peer: Peer(pid: 5, uid: SessionRun.owner, gid: getgid())), store: restarted.store)
        defer { restarted.closed(after.session) }
        func stats(_ c: Client) -> StatsReply? {
            c.call("io.tether.Stats", [:]).first.flatMap { try? StatsReply(parameters: $0.parameters) }
        }
        guard let s1 = stats(checker), let s2 = stats(after) else {
            problems.append("Stats failed around a restart")
            return
        }
        if (s1.revision, s1.epoch, s1.states, s1.oldestRevision) != (s2.revision, s2.epoch, s2.states, s2.oldestRevision) {
            problems.append("after a restart Stats says revision \(s2.revision), epoch \(s2.epoch), \(s2.states) states, oldest \(s2.oldestRevision); before it \(s1.revision), \(s1.epoch), \(s1.states), \(s1.oldestRevision)")
        }
        for name in names {
            for method in ["io.tether.Get", "io.tether.Describe"] {
                let p: [String: Value] = ["name": .string(name)]
                let r1 = checker.call(method, p).first, r2 = after.call(method, p).first
                if r1 != r2 {
                    problems.append("after a restart \(method) \(name) answers \(text(r2.map { .object($0.parameters) })); before it \(text(r1.map { .object($0.parameters) }))")
                }
            }
        }
        // The log: a Watch from the oldest revision it holds.
        let from: [String: Value] = ["prefix": .string(""), "from_revision": .int(Int64(s1.oldestRevision)), "epoch": .string(F.epoch)]
        let w1 = Client(service.open(peer: Peer(pid: 6, uid: SessionRun.owner, gid: getgid())), store: store)
        let w2 = Client(restarted.open(peer: Peer(pid: 6, uid: SessionRun.owner, gid: getgid())), store: restarted.store)
        w1.call("io.tether.Watch", from, more: true)
        w2.call("io.tether.Watch", from, more: true)
        var ignored: [String] = []
        let h1 = w1.replies(&ignored), h2 = w2.replies(&ignored)
        if h1 != h2 {
            let first = zip(h1, h2).first { $0.0 != $0.1 }
            problems.append("after a restart a Watch from \(s1.oldestRevision) replays \(h2.count) replies, before it \(h1.count); first difference: \(text(first.map { .object($0.1.parameters) })) for \(text(first.map { .object($0.0.parameters) }))")
        }
        service.closed(w1.session)
        restarted.closed(w2.session)
    }
}
