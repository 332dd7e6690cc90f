// tetherd: the Tether state daemon. Options are parsed here; everything
// else is the TetherDaemon library (so tests can run it in process). A
// library of its own, so that a tetherd built with another backend
// (Backends/Etcd) is the same command with one more backend registered.
import ArgumentParser
import Glibc
import TetherCore
import TetherDaemon
import TetherWire

extension GroupCommitter.Mode: ExpressibleByArgument {}

public struct Tetherd: ParsableCommand {
    public init() {}

    /// Backends other than SQLite and --memory, by the scheme `--backend`
    /// names them with (`etcd:`): a build that has one registers it
    /// before `Tetherd.main()`.
    nonisolated(unsafe) public static var backends: [String: any StoreBackend.Type] = [:]

    public static let configuration = CommandConfiguration(
        commandName: "tetherd",
        abstract: "The Tether state daemon: named JSON states shared by every process of the machine, over Varlink.",
        discussion: """
        Runs in the foreground and logs one line per event on stderr. Stops cleanly on SIGTERM or SIGINT. \
        Under systemd it supports Type=notify and socket activation (LISTEN_FDS).

        Default address: $TETHER_ADDRESS, else unix:/run/tether/tetherd.sock for root, else \
        unix:$XDG_RUNTIME_DIR/tether/tetherd.sock (unix:${TMPDIR:-/tmp}/tether-UID/tetherd.sock without XDG_RUNTIME_DIR; that per-user directory is made 0700, and one that is a link or not ours is refused).

        Access: the daemon's own uid and root may do everything; the configuration file (JSON, see \
        docs/daemon.md) grants other uids or groups read or read-write access to name prefixes. Default \
        configuration: /etc/tether/tetherd.json for root, $XDG_CONFIG_HOME/tether/tetherd.json otherwise, \
        when it exists.
        """)

    @Option(help: "Where to listen: unix:/path/to/socket.")
    var address: String?

    @Option(help: "The access configuration file (JSON).")
    var config: String?

    @Option(help: "Where the store lives (default: /var/lib/tether for root, else $XDG_STATE_HOME/tether).")
    var dataDir: String?

    @Option(help: "full: every acknowledged commit survives a power cut (an fsync per loop turn); normal: survives a crash of tetherd, a power cut may lose the last commits.")
    var durability: SQLiteStore.Durability = .full

    // pipelined by default: faster than inline at 16 and 64 clients with
    // the daemon on one CPU, as `make bench` runs it
    // (docs/daemon-performance.md, "The fsync off the loop").
    @Option(help: "Where each group's fsync runs: pipelined (on a sync thread, while the loop applies and commits the next turns) or inline (on the loop thread at the end of each turn, before its replies are written).")
    var groupCommit: GroupCommitter.Mode = .pipelined

    @Flag(help: "Keep nothing on disk (states live as long as the daemon).")
    var memory = false

    /// How reads answer on a host a shared ledger feeds (`--reads`).
    enum Reads: String, ExpressibleByArgument, CaseIterable {
        case linearizable, serializable
    }

    @Option(help: "With --backend etcd: linearizable (the default): a read (Get, List, Describe, Watch, Stats) waits until this host has installed every commit the cluster had when the read came, one etcd round trip for all the reads that came meanwhile; serializable: reads answer from this host's copy at once, which may not yet show a commit another host acknowledged.")
    var reads: Reads = .linearizable

    @Option(help: "Where the states live: sqlite (the default: the data directory), or etcd:URL[,URL…] (a cluster shared by several hosts' tetherds; a build with the etcd backend, `make etcd`: docs/daemon.md, \"Several machines\").")
    var backend: String = "sqlite"

    @Option(help: "Start from a snapshot (io.tether.Snapshot, tetherctl snapshot): the data directory's store is replaced by a copy of it, under a new epoch.")
    var restore: String?

    @Flag(help: "Start from what is readable of a damaged store: the states that can be read are kept, what cannot is listed (salvage-dropped lines), the damaged files are moved aside (tether.db.damaged-EPOCH) and the store starts under a new epoch (every watch resyncs).")
    var salvage = false

    @Option(help: "Seconds between updates of tether.db.marker (the last revision made durable, checked at the next start) while commits are made; it is also written at start and at a clean stop.")
    var markerInterval: Double = 1

    @Option(help: "Milliseconds between progress replies to an idle watch.")
    var progressInterval: UInt64 = 5000

    @Option(help: "Commits kept in memory for watches that resume (older ones resync).")
    var logCapacity: Int = 100_000

    @Option(help: "Bytes of recent commits kept for watches that resume or fall behind (older ones resync), in memory and in the store's log on disk, at run time and when a restart loads them.")
    var logBytes: Int = 64 << 20

