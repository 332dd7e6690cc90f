import CTether
import Glibc
import TetherCore
import TetherWire

/// The live remotes by id (tether_remote_t). Ids are never reused, so a
/// freed or forged one is simply absent: ESTALE, never a crash.
enum RemoteTable {
    private static let lock = Lock()
    private static var links: [UInt64: RemoteLink] = [:]
    private static var next: UInt64 = 1

    static func add(_ make: (UInt64) -> RemoteLink) -> RemoteLink {
        lock.lock()
        defer { lock.unlock() }
        let link = make(next)
        links[next] = link
        next += 1
        return link
    }

    static func find(_ id: UInt64) throws(TetherError) -> RemoteLink {
        lock.lock()
        let link = links[id]
        lock.unlock()
        guard let link else { throw TetherError(.stale, "remote handle \(hexHandle(id)) is stale (freed, or never made)") }
        return link
    }

    static func remove(_ id: UInt64) -> RemoteLink? {
        lock.lock()
        defer { lock.unlock() }
        return links.removeValue(forKey: id)
    }
}

extension Runtimes {
    /// Connects runtime `rt` to tetherd at `address` (nil: the default,
    /// DaemonAddress.standard) and waits for the connection and one round
    /// trip (GetInfo), at most `timeoutMilliseconds` (0: without limit),
    /// which becomes the remote's timeout.
    package static func connectRemote(_ rt: UInt64, address: String?,
                                      timeoutMilliseconds: UInt32 = RemoteLink.defaultTimeout) throws(TetherError) -> UInt64 {
        var environment: [String: String] = [:]
        for key in ["TETHER_ADDRESS", "XDG_RUNTIME_DIR", "TMPDIR", "TETHER_DAEMON_UID"] {
            if let v = getenv(key) { environment[key] = String(cString: v) }
        }
        let parsed: DaemonAddress
        do throws(VarlinkError) {
            if let address {
                parsed = try DaemonAddress(parsing: address)
            } else {
                parsed = try DaemonAddress.standard(uid: getuid(), environment: environment)
            }
        } catch {
            throw TetherError(.invalidArgument, error.detail)
        }
        let trust: SocketTrust
        do throws(UntrustedSocket) {
            trust = try SocketTrust.current(environment: environment)
        } catch {
            throw TetherError(.untrusted, "refusing to connect to tetherd at \(parsed): \(error.message)")
        }
        let engine = try acquire(rt, .runtime)
        guard engine.mode == .thread else {
            engine.lock.unlock()
            throw TetherError(.invalidArgument, "remote states need a runtime with its own loop thread (TETHER_LOOP_THREAD): their writes wait for the daemon while the loop applies its answers")
        }
        if engine.onLoopThread || DeliveryContext.isDelivering(engine.id) {
            engine.lock.unlock()
            throw TetherError(.busy, "connecting waits for the runtime's loop: call it outside the runtime's callbacks")
        }
        let link = RemoteTable.add { RemoteLink(engine: engine, address: parsed, trust: trust, id: $0) }
        engine.remoteLinks.append(link)
        engine.lock.unlock()
        link.lock.lock()
        link.timeoutMilliseconds = timeoutMilliseconds
        let deadline = link.callDeadline()
        link.lock.unlock()
        link.post(.connect)
        link.lock.lock()
        let inTime = link.wait(until: { link.firstAttemptDone }, deadline: deadline)
        let up = link.connected
        let why = link.lastError
        let untrusted = link.lastErrorUntrusted
        link.lock.unlock()
        if !inTime {
            throw connectFailure(link, parsed, .timedOut, "cannot connect to tetherd at \(parsed): the connection was not made within \(timeoutMilliseconds) ms")
        }
        if !up {
            if untrusted {
                try? freeRemote(link.id)
                throw TetherError(.untrusted, "refusing to connect to tetherd at \(parsed): \(why); nothing was sent")
            }
            throw connectFailure(link, parsed, .loopFailure, "cannot connect to tetherd at \(parsed): \(why) (is tetherd running? start it with `tetherd`, or set TETHER_ADDRESS)")
        }
        // Something listens: check that it is a daemon that answers (a
        // stopped or hung one accepts connections and answers nothing).
        let ping = RemoteWaiter(detached: false, mirrors: [], isRead: true)
        do {
            try link.send(Call(method: "org.varlink.service.GetInfo"), waiter: ping)
        } catch {
            throw connectFailure(link, parsed, .loopFailure, "cannot connect to tetherd at \(parsed): \(error.message)")
        }
        if let error = link.waitFor(ping, deadline: deadline) {
            if error.code == .timedOut {
                throw connectFailure(link, parsed, .timedOut, "cannot connect to tetherd at \(parsed): it accepted the connection but did not answer within \(timeoutMilliseconds) ms (is it stopped or hung?)")
            }
            // The daemon's refusal may have come as the answer to the ping.
            throw connectFailure(link, parsed, error.code == .readOnly ? .readOnly : .loopFailure,
                                 "cannot connect to tetherd at \(parsed): \(error.message)")
        }
        return link.id
    }

