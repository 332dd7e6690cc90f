import CLibUV
import EtcdAPI
import Foundation
import GRPCCore
import TetherCore
import TetherDaemon
import TetherWire

/// The ledger on etcd (Ledger.swift in TetherDaemon; docs/daemon.md,
/// "Several machines"): a proposal is one etcd Txn, whose compares are the
/// `modified` revisions the host planned against and whose writes are the
/// changed states' whole values plus the commit record; the host installs
/// commits only from its one Watch of `/tether/`, in etcd's order, so every
/// host sees the same revisions in the same order.
public final class EtcdLedger: Ledger {
    let client: EtcdClient
    /// The create revision of the epoch key: tetherd revision = etcd
    /// revision − base.
    let base: Int64
    let limits: Limits
    /// Names this host in the commit records it writes.
    let host: String
    private var sequence: UInt64 = 0
    private let inbox = LoopInbox()
    private weak var store: Store?
    private var log: EventLog?
    private var follower: Task<Void, Never>?
    /// The etcd revision the host loaded its states at: the watch starts
    /// after it.
    let loadedAt: Int64

    /// The largest sum of changed values one commit may carry: the Txn
    /// must fit etcd's request limit (the cluster runs 8 MiB) with its
    /// keys and the record.
    public static let maxCommit = 7_864_320

    init(client: EtcdClient, base: Int64, loadedAt: Int64, limits: Limits) {
        self.client = client
        self.base = base
        self.loadedAt = loadedAt
        self.limits = limits
        let bits = UInt64.random(in: 1...UInt64.max)
        host = String(bits, radix: 16)
    }

    public var summary: String { client.summary }

    public func attach(loop: UnsafeMutablePointer<uv_loop_t>, store: Store, log: EventLog) throws(TetherError) {
        self.store = store
        self.log = log
        let rc = inbox.attach(loop)
        guard rc == 0 else { throw TetherError(.loopFailure, "uv_async_init: \(String(cString: uv_strerror(rc)))") }
        let watcher = EtcdWatchFollower(client: client, base: base, limits: limits, inbox: inbox, ledger: self)
        let from = loadedAt + 1
        follower = Task { await watcher.follow(from: from) }
    }

    public func detach() {
        follower?.cancel()
        follower = nil
        inbox.detach()
        client.close()
    }

    // MARK: Proposals

    public func propose(_ proposal: Proposal, done: @escaping (ProposalOutcome) -> Void) {
        if proposal.bytes > EtcdLedger.maxCommit {
            return done(.failed(.limitExceeded(.commit, maximum: EtcdLedger.maxCommit, actual: proposal.bytes,
                                               "one commit changes at most \(EtcdLedger.maxCommit) bytes of values on a daemon whose states live in etcd; this one changes \(proposal.bytes): nothing was written")))
        }
        let request: Etcdserverpb_TxnRequest
        do throws(TetherError) {
            request = try txn(for: proposal)
        } catch {
            return done(.failed(VarlinkError(error)))
        }
        let client = self.client
        let inbox = self.inbox
        let base = self.base
        let generation = client.generation
        client.overdueWatched { ended in
            do {
                let response = try await EtcdClient.ending(ended) { try await client.kv.txn(request, options: EtcdClient.unary) }
                client.saw(term: response.header.raftTerm)
                // Committed: the header's revision is the commit's own.
                // Stale: the host catches up to the newest tetherd commit
                // (the failure branch reads the commit record), not to the
                // cluster's revision, which writes outside /tether/ move.
                let newest = response.responses.first?.responseRange.kvs.first?.modRevision ?? base
                let revision = UInt64(max(0, (response.succeeded ? response.header.revision : newest) - base))
                inbox.post { done(response.succeeded ? .committed(revision: revision) : .stale(revision: revision)) }
            } catch {
                let failure = EtcdLedger.failure(error)
                if EtcdLedger.isTransportFailure(error), let now = client.failover(from: generation) {
                    inbox.post { [weak self] in self?.log?.event("etcd-failover", "to" => now, "reason" => EtcdBackend.describe(error)) }
                }
                inbox.post { done(.failed(failure)) }
            }
        }
    }

    private func txn(for proposal: Proposal) throws(TetherError) -> Etcdserverpb_TxnRequest {
        var request = Etcdserverpb_TxnRequest()
        for (name, modified) in proposal.expected {
            request.compare.append(modified == 0
                ? EtcdClient.compareAbsent(EtcdKeys.state(name))
                : EtcdClient.compare(EtcdKeys.state(name), modRevision: Int64(modified) + base))
        }
        for image in proposal.images {
            if let value = image.value {
                request.success.append(EtcdClient.put(EtcdKeys.state(image.name), try EtcdCodec.encodeState(image.name, value)))
            } else {
                request.success.append(EtcdClient.delete(EtcdKeys.state(image.name)))
            }
        }
        for (name, descriptor) in proposal.descriptors {
            request.success.append(EtcdClient.put(EtcdKeys.descriptor(name), try EtcdCodec.encodeDescriptor(descriptor)))
        }
        for name in proposal.droppedDescriptors {
            request.success.append(EtcdClient.delete(EtcdKeys.descriptor(name)))
        }
        sequence += 1
        let record = EtcdCodec.Record(host: host, sequence: sequence, tag: proposal.tag, origin: proposal.origin,
                                      changes: EtcdCodec.stateEventsSayAll(proposal.changes) ? nil : proposal.changes)
        request.success.append(EtcdClient.put(Array(EtcdKeys.commit.utf8), try EtcdCodec.encodeRecord(record)))
        var newest = Etcdserverpb_RangeRequest()
        newest.key = Data(EtcdKeys.commit.utf8)
        newest.keysOnly = true
        var op = Etcdserverpb_RequestOp()
        op.request = .requestRange(newest)
        request.failure = [op]
        return request
    }