    @Option(help: "States the daemon holds at most: a write that would create one more gets LimitExceeded (states). States restored from the store are kept even past it.")
    var maxStates: Int = 1_000_000

    @Option(help: "Unread bytes a watcher may have before it stops being sent changes and catches up from the log when it reads again.")
    var watchBuffer: Int = 4 << 20

    @Option(help: "Connections one uid other than the daemon's and root may have open at once.")
    var maxConnectionsPerUid: Int = AdmissionLimits.defaults.connectionsPerUid

    @Option(help: "Bytes of unfinished calls the connections of one uid other than the daemon's and root may buffer together; past it the connection that grew is closed with LimitExceeded.")
    var maxInputPerUid: Int = AdmissionLimits.defaults.inputBytesPerUid

    @Option(help: "File descriptors kept for the daemon's own uid and root: other uids' connections are refused when only these are left.")
    var reservedDescriptors: Int = AdmissionLimits.defaults.reservedDescriptors

    @Flag(help: "Log every connection and disconnection too.")
    var verbose = false

    @Option(help: "Serve GET /metrics (Prometheus' text format) at this TCP address, e.g. 127.0.0.1:9464 (port 0: any free port; the log says which). Off by default; read-only; anyone who can reach the address can read it, so keep it on loopback unless the counters are not secret.")
    var metrics: String?

    @Flag(help: "With --metrics (and io.tether.Metrics): also count commits per state name prefix (up to the first '.' or '/'), which shows those prefixes to whoever reads the metrics.")
    var metricsNames = false

    public func run() throws {
        let log = EventLog()
        let uid = getuid()
        // Every file the daemon makes (the store, its WAL and SHM, the
        // lock, snapshots, the socket before its chmod) is its own alone.
        umask(0o077)
        var environment: [String: String] = [:]
        for key in ["TETHER_ADDRESS", "XDG_RUNTIME_DIR", "TMPDIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "HOME"] {
            if let v = getenv(key) { environment[key] = String(cString: v) }
        }
        do {
            let addr = try address.map { text throws(VarlinkError) in try DaemonAddress(parsing: text) }
                ?? DaemonAddress.standard(uid: uid, environment: environment)
            let policy = try loadPolicy(uid: uid, environment: environment, log: log)
            let (store, sqlite) = try openBackend(uid: uid, environment: environment, log: log)
            guard maxConnectionsPerUid >= 1, maxInputPerUid >= 1, reservedDescriptors >= 0 else {
                throw TetherError(.invalidArgument, "--max-connections-per-uid and --max-input-per-uid must be at least 1, --reserved-descriptors at least 0")
            }
            let admission = AdmissionLimits(connectionsPerUid: maxConnectionsPerUid, inputBytesPerUid: maxInputPerUid,
                                            reservedDescriptors: reservedDescriptors)
            let service = Service(store: store, policy: policy, log: log, admission: admission, watchBuffer: watchBuffer)
            service.metrics.namesByPrefix = metricsNames
            if let sqlite { service.metrics.storeFiles = [sqlite.path, sqlite.path + "-wal"] }
            let listenFD = Systemd.listenFD()
            let daemon = try Daemon(service: service,
                                    options: .init(address: addr, listenFD: listenFD,
                                                   progressInterval: progressInterval, verbose: verbose,
                                                   metrics: metrics))
            let shown = listenFD == nil ? addr.description : "the socket systemd passed (fd 3)"
            log.say("tetherd \(Service.version) listening on \(shown): revision \(store.revision), epoch \(store.epoch), pid \(getpid())")
            if listenFD == nil {
                let ctl = Tetherd.tetherctlPath()
                log.say("talk to it:  \(ctl) --address \(addr) set settings /theme '\"dark\"'   (or: export TETHER_ADDRESS=\(addr))")
                log.say("             \(ctl) --address \(addr) watch settings")
                log.say("from C:      tether_remote_connect(rt, \"\(addr)\", &remote)   any Varlink client: interface io.tether")
                log.say("Python:      python3 -m varlink.cli call \(addr)/io.tether.Stats {}   (pip install varlink)")
            }
            if uid == 0 && address == nil && dataDir == nil && !memory {
                // make run as root lands here: the installed service's
                // places, whose states persist between runs.
                log.say("as root, this is the system daemon's address and store (\(addr), /var/lib/tether), as the installed service's: for a throwaway daemon pass --memory, or --address and --data-dir")
            }
            if let served = daemon.metricsAddress {
                log.say("metrics:     http://\(served)/metrics   (Prometheus text format; also: tetherctl metrics)")
            }
            log.say("stop: Ctrl-C or SIGTERM")
            daemon.run()
            // Every group is durable (the committer closed): the marker
            // says the last revision.
            do { try sqlite?.updateMarker() } catch { log.event("marker-unwritten", "reason" => error.message) }
            log.event("stopped", "revision" => "\(store.revision)")
        } catch let error as VarlinkError {
            log.event("error", "message" => error.detail)
            throw ExitCode(1)
        } catch let error as TetherError {
            log.event("error", "message" => error.message)
            throw ExitCode(1)
        }
    }

