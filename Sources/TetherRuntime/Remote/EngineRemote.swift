import CTether
import Glibc
import TetherCore
import TetherWire

// Remote states in the engine: a mirror refuses every write with
// Graph.remoteWrite (it is read-only to all but the daemon's commits), and
// the write paths turn that refusal into a call to the daemon. Plain states
// never reach any of this: the check is on the read-only slow path.

extension Engine {
    /// The mirror a state is, if it is one. `lock` held.
    func remoteMirror(_ s: StateID) -> RemoteMirror? {
        for link in remoteLinks {
            if let m = link.mirror(at: s.index), m.state.generation == s.generation { return m }
        }
        return nil
    }

    /// Engine.write met a mirror: send the write to the daemon. Entered
    /// with `lock` held; returns with it released.
    ///
    /// Outside callbacks the writer waits until the daemon acknowledged the
    /// write and the mirror shows it (or a later commit): it then reads its
    /// own write, and a refusal is the daemon's error, as a local state's.
    /// Inside a callback (the loop thread must stay free to apply what the
    /// daemon sends back) the write is sent and the call returns at once;
    /// a refusal goes to the runtime's remote-error report.
    @usableFromInline
    func writeRemote(_ s: StateID, _ op: WriteOp, wantRevision: Bool) -> WriteOutcome {
        guard let mirror = remoteMirror(s) else {
            lock.unlock()
            return .failed(TetherError(.readOnly, "the remote state's connection was freed: it can no longer be written"))
        }
        let detached = tether_internal_get_depth() != 0 || onLoopThread
        lock.unlock()
        if let broken = mirror.brokenError { return .failed(broken) }
        let waiter = RemoteWaiter(detached: detached, mirrors: [mirror])
        do {
            try mirror.link.send(RemoteCalls.write(mirror.name, op), waiter: waiter)
        } catch {
            return .failed(error)
        }
        if detached { return .done(revision: 0) }
        if let error = mirror.link.waitFor(waiter) { return .failed(error) }
        guard wantRevision else { return .done(revision: 0) }
        lock.lock()
        let revision = (try? graph.stateRevision(s)) ?? 0
        lock.unlock()
        return .done(revision: revision)
    }

    /// Engine.stage met a mirror: the op waits in the transaction for the
    /// outermost commit, which sends every remote op as one daemon
    /// Transaction. `lock` held; returns with it released.
    func stageRemote(_ s: StateID, _ op: WriteOp, _ context: ThreadContext) -> WriteOutcome {
        guard let mirror = remoteMirror(s) else {
            lock.unlock()
            return .failed(TetherError(.readOnly, "the remote state's connection was freed: it can no longer be written"))
        }
        if let other = context.remoteOps.first?.mirror.link, other !== mirror.link {
            lock.unlock()
            return .failed(TetherError(.invalidArgument, "a transaction's remote states must all belong to one tether_remote_t (one daemon commits it)"))
        }
        context.remoteOps.append((mirror, RemoteCalls.op(mirror.name, op)))
        lock.unlock()
        return .staged
    }

    /// Applies what the daemon committed to a mirror, as one local commit
    /// carrying the daemon commit's tag and origin. Loop thread.
    func applyRemote(_ s: StateID, _ ops: [WriteOp], meta: TransactionMeta?) throws(TetherError) {
        lock.lock()
        if dead {
            lock.unlock()
            throw TetherError(.stale, "the runtime was freed")
        }
        guard let owns = enterEvaluation() else { throw TetherError(.stale, "the runtime was freed") }
        var set = WriteSet()
        graph.applyingRemote = true
        graph.cause = Cause(meta: meta, wave: DeliveryContext.cause(for: id).wave)
        do {
            for op in ops { try graph.stage(op, to: s, in: &set, round: currentRound) }
            _ = try graph.commit(&set, round: currentRound)
        } catch {
            graph.applyingRemote = false
            graph.cause = Cause()
            leaveEvaluation(ownsDelivery: owns)
            throw error
        }
        graph.applyingRemote = false
        graph.cause = Cause()
        leaveEvaluation(ownsDelivery: owns)
    }