    /// A connect that failed: the link freed, and the error, unless the
    /// daemon refused the connection at accept (no grant for this uid, or
    /// one of its caps): then the daemon's own words and code (access:
    /// TETHER_EREADONLY), not a lost connection.
    private static func connectFailure(_ link: RemoteLink, _ address: DaemonAddress, _ code: ErrorCode,
                                       _ message: String) -> TetherError {
        link.lock.lock()
        let refusal = link.refusal
        link.lock.unlock()
        try? freeRemote(link.id)
        if let refusal { return TetherError(refusal.code, "cannot connect to tetherd at \(address): \(refusal.message)") }
        return TetherError(code, message)
    }

    /// Sets how long the remote's calls wait for the daemon (0: without limit).
    package static func setRemoteTimeout(_ remote: UInt64, milliseconds: UInt32) throws(TetherError) {
        let link = try RemoteTable.find(remote)
        link.lock.lock()
        link.timeoutMilliseconds = milliseconds
        link.lock.unlock()
    }

    /// How long the remote's calls wait for the daemon (0: without limit).
    package static func remoteTimeout(_ remote: UInt64) throws(TetherError) -> UInt32 {
        let link = try RemoteTable.find(remote)
        link.lock.lock()
        defer { link.lock.unlock() }
        return link.timeoutMilliseconds
    }

    /// A state of the remote's runtime that mirrors the daemon's state
    /// `name`; waits for its first snapshot (outside callbacks).
    package static func remoteState(_ remote: UInt64, name: String) throws(TetherError) -> UInt64 {
        let link = try RemoteTable.find(remote)
        do {
            try StateName.check(name, parameter: "name")
        } catch {
            throw TetherError(.invalidArgument, error.detail)
        }
        let handle = try newState(in: link.engine.id, .null, typeLocked: false)
        let engine = try acquire(handle, .state)
        let sid = stateID(handle)
        do {
            try engine.graph.markRemote(sid, name: name)
        } catch {
            engine.lock.unlock()
            try? freeState(handle)
            throw error
        }
        let wait = !engine.onLoopThread && !DeliveryContext.isDelivering(engine.id)
        engine.lock.unlock()
        let mirror = RemoteMirror(link: link, name: name, state: sid, handle: handle)
        link.lock.lock()
        let deadline = link.callDeadline()
        let limit = link.timeoutMilliseconds
        link.lock.unlock()
        link.register(mirror)
        guard wait else { return handle }
        link.lock.lock()
        let inTime = link.wait(until: { mirror.ready || mirror.failure != nil }, deadline: deadline)
        let failure = mirror.failure ?? (link.closed ? TetherError(.stale, "the remote was freed")
            : inTime ? nil : TetherError(.timedOut, "tetherd at \(link.address) did not send the value of '\(name)' within \(limit) ms (the remote's timeout, tether_remote_set_timeout); is it stopped or hung?"))
        link.lock.unlock()
        if let failure {
            try? freeState(handle)
            throw failure
        }
        return handle
    }

    /// Frees a remote: its connections close and the states it mirrors are
    /// freed (their handles go stale, their observers end).
    package static func freeRemote(_ remote: UInt64) throws(TetherError) {
        guard let link = RemoteTable.remove(remote) else {
            throw TetherError(.stale, "remote handle \(hexHandle(remote)) is stale (freed, or never made)")
        }
        for mirror in link.allMirrors { try? freeState(mirror.handle) }
        // The loop closes its handles, then forgets it (serviceRemoteLinks).
        link.post(.close)
        link.lock.lock()
        link.markClosing()
        link.lock.unlock()
    }

    /// Waits until every remote state shows what the daemon held when this
    /// was called (a read barrier across processes).
    package static func syncRemote(_ remote: UInt64) throws(TetherError) {
        let link = try RemoteTable.find(remote)
        if link.engine.onLoopThread || DeliveryContext.isDelivering(link.engine.id) {
            throw TetherError(.busy, "sync waits for the runtime's loop: call it outside the runtime's callbacks")
        }
        try link.sync()
    }

