import Dispatch
import EtcdAPI
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import TetherCore

/// gRPC clients of an etcd cluster (grpc-swift 2 over SwiftNIO, on their
/// own threads): its endpoints in order, the first live one used, the next
/// when it fails (gRPC's pick-first).
///
/// Unary calls (Txn, Range, Compact) take turns on short-lived
/// connections, a new one every `callsPerConnection` calls: etcd 3.4's
/// gRPC server ends every unary call with a RST_STREAM, and SwiftNIO's
/// HTTP/2 handler, as grpc-swift-nio-transport 2.9.2 sets it up, takes a
/// peer that sends more than 200 of them in 10 s for a rapid-reset attack
/// and drops the connection, failing every call on it (found at the
/// 193rd Set of a serial load; the limit is not configurable). The watch
/// has a connection of its own, never rotated: it is one stream.
final class EtcdClient: @unchecked Sendable {
    let endpoints: [(host: String, port: Int)]
    private var watchClient: GRPCClient<HTTP2ClientTransport.Posix>
    private var watchService: Etcdserverpb_Watch.Client<HTTP2ClientTransport.Posix>
    /// The endpoint new connections try first: a member that stops
    /// answering (frozen, cut off) keeps its TCP connections open, and
    /// pick-first would stay on it; a call that timed out moves on
    /// (`failover`).
    private var preferred = 0
    private var moves = 0
    private let lock = NSLock()
    private var unaryClient: GRPCClient<HTTP2ClientTransport.Posix>
    private var unaryKV: Etcdserverpb_KV.Client<HTTP2ClientTransport.Posix>
    private var callsOnConnection = 0
    private var closed = false
    /// The highest Raft term any answer carried (`saw`): a call in flight
    /// when it grows was caught in an election (EtcdLeaderChange.swift).
    private var term: UInt64 = 0
    /// The calls in flight that a leader's change may end early.
    let overdueCalls = OverdueCalls()
    /// Unary calls made on one connection before the next goes to a new
    /// one (well under the 200 resets in 10 s that end a connection: at 150
    /// a connection still failed now and then, under the test's mix of
    /// reads, writes and start-up calls).
    static let callsPerConnection = 80

    /// How long one unary call may take before its outcome is unknown.
    /// etcd itself answers a write caught in a leader's failure only after
    /// its request timeout (5 s + 2 election timeouts: 7 s by default);
    /// tetherd says "unknown" sooner, so that its clients retry (or read)
    /// while the cluster elects (docs/daemon.md, "Several machines").
    static let callTimeout: Duration = .seconds(3)
    /// The largest answer it reads: a page of states (`pageSize` states
    /// of at most `max_value` each) or a watch response.
    static let maxResponse = 128 << 20