    /// The loop woke: run what other threads queued for the links; once
    /// the runtime is dead, close them so the loop can end. Loop thread.
    func serviceRemoteLinks() {
        lock.lock()
        let links = remoteLinks
        let isDead = dead
        if isDead { remoteLinks.removeAll() }
        lock.unlock()
        var finished: [RemoteLink] = []
        for link in links {
            if isDead { link.closeAll() } else { link.runQueued() }
            if link.handlesClosed { finished.append(link) }
        }
        if !isDead && !finished.isEmpty {
            lock.lock()
            remoteLinks.removeAll { link in finished.contains { $0 === link } }
            lock.unlock()
        }
    }
}

extension RemoteLink {
    /// Waits for a non-detached write: its reply, then the mirrors showing
    /// its revision, until `deadline` (nil: the remote's timeout from now).
    /// Returns its error, if any: TETHER_ETIMEDOUT once the deadline passed
    /// (the call stays in flight: its late reply is matched and dropped).
    func waitFor(_ waiter: RemoteWaiter, deadline: Int64? = nil) -> TetherError? {
        lock.lock()
        defer { lock.unlock() }
        let limit = timeoutMilliseconds
        let end = deadline ?? callDeadline()
        let inTime = wait(until: { waiter.done && (waiter.error != nil || !waiter.changed || waiter.shown) },
                          deadline: end)
        if !inTime { return timedOut(waiter, limit: limit) }
        return waiter.error ?? (waiter.done ? nil : TetherError(.stale, "the remote was freed before tetherd answered"))
    }

    /// The error of a call whose deadline passed (`lock` held).
    private func timedOut(_ waiter: RemoteWaiter, limit: UInt32) -> TetherError {
        let within = "within \(limit) ms (the remote's timeout, tether_remote_set_timeout)"
        if waiter.done {
            // Answered, but a watch has not shown it yet.
            let lagging = waiter.mirrors.filter { !$0.hasApplied(waiter.revision) }.map { "'\($0.name)'" }.joined(separator: ", ")
            return TetherError(.timedOut, "tetherd at \(address) committed the write at revision \(waiter.revision), but the watch of \(lagging) did not show it \(within)")
        }
        if waiter.isRead {
            return TetherError(.timedOut, "tetherd at \(address) did not answer \(within); is it stopped or hung?")
        }
        return TetherError(.timedOut, "tetherd at \(address) did not answer \(within); the write may or may not have been applied (its outcome is unknown: read the state again once tetherd answers)")
    }
}

/// Local writes as io.tether calls.
enum RemoteCalls {
    static func op(_ name: String, _ op: WriteOp) -> Op {
        switch op {
        case .set(let value): return Op(name: name, write: .set(value))
        case .put(let value, let path): return Op(name: name, path: path, write: .set(value))
        case .remove(let path): return Op(name: name, path: path, write: .remove)
        }
    }

    static func write(_ name: String, _ op: WriteOp) -> Call {
        let o = RemoteCalls.op(name, op)
        switch o.write {
        case .set(let value):
            return Call(method: TetherMethod.set.qualifiedName,
                        parameters: SetParameters(name: name, path: o.path, value: value).parameters)
        case .remove:
            return Call(method: TetherMethod.remove.qualifiedName,
                        parameters: RemoveParameters(name: name, path: o.path).parameters)
        }
    }
}

extension Runtimes {
    /// A refusal nobody waits for (a write made inside a callback): one
    /// line on stderr, so that it is never lost silently.
    static func reportRemoteFailure(_ engine: Engine, _ message: String) {
        fputs("tether: runtime \(hexHandle(engine.id)): \(message)\n", stderr)
    }
}
