import EtcdAPI
import Foundation
import GRPCCore
import TetherCore
import TetherDaemon
import TetherWire

/// `tetherd --backend etcd:URL[,URL…]`: the states, the order of commits
/// and the history live in an etcd cluster shared by every host's tetherd.
/// At start the host makes sure of the cluster (the epoch, the limits it
/// needs), loads every state at one revision, and from then on follows the
/// cluster's watch (EtcdLedger).
public enum EtcdBackend: StoreBackend {
    /// States per Range page at start (each at most max_value).
    static let pageSize = 64

    public static func open(spec: String, options: StoreBackendOptions, log: EventLog) throws(TetherError) -> Store {
        let client = try EtcdClient(spec: spec)
        let limits = Limits.defaults
        do {
            if let snapshot = options.restore {
                try EtcdRestore.restore(from: snapshot, into: client, epoch: options.newEpoch, log: log)
            }
            // A member may be down or frozen as a host starts: each step is
            // tried on the next member, for 30 s in all.
            let (epoch, base) = try retrying(client, log) { try await ensureEpoch(client, candidate: options.newEpoch) }
            try retrying(client, log) { try await probeLimits(client) }
            let loaded = try retrying(client, log) { try await load(client, base: base, limits: limits) }
            let store = try Store(limits: limits, logCapacity: options.logCapacity, logBytes: options.logBytes, epoch: epoch,
                                  startRevision: 0, maxStates: options.maxStates)
            let quarantined = try store.restore(states: loaded.states, log: [], revision: UInt64(max(0, loaded.revision - base)))
            for (name, reason) in quarantined { log.event("quarantined", "name" => name, "reason" => reason) }
            for (name, reason, modified) in loaded.unreadable {
                store.quarantine(name, reason, modified: modified)
                log.event("quarantined", "name" => name, "reason" => reason)
            }
            let ledger = EtcdLedger(client: client, base: base, loadedAt: loaded.revision, limits: limits)
            store.ledger = ledger
            log.event("store", "kind" => "etcd", "endpoints" => client.summary, "epoch" => epoch, "base" => "\(base)",
                      "states" => "\(store.count)", "revision" => "\(store.revision)")
            return store
        } catch let error as TetherError {
            client.close()
            throw error
        } catch {
            client.close()
            throw TetherError(.loopFailure, "\(client.summary): \(describe(error))")
        }
    }

    /// `body` until it succeeds, moving to the next member after each
    /// failure for want of an answer, for `startDeadline` in all.
    static func retrying<T: Sendable>(_ client: EtcdClient, _ log: EventLog, _ body: @escaping @Sendable () async throws -> T) throws -> T {
        let deadline = ContinuousClock.now + startDeadline
        while true {
            let generation = client.generation
            do {
                return try client.blocking(body)
            } catch {
                guard EtcdLedger.isTransportFailure(error), ContinuousClock.now < deadline else { throw error }
                if let now = client.failover(from: generation) {
                    log.event("etcd-failover", "to" => now, "reason" => describe(error))
                }
            }
        }
    }

    static let startDeadline: Duration = .seconds(30)

    static func describe(_ error: Error) -> String {
        if let rpc = error as? RPCError { return "\(rpc.code): \(rpc.message)" }
        return "\(error)"
    }

    /// The cluster's epoch (made now when it has none) and its base
    /// revision (the epoch key's create revision).
    static func ensureEpoch(_ client: EtcdClient, candidate: String) async throws -> (String, Int64) {
        let key = Array(EtcdKeys.epoch.utf8)
        var request = Etcdserverpb_TxnRequest()
        request.compare = [EtcdClient.compareAbsent(key)]
        request.success = [EtcdClient.put(key, Array(candidate.utf8))]
        request.failure = [EtcdClient.range(key)]
        let response = try await client.kv.txn(request, options: EtcdClient.unary)
        client.saw(term: response.header.raftTerm)
        if response.succeeded { return (candidate, response.header.revision) }
        guard let kv = response.responses.first?.responseRange.kvs.first else {
            throw TetherError(.loopFailure, "\(client.summary): the epoch key \(EtcdKeys.epoch) vanished while it was read")
        }
        let epoch = String(decoding: kv.value, as: UTF8.self)
        guard epoch.utf8.count == 16, epoch.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw TetherError(.invalidArgument, "\(client.summary): \(EtcdKeys.epoch) holds \(kv.value.count) bytes that are not a tetherd epoch (16 hex digits): this cluster's /tether/ keys were not written by tetherd; refusing to use them")
        }
        return (epoch, kv.createRevision)
    }

    /// The cluster must take a Transaction of 128 ops: 257 Txn ops
    /// (`--max-txn-ops 512`). A no-write Txn of 257 compares says so.
    static func probeLimits(_ client: EtcdClient) async throws {
        var request = Etcdserverpb_TxnRequest()
        var compare = EtcdClient.compareAbsent(Array(EtcdKeys.epoch.utf8))
        compare.result = .notEqual
        request.compare = Array(repeating: compare, count: 257)
        do {
            _ = try await client.kv.txn(request, options: EtcdClient.unary)
        } catch let error as RPCError where error.message.contains("too many operations") {
            throw TetherError(.invalidArgument, "\(client.summary) takes fewer than 257 operations in a Txn (\(error.message)): a Transaction of 128 ops needs 257; run every member with --max-txn-ops 512 (scripts/etcd-cluster.sh does)")
        }
    }

    struct Loaded {
        var states: [StateImage] = []
        /// States whose value (or descriptor) cannot be read, why, and
        /// their revision in etcd.
        var unreadable: [(name: String, reason: String, modified: UInt64)] = []
        var revision: Int64 = 0
    }

    /// Every state and descriptor, at one revision, a page at a time.
    static func load(_ client: EtcdClient, base: Int64, limits: Limits) async throws -> Loaded {
        var out = Loaded()
        var descriptors: [String: Descriptor] = [:]
        var badDescriptors: [String: String] = [:]
        var revision: Int64 = 0
        for prefix in [EtcdKeys.descriptorPrefix, EtcdKeys.statePrefix] {
            var from = Array(prefix.utf8)
            let end = EtcdKeys.rangeEnd(prefix)
            while true {
                var request = Etcdserverpb_RangeRequest()
                request.key = Data(from)
                request.rangeEnd = Data(end)
                request.limit = Int64(pageSize)
                request.revision = revision  // 0 the first time: now, kept for the rest
                let response = try await client.kv.range(request, options: EtcdClient.unary)
                if revision == 0 { revision = response.header.revision }
                for kv in response.kvs {
                    switch EtcdKeys.kind(of: [UInt8](kv.key)) {
                    case .descriptor(let name):
                        do throws(TetherError) {
                            descriptors[name] = try EtcdCodec.decodeDescriptor(name, [UInt8](kv.value), limits: limits)
                        } catch {
                            badDescriptors[name] = error.message
                        }
                    case .state(let name):
                        let modified = UInt64(max(0, kv.modRevision - base))
                        if let reason = badDescriptors[name] {
                            out.unreadable.append((name, reason, modified))
                            continue
                        }
                        do throws(TetherError) {
                            let value = try EtcdCodec.decodeState(name, [UInt8](kv.value), limits: limits)
                            out.states.append(StateImage(name: name, value: value, modified: modified,
                                                         descriptor: descriptors[name] ?? Descriptor()))
                        } catch {
                            out.unreadable.append((name, error.message, modified))
                        }
                    default:
                        break
                    }
                }
                guard response.more, let last = response.kvs.last else { break }
                from = [UInt8](last.key) + [0]
            }
        }
        out.revision = revision
        return out
    }
}
