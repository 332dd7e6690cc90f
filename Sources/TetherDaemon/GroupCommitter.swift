import Glibc
import TetherCore
import TetherWire

/// Pipelined group commit: a `CommitSink` in front of a durable one (the
/// SQLite store) that does the durable work on a thread of its own.
///
/// The loop thread records commits in memory (no SQLite, no I/O). At the
/// end of each loop turn (`endOfTurn`) the turn's commits are queued for
/// the sync thread, numbered (a *turn group*). The sync thread takes
/// everything queued at once, records it into the inner sink and syncs it
/// (one transaction, one fsync under `--durability full`), then takes
/// whatever was queued meanwhile, and so on: the groups grow with the load,
/// as Redis's `appendfsync always` does, and the sync thread never waits
/// for the loop to hand a group over (it did at first, in the loop's
/// uv_async callback, which ran only after the loop's current reads: the
/// fsync rate stayed where the unpipelined daemon's was).
///
/// Nothing here decides what a client sees: every turn's output is tagged
/// with the number `endOfTurn` returns and written only once `completed`
/// reaches it (`Service.endOfTurn`, `Service.groupsDurable`).
///
/// Threads: every method runs on the loop thread, except what the sync
/// thread does inside `work()`; the `notify` closure is called on the sync
/// thread (the daemon passes a uv_async_send) after each sync, under the
/// committer's mutex: once a wait saw a turn finished, its notify is done
/// (so the daemon can close its uv_async after `drain`).
public final class GroupCommitter: CommitSink {
    /// One thing the inner sink is told, in the order it happened.
    enum Op {
        case record(Commit, [StateImage])
        case describe(String, Descriptor)
        case compact(UInt64)
    }

    /// Where a group is synced.
    public enum Mode: String, Sendable, CaseIterable {
        /// On the sync thread, while the loop applies the next turn.
        case pipelined
        /// On the loop thread at the end of each turn, before its output
        /// is written (the daemon before the pipeline): no thread, no
        /// hand-over. Faster when the daemon has one CPU to itself, as in
        /// `make bench` (docs/daemon-performance.md, "Durable commits").
        case inline
    }

    /// Past this many queued ops the loop waits for the sync thread
    /// (it blocks instead of buffering without bound).
    static let maxQueued = 100_000

    private let inner: CommitSink
    /// Whether a lone commit of a serial load is synced on the loop thread
    /// (see `endOfTurn`); tests of the pipeline turn it off.
    private let syncLoneCommitsHere: Bool
    public let mode: Mode

    // The loop thread's side.
    private var forming: [Op] = []
    /// Inline: whether the inner sink was given anything since its last sync.
    private var recordedInline = false
    /// Turns whose commits were queued (or synced here), numbered from 1.
    public private(set) var submitted: UInt64 = 0
    /// Turns the loop knows to be durable (≤ submitted).
    public private(set) var completed: UInt64 = 0
    /// Whether the load looks serial: the last sync held one commit and
    /// nothing was queued after it (one client, one call at a time). Only
    /// then is a lone commit synced on the loop thread: with several
    /// clients a turn often holds one commit too (the first call of a
    /// cohort whose replies were just written), and syncing it here would
    /// stall the rest of the cohort behind it (measured: 16 clients fell
    /// back to the unpipelined 7.6 commits per fsync).
    private var serial = false

    // Shared, under `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Turns queued for the sync thread, oldest first.
    private var queue: [(turn: UInt64, ops: [Op])] = []
    private var queuedOps = 0
    /// The newest turn synced.
    private var finished: UInt64 = 0
    /// Ops in the newest sync (1: a lone commit).
    private var lastSyncOps = 0
    private var stopping = false
    private var notify: (() -> Void)?
    private var thread: pthread_t?

