import EtcdAPI
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
/// leader: from then on the lost proposal can never be answered. A call
/// overdue by `overdue` asks its member's Status every `every`, and ends
/// with `LeaderChanged` (an unknown outcome: the old leader may have
/// replicated it before it died) once the term is above the one known when
/// the call began. The member answered, so the connection stays where it
/// is: no failover.
struct LeaderChanged: Error, CustomStringConvertible {
    let from: UInt64
    let to: UInt64
    var description: String { "the etcd cluster elected a new leader (term \(from) to \(to)) while the call was in flight" }
}

extension EtcdClient {
    static let overdue: Duration = .milliseconds(300)
    static let every: Duration = .milliseconds(200)

    /// `call`, ended early by `LeaderChanged` (see the file's comment).
    /// A call that answers in time costs one more child task, cancelled
    /// before its first sleep ends.
    func unlessLeaderChanges<T: Sendable>(_ call: @escaping @Sendable () async throws -> T) async throws -> T {
        let term = knownTerm
        guard term > 0 else { return try await call() }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await call() }
            group.addTask {
                try await self.newTerm(after: term)
                return nil
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let value = next { return value }
            }
            throw CancellationError()
        }
    }

    /// Returns never: throws `LeaderChanged` once the member's term is
    /// above `term`, or CancellationError when the call answered.
    private func newTerm(after term: UInt64) async throws {
        try await Task.sleep(for: EtcdClient.overdue)
        var options = CallOptions.defaults
        options.timeout = .milliseconds(500)
        while true {
            // A member that does not answer its Status either is left to
            // the call's own timeout (and its failover).
            if let status = try? await maintenance.status(Etcdserverpb_StatusRequest(), options: options) {
                saw(term: status.raftTerm)
                if status.raftTerm > term { throw LeaderChanged(from: term, to: status.raftTerm) }
            }
            try await Task.sleep(for: EtcdClient.every)
        }
    }
}
