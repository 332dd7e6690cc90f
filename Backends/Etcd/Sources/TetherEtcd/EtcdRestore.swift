import EtcdAPI
import Foundation
import Glibc
import TetherCore
import TetherDaemon
import TetherWire

/// `tetherd --backend etcd:… --restore FILE`: a snapshot (io.tether.Snapshot
/// of either backend: the same SQLite file) becomes the cluster's states,
/// under a new epoch: the migration from one machine to a cluster. Every
/// other tetherd of the cluster must be stopped meanwhile (their mirrors
/// would not follow the new epoch); each loads it when started again.
enum EtcdRestore {
    /// States written per Txn (each Put one state and, when it has one,
    /// its descriptor; well under `--max-txn-ops`).
    static let batch = 64

    static func restore(from snapshot: String, into client: EtcdClient, epoch: String, log: EventLog) throws {
        // The snapshot is read as the SQLite backend reads it, from a copy.
        var template = Array((NSTemporaryDirectory() + "/tether-restore-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TetherError(.loopFailure, "cannot make a temporary directory to read \(snapshot): \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try SQLiteStore.restore(from: snapshot, into: directory, epoch: epoch)
        let contents = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 1).load()
        for (name, reason) in contents.quarantined {
            throw TetherError(.badJSON, "\(snapshot): state '\(name)' cannot be read (\(reason)): nothing was restored")
        }
        let states = contents.states.filter { $0.value != nil }
        try client.blocking {
            // Everything under /tether/ goes, then the new epoch comes (its
            // create revision is the new base), then the states: a restore
            // stopped half-way is run again (nothing of it is served until
            // a tetherd starts on the cluster).
            var reset = Etcdserverpb_TxnRequest()
            var wipe = Etcdserverpb_DeleteRangeRequest()
            wipe.key = Data(EtcdKeys.root.utf8)
            wipe.rangeEnd = Data(EtcdKeys.rangeEnd(EtcdKeys.root))
            var op = Etcdserverpb_RequestOp()
            op.request = .requestDeleteRange(wipe)
            reset.success = [op]
            _ = try await client.kv.txn(reset, options: EtcdClient.unary)
            var start = Etcdserverpb_TxnRequest()
            start.success = [EtcdClient.put(Array(EtcdKeys.epoch.utf8), Array(epoch.utf8))]
            _ = try await client.kv.txn(start, options: EtcdClient.unary)
            // Txns of at most `batch` states and `EtcdLedger.maxCommit`
            // bytes (etcd's request limit), each state whole in one.
            var request = Etcdserverpb_TxnRequest()
            var bytes = 0
            for image in states {
                let value = try EtcdCodec.encodeState(image.name, image.value!)
                if !request.success.isEmpty && (request.success.count >= batch || bytes + value.count > EtcdLedger.maxCommit) {
                    _ = try await client.kv.txn(request, options: EtcdClient.unary)
                    request = Etcdserverpb_TxnRequest()
                    bytes = 0
                }
                request.success.append(EtcdClient.put(EtcdKeys.state(image.name), value))
                bytes += value.count
                if image.descriptor != Descriptor() {
                    request.success.append(EtcdClient.put(EtcdKeys.descriptor(image.name), try EtcdCodec.encodeDescriptor(image.descriptor)))
                }
            }
            if !request.success.isEmpty { _ = try await client.kv.txn(request, options: EtcdClient.unary) }
        }
        log.event("restored", "from" => snapshot, "into" => client.summary, "states" => "\(states.count)", "epoch" => epoch)
    }
}
