import Glibc
import TetherCore
import TetherWire

/// Pipelined group commit: a `CommitSink` in front of a durable one (the
/// SQLite store) that does the durable work on a thread of its own.
///
/// The loop thread records commits into the *forming* group, in memory
/// (no SQLite, no I/O). At the end of a loop turn (`endOfTurn`) the forming
/// group is handed to the sync thread, which records it into the inner sink
/// and syncs it (one transaction, one fsync under `--durability full`),
/// while the loop goes on applying the next turn's commits into the next
/// forming group. One group is in flight at a time: what arrives while it
/// syncs becomes the next group, handed over as soon as it is done (so the
/// groups grow with the load, as Redis's `appendfsync always` does).
///
/// Nothing here decides what a client sees: every turn's output is tagged
/// with the group `endOfTurn` returns and written only once `completed`
/// reaches it (`Service.endOfTurn`, `Service.groupsDurable`).
///
/// Threads: every method runs on the loop thread, except what the sync
/// thread does inside `work()`; the `notify` closure is called on the sync
/// thread (the daemon passes a uv_async_send) after each group, under the
/// committer's mutex: once a wait saw a group finished, its notify is done
/// (so the daemon can close its uv_async after `drain`).
public final class GroupCommitter: CommitSink {
    /// One thing the inner sink is told, in the order it happened.
    enum Op {
        case record(Commit, [StateImage])
        case describe(String, Descriptor)
        case compact(UInt64)
    }

    /// A forming group past this many ops waits for the group in flight
    /// (the loop blocks instead of buffering without bound).
    static let maxForming = 100_000

    private let inner: CommitSink
    /// Whether a lone commit with nothing in flight is synced on the loop
    /// thread (see `endOfTurn`); tests of the pipeline turn it off.
    private let syncLoneCommitsHere: Bool

    // The loop thread's side.
    private var forming: [Op] = []
    /// Groups handed to the sync thread, numbered from 1.
    public private(set) var submitted: UInt64 = 0
    /// Groups the loop knows to be durable (≤ submitted).
    public private(set) var completed: UInt64 = 0
    /// Whether the load looks serial: the last group held one commit and
    /// nothing arrived while it synced (one client, one call at a time).
    /// Only then is a lone commit synced on the loop thread: with several
    /// clients a turn often holds one commit too (the first call of a
    /// cohort whose replies were just written), and syncing it here would
    /// stall the rest of the cohort behind it (measured: 16 clients fell
    /// back to the unpipelined 7.6 commits per fsync).
    private var serial = false
    /// Commits in the group in flight.
    private var inFlightCount = 0

    // Shared, under `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var pendingGroup: (id: UInt64, ops: [Op])?
    private var finished: UInt64 = 0
    private var stopping = false
    private var notify: (() -> Void)?
    private var thread: pthread_t?

    /// `notify` is called on the sync thread each time a group is durable
    /// (nil: nobody is told; the owner calls `collect`).
    public init(inner: CommitSink, notify: (() -> Void)? = nil, syncLoneCommitsHere: Bool = true) {
        self.inner = inner
        self.syncLoneCommitsHere = syncLoneCommitsHere
        self.notify = notify
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
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

    public func record(_ commit: Commit, states: [StateImage]) throws {
        forming.append(.record(commit, states))
    }

    public func describe(_ name: String, _ descriptor: Descriptor) throws {
        forming.append(.describe(name, descriptor))
    }

    public func compact(through revision: UInt64) throws {
        forming.append(.compact(revision))
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

    /// The end of a loop turn: hands the forming group over when no group
    /// is in flight. Returns the group that must be durable before the
    /// turn's output may be written: the one holding its commits, or, for
    /// a turn that committed nothing, the newest one already handed over
    /// (the turn may have read values that group made).
    public func endOfTurn() -> UInt64 {
        if forming.isEmpty { return submitted }
        if submitted == completed {
            if forming.count > 1 { serial = false }
            if forming.count == 1 && serial && syncLoneCommitsHere {
                // A lone commit with nothing in flight (one client, one call
                // at a time): sync it here. Handing it over would add two
                // thread wake-ups (the sync thread's, then the loop's
                // uv_async) to a round trip that nothing else overlaps.
                syncHere()
            } else {
                submit()
            }
            return submitted
        }
        serial = false  // commits arrived while a group synced
        if forming.count > GroupCommitter.maxForming {
            waitFor(submitted)
            collect()  // hands the forming group over
            return submitted
        }
        return submitted + 1  // handed over when the group in flight is done
    }

    /// Takes note of the groups the sync thread finished, and hands the
    /// next forming group over. Returns whether `completed` moved.
    @discardableResult
    public func collect() -> Bool {
        pthread_mutex_lock(mutex)
        let done = finished
        pthread_mutex_unlock(mutex)
        guard done > completed else { return false }
        completed = done
        if completed == submitted {
            if forming.isEmpty {
                if inFlightCount == 1 { serial = true }
            } else {
                serial = false
                submit()
            }
        }
        return true
    }

    /// Blocks until everything recorded so far is durable.
    public func drain() {
        while true {
            if completed == submitted && !forming.isEmpty { submit() }
            if completed == submitted { return }
            waitFor(submitted)
            collect()
        }
    }

    /// Records and syncs the forming group on the loop thread: the sync
    /// thread is idle (every group handed to it is finished), so the inner
    /// sink is the loop's for the while, as in `snapshot`.
    private func syncHere() {
        submitted += 1
        let ops = forming
        forming = []
        apply(ops)
        completed = submitted
        pthread_mutex_lock(mutex)
        finished = submitted
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    private func submit() {
        submitted += 1
        let ops = forming
        forming = []
        inFlightCount = ops.count
        pthread_mutex_lock(mutex)
        pendingGroup = (submitted, ops)
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    private func waitFor(_ group: UInt64) {
        pthread_mutex_lock(mutex)
        while finished < group { pthread_cond_wait(changed, mutex) }
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
            while pendingGroup == nil && !stopping { pthread_cond_wait(changed, mutex) }
            guard let group = pendingGroup else {
                pthread_mutex_unlock(mutex)
                return
            }
            pthread_mutex_unlock(mutex)
            apply(group.ops)
            pthread_mutex_lock(mutex)
            pendingGroup = nil
            finished = group.id
            pthread_cond_broadcast(changed)
            notify?()
            pthread_mutex_unlock(mutex)
        }
    }
}
