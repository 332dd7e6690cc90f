import CTether
import TetherCore
import TetherWire

/// A remote state as the runtime holds it: an ordinary state of the
/// runtime (the mirror) that only the daemon's commits write, kept current
/// by a Watch connection of its own. Reads are local; writes go to the
/// daemon (Engine+Remote.swift) and come back through the watch, in the
/// daemon's order, with the commit's tag and origin.
final class RemoteMirror {
    unowned let link: RemoteLink
    let name: String
    let state: StateID
    let handle: UInt64

    // Shared (under link.lock).
    /// The daemon revision the mirror has applied everything up to.
    private(set) var appliedRevision: UInt64 = 0
    /// The highest revision a write through this link is known to have
    /// committed to this state: flush waits until it is applied.
    private var expectedRevision: UInt64 = 0
    /// Whether the first snapshot and progress have been applied.
    private(set) var ready = false
    /// Whether they ever were (a resync clears `ready`, not this).
    private var everReady = false
    /// Why the first watch failed, if it did (reported by tether_remote_state).
    private(set) var failure: TetherError?
    /// Set once a commit of the daemon could not be read or applied here
    /// (docs/robustness.md, "A mirror that cannot apply a commit"): the
    /// mirror stops following the daemon rather than retry the same commit
    /// for ever. Its writes, tether_remote_revision and tether_remote_sync
    /// fail with this error, and tether_remote_connected says false; one
    /// line on stderr says why.
    private(set) var broken: TetherError?
    /// Applies that failed since the last one that worked: a change that
    /// did not apply gets one resync from a fresh snapshot; a second
    /// failure in a row breaks the mirror.
    private var failedApplies = 0
    private(set) var epoch: String?
    /// How many times the daemon's history restarted under the mirror (a
    /// new epoch: a restart with --memory, a --restore; or revisions that
    /// went back): the revisions before it belong to another history. A
    /// write answered before the change counts as shown once the change is
    /// applied: the new history's snapshot is all a read can see of it
    /// (issue 36). (A write the new daemon answered before this mirror's
    /// watch saw the new epoch is counted with the old history, so the
    /// snapshot releases it too: only a watch that reconnects after the
    /// call connection, and a snapshot taken before that write, lose its
    /// read-your-write; the next change or sync shows it.)
    private(set) var epochChanges = 0
    /// The `modified` revision of the daemon's state as last seen (for
    /// compare-on-revision preconditions).
    private(set) var modified: UInt64 = 0

    // Loop thread only.
    private var watchPipe: VarlinkPipe?
    var watching: Bool { watchPipe != nil }

    init(link: RemoteLink, name: String, state: StateID, handle: UInt64) {
        self.link = link
        self.name = name
        self.state = state
        self.handle = handle
    }

    /// Everything the link's writes committed has been applied (link.lock held).
    var caughtUp: Bool { appliedRevision >= expectedRevision || failure != nil || broken != nil }

    /// A write through the link committed `revision` to this state (link.lock held).
    func expect(_ revision: UInt64) {
        expectedRevision = max(expectedRevision, revision)
    }

    /// Whether `revision` has been applied (link.lock held).
    func hasApplied(_ revision: UInt64) -> Bool { appliedRevision >= revision || failure != nil || broken != nil }

    /// Whether `revision`, answered while `epochChanges` was `changes`,
    /// has been applied, or the epoch changed since (link.lock held).
    func hasApplied(_ revision: UInt64, epochChanges changes: Int) -> Bool {
        hasApplied(revision) || epochChanges != changes
    }

    /// The daemon's history restarted: under a new epoch, or (a snapshot
    /// or progress at `revision`, below what was applied) behind the same
    /// one, as a salvaged store can. What the mirror believed of the old
    /// history (what it applied, what writes committed) means nothing in
    /// the new one. link.lock held.
    private func resetIfHistoryChanged(epoch newEpoch: String, revision: UInt64? = nil) -> Bool {
        let otherEpoch = epoch != nil && epoch != newEpoch
        let backwards = revision.map { $0 < appliedRevision } ?? false
        guard otherEpoch || backwards else { return false }
        epochChanges += 1
        appliedRevision = 0
        expectedRevision = 0
        return true
    }

    /// The daemon's `modified` revision of the state, as applied here.
    var daemonModified: UInt64 {
        get throws(TetherError) {
            link.lock.lock()
            defer { link.lock.unlock() }
            if let broken { throw broken }
            return modified
        }
    }

    // MARK: The watch (loop thread)

    func openWatch() {
        guard watchPipe == nil else { return }
        link.lock.lock()
        let from = ready ? appliedRevision : nil
        let epoch = self.epoch
        link.lock.unlock()
        let pipeRef = PipeRef()
        let pipe = VarlinkPipe(loop: link.engine.loop, address: link.address, trust: link.trust, readBuffer: link.readBuffer, onConnect: {}, onReply: { [unowned self] reply in
            didReply(reply)
        }, onClose: { [unowned self] reason in
            if watchPipe === pipeRef.pipe { watchPipe = nil }
            if pipeRef.pipe?.unreadableReply == true {
                // Resuming would read the same commit again: stop here.
                breakMirror(TetherError(.badJSON, "tetherd sent a change of '\(name)' this client cannot read (\(reason))"))
                return
            }
            link.lock.lock()
            if !everReady && failure == nil && !link.closed {
                // The first watch could not even start: say why, once.
                failure = TetherError(pipeRef.pipe?.untrusted == true ? .untrusted : .loopFailure, "cannot watch '\(name)' at tetherd \(link.address): \(reason)")
            }
            link.condition.broadcast()
            link.lock.unlock()
            link.watchLost()
        })
        pipeRef.pipe = pipe
        watchPipe = pipe
        // Resuming: every change after what was applied, none twice.
        let parameters = WatchParameters(names: [name], fromRevision: from, epoch: from == nil ? nil : epoch)
        pipe.send(Call(method: TetherMethod.watch.qualifiedName, parameters: parameters.parameters, more: true))
    }

