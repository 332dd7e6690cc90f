import TetherCore
import TetherWire

/// The daemon without its sockets: the store, the sessions, the watches,
/// access and the log. Everything runs on the daemon's loop thread.
public final class Service {
    public static let version = "0.1.0"

    public let store: Store
    public let policy: AccessPolicy
    let log: EventLog
    let varlink = VarlinkService.tetherd
    /// Open connections (their sessions belong to their transports).
    public private(set) var connectionCount = 0
    private var watchers: [Watcher] = []
    /// Sessions with output (or a close) made in this loop turn, in order.
    private var pending: [Session] = []
    /// The ending turn's sessions, swapped with `pending` (both keep their
    /// capacity: no array is made per turn).
    private var ending: [Session] = []
    /// Sessions whose output of ended turns waits for a group commit.
    private var holding: [Session] = []
    /// The store's pipelined group commit, when it has one (a durable
    /// store; nil for `--memory` and for stores synced by hand in tests).
    public let committer: GroupCommitter?
    /// What `--metrics` and io.tether.Metrics report (Metrics.swift).
    public private(set) var metrics = Metrics()
    /// Whether a Set of the common shape skips the generic parse
    /// (`SimpleSetCall`). Off only to compare the two paths' replies
    /// (SimpleSetCallTests, the fuzzer).
    public var simpleCalls = true

    /// Who may hold a connection, and how much of the daemon each uid may
    /// hold (decided from the peer's credentials, before it is read).
    let admission: Admission

    /// Unread bytes a connection may have before its watch stops being sent
    /// changes (it catches up from the log when it reads) and before its
    /// next call is handled (`tetherd --watch-buffer`; at least 64 KiB).
    public let watchBuffer: Int

    public init(store: Store, policy: AccessPolicy, log: EventLog, admission limits: AdmissionLimits = .defaults,
                watchBuffer: Int = Session.defaultHighWater) {
        self.watchBuffer = max(64 << 10, watchBuffer)
        self.store = store
        self.policy = policy
        self.log = log
        admission = Admission(limits: limits, owner: policy.owner)
        committer = store.sink as? GroupCommitter
        committer?.metrics = metrics
        store.onCommit = { [unowned self] commit in self.publish(commit) }
    }

    /// Forgets every connection and empties the store (`Store.reset`):
    /// afterwards the service answers exactly as a new one on a new store
    /// would (ServiceResetTests pins it, reply for reply). The sessions
    /// opened before are the caller's to drop: they must not be used
    /// again. The fuzzer's fast targets keep one daemon across inputs and
    /// reset it before each: making a daemon per input was ~2% of an
    /// input (perf), and a reset one runs an input as a fresh one would,
    /// so a crash still reproduces from its input alone. Only for an
    /// in-memory store (no group commit).
    public func reset() throws(TetherError) {
        precondition(committer == nil, "Service.reset is only for an in-memory store")
        try store.reset()
        connectionCount = 0
        watchers = []
        pending = []
        ending = []
        holding = []
        let fresh = Metrics()
        fresh.namesByPrefix = metrics.namesByPrefix
        fresh.storeFiles = metrics.storeFiles
        metrics = fresh
        admission.forgetConnections()
    }

    public var watchCount: Int { watchers.count }
    /// The open watches, oldest first (WatcherList.swift).
    func watcherSessions() -> [Watcher] { watchers }

    /// A new connection from `peer`. A peer that may not connect (no
    /// grant, or over its uid's caps) gets a session that is refused
    /// already: its error reply is queued, it is closed once that is
    /// written, and nothing it sends is read (`Session.isRefused`).
    public func open(peer: Peer) -> Session {
        let grant = policy.grant(for: peer)
        let decision = admission.admit(peer, granted: grant != nil)
        connectionCount += 1
        metrics.connectionsTotal &+= 1
        guard case .refused(let error) = decision else {
            admission.opened(peer.uid)
            return Session(service: self, peer: peer, grant: grant, admitted: true)
        }
        let session = Session(service: self, peer: peer, grant: nil, admitted: false)
        metrics.refusedPeers &+= 1
        if let count = admission.shouldLogRefusal(of: peer.uid) {
            let reason = grant == nil ? "neither the daemon's uid, nor root, nor granted by the configuration" : error.detail
            log.event("refused", "peer" => peer.description, "reason" => reason, "refusals" => "\(count)")
        }
        session.refuse(error)
        return session
    }