    /// Waits up to `milliseconds` until the daemon answers on the remote's
    /// connection: connected, and a round trip (GetInfo) went through, so a
    /// connection whose daemon just died (and whose end has not been seen
    /// yet) does not count.
    package static func waitRemote(_ remote: UInt64, milliseconds: UInt32) throws(TetherError) {
        let link = try RemoteTable.find(remote)
        if link.engine.onLoopThread || DeliveryContext.isDelivering(link.engine.id) {
            throw TetherError(.busy, "waiting for the connection needs the runtime's loop: call it outside the runtime's callbacks")
        }
        let start = monotonicMilliseconds()
        while true {
            let elapsed = monotonicMilliseconds() - start
            let left = elapsed >= Int64(milliseconds) ? 0 : UInt32(Int64(milliseconds) - elapsed)
            if left > 0 && link.waitConnected(milliseconds: left) {
                let ping = RemoteWaiter(detached: false, mirrors: [], isRead: true)
                let call = Call(method: "org.varlink.service.GetInfo")
                if (try? link.send(call, waiter: ping)) != nil && link.waitFor(ping, deadline: start + Int64(milliseconds)) == nil { return }
                continue  // it died under us: wait for the reconnection
            }
            link.lock.lock()
            let why = link.closed ? "the remote was freed" : link.lastError
            link.lock.unlock()
            throw TetherError(.loopFailure, "tetherd at \(link.address) did not answer within \(milliseconds) ms (\(why))")
        }
    }

    static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000)
    }

    /// Whether the remote's call connection is up now.
    package static func remoteConnected(_ remote: UInt64) throws(TetherError) -> Bool {
        let link = try RemoteTable.find(remote)
        link.lock.lock()
        defer { link.lock.unlock() }
        // A mirror that stopped following the daemon is not connected.
        return link.connected && !link.hasBrokenMirror
    }

    /// The daemon's `modified` revision of a remote state, as its mirror
    /// has applied it (for compare-on-revision).
    package static func remoteRevision(_ s: UInt64) throws(TetherError) -> UInt64 {
        try mirror(of: s).daemonModified  // a broken mirror's error
    }

    /// Adds a precondition to this thread's open transaction: it commits
    /// only if the daemon's state `s` was last modified at `revision`.
    package static func expectRemote(_ s: UInt64, revision: UInt64) throws(TetherError) {
        let m = try mirror(of: s)
        let engine = try acquire(s, .state)
        defer { engine.lock.unlock() }
        guard let context = engine.openTransaction() else {
            throw TetherError(.invalidArgument, "no transaction is open on this thread: a precondition belongs to one")
        }
        if let other = (context.remoteOps.first?.mirror ?? context.remotePreconditions.first?.mirror)?.link, other !== m.link {
            throw TetherError(.invalidArgument, "a transaction's remote states must all belong to one tether_remote_t (one daemon commits it)")
        }
        context.remotePreconditions.append((m, revision))
    }

    private static func mirror(of s: UInt64) throws(TetherError) -> RemoteMirror {
        let engine = try acquire(s, .state)
        do {
            _ = try engine.graph.stateRevision(stateID(s))  // a freed state is stale, not "not remote"
        } catch {
            engine.lock.unlock()
            throw error
        }
        let m = engine.graph.isRemote(stateID(s)) ? engine.remoteMirror(stateID(s)) : nil
        engine.lock.unlock()
        guard let m else { throw TetherError(.invalidArgument, "state \(hexHandle(s)) is not a remote state") }
        return m
    }
}

extension Engine {
    /// Sends a transaction's remote ops and preconditions as one daemon
    /// Transaction. Entered with `lock` held; returns with it released.
    func commitRemote(_ ops: [(mirror: RemoteMirror, op: Op)], _ preconditions: [(mirror: RemoteMirror, revision: UInt64)],
                      local: WriteSet, meta: TransactionMeta) throws(TetherError) -> UInt64 {
        if !local.isEmpty {
            lock.unlock()
            throw TetherError(.invalidArgument, "a transaction cannot write both local and remote states (the daemon commits one, the runtime the other, and nothing makes them one commit); nothing was applied")
        }
        if let failure = local.failure {
            lock.unlock()
            throw failure
        }
        let detached = tether_internal_get_depth() != 0 || onLoopThread
        lock.unlock()
        guard let link = (ops.first?.mirror ?? preconditions.first?.mirror)?.link else { return 0 }
        var mirrors: [RemoteMirror] = []
        for (m, _) in ops where !mirrors.contains(where: { $0 === m }) { mirrors.append(m) }
        let tag = meta.info.pointee.tag.map { String(cString: $0) }
        let origin = meta.info.pointee.origin
        let parameters = TransactionParameters(ops: ops.map(\.op),
                                               preconditions: preconditions.map { Precondition(name: $0.mirror.name, revision: $0.revision) },
                                               tag: tag, origin: origin == 0 ? nil : origin)
        let waiter = RemoteWaiter(detached: detached, mirrors: mirrors)
        try link.send(Call(method: TetherMethod.transaction.qualifiedName, parameters: parameters.parameters), waiter: waiter)
        if detached { return 0 }
        if let error = link.waitFor(waiter) { throw error }
        lock.lock()
        defer { lock.unlock() }
        return graph.revision
    }
}