    /// The mirror stops following the daemon (loop thread): see `broken`.
    func breakMirror(_ error: TetherError) {
        link.lock.lock()
        let applied = appliedRevision
        let full = TetherError(error.code, "\(error.message); the copy stays at revision \(applied) and is no longer updated (free the state and make it again to retry)")
        broken = full
        if !everReady && failure == nil { failure = full }
        link.condition.broadcast()
        link.lock.unlock()
        watchPipe?.close(because: "the mirror of '\(name)' is broken")
        watchPipe = nil
        Runtimes.reportRemoteFailure(link.engine, "remote state '\(name)' at tetherd \(link.address): \(full.message)")
    }

    /// Why the mirror stopped following the daemon, if it did.
    var brokenError: TetherError? {
        link.lock.lock()
        defer { link.lock.unlock() }
        return broken
    }

    func closeWatch() {
        watchPipe?.close(because: "the remote state was freed")
        watchPipe = nil
    }

    private func didReply(_ reply: Reply) {
        if let error = VarlinkError(reply: reply) {
            if RemoteMirror.isFinal(error) {
                // Retrying cannot fix it (no right to read the state, a
                // name the daemon refuses): stop, say why, never reopen.
                let local = RemoteLink.localError(error)
                breakMirror(TetherError(local.code, "tetherd refused to watch '\(name)' (\(error.name)): \(local.message)"))
                return
            }
            link.lock.lock()
            if !everReady { failure = RemoteLink.localError(error) }
            link.condition.broadcast()
            link.lock.unlock()
            closeWatch()
            return
        }
        let event: WatchReply
        do {
            event = try WatchReply(parameters: reply.parameters)
        } catch {
            watchPipe?.close(because: "tetherd sent a watch reply this client cannot read: \(error.detail)")
            return
        }
        switch event.event {
        case .snapshot(let entry, _):
            // The whole value at the daemon's revision: what the mirror
            // applied becomes that revision, down as well as up (a daemon
            // whose revisions went back, in its epoch or a new one).
            apply([.set(entry.value ?? .null)], meta: nil, revision: event.revision, epoch: event.epoch, modified: entry.modified, snapshot: true)
        case .change(let changes, let tag, let origin):
            let ops = changes.filter { $0.name == name }.map(RemoteMirror.localOp)
            var meta: TransactionMeta?
            if tag != nil || origin != nil {
                var info = tether_transaction_info_t()
                info.origin = origin ?? 0
                meta = tag.map { tag in tag.withCString { info.tag = $0; return TransactionMeta(info) } } ?? TransactionMeta(info)
            }
            apply(ops, meta: meta, revision: event.revision, epoch: event.epoch, modified: event.revision, snapshot: false)
        case .progress(let resync):
            link.lock.lock()
            if resetIfHistoryChanged(epoch: event.epoch, revision: event.revision) || resync {
                appliedRevision = event.revision
            } else {
                appliedRevision = max(appliedRevision, event.revision)
            }
            epoch = event.epoch
            ready = true
            everReady = true
            link.condition.broadcast()
            link.lock.unlock()
        }
    }

    /// Whether a refused Watch would be refused again, whenever retried.
    static func isFinal(_ error: VarlinkError) -> Bool {
        switch error.name {
        case "io.tether.AccessDenied", "org.varlink.service.PermissionDenied",
             "org.varlink.service.InvalidParameter", "org.varlink.service.MethodNotFound",
             "org.varlink.service.InterfaceNotFound", "org.varlink.service.MethodNotImplemented",
             "io.tether.InvalidArgument", "io.tether.BadPath", "io.tether.InvalidCall":
            return true
        default:
            return false
        }
    }

    /// A change as a local write: a remove at the root is the state going
    /// away, which the mirror shows as null.
    static func localOp(_ change: TetherWire.Change) -> WriteOp {
        switch change.write {
        case .set(let value):
            return change.path.isRoot ? .set(value) : .put(value, at: change.path)
        case .remove:
            return change.path.isRoot ? .set(.null) : .remove(at: change.path)
        }
    }

    private func apply(_ ops: [WriteOp], meta: TransactionMeta?, revision: UInt64, epoch: String, modified: UInt64, snapshot: Bool) {
        do {
            try link.engine.applyRemote(state, ops, meta: meta)
        } catch {
            if error.code == .stale { return }  // the mirror was freed meanwhile
            failedApplies += 1
            if failedApplies > 1 {
                // A fresh snapshot did not help: resyncing again would loop.
                breakMirror(TetherError(error.code, "the change of revision \(revision) to '\(name)' did not apply to the copy, even after a resync (\(error.message))"))
                return
            }
            // The copy no longer matches the daemon's: start over from a
            // fresh snapshot rather than show a wrong value.
            link.lock.lock()
            ready = false
            link.lock.unlock()
            watchPipe?.close(because: "the change of revision \(revision) did not apply to the copy (\(error.message)); resyncing")
            return
        }
        failedApplies = 0
        link.lock.lock()
        let reset = resetIfHistoryChanged(epoch: epoch, revision: snapshot ? revision : nil)
        appliedRevision = snapshot || reset ? revision : max(appliedRevision, revision)
        self.modified = modified
        self.epoch = epoch
        link.condition.broadcast()
        link.lock.unlock()
    }
}

/// Lets a pipe's own callbacks recognise it (they are made before it).
private final class PipeRef {
    weak var pipe: VarlinkPipe?
}