    /// The connection is gone: its watch ends.
    public func closed(_ session: Session) {
        connectionCount -= 1
        if session.admitted { admission.closed(session.peer.uid, pendingInput: session.pendingInput) }
        session.dropOutput()
        if let w = session.watcher {
            watchers.removeAll { $0 === w }
            session.watcher = nil
        }
    }

    func queue(_ session: Session) {
        guard !session.queued else { return }
        session.queued = true
        pending.append(session)
    }

    // MARK: Turns

    /// The end of a loop turn: its commits go to the store's group commit,
    /// and its output (replies, watch events) is held until they are
    /// durable, together with everything committed before them: a reply
    /// that commits nothing (a Get, a progress) may show values of a group
    /// still syncing, so it waits for that group too, and a connection's
    /// replies stay in call order. Returns the sessions with output the
    /// transport may write now (`Session.takeReady`).
    public func endOfTurn() -> [Session] {
        let group = endGroup()
        hold(until: group)
        return release()
    }

    /// The turn's group handed to the group commit; returns the group its
    /// output waits for. When the store refuses the group (a full disk),
    /// the group is undone (`groupFailed`) and the output waits for the
    /// groups before it.
    @inline(__always)
    private func endGroup() -> UInt64 {
        guard let committer else { return 0 }
        do throws(GroupCommitter.GroupFailure) {
            if let failure = store.sinkFailure { throw GroupCommitter.GroupFailure(underlying: failure) }
            let group = try committer.endOfTurn()
            store.groupCommitted()
            return group
        } catch {
            groupFailed(error.underlying)
            return committer.submitted
        }
    }

    /// The store refused the turn's group (docs/robustness.md, "A full
    /// disk"). Nothing of this turn's output has been written (it waits
    /// for the group): the store's transaction is rolled back, the states
    /// the group touched take what the store holds again, the revision
    /// goes back to the last commit on disk, and this turn's output is
    /// rewritten: every call answered in the turn gets io.tether.StorageFull
    /// (unless it failed otherwise), and watch events of the undone
    /// commits are dropped. No client ever sees a value the disk does not
    /// hold, and everything acknowledged before stays.
    private func groupFailed(_ error: Error) {
        let contents: SQLiteStore.Contents
        do {
            guard let read = try committer?.abandonGroup() else {
                GroupCommitter.stop("the store refused a group and cannot roll it back", error)
            }
            contents = read
        } catch let rollback {
            GroupCommitter.stop("the store refused a group (\(error)) and could not be read back", rollback)
        }
        let good = store.groupStart
        let undone = store.rollBackGroup(to: contents)
        if contents.revision != good {
            log.event("storage-mismatch", "memory" => "\(good)", "store" => "\(contents.revision)")
        }
        let refusal = Store.storageFull(error)
        var refusedCalls = 0
        for s in pending {
            refusedCalls += s.refuseTurn(after: good, with: refusal)
        }
        for w in watchers where w.sentRevision > good { w.sentRevision = good }
        log.event("storage-full", "revision" => "\(good)", "undone" => "\(undone)", "refused" => "\(refusedCalls)",
                  "reason" => "\(error)")
    }

    /// A watch whose snapshot was undone with a refused group: a fresh one.
    func resnapshot(_ w: Watcher) {
        snapshot(w, resync: true)
    }

