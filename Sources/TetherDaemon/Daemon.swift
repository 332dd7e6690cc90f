import CLibUV
import Glibc
import TetherCore
import TetherWire

/// tetherd's event loop: the listening socket, every connection, the
/// signals and the idle-progress timer, all on one libuv loop on the
/// thread that calls `run()`. At the end of each loop turn (a uv_check)
/// the turn's commits go to the store's sync thread (GroupCommitter), and
/// its replies and watch events are written once that group is durable
/// (a uv_async from the sync thread), while the loop goes on with the
/// next turn.
public final class Daemon {
    public struct Options {
        /// Where to listen (ignored with `listenFD`).
        public var address: DaemonAddress
        /// A listening socket handed over by systemd (`LISTEN_FDS`).
        public var listenFD: Int32?
        /// How often an idle watch is sent a progress reply, in ms.
        public var progressInterval: UInt64
        /// Log every connection and disconnection, not only problems.
        public var verbose: Bool
        /// Serve GET /metrics at this TCP address ("127.0.0.1:9464"); nil:
        /// no metrics server (MetricsServer.swift).
        public var metrics: String?

        public init(address: DaemonAddress, listenFD: Int32? = nil, progressInterval: UInt64 = 5000, verbose: Bool = false,
                    metrics: String? = nil) {
            self.address = address
            self.listenFD = listenFD
            self.progressInterval = progressInterval
            self.verbose = verbose
            self.metrics = metrics
        }
    }

    public let service: Service
    public let options: Options
    var log: EventLog { service.log }
    let loop: UnsafeMutablePointer<uv_loop_t>
    private let listener = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
    private let turnEnd = UnsafeMutablePointer<uv_check_t>.allocate(capacity: 1)
    private let idleTimer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    /// Sent by the store's sync thread when a group commit is durable.
    private let synced = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
    private let sigterm = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
    private let sigint = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
    private var connections: [ObjectIdentifier: Connection] = [:]
    /// Connections whose slice of calls ended with calls still waiting:
    /// the next loop turn (an idle handle, so the poll does not block)
    /// handles their next slices.
    private var resumable: [Connection] = []
    private let resumeIdle = UnsafeMutablePointer<uv_idle_t>.allocate(capacity: 1)
    /// The socket file this daemon made (and removes when it stops, if
    /// its path still names the inode bound: SocketFile).
    private var ownedSocket: SocketFile?
    private var stopping = false
    /// `--metrics`: the HTTP endpoint Prometheus scrapes.
    private var metricsServer: MetricsServer?
    /// Where the metrics server listens ("127.0.0.1:PORT"), nil without one.
    public var metricsAddress: String? { metricsServer?.boundAddress }
    /// Whether `run` ended and closed the loop: only then do the handles
    /// belong to nobody and can be freed (deinit).
    public private(set) var loopClosed = false