    /// The store `--backend` names: SQLite (`openStore`), or a registered
    /// backend's.
    func openBackend(uid: UInt32, environment: [String: String], log: EventLog) throws(TetherError) -> (Store, SQLiteStore?) {
        if backend == "sqlite" { return try openStore(uid: uid, environment: environment, log: log) }
        let scheme = String(backend.prefix(while: { $0 != ":" }))
        guard let kind = Tetherd.backends[scheme] else {
            if scheme == "etcd" {
                // The build with the etcd backend is a program of its own
                // (Backends/Etcd): the same command, run in this one's place.
                Tetherd.handOver(to: "tetherd-etcd")
                throw TetherError(.invalidArgument, "this tetherd was built without the etcd backend, and no tetherd-etcd is beside it or on PATH: build it with `make etcd` (Backends/Etcd/.build/release/tetherd-etcd)")
            }
            throw TetherError(.invalidArgument, "--backend \(backend): unknown backend (sqlite, or etcd:URL[,URL…] in a build with the etcd backend)")
        }
        if memory || salvage { throw TetherError(.invalidArgument, "--memory and --salvage are for the SQLite backend, not --backend \(scheme)") }
        let spec = String(backend.dropFirst(scheme.count + 1))
        let store = try kind.open(spec: spec, options: StoreBackendOptions(logCapacity: logCapacity, logBytes: logBytes, maxStates: maxStates, restore: restore, newEpoch: Tetherd.newEpoch()), log: log)
        store.report = { log.event("store-error", "message" => $0) }
        store.readsAfterBarrier = reads == .linearizable
        return (store, nil)
    }

    /// The store: SQLite in the data directory (restored, the revision and
    /// epoch continuing), or nothing on disk with --memory.
    func openStore(uid: UInt32, environment: [String: String], log: EventLog) throws(TetherError) -> (Store, SQLiteStore?) {
        if memory {
            if restore != nil { throw TetherError(.invalidArgument, "--restore needs a store: it cannot be used with --memory") }
            if salvage { throw TetherError(.invalidArgument, "--salvage needs a store: it cannot be used with --memory") }
            log.event("store", "kind" => "memory")
            let store = try Store(logCapacity: logCapacity, logBytes: logBytes, epoch: Tetherd.newEpoch(), maxStates: maxStates)
            store.report = { log.event("store-error", "message" => $0) }
            return (store, nil)
        }
        let directory = dataDir ?? (uid == 0 ? "/var/lib/tether"
            : (environment["XDG_STATE_HOME"] ?? ((environment["HOME"] ?? "/") + "/.local/state")) + "/tether")
        try DataDirectory.prepare(directory)
        if let restore {
            try SQLiteStore.restore(from: restore, into: directory, epoch: Tetherd.newEpoch())
            log.event("restored", "from" => restore, "into" => directory)
        }
        // A store was here when the marker says so (docs/daemon.md, "The store").
        let marked = StoreMarker.read(in: directory)
        if let problem = marked?.problem { log.event("marker-unreadable", "reason" => problem) }
        if salvage {
            let epoch = Tetherd.newEpoch()
            let report = try SQLiteStore.salvage(directory: directory, epoch: epoch, atLeast: marked?.marker?.revision ?? 0)
            for what in report.dropped { log.event("salvage-dropped", "what" => what) }
            log.event("salvaged", "states" => "\(report.states)", "dropped" => "\(report.dropped.count)",
                      "revision" => "\(report.revision)", "epoch" => epoch, "damaged-files" => report.movedTo ?? "none")
        }
        // Pipelined, the group commit's sync thread fsyncs the WAL while
        // the loop commits the next group into it.
        let sqlite = try SQLiteStore(directory: directory, durability: durability, logCapacity: logCapacity, logBytes: logBytes,
                                     walSync: groupCommit == .pipelined ? .separate : .inCommit)
        let contents = try sqlite.load()
        var epoch: String
        if let known = contents.epoch {
            epoch = known
            if let marker = marked?.marker, marker.epoch == known, contents.revision < marker.revision {
                // Commits made durable are gone (a deleted or damaged WAL, a
                // dropped table): the next revisions would reuse numbers
                // clients saw with other values. A new epoch: they resync.
                epoch = Tetherd.newEpoch()
                try sqlite.start(epoch: epoch)
                log.event("new-epoch", "epoch" => epoch, "previous" => known,
                          "reason" => "the store holds revision \(contents.revision), lower than revision \(marker.revision), which \(StoreMarker.path(in: directory)) says was made durable: commits were lost (a damaged, truncated or replaced store); every watch resyncs")
            }
        } else {
            if let marked {
                // Never an empty store in place of one that was there.
                let was = marked.marker.map { "a store of epoch \($0.epoch) at revision \($0.revision)" } ?? "a store"
                throw TetherError(.invalidArgument, "\(sqlite.path) holds no store (it is empty or missing: no epoch in its meta table), but \(StoreMarker.path(in: directory)) says \(was) was there: refusing to start an empty store in its place. Restore a snapshot (--restore FILE), keep what is readable (--salvage), or remove the marker to start empty")
            }
            epoch = Tetherd.newEpoch()
            try sqlite.start(epoch: epoch)
        }
        if let error = sqlite.keepMarker(in: directory, epoch: epoch, revision: contents.revision, interval: markerInterval) {
            log.event("marker-unwritten", "reason" => error.message)
        }
        // The SQLite work runs on the committer's sync thread from here on.
        let store = try Store(logCapacity: logCapacity, logBytes: logBytes, epoch: epoch,
                              sink: GroupCommitter(inner: sqlite, mode: groupCommit), maxStates: maxStates)
        store.report = { log.event("store-error", "message" => $0) }
        let quarantined = try store.restore(states: contents.states, log: contents.log, revision: contents.revision,
                                            quarantined: contents.quarantined)
        // One bad row never keeps the daemon from starting: it says which.
        for (name, reason) in quarantined {
            log.event("quarantined", "name" => name, "reason" => reason)
        }
        for (revision, reason) in contents.unreadableLogRows {
            log.event("log-row-unreadable", "revision" => "\(revision)", "reason" => reason)
        }
        log.event("store", "path" => sqlite.path, "durability" => durability.rawValue, "states" => "\(store.count)",
                  "revision" => "\(store.revision)", "resumable-from" => "\(store.oldestRevision)")
        return (store, sqlite)
    }

