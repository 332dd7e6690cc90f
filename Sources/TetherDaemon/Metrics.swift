import Glibc
import Synchronization
import TetherCore
import TetherWire

/// tetherd's counters, for `tetherd --metrics` (MetricsServer.swift) and
/// io.tether.Metrics (`tetherctl metrics`): the same text, Prometheus' text
/// exposition format (docs/daemon.md, "Metrics").
///
/// Counted on the loop thread, except the fsync latency, which the group
/// commit's sync thread measures (behind a mutex). Every label set is
/// bounded: methods and errors come from fixed lists (a peer's unknown
/// method counts as "other"), and per-prefix series (`--metrics-names`
/// only) stop at `maxPrefixes`, the rest counted under prefix="(other)".
public final class Metrics {
    /// Per-prefix commit counters (`--metrics-names`); off: no state name
    /// or part of one ever reaches the metrics.
    public var namesByPrefix = false
    /// Files whose sizes make `tetherd_store_bytes` (the store and its WAL).
    public var storeFiles: [String] = []

    var commits: UInt64 = 0
    var connectionsTotal: UInt64 = 0
    var refusedPeers: UInt64 = 0
    var cutOffPeers: UInt64 = 0
    var watchersTotal: UInt64 = 0
    var resyncs: UInt64 = 0
    /// Calls by method: io.tether's (TetherMethod order), then the
    /// org.varlink.service ones, then "other" (unknown or unparsable).
    private var calls: [UInt64]
    private static let serviceMethods = ["org.varlink.service.GetInfo", "org.varlink.service.GetInterfaceDescription"]
    private var errors: [String: UInt64] = [:]
    static let maxErrorNames = 64
    private var prefixCommits: [String: UInt64] = [:]
    static let maxPrefixes = 100
    var groupSize = Histogram(bounds: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    let fsyncSeconds = Mutex(Histogram(bounds: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                0.1, 0.25, 0.5, 1, 2.5]))

    public init() {
        calls = Array(repeating: 0, count: TetherMethod.allCases.count + Metrics.serviceMethods.count + 1)
    }

    // MARK: Counting (loop thread)

    func called(_ method: TetherMethod) {
        // A stored list: `allCases` builds an array each time it is read.
        calls[Metrics.methods.firstIndex(of: method)!] &+= 1
    }
    private static let methods = TetherMethod.allCases

    /// A call that is not io.tether's (or not a call at all).
    func called(other name: String?) {
        let base = TetherMethod.allCases.count
        if let name, let i = Metrics.serviceMethods.firstIndex(of: name) {
            calls[base + i] &+= 1
        } else {
            calls[calls.count - 1] &+= 1
        }
    }

    /// An error reply. Its name is the daemon's own (VarlinkError's fixed
    /// list), still bounded in case a new one appears.
    func failed(_ error: String) {
        // One lookup of the name (each refused call comes here).
        if let i = errors.index(forKey: error) {
            errors.values[i] &+= 1
        } else if errors.count >= Metrics.maxErrorNames {
            errors["other", default: 0] &+= 1
        } else {
            errors[error] = 1
        }
    }

    func committed(_ commit: Commit) {
        commits &+= 1
        guard namesByPrefix else { return }
        var seen: Set<String> = []
        for change in commit.changes {
            let name = change.name
            let prefix = Metrics.prefix(of: name)
            guard seen.insert(prefix).inserted else { continue }
            if prefixCommits[prefix] == nil && prefixCommits.count >= Metrics.maxPrefixes {
                prefixCommits["(other)", default: 0] &+= 1
            } else {
                prefixCommits[prefix, default: 0] &+= 1
            }
        }
    }

    /// A name's prefix for per-prefix series: up to its first '.' or '/'
    /// (the whole name when it has neither).
    static func prefix(of name: String) -> String {
        if let i = name.firstIndex(where: { $0 == "." || $0 == "/" }) { return String(name[..<i]) }
        return name
    }

    /// A group commit of `commits` commits (loop thread).
    func grouped(_ commits: Int) {
        groupSize.observe(Double(commits))
    }

    /// An fsync that took `seconds` (any thread).
    func synced(seconds: Double) {
        fsyncSeconds.withLock { $0.observe(seconds) }
    }