    /// The buffer every read goes into (one loop thread).
    static let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)

    public init(service: Service, options: Options) throws(TetherError) {
        self.service = service
        self.options = options
        loop = .allocate(capacity: 1)
        var rc = uv_loop_init(loop)
        guard rc == 0 else { throw Daemon.uvError("uv_loop_init", rc) }
        signal(SIGPIPE, SIG_IGN)  // a peer that went away is an EPIPE, not a death

        rc = uv_pipe_init(loop, listener, 0)
        guard rc == 0 else { throw Daemon.uvError("uv_pipe_init", rc) }
        listener.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        if let fd = options.listenFD {
            rc = uv_pipe_open(listener, fd)
            guard rc == 0 else { throw Daemon.uvError("uv_pipe_open (the socket systemd passed)", rc) }
        } else {
            try bind(options.address)
        }
        rc = uv_listen(UnsafeMutableRawPointer(listener).assumingMemoryBound(to: uv_stream_t.self), 511) { server, status in
            let daemon = Unmanaged<Daemon>.fromOpaque(server!.pointee.data).takeUnretainedValue()
            daemon.accept(status)
        }
        guard rc == 0 else {
            throw Daemon.uvError(options.listenFD == nil ? "uv_listen" : "uv_listen on fd \(options.listenFD!) (LISTEN_FDS: the socket systemd passed)", rc)
        }
        // Every connection is a descriptor: the soft limit goes up to the
        // hard one, and what the daemon holds before its first connection
        // is counted, so that the reserve for its uid and root is real.
        service.admission.descriptorLimit = Admission.raiseDescriptorLimit()
        service.admission.descriptorBase = Admission.openDescriptors()

        uv_check_init(loop, turnEnd)
        turnEnd.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_check_start(turnEnd) { handle in
            Unmanaged<Daemon>.fromOpaque(handle!.pointee.data).takeUnretainedValue().endOfTurn()
        }
        uv_async_init(loop, synced) { handle in
            Unmanaged<Daemon>.fromOpaque(handle!.pointee.data).takeUnretainedValue().groupsDurable()
        }
        synced.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let wake = synced
        service.committer?.setNotify { uv_async_send(wake) }
        uv_idle_init(loop, resumeIdle)
        resumeIdle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_timer_init(loop, idleTimer)
        idleTimer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let interval = max(options.progressInterval, 1)
        uv_timer_start(idleTimer, { handle in
            Unmanaged<Daemon>.fromOpaque(handle!.pointee.data).takeUnretainedValue().service.idleTick()
        }, interval, interval)
        if let address = options.metrics {
            metricsServer = try MetricsServer(loop: loop, address: address, log: service.log) { [unowned self] in
                self.service.metrics.text(self.service)
            }
        }
        // A shared ledger follows its commits on this loop from now on.
        try service.store.ledger?.attach(loop: loop, store: service.store, log: service.log)
        for (handle, number) in [(sigterm, SIGTERM), (sigint, SIGINT)] {
            uv_signal_init(loop, handle)
            handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            uv_signal_start(handle, { handle, signum in
                let daemon = Unmanaged<Daemon>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
                daemon.log.event("signal", "signal" => signum == SIGTERM ? "SIGTERM" : "SIGINT")
                daemon.stop()
            }, number)
        }
    }

    /// Runs until `stop()` (or SIGTERM/SIGINT); tells systemd it is ready.
    public func run() {
        Systemd.notify("READY=1\nSTATUS=serving \(options.listenFD == nil ? options.address.description : "the socket systemd passed")\nMAINPID=\(getpid())")
        uv_run(loop, UV_RUN_DEFAULT)
        loopClosed = uv_loop_close(loop) == 0
        service.committer?.close()
    }

    /// Frees the loop and its handles (found leaking by LeakSanitizer,
    /// `make asan-daemon`: nothing freed them once the daemon stopped).
    /// A daemon whose loop is not closed (init failed half-way, or run
    /// never returned) keeps them: libuv may still point at them.
    deinit {
        guard loopClosed else { return }
        listener.deallocate()
        turnEnd.deallocate()
        resumeIdle.deallocate()
        idleTimer.deallocate()
        synced.deallocate()
        sigterm.deallocate()
        sigint.deallocate()
        loop.deallocate()
    }

    /// Stops accepting, closes every connection and handle; `run` returns.
    public func stop() {
        guard !stopping else { return }
        stopping = true
        Systemd.notify("STOPPING=1")
        // What was answered goes out first, once durable.
        for session in service.drain() { session.connection?.flush() }
        service.committer?.setNotify(nil)  // its uv_async closes now
        service.store.ledger?.detach()
        resumable.removeAll()
        for handle in [UnsafeMutableRawPointer(listener), UnsafeMutableRawPointer(turnEnd), UnsafeMutableRawPointer(idleTimer),
                       UnsafeMutableRawPointer(resumeIdle),
                       UnsafeMutableRawPointer(synced),
                       UnsafeMutableRawPointer(sigterm), UnsafeMutableRawPointer(sigint)] {
            uv_close(handle.assumingMemoryBound(to: uv_handle_t.self), nil)
        }
        for connection in connections.values { connection.close() }
        metricsServer?.close()
        ownedSocket?.remove()
    }

    // MARK: Connections

    private func accept(_ status: Int32) {
        guard status == 0, !stopping else { return }
        let pipe = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
        uv_pipe_init(loop, pipe, 0)
        let stream = UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_stream_t.self)
        let connection = Connection(daemon: self, pipe: pipe)
        pipe.pointee.data = Unmanaged.passRetained(connection).toOpaque()  // released by the close callback
        guard uv_accept(UnsafeMutableRawPointer(listener).assumingMemoryBound(to: uv_stream_t.self), stream) == 0 else {
            connection.session = service.open(peer: Peer(pid: 0, uid: UInt32.max, gid: UInt32.max))
            connection.close()
            return
        }
        var fd: uv_os_fd_t = -1
        uv_fileno(UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_handle_t.self), &fd)
        let peer = Peer.of(socket: fd) ?? Peer(pid: 0, uid: UInt32.max, gid: UInt32.max)
        let session = service.open(peer: peer)
        session.connection = connection
        connection.session = session
        connections[ObjectIdentifier(connection)] = connection
        // A refused peer is never read: its error reply goes out now and
        // the descriptor is closed behind it.
        if session.isRefused {
            connection.refuseNow()
            return
        }
        if options.verbose { log.event("connect", "peer" => peer.description) }
        let rc = connection.startReading()
        if rc != 0 { connection.close() }
    }

    /// `connection` has calls waiting for the next turn.
    func resumeLater(_ connection: Connection) {
        guard !stopping else { return }
        if resumable.isEmpty {
            uv_idle_start(resumeIdle) { handle in
                Unmanaged<Daemon>.fromOpaque(handle!.pointee.data).takeUnretainedValue().resumeWaiting()
            }
        }
        if !connection.awaitingResume {
            connection.awaitingResume = true
            resumable.append(connection)
        }
    }

    private func resumeWaiting() {
        var batch: [Connection] = []
        swap(&batch, &resumable)
        for connection in batch {
            connection.awaitingResume = false
            connection.resume()  // may add itself again
        }
        if resumable.isEmpty { uv_idle_stop(resumeIdle) }
    }

    func connectionClosed(_ connection: Connection) {
        connections.removeValue(forKey: ObjectIdentifier(connection))
        service.closed(connection.session)
        if options.verbose { log.event("disconnect", "peer" => connection.session.peer.description) }
    }

    /// The end of a loop turn: the turn's commits go to the sync thread
    /// (group commit), and whatever output is already durable is written;
    /// the rest is written by `groupsDurable` when its group is synced.
    private func endOfTurn() {
        var wrote = true
        while wrote {
            wrote = false
            service.endOfTurn { session in
                wrote = true
                session.connection?.flush()
            }
            // A watch that caught up while being written has output of its
            // own now: this turn's end writes it too (no later event may come).
            guard service.hasPending else { break }
        }
    }

    /// The sync thread finished a group (its uv_async): write what waited
    /// for it; the next group was handed over already.
    private func groupsDurable() {
        for session in service.groupsDurable() { session.connection?.flush() }
    }

    // MARK: The socket file

    private func bind(_ address: DaemonAddress) throws(TetherError) {
        let grantsOthers = service.policy.grantsOthers
        let system = address.path.hasPrefix("/run/")
        // A per-user private directory ($XDG_RUNTIME_DIR/tether, the
        // /tmp/tether-UID fallback) is always 0700 and ours: clients refuse
        // it otherwise (SocketTrust). Grants reach a daemon elsewhere.
        let privateDirectory = SocketFile.isPrivateDirectory(address.directory)
        if privateDirectory {
            try SocketFile.makePrivateDirectory(address.directory)
        } else {
            try Daemon.makeDirectory(address.directory, mode: system || grantsOthers ? 0o755 : 0o700)
        }
        try SocketFile.clearStale(address.path, address: address)
        // Bound here, not by uv_pipe_bind: libuv unlinks the path of a pipe
        // it bound when the handle closes, whoever's socket it names by then.
        let fd = try SocketFile.bind(address.path)
        let rc = uv_pipe_open(listener, fd)
        guard rc == 0 else {
            close(fd)
            throw Daemon.uvError("uv_pipe_open \(address.path)", rc)
        }
        ownedSocket = SocketFile(boundAt: address.path)
        // Peer credentials decide who may do what; the mode only has to
        // let the granted uids reach the socket.
        chmod(address.path, (system || grantsOthers) && !privateDirectory ? 0o666 : 0o600)
    }

    /// mkdir -p; a directory made here gets `mode`. An existing private
    /// directory must be ours (never follow another user's directory).
    static func makeDirectory(_ path: String, mode: mode_t) throws(TetherError) {
        var st = stat()
        if stat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else {
                throw TetherError(.invalidArgument, "\(path) exists and is not a directory")
            }
            if mode == 0o700 && st.st_uid != getuid() {
                throw TetherError(.invalidArgument, "\(path) belongs to \(SocketTrust.describe(uid: st.st_uid)), not to this user (\(getuid())): refusing it")
            }
            return
        }
        let parent = DaemonAddress(path: path).directory
        if parent != path && parent != "/" { try makeDirectory(parent, mode: 0o755) }
        if mkdir(path, mode) != 0 && errno != EEXIST {
            throw TetherError(.invalidArgument, "cannot make \(path): \(String(cString: strerror(errno)))")
        }
        chmod(path, mode)
    }

    static func someoneListens(at path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = Systemd.unixAddress(path)
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    static func uvError(_ call: String, _ rc: Int32) -> TetherError {
        TetherError(.loopFailure, "\(call): \(String(cString: uv_strerror(rc)))")
    }
}