    /// `notify` is called on the sync thread each time a group is durable
    /// (nil: nobody is told; the owner calls `collect`).
    public init(inner: CommitSink, mode: Mode = .pipelined, notify: (() -> Void)? = nil, syncLoneCommitsHere: Bool = true) {
        self.inner = inner
        self.mode = mode
        self.syncLoneCommitsHere = syncLoneCommitsHere
        self.notify = notify
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
        if mode == .inline { return }  // no sync thread
        var t = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()  // the thread's reference, released when it ends
        let rc = pthread_create(&t, nil, { context in
            let committer = Unmanaged<GroupCommitter>.fromOpaque(context!).takeRetainedValue()
            committer.work()
            return nil
        }, context)
        if rc != 0 { fatalError("tetherd: cannot start the store's sync thread: \(String(cString: strerror(rc)))") }
        thread = t
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    /// Who is told, on the sync thread, that a group is durable.
    public func setNotify(_ notify: (() -> Void)?) {
        pthread_mutex_lock(mutex)
        self.notify = notify
        pthread_mutex_unlock(mutex)
    }

    /// Makes everything recorded durable, then ends the sync thread.
    public func close() {
        drain()
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }

    // MARK: CommitSink (the loop thread)

    // Inline, every op goes to the inner sink at once, on the loop thread
    // (the sink is the loop's: there is no sync thread), and only the
    // sync waits for the end of the turn. Queuing them as `Op`s first, to
    // replay them at the end of the turn, was ~0.9 k instructions a commit
    // (making, copying and destroying the ops; callgrind), for nothing.

    public func record(_ commit: Commit, states: [StateImage]) throws {
        if mode == .inline {
            recordedInline = true
            try inner.record(commit, states: states)
        } else {
            forming.append(.record(commit, states))
        }
    }

    public func record(_ commit: Commit, state: StateImage) throws {
        if mode == .inline {
            recordedInline = true
            try inner.record(commit, state: state)
        } else {
            forming.append(.record(commit, [state]))
        }
    }

    public func describe(_ name: String, _ descriptor: Descriptor) throws {
        if mode == .inline {
            recordedInline = true
            try inner.describe(name, descriptor)
        } else {
            forming.append(.describe(name, descriptor))
        }
    }

    public func compact(through revision: UInt64) throws {
        if mode == .inline {
            recordedInline = true
            try inner.compact(through: revision)
        } else {
            forming.append(.compact(revision))
        }
    }

    /// Every op recorded so far durable, waiting for it (blocks the loop).
    public func sync() throws {
        drain()
    }

    /// A consistent copy: everything recorded so far is made durable first;
    /// the sync thread is idle meanwhile, so the inner sink is the loop's.
    public func snapshot(to path: String) throws -> UInt64 {
        drain()
        return try inner.snapshot(to: path)
    }

    // MARK: Turns (the loop thread)

    /// The end of a loop turn: queues its commits for the sync thread.
    /// Returns the turn that must be durable before the turn's output may
    /// be written: this one, or, for a turn that committed nothing, the
    /// newest one queued (the turn may have read values it made).
    public func endOfTurn() -> UInt64 {
        if mode == .inline {
            if recordedInline { syncInline() }
            return submitted
        }
        if forming.isEmpty { return submitted }
        if submitted == completed && forming.count == 1 && serial && syncLoneCommitsHere {
            // A lone commit with nothing in flight (one client, one call at
            // a time): sync it here. Handing it over would add two thread
            // wake-ups (the sync thread's, then the loop's uv_async) to a
            // round trip that nothing else overlaps.
            syncHere()
            return submitted
        }
        if submitted != completed || forming.count > 1 { serial = false }
        submit()
        return submitted
    }

    /// Takes note of the turns the sync thread made durable. Returns
    /// whether `completed` moved.
    @discardableResult
    public func collect() -> Bool {
        pthread_mutex_lock(mutex)
        let done = finished
        let lone = lastSyncOps == 1
        pthread_mutex_unlock(mutex)
        guard done > completed else { return false }
        completed = done
        if completed == submitted && lone { serial = true }
        return true
    }

    /// Blocks until everything recorded so far is durable.
    public func drain() {
        if mode == .inline {
            if recordedInline { syncInline() }
            return
        }
        if !forming.isEmpty { submit() }
        waitFor(submitted)
        collect()
    }

    /// Records and syncs the turn's commits on the loop thread: the sync
    /// thread is idle (every turn queued is finished), so the inner sink
    /// is the loop's for the while, as in `snapshot`.
    private func syncHere() {
        submitted += 1
        let ops = forming
        forming = []
        apply(ops)
        completed = submitted
        pthread_mutex_lock(mutex)
        finished = submitted
        lastSyncOps = ops.count
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    /// Inline: the turn's ops are in the inner sink already; sync them.
    private func syncInline() {
        submitted += 1
        recordedInline = false
        do {
            try inner.sync()
        } catch {
            // Replies wait for this group: none can be sent truthfully.
            fatalError("tetherd: the store failed to sync: \(error)")
        }
        completed = submitted
    }

    private func submit() {
        submitted += 1
        let ops = forming
        forming = []
        pthread_mutex_lock(mutex)
        queue.append((submitted, ops))
        queuedOps += ops.count
        let tooMany = queuedOps > GroupCommitter.maxQueued
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
        if tooMany { waitFor(submitted - 1) }  // memory stays bounded
    }

    private func waitFor(_ turn: UInt64) {
        pthread_mutex_lock(mutex)
        while finished < turn { pthread_cond_wait(changed, mutex) }
        pthread_mutex_unlock(mutex)
    }

    /// One group into the inner sink, synced.
    private func apply(_ ops: [Op]) {
        do {
            for op in ops {
                switch op {
                case .record(let commit, let states): try inner.record(commit, states: states)
                case .describe(let name, let descriptor): try inner.describe(name, descriptor)
                case .compact(let revision): try inner.compact(through: revision)
                }
            }
            try inner.sync()
        } catch {
            // Replies wait for this group: none can be sent truthfully.
            // The daemon stops; the store decides what survives.
            fatalError("tetherd: the store failed to sync: \(error)")
        }
    }

    // MARK: The sync thread

    private func work() {
        while true {
            pthread_mutex_lock(mutex)
            while queue.isEmpty && !stopping { pthread_cond_wait(changed, mutex) }
            if queue.isEmpty {  // stopping, and everything synced
                pthread_mutex_unlock(mutex)
                return
            }
            let batch = queue
            queue = []
            queuedOps = 0
            pthread_mutex_unlock(mutex)
            var count = 0
            var ops: [Op] = []
            for turn in batch {
                count += turn.ops.count
                ops.append(contentsOf: turn.ops)
            }
            apply(ops)
            pthread_mutex_lock(mutex)
            finished = batch[batch.count - 1].turn
            lastSyncOps = queue.isEmpty ? count : 0  // a lone commit, and nothing after it
            pthread_cond_broadcast(changed)
            notify?()
            pthread_mutex_unlock(mutex)
        }
    }
}
