import CLibUV
import CTether
import Glibc
import TetherCore
import TetherWire

/// What a thread that waits on the daemon gets back.
final class RemoteWaiter {
    /// Nobody waits (a write made inside a callback): counted by the link
    /// until acknowledged, its refusal reported to the runtime's handler.
    let detached: Bool
    /// A Get made by sync(): its `modified` is the revision to wait for.
    let isRead: Bool
    init(detached: Bool, mirrors: [RemoteMirror], isRead: Bool = false) {
        self.detached = detached
        self.mirrors = mirrors
        self.isRead = isRead
    }
    var done = false
    var error: TetherError?
    var revision: UInt64 = 0
    var changed = false
    /// The mirrors whose watches must show `revision` before the write
    /// counts as done (the writer then reads its own write).
    var mirrors: [RemoteMirror] = []
    /// Each mirror's epochChanges when the answer came.
    var epochChanges: [Int] = []

    /// Whether every mirror shows the answer (`lock` held).
    var shown: Bool {
        zip(mirrors, epochChanges).allSatisfy { $0.hasApplied(revision, epochChanges: $1) }
    }
}

/// One connection of a runtime to tetherd (`tether_remote_t`): a call
/// connection for writes, and one Watch connection per mirrored state.
///
/// Threads: every libuv handle lives on the runtime's loop thread; other
/// threads hand it work through `queue` and wake the loop (the runtime's
/// own async handle; Engine.loopWoke runs `runQueued`). `lock` guards
/// the fields marked shared; `condition` wakes threads waiting for a
/// reply, a mirror's progress, or the link going idle.
package final class RemoteLink {
    enum Command {
        case connect
        case call(Call, RemoteWaiter)
        case watch(RemoteMirror)
        case unwatch(RemoteMirror)
        case close
    }

    /// Strong: a link may outlive its runtime's handle (then every call
    /// through it is stale), never the engine object it locks.
    let engine: Engine
    let address: DaemonAddress
    /// Who may be the daemon at `address` (checked on every connection).
    let trust: SocketTrust
    package let id: UInt64
    let lock: LockRef
    private let ownLock = Lock()
    let condition = Condition()

    // Shared (under `lock`).
    private var queue: [Command] = []
    /// Whether the call connection is up: writes fail at once otherwise.
    private(set) var connected = false
    /// Why the link is down (the last connection error).
    private(set) var lastError = "not connected yet"
    /// Whether the last connection failed the trust checks (SocketTrust).
    private(set) var lastErrorUntrusted = false
    /// The error the daemon sent when it refused the call connection at
    /// accept (no grant, or a cap of its uid reached): a reply that came
    /// before any call. Under `lock`; cleared by each new connection.
    private(set) var refusal: TetherError?
    /// Set once the first connection attempt has an outcome.
    private(set) var firstAttemptDone = false
    /// Writes sent without a waiting thread, not yet acknowledged.
    private var unacknowledged = 0
    private(set) var closed = false
    /// The mirrors, by the index of their state.
    private(set) var mirrors: [UInt32: RemoteMirror] = [:]
    /// How long a call that waits on the daemon (connect, a remote state's
    /// first snapshot, a write, a transaction, sync) waits before it fails
    /// with TETHER_ETIMEDOUT; 0: without limit. tether_remote_set_timeout.
    var timeoutMilliseconds: UInt32 = RemoteLink.defaultTimeout

    /// TETHER_REMOTE_TIMEOUT_MS of include/tether.h.
    static let defaultTimeout: UInt32 = 10_000

    // Loop thread only.
    /// The buffer every pipe of this link reads into.
    let readBuffer = ReadBuffer()
    private var callPipe: VarlinkPipe?
    private var inFlight: [RemoteWaiter] = []
    private var reconnectTimer: UnsafeMutablePointer<uv_timer_t>?
    private var backoff: UInt64 = 25

    init(engine: Engine, address: DaemonAddress, trust: SocketTrust, id: UInt64) {
        self.engine = engine
        self.address = address
        self.trust = trust
        self.id = id
        lock = LockRef(ownLock)
    }

    // MARK: From any thread

    /// Queues work for the loop thread and wakes it.
    func post(_ command: Command) {
        lock.lock()
        queue.append(command)
        lock.unlock()
        engine.lock.lock()
        engine.wakeLoop()
        engine.lock.unlock()
    }

    /// Waits (not on the loop thread) until `ready` holds; `lock` held.
    func wait(until ready: () -> Bool) {
        while !ready() && !closed { condition.wait(lock) }
    }

    /// When a call that starts now must give up (`lock` held): nil when
    /// the remote's timeout is 0 (no limit).
    func callDeadline() -> Int64? {
        timeoutMilliseconds == 0 ? nil : Runtimes.monotonicMilliseconds() + Int64(timeoutMilliseconds)
    }

    /// Waits (not on the loop thread) until `ready` holds, the link is
    /// closed, or `deadline` (monotonic ms; nil: none) passed; false only
    /// for the deadline. `lock` held.
    func wait(until ready: () -> Bool, deadline: Int64?) -> Bool {
        guard let deadline else {
            wait(until: ready)
            return true
        }
        while !ready() && !closed {
            let left = deadline - Runtimes.monotonicMilliseconds()
            if left <= 0 { return false }
            condition.wait(lock, milliseconds: UInt32(min(left, Int64(UInt32.max))))
        }
        return true
    }

    /// Sends a write or transaction. The caller waits on `waiter` unless
    /// it is detached; a detached one is counted until acknowledged (flush
    /// waits). Fails at once, changing nothing, when the link is down.
    func send(_ call: Call, waiter: RemoteWaiter) throws(TetherError) {
        lock.lock()
        guard connected, !closed else {
            let why = closed ? "the remote was freed" : "not connected to tetherd at \(address) (\(lastError)); reconnecting"
            lock.unlock()
            throw TetherError(.loopFailure, why)
        }
        if waiter.detached { unacknowledged += 1 }
        queue.append(.call(call, waiter))
        lock.unlock()
        engine.lock.lock()
        engine.wakeLoop()
        engine.lock.unlock()
    }

    /// Blocks until every write sent without a waiter was acknowledged and
    /// every acknowledged change reached its mirrors, at most the remote's
    /// timeout (then TETHER_ETIMEDOUT). Not on the loop thread.
    func waitIdle() throws(TetherError) {
        lock.lock()
        defer { lock.unlock() }
        let limit = timeoutMilliseconds
        let idle = wait(until: { unacknowledged == 0 && mirrors.values.allSatisfy { $0.caughtUp } }, deadline: callDeadline())
        if !idle {
            let pending = unacknowledged
            throw TetherError(.timedOut, pending > 0
                ? "tetherd at \(address) did not answer \(pending) write(s) made inside callbacks within \(limit) ms (the remote's timeout); they may or may not have been applied (their outcome is unknown)"
                : "the watches of tetherd at \(address) did not show the writes made inside callbacks within \(limit) ms (the remote's timeout)")
        }
    }

    /// Waits until every mirror shows at least what the daemon held when
    /// this was called: one Get per mirror (pipelined), then each mirror's
    /// watch reaching that state's `modified` revision. Not on the loop thread.
    func sync() throws(TetherError) {
        lock.lock()
        let deadline = callDeadline()
        lock.unlock()
        var waiters: [RemoteWaiter] = []
        for m in allMirrors {
            let waiter = RemoteWaiter(detached: false, mirrors: [m], isRead: true)
            try send(Call(method: TetherMethod.get.qualifiedName, parameters: GetParameters(name: m.name).parameters), waiter: waiter)
            waiters.append(waiter)
        }
        for waiter in waiters {
            if let error = waitFor(waiter, deadline: deadline), error.code != .notFound { throw error }
        }
        for m in allMirrors { if let broken = m.brokenError { throw broken } }
    }

    /// Whether a mirror stopped following the daemon (`lock` held).
    var hasBrokenMirror: Bool { mirrors.values.contains { $0.broken != nil } }

    /// Waits up to `milliseconds` for the connection to be up.
    func waitConnected(milliseconds: UInt32) -> Bool {
        let end = Runtimes.monotonicMilliseconds() + Int64(milliseconds)
        lock.lock()
        defer { lock.unlock() }
        while !connected && !closed {
            let left = end - Runtimes.monotonicMilliseconds()
            if left <= 0 { return false }
            condition.wait(lock, milliseconds: UInt32(left))
        }
        return connected
    }

    func register(_ mirror: RemoteMirror) {
        lock.lock()
        mirrors[mirror.state.index] = mirror
        lock.unlock()
        post(.watch(mirror))
    }

    func unregister(_ mirror: RemoteMirror) {
        lock.lock()
        let known = mirrors[mirror.state.index] === mirror
        if known { mirrors[mirror.state.index] = nil }
        lock.unlock()
        if known { post(.unwatch(mirror)) }
    }

    func mirror(at index: UInt32) -> RemoteMirror? {
        lock.lock()
        defer { lock.unlock() }
        return mirrors[index]
    }

    var allMirrors: [RemoteMirror] {
        lock.lock()
        defer { lock.unlock() }
        return Array(mirrors.values)
    }

    // MARK: On the loop thread

    /// Runs what other threads queued (Engine.loopWoke).
    func runQueued() {
        lock.lock()
        let commands = queue
        queue.removeAll()
        lock.unlock()
        for command in commands {
            switch command {
            case .connect:
                openCallPipe()
            case .call(let call, let waiter):
                guard let pipe = callPipe, pipe.connected else {
                    finish(waiter, error: TetherError(.loopFailure, "the connection to tetherd at \(address) was lost before the call was sent; nothing was applied"))
                    continue
                }
                inFlight.append(waiter)
                pipe.send(call)
            case .watch(let mirror):
                mirror.openWatch()
            case .unwatch(let mirror):
                mirror.closeWatch()
            case .close:
                closeAll()
            }
        }
    }

    private func openCallPipe() {
        guard !isClosed else { return }
        lock.lock()
        refusal = nil
        lock.unlock()
        callPipe = VarlinkPipe(loop: engine.loop, address: address, trust: trust, readBuffer: readBuffer, onConnect: { [unowned self] in
            backoff = 25
            setConnected(true, error: nil, untrusted: false)
        }, onReply: { [unowned self] reply in
            didReply(reply)
        }, onClose: { [unowned self] closeReason in
            lock.lock()
            let reason = refusal.map { "tetherd refused this connection: \($0.message)" } ?? closeReason
            lock.unlock()
            let untrusted = callPipe?.untrusted ?? false
            callPipe = nil
            let lost = inFlight
            inFlight.removeAll()
            for waiter in lost {
                finish(waiter, error: TetherError(.loopFailure, "the connection to tetherd at \(address) was lost (\(reason)) before the daemon answered; the write may or may not have been applied"))
            }
            setConnected(false, error: reason, untrusted: untrusted)
            scheduleReconnect()
        })
    }

    private var isClosed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return closed
    }

    private func setConnected(_ up: Bool, error: String?, untrusted: Bool) {
        lock.lock()
        connected = up && !closed
        if let error { lastError = error }
        lastErrorUntrusted = untrusted
        firstAttemptDone = true
        condition.broadcast()
        lock.unlock()
    }

    private func didReply(_ reply: Reply) {
        guard !inFlight.isEmpty else {
            // A reply to nothing: the daemon's refusal at accept (it sends
            // its error before reading a call, then closes), else ignored.
            if let error = VarlinkError(reply: reply) {
                lock.lock()
                refusal = RemoteLink.localError(error)
                lock.unlock()
            }
            return
        }
        let waiter = inFlight.removeFirst()
        if let error = VarlinkError(reply: reply) {
            let tether = RemoteLink.localError(error)
            if waiter.detached {
                // Nobody waits for this write (it was made inside a
                // callback): the refusal is reported, never dropped.
                Runtimes.reportRemoteFailure(engine, "tetherd refused a write made inside a callback: \(tether.message)")
            }
            finish(waiter, error: tether)
            return
        }
        let revision: UInt64
        if case .int(let r)? = reply.parameters[waiter.isRead ? "modified" : "revision"] { revision = UInt64(bitPattern: r) } else { revision = 0 }
        let changed: Bool
        if case .bool(let c)? = reply.parameters["changed"] { changed = c } else { changed = true }
        lock.lock()
        waiter.revision = revision
        waiter.changed = changed
        waiter.epochChanges = waiter.mirrors.map(\.epochChanges)
        waiter.done = true
        if waiter.detached { unacknowledged -= 1 }
        // The written mirrors' watches will carry this revision: until
        // then flush (and the writer) wait for it.
        if changed { for m in waiter.mirrors { m.expect(revision) } }
        condition.broadcast()
        lock.unlock()
    }

    private func finish(_ waiter: RemoteWaiter, error: TetherError) {
        lock.lock()
        waiter.error = error
        waiter.done = true
        if waiter.detached { unacknowledged -= 1 }
        condition.broadcast()
        lock.unlock()
    }

    /// A daemon's error as the local error of the same code (a remote state
    /// fails as a local one); io.tether's own errors map to their nearest.
    static func localError(_ error: VarlinkError) -> TetherError {
        if let tether = error.tetherError { return tether }
        switch error.name {
        case "io.tether.RevisionMismatch":
            return TetherError(.rejected, "tetherd: \(error.detail) (a precondition did not hold; nothing was applied)")
        case "io.tether.LimitExceeded":
            return TetherError(.outOfRange, "tetherd: \(error.detail)")
        case "io.tether.StorageFull":
            return TetherError(.busy, "tetherd: its store is full: \(error.detail)")
        case "org.varlink.service.PermissionDenied":
            // Varlink's PermissionDenied carries no message.
            return TetherError(.readOnly, "tetherd: access denied: this uid (\(getuid())) has no grant in the daemon's access configuration (org.varlink.service.PermissionDenied)")
        case "io.tether.AccessDenied":
            return TetherError(.readOnly, "tetherd: access denied: \(error.detail)")
        default:
            return TetherError(.invalidArgument, "tetherd: \(error.name): \(error.detail)")
        }
    }

    private func scheduleReconnect() {
        guard !isClosed else { return }
        if reconnectTimer == nil {
            let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
            let rc = uv_timer_init(engine.loop, timer)
            guard rc == 0 else {
                // No timer, no reconnection: say so once, stay down.
                timer.deallocate()
                let why = "cannot schedule a reconnection: uv_timer_init: \(String(cString: uv_strerror(rc)))"
                lock.lock()
                lastError = why
                condition.broadcast()
                lock.unlock()
                Runtimes.reportRemoteFailure(engine, "remote tetherd \(address): \(why); the remote stays disconnected (free it and connect again)")
                return
            }
            timer.pointee.data = Unmanaged.passRetained(self).toOpaque()  // released by its close
            reconnectTimer = timer
        }
        let delay = backoff
        backoff = min(backoff * 2, 2000)
        uv_timer_start(reconnectTimer!, { timer in
            let link = Unmanaged<RemoteLink>.fromOpaque(timer!.pointee.data).takeUnretainedValue()
            link.reconnect()
        }, delay, 0)
    }

    private func reconnect() {
        guard !isClosed else { return }
        if callPipe == nil { openCallPipe() }
        for mirror in allMirrors where !mirror.watching && mirror.brokenError == nil { mirror.openWatch() }
    }

    /// A mirror's watch dropped: try again after the backoff (one timer
    /// for the whole link, however many watches dropped together).
    func watchLost() {
        if let timer = reconnectTimer,
           uv_is_active(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) != 0 { return }
        scheduleReconnect()
    }

    /// tether_remote_free: from now on nothing waits or sends (lock held).
    func markClosing() {
        closed = true
        connected = false
        condition.broadcast()
    }

    /// Whether closeAll ran (the loop may forget the link). Loop thread.
    private(set) var handlesClosed = false

    /// Closes every connection and handle (tether_remote_free, or the
    /// runtime going away); waiting threads wake with an error.
    func closeAll() {
        handlesClosed = true
        lock.lock()
        closed = true
        connected = false
        let all = Array(mirrors.values)
        let commands = queue
        queue.removeAll()
        condition.broadcast()
        lock.unlock()
        // What was queued and never ran: close what it would have closed,
        // fail what waits.
        for command in commands {
            switch command {
            case .unwatch(let mirror): mirror.closeWatch()
            case .call(_, let waiter): finish(waiter, error: TetherError(.stale, "the remote was freed before the call was sent; nothing was applied"))
            case .connect, .watch, .close: break
            }
        }
        callPipe?.close(because: "the remote was freed")
        callPipe = nil
        for mirror in all { mirror.closeWatch() }
        if let timer = reconnectTimer {
            reconnectTimer = nil
            uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) { handle in
                Unmanaged<RemoteLink>.fromOpaque(handle!.pointee.data).release()
                UnsafeMutableRawPointer(handle!).deallocate()
            }
        }
    }
}
