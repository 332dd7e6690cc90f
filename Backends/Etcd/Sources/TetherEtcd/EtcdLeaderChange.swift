import EtcdAPI
import Foundation
import GRPCCore

/// A call that lost its leader is answered as soon as the cluster has a
/// new term, not at the call's timeout.
///
/// When the leader dies, a write sent to a follower is forwarded to the
/// dead leader and lost; etcd answers it only at its request timeout (7 s)
/// and tetherd's own `callTimeout` (3 s) used to be what ended it, so
/// writes resumed 3 s after a leader's SIGKILL at best, never sooner
/// (issue 31 asks for within 3 s). The followers notice the loss after an
/// election timeout (1 s by default) and raise the term to elect a new
/// leader: from then on the lost proposal can never be answered. While a
/// call is overdue by `overdue`, one ticker per client asks the member's
/// Status every `every`, and cancels each overdue call begun under a lower
/// term, which then ends with `LeaderChanged` (an unknown outcome: the old
/// leader may have replicated it before it died). The member answered, so
/// the connection stays where it is: no failover.
///
/// A call that answers in time costs a lock and a table entry: a task and
/// a timer a call (a task group racing a sleep, the first version) cost
/// 4% of the 64-client commits/s.
struct LeaderChanged: Error, CustomStringConvertible {
    let from: UInt64
    let to: UInt64
    var description: String { "the etcd cluster elected a new leader (term \(from) to \(to)) while the call was in flight" }
}

final class OverdueCalls: @unchecked Sendable {
    static let overdue: Duration = .milliseconds(300)
    static let every: Duration = .milliseconds(200)

    private struct Call {
        let started: ContinuousClock.Instant
        let term: UInt64
        var task: Task<Void, Never>?
        var changed: LeaderChanged?
    }

    private let lock = NSLock()
    private var calls: [UInt64: Call] = [:]
    private var next: UInt64 = 0
    private var ticking = false

    /// A call about to begin under `term`; nil when the term is not known
    /// yet (before the first answer), which leaves the call to its timeout.
    func begin(term: UInt64) -> UInt64? {
        guard term > 0 else { return nil }
        lock.lock()
        defer { lock.unlock() }
        next += 1
        calls[next] = Call(started: .now, term: term)
        return next
    }

    /// The task that runs call `id`, for the ticker to cancel (a call that
    /// ended before this is gone: nothing to cancel).
    func attach(_ id: UInt64?, _ task: Task<Void, Never>, status: @escaping @Sendable () async -> UInt64?) {
        guard let id else { return }
        lock.lock()
        guard calls[id] != nil else { return lock.unlock() }
        calls[id]!.task = task
        let start = !ticking
        ticking = true
        lock.unlock()
        if start { Task { await self.tick(status) } }
    }

    /// Call `id` ended; what ended it, when the ticker did.
    func end(_ id: UInt64?) -> LeaderChanged? {
        guard let id else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return calls.removeValue(forKey: id)?.changed
    }

    /// While calls are in flight: every `every`, when one is overdue, the
    /// member's term; the calls begun under a lower one are cancelled.
    private func tick(_ status: @escaping @Sendable () async -> UInt64?) async {
        while true {
            try? await Task.sleep(for: OverdueCalls.every)
            guard let overdue = anyOverdue() else { return }
            // A member that does not answer its Status either is left to
            // the calls' own timeout (and its failover).
            guard overdue, let term = await status() else { continue }
            for task in markChanged(below: term) { task.cancel() }
        }
    }

    /// Whether a call is overdue; nil, and the ticker stops, when none is
    /// in flight.
    private func anyOverdue() -> Bool? {
        lock.lock()
        defer { lock.unlock() }
        if calls.isEmpty {
            ticking = false
            return nil
        }
        let now = ContinuousClock.now
        return calls.values.contains { now - $0.started >= OverdueCalls.overdue }
    }

    /// The overdue calls begun under a term below `term`, marked: their
    /// tasks, to cancel.
    private func markChanged(below term: UInt64) -> [Task<Void, Never>] {
        lock.lock()
        defer { lock.unlock() }
        let now = ContinuousClock.now
        var cancel: [Task<Void, Never>] = []
        for (id, call) in calls where call.term < term && call.changed == nil && now - call.started >= OverdueCalls.overdue {
            calls[id]!.changed = LeaderChanged(from: call.term, to: term)
            if let task = call.task { cancel.append(task) }
        }
        return cancel
    }
}

extension EtcdClient {
    /// The member's Raft term (its Status, within 500 ms), or nil.
    func memberTerm() async -> UInt64? {
        var options = CallOptions.defaults
        options.timeout = .milliseconds(500)
        guard let status = try? await maintenance.status(Etcdserverpb_StatusRequest(), options: options) else { return nil }
        saw(term: status.raftTerm)
        return status.raftTerm
    }

    /// `call`'s answer; its failure is the leader's change when the ticker
    /// ended it (`ended` says so, and ends the call's entry either way).
    static func ending<T>(_ ended: () -> LeaderChanged?, _ call: () async throws -> T) async throws -> T {
        let answer: T
        do {
            answer = try await call()
        } catch {
            throw ended() ?? error
        }
        _ = ended()
        return answer
    }

    /// Runs `body` (a unary call and what follows it) in a task of its own
    /// that the overdue ticker may cancel; `body` gets what ended it early,
    /// if anything did, through `ended`.
    func overdueWatched(_ body: @escaping (_ ended: @escaping @Sendable () -> LeaderChanged?) async -> Void) {
        let id = overdueCalls.begin(term: knownTerm)
        let calls = overdueCalls
        let task = Task { await body { calls.end(id) } }
        calls.attach(id, task) { [weak self] in await self?.memberTerm() }
    }
}