    /// The daemon's end of a turn: `endOfTurn()`, each session with output
    /// to write passed to `write`. When everything the turn may show is
    /// durable already (the inline group commit synced it, or there is no
    /// store) and no older output waits, the output is written without
    /// being held and released: that bookkeeping, and the arrays it made
    /// per turn, were ~2 k instructions of a Set (callgrind,
    /// docs/daemon-performance.md).
    func endOfTurn(write: (Session) -> Void) {
        let group = endGroup()
        guard holding.isEmpty, group <= committer?.completed ?? .max else {
            hold(until: group)
            for s in release() { write(s) }
            return
        }
        swap(&pending, &ending)  // what `write` queues goes to the next round
        for s in ending {
            s.queued = false
            if s.releaseNow() { write(s) }
        }
        ending.removeAll(keepingCapacity: true)
    }

    private func hold(until group: UInt64) {
        for s in pending {
            s.queued = false
            s.hold(until: group)
            if !s.holding {
                s.holding = true
                holding.append(s)
            }
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// Whether a session has output made since the last `endOfTurn`.
    public var hasPending: Bool { !pending.isEmpty }

    /// The sync thread finished a group (called on the loop thread): the
    /// sessions whose output may now be written.
    public func groupsDurable() -> [Session] {
        guard committer?.collect() == true else { return [] }
        return release()
    }

    /// Blocks until every commit is durable (the daemon stops): the
    /// sessions with output to write.
    public func drain() -> [Session] {
        let group = endGroup()
        hold(until: group)
        try? committer?.drain()  // no group is open: this only waits
        return release()
    }

    private func release() -> [Session] {
        let durable = committer?.completed ?? .max
        var ready: [Session] = []
        var still: [Session] = []
        for s in holding {
            if s.release(through: durable) { ready.append(s) }
            if s.isHolding { still.append(s) } else { s.holding = false }
        }
        holding = still
        return ready
    }

    func stats() -> StatsReply {
        StatsReply(revision: store.revision, epoch: store.epoch, states: UInt64(store.count),
                   connections: UInt64(connectionCount), watches: UInt64(watchers.count),
                   oldestRevision: store.oldestRevision, limits: store.limits)
    }

    // MARK: Watches

    func startWatch(_ session: Session, _ p: WatchParameters) {
        let w = Watcher(session: session, parameters: p)
        session.watcher = w
        watchers.append(w)
        metrics.watchersTotal &+= 1
        let now = store.revision
        if let from = p.fromRevision {
            let sameEpoch = p.epoch == nil || p.epoch == store.epoch
            if sameEpoch, from <= now, let history = store.log.commits(after: from, current: now),
               history.allSatisfy({ w.filter($0, current: nil) != nil }) {
                // The history is replayed like a watch that fell behind:
                // as far as the watch buffer allows, the rest as it reads.
                w.sentRevision = from
                w.behind = true
                catchUp(session)
                return
            }
            snapshot(w, resync: true)
            metrics.resyncs &+= 1
            log.event("watch-resync", "peer" => session.peer.description, "from" => "\(from)",
                      "oldest" => "\(store.oldestRevision)", "epoch" => p.epoch ?? "")
            return
        }
        snapshot(w, resync: false)
    }

    /// Starts sending a snapshot: one snapshot reply per watched state (and
    /// per listed name that does not exist), then progress. It is sent a
    /// slice at a time while the peer is not backed up, from a cursor into
    /// the store's sorted names (`SnapshotStream`), each value read when
    /// its reply is made, at that revision; the rest follows on the loop's
    /// next turns and as the peer reads. A snapshot under way is replaced.
    private func snapshot(_ w: Watcher, resync: Bool) {
        w.stream = SnapshotStream(parameters: w.parameters, resync: resync)
        w.sentRevision = store.revision  // no state sent yet: nothing is owed
        w.behind = true
        streamSnapshot(w)
    }

    /// Sends the next slice of `w`'s snapshot: until the peer is backed up
    /// (it goes on when the peer reads: `catchUp`) or the slice has made
    /// `snapshotSliceBytes` (it goes on next loop turn: `resumeWatch`); the
    /// last one ends with the progress reply. Changes of states sent are
    /// owed from `w.sentRevision` on (the caller sent them up to now).
    private func streamSnapshot(_ w: Watcher) {
        guard let s = w.stream else { return }
        let p = w.parameters
        let session = w.session
        let start = session.output.count
        w.yielded = false
        while !session.isBackedUp {
            if session.output.count - start >= Service.snapshotSliceBytes {
                // The rest on the loop's next turn, after the others.
                w.yielded = true
                if let connection = session.connection { connection.daemon.resumeLater(connection) }
                break
            }
            if s.nextListed < p.names.count {
                let name = p.names[s.nextListed]
                s.nextListed += 1
                if s.sentListed.insert(name).inserted { snapshotEntry(name, of: w, resync: s.resync) }
                continue
            }
            guard !s.prefixDone, let prefix = p.prefix else { break }
            guard let name = store.name(withPrefix: prefix, after: s.lastPrefixName) else {
                s.prefixDone = true
                break
            }
            s.lastPrefixName = name
            if !s.listed.contains(name) { snapshotEntry(name, of: w, resync: s.resync) }
        }
        w.sentRevision = store.revision
        if s.nextListed >= p.names.count && s.prefixDone {
            w.stream = nil
            w.behind = false
            // Flagged too: a resync of a prefix that no state matches sends no
            // snapshot reply, and the client must still drop what it had
            // (found by the fuzzer: a Watch from revision 0 after a Compact,
            // with every state removed, looked like a clean resume).
            sendProgress(w, resync: s.resync)
        }
    }

    private func snapshotEntry(_ name: String, of w: Watcher, resync: Bool) {
        let path = w.parameters.path
        // A big value's whole state: its encoding kept (EncodedValues.swift).
        // (A value that cannot be read goes the ordinary way: "exists": false.)
        if path.isRoot, let r = store.record(name), let fragment = try? store.keptFragment(r) {
            do {
                try Store.appendSnapshotReply(fragment, name: name, revision: store.revision, epoch: store.epoch,
                                              modified: r.modified, resync: resync, to: &w.session.output)
                queue(w.session)
                w.sentSinceTick = true
                return
            } catch {}
        }
        var value: Value?
        var modified: UInt64 = 0
        if let r = store.record(name), let whole = try? r.value {
            value = path.isRoot ? whole : whole.valueIfPresent(at: path)
            modified = value == nil ? 0 : r.modified
        }
        let reply = WatchReply(event: .snapshot(Entry(name: name, value: value, modified: modified), resync: resync),
                               revision: store.revision, epoch: store.epoch)
        w.session.send(Reply(parameters: reply.parameters, continues: true), oneway: false)
        w.sentSinceTick = true
    }

    private func sendProgress(_ w: Watcher, resync: Bool = false) {
        let reply = WatchReply(event: .progress(resync: resync), revision: store.revision, epoch: store.epoch)
        w.session.send(Reply(parameters: reply.parameters, continues: true), oneway: false)
        w.sentRevision = store.revision
        w.sentSinceTick = true
    }

    /// The changes of `commit` a watch is sent: one reply, or, when that
    /// reply would be longer than `max_reply`, several replies of the same
    /// revision, each holding all of the commit's changes to some of the
    /// states, followed by a progress reply at that revision
    /// (docs/protocol.md, "Watch"). When one state's changes alone would
    /// not fit, the watch resyncs instead. Returns false then.
    @discardableResult
    private func send(_ changes: [Change], of commit: Commit, to w: Watcher) -> Bool {
        let session = w.session
        let before = session.output.count
        let reply = WatchReply(event: .change(changes, tag: commit.tag, origin: commit.origin),
                               revision: commit.revision, epoch: store.epoch)
        session.send(Reply(parameters: reply.parameters, continues: true), oneway: false)
        w.sentRevision = commit.revision
        w.sentSinceTick = true
        let maxReply = store.limits.maxReply
        guard session.output.count - before > maxReply else { return true }
        session.output.removeSubrange(before...)
        return sendSplit(changes, of: commit, to: w, maxReply: maxReply)
    }

    private func sendSplit(_ changes: [Change], of commit: Commit, to w: Watcher, maxReply: Int) -> Bool {
        func encoded(_ list: [Change]) -> Int {
            let reply = WatchReply(event: .change(list, tag: commit.tag, origin: commit.origin),
                                   revision: commit.revision, epoch: store.epoch)
            var bytes: [UInt8] = []
            try? MessageEncoder.append(Reply(parameters: reply.parameters, continues: true), to: &bytes)
            return bytes.count
        }
        // Each state's changes, in the commit's order, as one group.
        var order: [String] = []
        var groups: [String: [Change]] = [:]
        for change in changes {
            if groups[change.name] == nil { order.append(change.name) }
            groups[change.name, default: []].append(change)
        }
        let overhead = encoded([])
        var parts: [[Change]] = []
        var part: [Change] = []
        var size = overhead
        for name in order {
            let group = groups[name]!
            let cost = encoded(group) - overhead + 1  // its changes, and a comma
            if overhead + cost > maxReply {
                log.event("watch-resync", "peer" => w.session.peer.description, "revision" => "\(commit.revision)",
                          "reason" => "the changes to '\(name)' are longer than max_reply")
                snapshot(w, resync: true)
                return false
            }
            if size + cost > maxReply && !part.isEmpty {
                parts.append(part)
                part = []
                size = overhead
            }
            part += group
            size += cost
        }
        if !part.isEmpty { parts.append(part) }
        for list in parts {
            let reply = WatchReply(event: .change(list, tag: commit.tag, origin: commit.origin),
                                   revision: commit.revision, epoch: store.epoch)
            w.session.send(Reply(parameters: reply.parameters, continues: true), oneway: false)
        }
        log.event("watch-split", "peer" => w.session.peer.description, "revision" => "\(commit.revision)",
                  "parts" => "\(parts.count)")
        let progress = WatchReply(event: .progress(resync: false), revision: commit.revision, epoch: store.epoch)
        w.session.send(Reply(parameters: progress.parameters, continues: true), oneway: false)
        w.sentRevision = commit.revision
        w.sentSinceTick = true
        return true
    }

    private func publish(_ commit: Commit) {
        metrics.committed(commit)
        let store = self.store
        // Watchers that watch the same path and cover the same of the
        // commit's changes get the same filtered list: its reply is encoded
        // once (profiled: encoding per watcher was 25.6 k instructions a
        // delivery at the root, 24.7 k at a path; docs/daemon-performance.md).
        var encoded: [FilteredDelivery: [UInt8]] = [:]
        // The last key and its bytes, compared before the table is hashed:
        // watchers in a row mostly share a key (every watcher of the root
        // with the same grant), and comparing a key costs a few
        // instructions where hashing it and finding it cost ~540 a delivery.
        var last: (key: FilteredDelivery, bytes: [UInt8])?
        for w in watchers {
            if w.behind { continue }  // a cursor: it reads the log when it drains
            if w.session.isBackedUp {
                w.behind = true
                log.event("watch-behind", "peer" => w.session.peer.description, "sent" => "\(w.sentRevision)",
                          "unread" => "\(w.session.unwritten)")
                continue
            }
            let key = FilteredDelivery(w, commit)
            guard key.coversAny else { continue }  // filtering keeps only covered names: nothing
            if let last, last.key == key {
                deliver(last.bytes, of: commit, to: w)
                continue
            }
            if let bytes = encoded[key] {
                last = (key, bytes)
                deliver(bytes, of: commit, to: w)
                continue
            }
            guard let changes = w.filter(commit, current: { try? store.record($0)?.value }), !changes.isEmpty else { continue }
            let reply = WatchReply(event: .change(changes, tag: commit.tag, origin: commit.origin),
                                   revision: commit.revision, epoch: store.epoch)
            var bytes: [UInt8] = []
            if (try? MessageEncoder.append(Reply(parameters: reply.parameters, continues: true), to: &bytes)) != nil,
               bytes.count <= store.limits.maxReply {
                encoded[key] = bytes
                last = (key, bytes)
                deliver(bytes, of: commit, to: w)
            } else {
                send(changes, of: commit, to: w)  // split (or its error), once per watcher
            }
        }
    }

    private func deliver(_ bytes: [UInt8], of commit: Commit, to w: Watcher) {
        w.session.send(encoded: bytes)
        w.sentRevision = commit.revision
        w.sentSinceTick = true
    }

    /// What a watcher's filtered list of one commit depends on: its path
    /// and which of the commit's changes it covers (the values it reads
    /// are the commit's and the store's, the same for every watcher). The
    /// first 64 changes' coverage is a bit mask, so the usual commit makes
    /// no allocation here; the rest, if any, a list.
    private struct FilteredDelivery: Hashable {
        let path: JSONPointer
        var mask: UInt64 = 0
        var beyond: [Bool] = []

        init(_ w: Watcher, _ commit: Commit) {
            path = w.parameters.path
            for (i, change) in commit.changes.enumerated() {
                let covered = w.covers(change.name)
                if i < 64 {
                    if covered { mask |= 1 << UInt64(i) }
                } else {
                    beyond.append(covered)
                }
            }
        }

        var coversAny: Bool { mask != 0 || beyond.contains(true) }
    }

    /// A watch that fell behind, whose peer has read enough: send what it
    /// missed from the commit log, as far as its buffer allows, or, when the
    /// log no longer holds it (or it cannot be replayed exactly), a resync.
    /// Nothing is ever skipped silently. A snapshot being sent is a watch
    /// behind too: the commits since its last slice (to the states it has
    /// sent) come first, then its next slice.
    func catchUp(_ session: Session) {
        guard let w = session.watcher, w.behind, !w.yielded else { return }
        let now = store.revision
        guard let history = store.log.commits(after: w.sentRevision, current: now) else {
            w.behind = false
            log.event("watch-resync", "peer" => session.peer.description, "from" => "\(w.sentRevision)",
                      "oldest" => "\(store.oldestRevision)", "reason" => "fell behind the log")
            snapshot(w, resync: true)
            return
        }
        for commit in history {
            guard let changes = w.filter(commit, current: nil) else {
                w.behind = false
                snapshot(w, resync: true)
                return
            }
            if !changes.isEmpty { guard send(changes, of: commit, to: w) else { return } }
            w.sentRevision = commit.revision
            if session.isBackedUp && commit.revision < now { return }  // more when it drains again
        }
        if w.stream != nil {
            if !session.isBackedUp { streamSnapshot(w) }
            return
        }
        w.behind = false
        sendProgress(w)
    }

    /// Output one slice of a snapshot may make before it yields to the
    /// loop's next turn.
    static let snapshotSliceBytes = 256 << 10

    /// The loop's next turn for a connection whose snapshot slice yielded
    /// (`Connection.resume`; tests call it as the loop would): its watch
    /// goes on.
    public func resumeWatch(_ session: Session) {
        guard let w = session.watcher else { return }
        w.yielded = false
        catchUp(session)
    }

    /// Called now and then: every watch that was sent nothing since the
    /// last tick gets a progress reply (it is alive, and has seen all).
    /// Every watch sent progress gets the same reply (the revision and the
    /// epoch are the store's), so it is encoded once per tick, not once per
    /// watch.
    public func idleTick() {
        var progress: [UInt8]?
        for w in watchers where !w.behind {
            if !w.sentSinceTick {
                if progress == nil { progress = encodedProgress() }
                w.session.send(encoded: progress!)
                w.sentRevision = store.revision
            }
            w.sentSinceTick = false
        }
    }

    /// The progress reply at the store's revision (not a resync), as
    /// `sendProgress` writes it.
    private func encodedProgress() -> [UInt8] {
        let reply = WatchReply(event: .progress(resync: false), revision: store.revision, epoch: store.epoch)
        var out: [UInt8] = []
        // A progress holds no double: it always writes.
        try? MessageEncoder.append(Reply(parameters: reply.parameters, continues: true), to: &out)
        return out
    }
}
