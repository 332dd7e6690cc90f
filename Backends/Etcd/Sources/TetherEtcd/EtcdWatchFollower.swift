import EtcdAPI
import Foundation
import GRPCCore
import TetherCore
import TetherDaemon
import TetherWire

/// The host's one Watch of `/tether/`, on gRPC's threads: every revision
/// it delivers becomes one commit, decoded here and installed on the loop
/// thread (`EtcdLedger.install`), in order, each once.
///
/// The rules of docs/daemon.md "Several machines", from etcd 3.4.23's
/// known watch bugs: never start from revision 0 (it means "now"); drop
/// anything at or below the revision delivered last (duplicates after a
/// reconnect, etcd #15275); a response never splits a revision (no
/// fragments are asked for), but may hold many: they are split by
/// `mod_revision`; the stream carries `hasleader`, so a member cut off
/// from the leader ends it (#10819) and the follower moves on; a watch
/// cancelled for compaction is a gap this host cannot fill: it stops.
final class EtcdWatchFollower: @unchecked Sendable {
    let client: EtcdClient
    let base: Int64
    let limits: Limits
    let inbox: LoopInbox
    weak var ledger: EtcdLedger?

    /// One revision as the store installs it.
    struct Delivered {
        var revision: UInt64
        var states: [StateImage] = []
        var descriptors: [(name: String, descriptor: Descriptor)] = []
        var changes: [TetherWire.Change]?
        var tag: String?
        var origin: UInt64?
        var unreadable: [(name: String, reason: String)] = []
    }

    /// The last etcd revision handed to the loop.
    private var delivered: Int64 = 0

    init(client: EtcdClient, base: Int64, limits: Limits, inbox: LoopInbox, ledger: EtcdLedger) {
        self.client = client
        self.base = base
        self.limits = limits
        self.inbox = inbox
        self.ledger = ledger
    }

    private struct Stop: Error {
        let reason: String
    }

    func follow(from start: Int64) async {
        delivered = start - 1
        var pause: Duration = .milliseconds(50)
        while !Task.isCancelled {
            let generation = client.generation
            do {
                try await watchOnce()
            } catch let stop as Stop {
                inbox.post { [weak ledger] in ledger?.lostHistory(stop.reason) }
                return
            } catch {
                if Task.isCancelled { return }
                let reason = "\(error)"
                let from = delivered + 1
                // A member that stopped answering: the watch resumes on the next.
                if EtcdLedger.isTransportFailure(error) && !(error is WatchCanceled) { client.failover(from: generation) }
                inbox.post { [weak ledger] in ledger?.say("etcd-watch-restart", [("from", "\(from)"), ("reason", reason)]) }
            }
            // Reconnects back off a little, so a cluster without a leader
            // is not asked in a tight loop; a healthy stream resets it.
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(1))
        }
    }

    private func watchOnce() async throws {
        var create = Etcdserverpb_WatchCreateRequest()
        create.key = Data(EtcdKeys.root.utf8)
        create.rangeEnd = Data(EtcdKeys.rangeEnd(EtcdKeys.root))
        create.startRevision = delivered + 1  // never 0: that is "from now"
        var request = Etcdserverpb_WatchRequest()
        request.requestUnion = .createRequest(create)
        var options = CallOptions.defaults
        options.maxResponseMessageBytes = EtcdClient.maxResponse
        options.maxRequestMessageBytes = EtcdClient.maxResponse  // see EtcdClient.unary
        options.waitForReady = true
        let first = request
        try await client.watch.watch(metadata: EtcdClient.requireLeader, options: options, requestProducer: { writer in
            try await writer.write(first)
            // The request side stays open while the watch runs.
            while true { try await Task.sleep(for: .seconds(3600)) }
        }, onResponse: { response in
            for try await message in response.messages {
                try self.take(message)
                // The loop is behind: read no more until it catches up
                // (gRPC's flow control then holds etcd's stream back).
                while self.inbox.isBehind { try await Task.sleep(for: .milliseconds(1)) }
            }
        })
        throw Stop(reason: "etcd ended the watch stream")  // not expected: a watch never ends by itself
    }

    private func take(_ message: Etcdserverpb_WatchResponse) throws {
        if message.canceled {
            if message.compactRevision > 0 {
                throw Stop(reason: "the revisions after \(delivered - base) were compacted in etcd (compact revision \(message.compactRevision - base)) before this host read them")
            }
            throw WatchCanceled(reason: message.cancelReason)
        }
        var at = 0
        let events = message.events
        while at < events.count {
            let revision = events[at].kv.modRevision
            var end = at
            while end < events.count && events[end].kv.modRevision == revision { end += 1 }
            defer { at = end }
            guard revision > delivered else { continue }  // delivered already (a reconnect)
            let commit = decode(events[at..<end], revision: revision)
            delivered = revision
            inbox.post { [weak ledger] in ledger?.install(commit) }
        }
    }

    struct WatchCanceled: Error, CustomStringConvertible {
        let reason: String
        var description: String { "etcd cancelled the watch: \(reason)" }
    }

    /// The events of one revision as one commit. A value tetherd cannot
    /// read is not installed: its state is quarantined on this host.
    func decode(_ events: ArraySlice<Mvccpb_Event>, revision: Int64) -> Delivered {
        var out = Delivered(revision: UInt64(max(0, revision - base)))
        for event in events {
            let key = [UInt8](event.kv.key)
            switch EtcdKeys.kind(of: key) {
            case .state(let name):
                if event.type == .delete {
                    out.states.append(StateImage(name: name, value: nil, modified: out.revision, descriptor: Descriptor()))
                    continue
                }
                do throws(TetherError) {
                    let value = try EtcdCodec.decodeState(name, [UInt8](event.kv.value), limits: limits)
                    out.states.append(StateImage(name: name, value: value, modified: out.revision, descriptor: Descriptor()))
                } catch {
                    out.unreadable.append((name, error.message))
                }
            case .descriptor(let name):
                guard event.type == .put else { continue }  // removed with its state
                do throws(TetherError) {
                    out.descriptors.append((name, try EtcdCodec.decodeDescriptor(name, [UInt8](event.kv.value), limits: limits)))
                } catch {
                    out.unreadable.append((name, error.message))
                }
            case .commit:
                guard event.type == .put, let record = try? EtcdCodec.decodeRecord([UInt8](event.kv.value), limits: limits) else { continue }
                out.tag = record.tag
                out.origin = record.origin
                out.changes = record.changes
            case .other:
                continue
            }
        }
        return out
    }
}