    /// Whether a call failed for want of an answer (a member frozen, cut
    /// off or gone), not because etcd refused it.
    static func isTransportFailure(_ error: Error) -> Bool {
        if error is TetherError || error is LeaderChanged { return false }
        guard let rpc = error as? RPCError else { return true }
        return rpc.code == .deadlineExceeded || rpc.code == .unavailable
    }

    /// The error a call gets when its Txn failed: what etcd refused, or,
    /// when it did not answer, an outcome the caller must find out.
    static func failure(_ error: Error) -> VarlinkError {
        if let change = error as? LeaderChanged {
            return VarlinkError(TetherError(.timedOut, "\(change): the write's outcome is unknown; read the state to learn whether it was applied"))
        }
        guard let rpc = error as? RPCError else {
            return VarlinkError(TetherError(.timedOut, "etcd did not answer the write (\(error)): its outcome is unknown; read the state to learn whether it was applied"))
        }
        let text = rpc.message
        switch rpc.code {
        case .invalidArgument where text.contains("too many operations") || text.contains("too large"):
            return .limitExceeded(.commit, maximum: EtcdLedger.maxCommit, actual: 0,
                                  "etcd refused the commit as too big (\(text)): nothing was written; the cluster must run --max-txn-ops 512 --max-request-bytes 8388608")
        case .resourceExhausted where text.contains("space exceeded"):
            return .storageFull("etcd's database is full (\(text)): nothing of the write was applied; compact and defragment the cluster")
        case .invalidArgument, .failedPrecondition, .permissionDenied, .unauthenticated:
            return VarlinkError(TetherError(.rejected, "etcd refused the write (\(text)): nothing was applied"))
        default:
            return VarlinkError(TetherError(.timedOut, "etcd did not confirm the write (\(rpc.code): \(text)): its outcome is unknown; read the state to learn whether it was applied"))
        }
    }

    // MARK: Read barriers

    /// Reads waiting for the next barrier, and whether one is in flight: a
    /// barrier answers only the reads that came before it was asked, so
    /// the reads that come while one is in flight wait for the next, which
    /// answers all of them (one linearizable Range per round, however many
    /// reads).
    private var barrierWaiting: [(Result<UInt64, VarlinkError>) -> Void] = []
    private var barrierInFlight = false

    public func readBarrier(done: @escaping (Result<UInt64, VarlinkError>) -> Void) {
        barrierWaiting.append(done)
        if !barrierInFlight { startBarrier() }
    }

    private func startBarrier() {
        let batch = barrierWaiting
        barrierWaiting.removeAll()
        barrierInFlight = true
        // The revision of the newest tetherd commit (every one writes the
        // commit record), read linearizably: what the host must have
        // installed. Not the cluster's revision: writes outside /tether/
        // never reach the host's watch, and a read waiting for them would
        // wait forever (found by the benchmark, whose etcd rows write the
        // same cluster).
        var request = Etcdserverpb_RangeRequest()
        request.key = Data(EtcdKeys.commit.utf8)
        request.keysOnly = true  // linearizable: serializable stays false
        let barrier = request
        let client = self.client
        let inbox = self.inbox
        let base = self.base
        let generation = client.generation
        client.overdueWatched { ended in
            let result: Result<UInt64, VarlinkError>
            do {
                let response = try await EtcdClient.ending(ended) { try await client.kv.range(barrier, options: EtcdClient.unary) }
                client.saw(term: response.header.raftTerm)
                result = .success(UInt64(max(0, (response.kvs.first?.modRevision ?? base) - base)))
            } catch {
                if EtcdLedger.isTransportFailure(error) { client.failover(from: generation) }
                result = .failure(VarlinkError(TetherError(.busy, "etcd did not answer the read's barrier (\(EtcdBackend.describe(error))): retry, or run tetherd --reads serializable to read the host's copy")))
            }
            inbox.post { [weak self] in
                guard let self else { return }
                self.barrierInFlight = false
                for done in batch { done(result) }
                if !self.barrierWaiting.isEmpty { self.startBarrier() }
            }
        }
    }

    // MARK: Compaction

    public func compact(through revision: UInt64) {
        guard revision > 0 else { return }
        var request = Etcdserverpb_CompactionRequest()
        request.revision = Int64(revision) + base
        request.physical = true
        let client = self.client
        let inbox = self.inbox
        Task {
            do {
                _ = try await client.kv.compact(request, options: EtcdClient.unary)
            } catch {
                inbox.post { [weak self] in self?.log?.event("etcd-compact-failed", "revision" => "\(revision)", "reason" => "\(error)") }
            }
        }
    }

    // MARK: What the watch delivers (the loop thread)

    func install(_ commit: EtcdWatchFollower.Delivered) {
        guard let store else { return }
        for (name, reason) in commit.unreadable {
            log?.event("etcd-unreadable", "name" => name, "revision" => "\(commit.revision)", "reason" => reason)
        }
        store.install(revision: commit.revision, states: commit.states, descriptors: commit.descriptors,
                      changes: commit.changes, tag: commit.tag, origin: commit.origin, unreadable: commit.unreadable)
    }

    func say(_ event: String, _ fields: [(String, String)]) {
        log?.event(event, fields: fields)
    }

    /// The watch cannot go on (its history was compacted away): the host
    /// cannot know what it missed. It stops, saying so; started again it
    /// loads the states afresh (every watch of its clients resyncs).
    func lostHistory(_ reason: String) {
        log?.event("etcd-history-lost", "reason" => reason, "action" => "stopping: restart tetherd to load the states afresh")
        exit(75)  // EX_TEMPFAIL: a supervisor restarts it
    }
}