    /// `spec`: `http://HOST:PORT[,http://HOST:PORT…]` (TLS is not
    /// supported yet: run the cluster on a private network or loopback).
    init(spec: String) throws(TetherError) {
        var list: [(String, Int)] = []
        for item in spec.split(separator: ",") {
            var text = String(item)
            if text.hasPrefix("http://") { text.removeFirst("http://".count) }
            else if text.contains("://") {
                throw TetherError(.invalidArgument, "--backend etcd:\(spec): \(item) is not http://HOST:PORT (TLS is not supported yet)")
            }
            if text.hasSuffix("/") { text.removeLast() }
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
                throw TetherError(.invalidArgument, "--backend etcd:\(spec): \(item) has no port (http://HOST:PORT)")
            }
            list.append((String(text[..<colon]), port))
        }
        guard !list.isEmpty else { throw TetherError(.invalidArgument, "--backend etcd: names no endpoint (etcd:http://HOST:PORT[,…])") }
        endpoints = list
        do {
            watchClient = try EtcdClient.connect(list)
            unaryClient = try EtcdClient.connect(list)
        } catch {
            throw TetherError(.invalidArgument, "--backend etcd:\(spec): \(error)")
        }
        watchService = Etcdserverpb_Watch.Client(wrapping: watchClient)
        unaryKV = Etcdserverpb_KV.Client(wrapping: unaryClient)
    }

    /// The endpoints, the preferred one first.
    private var ordered: [(String, Int)] {
        let list = endpoints.map { ($0.host, $0.port) }
        let at = preferred % list.count
        return Array(list[at...] + list[..<at])
    }

    /// The Watch service (on its own connection).
    var watch: Etcdserverpb_Watch.Client<HTTP2ClientTransport.Posix> {
        lock.lock()
        defer { lock.unlock() }
        return watchService
    }

    /// How many times the connections moved to another member: a caller
    /// notes it before a call, and hands it to `failover` if the call fails.
    var generation: Int {
        lock.lock()
        defer { lock.unlock() }
        return moves
    }

    /// A call made at `generation` timed out or its connection broke: new
    /// connections start at the next member, the watch's too (its stream
    /// ends, and the follower resumes it there). Once per generation: the
    /// calls in flight when a member fails all fail, and each moving on
    /// again would skip the live members, back to the dead one (a leader's
    /// death took 6 s to get over instead of 3). Returns the endpoint now
    /// preferred, or nil when the connections had moved already.
    @discardableResult
    func failover(from generation: Int) -> String? {
        lock.lock()
        defer { lock.unlock() }
        guard !closed, generation == moves else { return nil }
        moves += 1
        preferred += 1
        let endpoints = ordered
        if let unary = try? EtcdClient.connect(endpoints), let watch = try? EtcdClient.connect(endpoints) {
            let old = (unaryClient, watchClient)
            unaryClient = unary
            unaryKV = Etcdserverpb_KV.Client(wrapping: unary)
            callsOnConnection = 0
            watchClient = watch
            watchService = Etcdserverpb_Watch.Client(wrapping: watch)
            old.1.beginGracefulShutdown()
            Task {
                try? await Task.sleep(for: EtcdClient.callTimeout + .seconds(1))
                old.0.beginGracefulShutdown()
            }
        }
        return "\(endpoints[0].0):\(endpoints[0].1)"
    }

    /// A client on a connection of its own, running.
    private static func connect(_ endpoints: [(String, Int)]) throws -> GRPCClient<HTTP2ClientTransport.Posix> {
        let transport = try HTTP2ClientTransport.Posix(
            target: .ipv4(pairs: endpoints.map { (host: $0.0, port: $0.1) }),
            transportSecurity: .plaintext,
            config: .defaults { config in
                // A member cut off (not dead: a dead one's socket closes) is
                // noticed within 15 s, not at the OS's TCP timeout. No more
                // often: etcd closes a connection that pings more than once
                // in 5 s (--grpc-keepalive-min-time), failing its calls.
                config.connection.keepalive = .init(time: .seconds(10), timeout: .seconds(5), allowWithoutCalls: false)
                config.backoff = .init(initial: .milliseconds(100), max: .seconds(1), multiplier: 1.6, jitter: 0.2)
            })
        let client = GRPCClient(transport: transport)
        Task { try? await client.runConnections() }
        return client
    }

    /// The KV service for one unary call (see the type's comment).
    var kv: Etcdserverpb_KV.Client<HTTP2ClientTransport.Posix> {
        lock.lock()
        defer { lock.unlock() }
        callsOnConnection += 1
        if callsOnConnection > EtcdClient.callsPerConnection && !closed,
           let next = try? EtcdClient.connect(ordered) {
            // The old connection ends once its calls have: after the longest
            // a call may take (closing it at once failed calls in flight).
            let old = unaryClient
            Task {
                try? await Task.sleep(for: EtcdClient.callTimeout + .seconds(1))
                old.beginGracefulShutdown()
            }
            unaryClient = next
            unaryKV = Etcdserverpb_KV.Client(wrapping: next)
            callsOnConnection = 1
        }
        return unaryKV
    }

    /// The Maintenance service on the unary connection (Status, for the
    /// leader-change check), not counted against the connection's calls:
    /// it is asked only while a call is overdue.
    var maintenance: Etcdserverpb_Maintenance.Client<HTTP2ClientTransport.Posix> {
        lock.lock()
        defer { lock.unlock() }
        return Etcdserverpb_Maintenance.Client(wrapping: unaryClient)
    }

    /// Notes the Raft term of an answer.
    func saw(term answered: UInt64) {
        lock.lock()
        if answered > term { term = answered }
        lock.unlock()
    }

    /// The highest Raft term seen so far (0 before the first answer).
    var knownTerm: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return term
    }

    var summary: String { "etcd " + endpoints.map { "http://\($0.host):\($0.port)" }.joined(separator: ",") }

    func close() {
        lock.lock()
        closed = true
        let unary = unaryClient
        let watch = watchClient
        lock.unlock()
        unary.beginGracefulShutdown()
        watch.beginGracefulShutdown()
    }

    /// Options of a unary call: its timeout and message limits.
    static var unary: CallOptions {
        var options = CallOptions.defaults
        options.timeout = callTimeout
        // grpc-swift-nio-transport 2.9.2 bounds the messages a call
        // *reads* by its request limit (Connection.swift hands
        // maxRequestMessageBytes to the stream's decoder): both are the
        // response bound. What tetherd sends is bounded before it is
        // sent (EtcdLedger.maxCommit), and by etcd's own request limit.
        options.maxRequestMessageBytes = maxResponse
        options.maxResponseMessageBytes = maxResponse
        options.waitForReady = true
        return options
    }

    /// A watch must end when its member loses the cluster's leader (etcd
    /// otherwise keeps it open and silent: etcd #10819).
    static let requireLeader: Metadata = ["hasleader": "true"]

    /// Runs `body` on gRPC's threads and waits for it (start-up only:
    /// the loop is not running yet).
    func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, Error>?
        Task {
            do { result = .success(try await body()) } catch { result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try result!.get()
    }

    // MARK: Requests

    static func compare(_ key: [UInt8], modRevision: Int64) -> Etcdserverpb_Compare {
        var c = Etcdserverpb_Compare()
        c.key = Data(key)
        c.result = .equal
        c.target = .mod
        c.targetUnion = .modRevision(modRevision)
        return c
    }

    static func compareAbsent(_ key: [UInt8]) -> Etcdserverpb_Compare {
        var c = Etcdserverpb_Compare()
        c.key = Data(key)
        c.result = .equal
        c.target = .version
        c.targetUnion = .version(0)
        return c
    }

    static func put(_ key: [UInt8], _ value: [UInt8]) -> Etcdserverpb_RequestOp {
        var put = Etcdserverpb_PutRequest()
        put.key = Data(key)
        put.value = Data(value)
        var op = Etcdserverpb_RequestOp()
        op.request = .requestPut(put)
        return op
    }

    static func delete(_ key: [UInt8]) -> Etcdserverpb_RequestOp {
        var delete = Etcdserverpb_DeleteRangeRequest()
        delete.key = Data(key)
        var op = Etcdserverpb_RequestOp()
        op.request = .requestDeleteRange(delete)
        return op
    }

    static func range(_ key: [UInt8], end: [UInt8]? = nil) -> Etcdserverpb_RequestOp {
        var range = Etcdserverpb_RangeRequest()
        range.key = Data(key)
        if let end { range.rangeEnd = Data(end) }
        var op = Etcdserverpb_RequestOp()
        op.request = .requestRange(range)
        return op
    }
}
