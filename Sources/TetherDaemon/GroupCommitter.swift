import CDaemonSupport
import Glibc
import TetherCore
import TetherWire

/// Group commit: every commit of a loop turn goes into the store's
/// current SQLite transaction as it is made (on the loop thread), and no
/// output of the turn is written before a sync that covers them is done.
///
/// Pipelined (the default) overlaps the two halves of a sync
/// (`SplitSyncSink`): at the end of each turn the loop thread *commits*
/// the turn's group (SQLite's COMMIT into the WAL, no fsync) and hands its
/// number to the sync thread, which *makes it durable* (one fdatasync of
/// the WAL) while the loop reads and applies the next turns. When that
/// fsync ends the sync thread starts the next at once if a group was
/// committed meanwhile: one fsync covers every turn committed during the
/// one before, as Redis's `appendfsync always` groups, but the loop never
/// stops for it (Redis fsyncs on its main thread). Committing each turn
/// costs a COMMIT per turn instead of one per fsync; leaving the group
/// open until the sync thread was free, and committing it in the loop's
/// uv_async callback, put the loop's turn between two fsyncs again
/// (measured: 64 clients no faster than inline, docs/daemon-performance.md).
/// A store whose COMMIT is durable by itself (`--durability normal`, or
/// SQLite's own FULL) has nothing to overlap: the committer runs inline.
///
/// Inline syncs each turn's group on the loop thread at the end of the
/// turn (`sync`: the COMMIT and its fsync), before its output is written.
///
/// Nothing here decides what a client sees: every turn's output is tagged
/// with the group number `endOfTurn` returns and written only once
/// `completed` reaches it (`Service.endOfTurn`, `Service.groupsDurable`).
///
/// Threads: every method runs on the loop thread, except what the sync
/// thread does inside `work()`; the `notify` closure is called on the sync
/// thread (the daemon passes a uv_async_send) after each sync, under the
/// committer's mutex: once a wait saw a group finished, its notify is done
/// (so the daemon can close its uv_async after `drain`).
public final class GroupCommitter: CommitSink {
    /// Where a group is made durable.
    public enum Mode: String, Sendable, CaseIterable {
        /// Its fsync on the sync thread, while the loop applies the next
        /// turns (with an inner `SplitSyncSink` that syncs in two halves;
        /// else inline).
        case pipelined
        /// Its COMMIT and fsync on the loop thread at the end of each
        /// turn, before its output is written: no thread, no hand-over.
        case inline
    }

    /// The sync thread's scheduler slice (the kernel's minimum, 0.1 ms).
    static let syncThreadSlice: UInt64 = 100_000

    private let inner: CommitSink
    /// `inner`, when pipelined.
    private var split: SplitSyncSink?
    /// Whether a lone commit of a serial load is synced on the loop thread
    /// (see `endOfTurn`); tests of the pipeline turn it off.
    private let syncLoneCommitsHere: Bool
    public private(set) var mode: Mode

    // The loop thread's side.
    /// Commits and other ops given to the inner sink since its last commit
    /// (the open group).
    private var open = 0
    /// Groups committed (and handed over, or synced here), numbered from 1.
    public private(set) var submitted: UInt64 = 0
    /// Groups the loop knows to be durable (≤ submitted).
    public private(set) var completed: UInt64 = 0
    /// Whether the newest group submitted held one op.
    private var newestWasLone = false
    /// Whether the load looks serial: the last group synced held one
    /// commit and nothing was submitted after it (one client, one call at
    /// a time). Only then is a lone commit synced on the loop thread: with
    /// several clients a turn often holds one commit too (the first call
    /// of a cohort whose replies were just written), and syncing it here
    /// would stall the rest of the cohort behind it (measured: 16 clients
    /// fell back to the unpipelined 7.6 commits per fsync).
    private var serial = false

    // Shared, under `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// The newest group handed to the sync thread.
    private var requested: UInt64 = 0
    /// The newest group made durable.
    private var finished: UInt64 = 0
    private var stopping = false
    private var notify: (() -> Void)?
    private var thread: pthread_t?