    func loadPolicy(uid: UInt32, environment: [String: String], log: EventLog) throws -> AccessPolicy {
        var path = config
        if path == nil {
            let candidate = uid == 0 ? "/etc/tether/tetherd.json"
                : (environment["XDG_CONFIG_HOME"] ?? ((environment["HOME"] ?? "/") + "/.config")) + "/tether/tetherd.json"
            if access(candidate, R_OK) == 0 { path = candidate }
        }
        guard let path else { return AccessPolicy(owner: uid) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0, let file = fdopen(fd, "r") else {
            throw TetherError(.notFound, "cannot read the access configuration \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        try AccessPolicy.checkStrictModes(path, descriptor: fd, daemonUID: uid)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n == 0 { break }
            bytes += chunk[..<n]
        }
        do {
            let policy = try AccessPolicy(owner: uid, json: String(decoding: bytes, as: UTF8.self))
            log.event("config", "path" => path, "grants" => "\(policy.entries.count)")
            return policy
        } catch {
            throw TetherError(error.code, "\(path): \(error.message)")
        }
    }

    /// Runs `program` with this process's arguments in its place, when it
    /// is beside this binary or on PATH (returns only when it is not).
    static func handOver(to program: String) {
        var candidates: [String] = []
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 {
            let exe = String(cString: buffer)
            if !exe.hasSuffix("/" + program) {
                candidates.append(String(exe[..<(exe.lastIndex(of: "/") ?? exe.startIndex)]) + "/" + program)
            }
        }
        for dir in (getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin").split(separator: ":") {
            candidates.append(dir + "/" + program)
        }
        for path in candidates where access(path, X_OK) == 0 {
            var argv: [UnsafeMutablePointer<CChar>?] = [strdup(path)]
            for arg in CommandLine.arguments.dropFirst() { argv.append(strdup(arg)) }
            argv.append(nil)
            execv(path, argv)
        }
    }

    /// tetherctl beside this binary when it is there (a build tree), else
    /// by name (installed on PATH).
    static func tetherctlPath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "tetherctl" }
        let exe = String(cString: buffer)
        let candidate = String(exe[..<(exe.lastIndex(of: "/") ?? exe.startIndex)]) + "/tetherctl"
        if access(candidate, X_OK) == 0 && !candidate.hasPrefix("/usr/") { return candidate }
        return "tetherctl"
    }

    /// A new epoch: 64 random bits in hex. Revisions of another epoch (an
    /// earlier daemon without a store) are not comparable with ours.
    public static func newEpoch() -> String {
        let bits = UInt64.random(in: 1...UInt64.max)  // the system's generator (getrandom)
        let hex = String(bits, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

extension SQLiteStore.Durability: ExpressibleByArgument {}