    // MARK: The exposition

    /// What the daemon reports now, in Prometheus' text format (version
    /// 0.0.4). Loop thread.
    func text(_ service: Service) -> String {
        var out = MetricsText()
        let store = service.store
        out.counter("tetherd_commits_total", "Commits applied (each advances the revision by one).", commits)
        out.header("tetherd_calls_total", "counter", "Calls handled, by method (other: unknown methods and messages that are not calls).")
        for (i, method) in TetherMethod.allCases.enumerated() {
            out.sample("tetherd_calls_total", [("method", method.qualifiedName)], Double(calls[i]))
        }
        for (i, name) in Metrics.serviceMethods.enumerated() {
            out.sample("tetherd_calls_total", [("method", name)], Double(calls[TetherMethod.allCases.count + i]))
        }
        out.sample("tetherd_calls_total", [("method", "other")], Double(calls[calls.count - 1]))
        out.header("tetherd_call_errors_total", "counter", "Error replies, by Varlink error name.")
        for (name, count) in errors.sorted(by: { $0.key < $1.key }) {
            out.sample("tetherd_call_errors_total", [("error", name)], Double(count))
        }
        out.gauge("tetherd_connections_open", "Connections open now.", Double(service.connectionCount))
        out.counter("tetherd_connections_total", "Connections accepted since the daemon started (refused ones too).", connectionsTotal)
        out.counter("tetherd_refused_peers_total", "Connections refused at accept (no grant, or over their uid's caps).", refusedPeers)
        out.counter("tetherd_cut_off_peers_total", "Connections the daemon closed: over a limit, too slow to read, or a call after Watch.", cutOffPeers)
        out.gauge("tetherd_watchers_open", "Watches open now.", Double(service.watchCount))
        out.counter("tetherd_watchers_total", "Watches started since the daemon started.", watchersTotal)
        out.counter("tetherd_watch_resyncs_total", "Watches that could not resume from their revision and got a snapshot instead.", resyncs)
        out.histogram("tetherd_group_commit_size", "Commits per group made durable together (one fsync).", groupSize)
        out.histogram("tetherd_fsync_seconds", "Time one group's fsync took.", fsyncSeconds.withLock { $0 })
        out.gauge("tetherd_store_bytes", "Bytes of the store's files on disk (database and WAL; 0 with --memory).", Double(storeBytes()))
        out.gauge("tetherd_log_bytes", "Bytes of recent commits retained for watches that resume.", Double(store.log.bytes))
        out.gauge("tetherd_log_commits", "Commits retained for watches that resume.", Double(store.log.count))
        out.gauge("tetherd_log_oldest_revision", "The oldest revision a watch can resume from.", Double(store.oldestRevision))
        out.gauge("tetherd_revision", "The daemon's revision.", Double(store.revision))
        out.gauge("tetherd_states", "States held.", Double(store.count))
        if namesByPrefix {
            out.header("tetherd_prefix_commits_total", "counter", "Commits that changed a state, by name prefix (up to the first '.' or '/'; --metrics-names).")
            for (prefix, count) in prefixCommits.sorted(by: { $0.key < $1.key }) {
                out.sample("tetherd_prefix_commits_total", [("prefix", prefix)], Double(count))
            }
        }
        return out.text
    }

    private func storeBytes() -> Int64 {
        var total: Int64 = 0
        for path in storeFiles {
            var st = stat()
            if stat(path, &st) == 0 { total += Int64(st.st_size) }
        }
        return total
    }
}

/// A Prometheus histogram: cumulative buckets, sum and count.
struct Histogram {
    let bounds: [Double]
    private(set) var counts: [UInt64]
    private(set) var sum = 0.0
    private(set) var count: UInt64 = 0

    init(bounds: [Double]) {
        self.bounds = bounds
        counts = Array(repeating: 0, count: bounds.count)
    }

    mutating func observe(_ value: Double) {
        if let i = bounds.firstIndex(where: { value <= $0 }) { counts[i] &+= 1 }
        sum += value
        count &+= 1
    }

    /// Cumulative counts per bound (le="bound").
    var cumulative: [UInt64] {
        var running: UInt64 = 0
        return counts.map { running &+= $0; return running }
    }
}