    /// `notify` is called on the sync thread each time a group is durable
    /// (nil: nobody is told; the owner calls `collect`).
    public init(inner: CommitSink, mode: Mode = .pipelined, notify: (() -> Void)? = nil, syncLoneCommitsHere: Bool = true) {
        self.inner = inner
        self.syncLoneCommitsHere = syncLoneCommitsHere
        self.notify = notify
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
        guard mode == .pipelined, let split = inner as? SplitSyncSink, split.syncsInTwoHalves else {
            self.mode = .inline  // no sync thread
            split = nil
            return
        }
        self.mode = .pipelined
        self.split = split
        var t = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()  // the thread's reference, released when it ends
        let rc = pthread_create(&t, nil, { context in
            let committer = Unmanaged<GroupCommitter>.fromOpaque(context!).takeRetainedValue()
            committer.work()
            return nil
        }, context)
        guard rc == 0 else {
            // No thread to be had (a process or memory limit): the groups
            // are synced on the loop thread instead, slower but the same.
            Unmanaged.passUnretained(self).release()  // the thread's reference
            fputs("tetherd: cannot start the store's sync thread (\(String(cString: strerror(rc)))): syncing inline\n", stderr)
            self.mode = .inline
            self.split = nil
            return
        }
        thread = t
    }

    /// A group the store could not commit (a full disk: SQLITE_FULL, or
    /// any failure before its COMMIT took). Nothing of it is on disk; the
    /// owner rolls back what it applied (`Service.groupFailed`).
    public struct GroupFailure: Error, CustomStringConvertible {
        public let underlying: Error
        public var description: String { "\(underlying)" }
    }

