import CSQLite
import Glibc

/// Copies the store's WAL back into the database file on a thread and a
/// connection of its own, so that no commit waits for it.
///
/// SQLite's automatic checkpoint (every 1,000 WAL pages) runs inside the
/// COMMIT that crosses the threshold: that commit, and every reply waiting
/// for it, also waited for 1,000 pages to be copied and the database file
/// to be synced. The store turns it off (`wal_autocheckpoint=0`) and pokes
/// this thread instead; a PASSIVE checkpoint never blocks the writer (WAL
/// mode: readers and one checkpointer run beside the writer), and the
/// writer starts the WAL over once a checkpoint copied all of it.
final class Checkpointer {
    private let path: String
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let poked = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Broadcast after each checkpoint (`waitForRuns`).
    private let ran = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var wanted = false
    private var stopping = false
    private var thread: pthread_t?
    /// Checkpoints run (for tests and the log).
    private(set) var runs = 0

    init(path: String) {
        self.path = path
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(poked, nil)
        pthread_cond_init(ran, nil)
    }

    deinit {
        stop()
        pthread_cond_destroy(poked)
        pthread_cond_destroy(ran)
        pthread_mutex_destroy(mutex)
        poked.deallocate()
        ran.deallocate()
        mutex.deallocate()
    }

    /// Asks for a checkpoint soon (never waits); starts the thread the first
    /// time, so a store that never grows its WAL costs no thread.
    func poke() {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !stopping else { return }
        wanted = true
        if thread == nil {
            var t = pthread_t()
            let context = Unmanaged.passUnretained(self).toOpaque()  // stop() joins before deinit ends
            let rc = pthread_create(&t, nil, { context in
                Unmanaged<Checkpointer>.fromOpaque(context!).takeUnretainedValue().run()
                return nil
            }, context)
            if rc == 0 { thread = t }  // else the store's hard limit checkpoints inline
        }
        pthread_cond_broadcast(poked)
    }

    /// Checkpoints finished so far (the writer copies what the last one
    /// could not see: SQLiteStore.checkpointIfLarge).
    var completedRuns: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return runs
    }

    /// Blocks until `n` checkpoints have finished (tests).
    func waitForRuns(_ n: Int) {
        pthread_mutex_lock(mutex)
        while runs < n && !stopping { pthread_cond_wait(ran, mutex) }
        pthread_mutex_unlock(mutex)
    }

    /// Ends the thread (a checkpoint under way completes first).
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(poked)
        pthread_cond_broadcast(ran)
        let t = thread
        thread = nil
        pthread_mutex_unlock(mutex)
        if let t { pthread_join(t, nil) }
    }

    private func run() {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            sqlite3_close(db)
            return
        }
        defer { sqlite3_close(db) }
        // Its own connection: the checkpoint syncs the database file
        // unless synchronous is OFF (the default FULL is what we want).
        sqlite3_busy_timeout(db, 0)
        while true {
            pthread_mutex_lock(mutex)
            while !wanted && !stopping { pthread_cond_wait(poked, mutex) }
            if stopping {
                pthread_mutex_unlock(mutex)
                return
            }
            wanted = false
            pthread_mutex_unlock(mutex)
            // BUSY (another checkpoint, or the writer restarting the WAL)
            // is fine: the next poke tries again.
            _ = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            pthread_mutex_lock(mutex)
            runs += 1
            pthread_cond_broadcast(ran)
            pthread_mutex_unlock(mutex)
        }
    }
}