    /// The daemon cannot go on truthfully: a group committed but could not
    /// be made durable (a failed fsync: the kernel may have dropped the
    /// pages it could not write, so retrying proves nothing). One line on
    /// stderr, then the process ends at once with status 75
    /// (EX_TEMPFAIL); nothing of the group was acknowledged, and a restart
    /// recovers what the disk holds (docs/robustness.md, "A full disk").
    static func stop(_ what: String, _ error: Error) -> Never {
        fputs("tetherd: error message=\"\(what): \(error)\" (stopping: nothing unsynced was acknowledged)\n", stderr)
        fflush(stderr)
        _exit(75)
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    /// Where group sizes and fsync times are counted (set once, before
    /// the first commit; Metrics.swift).
    public var metrics: Metrics?

    /// Who is told, on the sync thread, that a group is durable.
    public func setNotify(_ notify: (() -> Void)?) {
        pthread_mutex_lock(mutex)
        self.notify = notify
        pthread_mutex_unlock(mutex)
    }

    /// Makes everything recorded durable, then ends the sync thread.
    public func close() {
        try? drain()  // a group that fails here was never acknowledged
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }

    // MARK: CommitSink (the loop thread)

    // Every op goes to the inner sink at once, into its open transaction;
    // only the sync waits. (Queuing them as values for a thread to replay
    // was ~0.9 k instructions a commit, callgrind.)

    public func record(_ commit: Commit, states: [StateImage]) throws {
        open += 1
        try inner.record(commit, states: states)
    }

    public func record(_ commit: Commit, state: StateImage) throws {
        open += 1
        try inner.record(commit, state: state)
    }

    public func describe(_ name: String, _ descriptor: Descriptor) throws {
        open += 1
        try inner.describe(name, descriptor)
    }

    /// The inner sink syncs what it compacts itself: the sync thread is
    /// idle first, so only one thread syncs at a time.
    public func compact(through revision: UInt64) throws {
        try drain()
        try inner.compact(through: revision)
    }

    /// Every op recorded so far durable, waiting for it (blocks the loop).
    public func sync() throws {
        try drain()
    }

    /// A consistent copy: everything recorded so far is made durable first;
    /// the sync thread is idle meanwhile.
    public func snapshot(to path: String) throws -> UInt64 {
        try drain()
        return try inner.snapshot(to: path)
    }

    /// Gives up the open group after the store refused it (or a record
    /// into it failed): its transaction is rolled back, and what the store
    /// now holds is returned (`SQLiteStore.abandonGroup`); nil when the
    /// inner sink cannot say (then the daemon cannot recover and stops).
    public func abandonGroup() throws -> SQLiteStore.Contents? {
        open = 0
        guard let store = inner as? SQLiteStore else { return nil }
        return try store.abandonGroup()
    }

    // MARK: Turns and groups (the loop thread)

    /// The end of a loop turn. Returns the group that must be durable
    /// before the turn's output may be written: the one holding its
    /// commits, or, for a turn that committed nothing, the newest one (the
    /// turn may have read values it made).
    ///
    /// Throws when the store could not commit the group: then nothing of
    /// it is on disk, no group number was used, and the owner must call
    /// `abandonGroup` and undo what the group applied.
    public func endOfTurn() throws(GroupFailure) -> UInt64 {
        guard open > 0 else { return submitted }
        if mode == .inline {
            try syncHere()
            return submitted
        }
        if completed == submitted && open == 1 && serial && syncLoneCommitsHere {
            // A lone commit with nothing in flight (one client, one call at
            // a time): sync it here. Handing it over would add two thread
            // wake-ups (the sync thread's, then the loop's uv_async) to a
            // round trip that nothing else overlaps.
            try syncHere()
            pthread_mutex_lock(mutex)  // the sync thread sleeps: nothing to tell it
            requested = submitted
            finished = submitted
            pthread_mutex_unlock(mutex)
            return submitted
        }
        serial = false
        try submit()
        return submitted
    }

    /// Takes note of the groups the sync thread made durable, and hands
    /// it the open group if it is now idle. Returns whether `completed`
    /// moved.
    @discardableResult
    public func collect() -> Bool {
        pthread_mutex_lock(mutex)
        let done = finished
        pthread_mutex_unlock(mutex)
        guard done > completed else { return false }
        let lone = done == completed + 1 && newestWasLone
        completed = done
        if completed == submitted && lone { serial = true }
        return true
    }

    /// Blocks until everything recorded so far is durable. Throws as
    /// `endOfTurn` does when the open group could not be committed (the
    /// groups before it are durable when it returns).
    public func drain() throws(GroupFailure) {
        if mode == .inline {
            if open > 0 { try syncHere() }
            return
        }
        if open > 0 {
            do throws(GroupFailure) { try submit() } catch {
                waitFor(submitted)
                collect()
                throw error
            }
        }
        waitFor(submitted)
        collect()
    }

    /// Commits the open group and syncs it on the loop thread (inline, or
    /// a serial load's lone commit: the sync thread is idle).
    private func syncHere() throws(GroupFailure) {
        if let split {
            try commitGroup(split)
            do { try timed { try split.makeDurable() } } catch { GroupCommitter.stop("the store failed to sync", error) }
        } else if let store = inner as? SplitSyncSink {
            try commitGroup(store)
            do { try timed { try store.makeDurable() } } catch { GroupCommitter.stop("the store failed to sync", error) }
        } else {
            do { try inner.sync() } catch { open = 0; throw GroupFailure(underlying: error) }
        }
        metrics?.grouped(open)
        newestWasLone = open == 1
        open = 0
        submitted += 1
        completed = submitted
    }

    /// Runs an fsync, counting how long it took when metrics are kept.
    private func timed(_ sync: () throws -> Void) throws {
        guard let metrics else { return try sync() }
        var start = timespec(), end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        try sync()
        clock_gettime(CLOCK_MONOTONIC, &end)
        metrics.synced(seconds: Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9)
    }

    /// The COMMIT of the open group. A failure before the COMMIT took (the
    /// store's transaction still open) is a GroupFailure; one after it (the
    /// group is in the WAL, but the store says it failed) cannot be undone
    /// and stops the daemon.
    private func commitGroup(_ sink: SplitSyncSink) throws(GroupFailure) {
        do {
            try sink.commit()
        } catch {
            if let store = sink as? SQLiteStore, !store.hasOpenGroup {
                GroupCommitter.stop("the store failed after its COMMIT", error)
            }
            open = 0
            throw GroupFailure(underlying: error)
        }
    }

    /// Commits the open group and hands it to the sync thread.
    private func submit() throws(GroupFailure) {
        try commitGroup(split!)
        metrics?.grouped(open)
        newestWasLone = open == 1
        open = 0
        submitted += 1
        pthread_mutex_lock(mutex)
        requested = submitted
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    private func waitFor(_ group: UInt64) {
        pthread_mutex_lock(mutex)
        while finished < group { pthread_cond_wait(changed, mutex) }
        pthread_mutex_unlock(mutex)
    }

    // MARK: The sync thread

    private func work() {
        _ = tetherd_name_thread("tetherd-sync")
        // Its fsync's end should wake it at once, not when the busy loop
        // thread's slice ends (up to ~3 ms with the default slice): every
        // group waits for it. Measured in docs/daemon-performance.md.
        _ = tetherd_request_short_slice(GroupCommitter.syncThreadSlice)
        pthread_mutex_lock(mutex)
        while true {
            while requested <= finished && !stopping { pthread_cond_wait(changed, mutex) }
            if requested <= finished { break }  // stopping, and everything synced
            let group = requested
            pthread_mutex_unlock(mutex)
            do {
                try timed { try split!.makeDurable() }
            } catch {
                // Replies wait for this group: none can be sent truthfully.
                // The daemon stops; the store decides what survives.
                GroupCommitter.stop("the store failed to sync", error)
            }
            pthread_mutex_lock(mutex)
            finished = group
            pthread_cond_broadcast(changed)
            notify?()
        }
        pthread_mutex_unlock(mutex)
    }
}
