import CSQLite
import Glibc
import Synchronization
import TetherCore
import TetherWire

/// tetherd's durable store: SQLite in WAL mode, one file in the data
/// directory. It holds every state's value, modified revision and
/// descriptor, the daemon's revision and epoch, and the recent commits a
/// Watch resumes from (the log, pruned to the daemon's log capacity).
///
/// Group commit: `record` writes a commit into the SQLite transaction of
/// the current group; `sync` commits that transaction, once, before the
/// group's replies are written. With `.full` durability that commit is an
/// fsync (a power cut loses nothing acknowledged); with `.normal` the WAL
/// is synced only at checkpoints (a process crash loses nothing
/// acknowledged, a power cut may lose the last acknowledged commits).
///
/// One page per commit: a commit writes only its `log` row, which carries
/// the states as the commit left them (`images`). The `states` table is
/// brought up to date in batches (`flushEvery` commits, inside a group's
/// transaction, so atomically with the `applied` revision it records), and
/// `load` replays the images of the log rows after `applied`. The log is
/// never pruned past `applied`: every commit is in one of the two tables.
/// (Measured: 2.04 WAL frames per one-state commit when each commit also
/// rewrote its `states` row; see docs/daemon-performance.md.)
public final class SQLiteStore: SplitSyncSink {
    public enum Durability: String, Sendable, CaseIterable {
        case full, normal
    }

    /// Who makes a `.full` store's commits survive a power cut.
    public enum WALSync: Sendable {
        /// SQLite, inside each COMMIT (`synchronous=FULL`): `commit` is
        /// durable when it returns and `makeDurable` has nothing to do.
        case inCommit
        /// `makeDurable`, after the COMMIT: SQLite runs with
        /// `synchronous=NORMAL` (it syncs the WAL only around checkpoints
        /// and when the WAL starts over) and `makeDurable` fdatasyncs the
        /// WAL file, which holds every committed frame (SQLite replays
        /// each commit whose frames are whole and checksummed after a
        /// crash). The group commit runs it on its sync thread while the
        /// loop commits the next group (docs/daemon.md, "The store").
        case separate
    }

    /// What the store held when it was opened.
    public struct Contents {
        public var epoch: String?
        public var revision: UInt64 = 0
        public var states: [StateImage] = []
        /// The retained commits, oldest first.
        public var log: [Commit] = []
        /// Rows that could not be read (docs/robustness.md, "One depth
        /// limit"): a state's row, by state name, and why; the store opens
        /// anyway, without them. The daemon logs each, and answers a read
        /// of such a state with an error naming it (`Store.quarantined`).
        public var quarantined: [(name: String, reason: String)] = []
        /// Log rows that could not be read: their revision and why. The
        /// log the daemon keeps starts after the newest of them (a watch
        /// from before it gets a resync).
        public var unreadableLogRows: [(revision: UInt64, reason: String)] = []
        /// `load(salvaging: true)`: what could not be read at all (a table
        /// SQLite found damaged part way, the meta table), and why.
        public var dropped: [String] = []
    }

    public let path: String
    private var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// The statements of every commit, held here once prepared: finding
    /// them in `statements` hashed their SQL text each time (~1.4 k
    /// instructions a commit, docs/daemon-performance.md).
    private var beginStatement: OpaquePointer?
    private var commitStatement: OpaquePointer?
    /// The pending log rows' `changes` and `images` text (reused: no
    /// allocation per commit).
    private var rowText = ByteWriter()
    private var inTransaction = false
    private let logCapacity: Int
    /// Bytes of log rows (their changes and images text) kept on disk, and
    /// of commits loaded into memory at start (`--log-bytes`, issue 30 §3):
    /// the oldest rows are deleted as newer ones pass it, as the daemon's
    /// in-memory log drops its oldest commits.
    private let logBytes: Int
    /// Each log row's (last) revision and bytes, oldest first, from
    /// `rowHead` (the rows on disk, as far as this store wrote or read them).
    private var rowLast: [UInt64] = []
    private var rowSize: [Int] = []
    private var rowHead = 0
    /// Bytes of the rows from `rowHead`.
    public private(set) var logRowBytes = 0
    /// Bytes of the rows after `applied` (not prunable until a flush).
    private var unappliedBytes = 0
    private var lastRevision: UInt64 = 0
    /// The revision up to which the `states` table is current.
    public private(set) var applied: UInt64 = 0
    /// States changed by commits after `applied`, as the newest of them
    /// left each (written to `states` by the next flush).
    private var unapplied: [String: StateImage] = [:]
    /// Commits after `applied`.
    private var unappliedCommits = 0
    /// How many commits may wait before `states` is brought up to date.
    let flushEvery: Int
    /// The log rows up to here are deleted (pruning goes in batches).
    private var prunedThrough: UInt64 = 0
    /// WAL pages after the last commit (SQLite's WAL hook says).
    public private(set) var walPages: Int32 = 0
    /// Past this many WAL pages the writer copies the WAL back into the
    /// database after its commit (SQLite's own automatic threshold by
    /// default), so the WAL starts over at its beginning with the next
    /// commit. See `checkpointIfLarge`.
    let checkpointPages: Int32
    /// Checkpoints run (for tests).
    public private(set) var checkpoints = 0
    /// `.full` with `WALSync.separate`: `makeDurable` syncs the WAL.
    private let syncsWALItself: Bool
    public var syncsInTwoHalves: Bool { syncsWALItself }
    /// The WAL file, opened with the store (before any other thread can
    /// call `makeDurable`). SQLite keeps the same file
    /// while the connection is open (exclusive locking: it starts the
    /// WAL over in place after a checkpoint, and deletes it only when
    /// closing); `checkpointIfLarge` checks that it did.
    private var walFD: Int32 = -1

    /// `exclusive`: the connection takes SQLite's locks once and keeps
    /// them (`locking_mode=EXCLUSIVE`, the WAL index in this process's
    /// memory): no other connection can read the store while this one is
    /// open (a second tetherd on the same data directory fails to load
    /// it). Per group commit that saves six fcntl locks (WAL read and
    /// write locks taken and dropped) and the shared WAL index's checks
    /// (~1.3 k instructions of a one-commit group's BEGIN and COMMIT,
    /// docs/daemon-performance.md). Off only where a test or the fuzzer
    /// reads the store through a second connection while it is open.
    public init(directory: String, durability: Durability, logCapacity: Int, logBytes: Int = Int.max,
                checkpointPages: Int32 = 1000, flushEvery: Int = 256, exclusive: Bool = true,
                walSync: WALSync = .inCommit) throws(TetherError) {
        self.logBytes = max(1, logBytes)
        path = directory + "/tether.db"
        syncsWALItself = durability == .full && walSync == .separate
        self.flushEvery = max(1, flushEvery)
        self.checkpointPages = max(1, checkpointPages)
        self.logCapacity = max(1, logCapacity)
        // The store is 0600, whatever the umask: made so here (SQLite would
        // make it 0644), or made so if an older daemon left it readable.
        // SQLite gives the WAL and SHM it makes the database's mode.
        let made = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if made >= 0 {
            fchmod(made, 0o600)
            close(made)
        }
        for suffix in ["-wal", "-shm", "-journal"] { DataDirectory.restrict(path + suffix) }
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        db = handle
        guard rc == SQLITE_OK else {
            let why = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            db = nil
            throw TetherError(.loopFailure, "cannot open the store \(path): \(why)")
        }
        // Before the first access in WAL mode, or the WAL index goes to
        // shared memory and every transaction locks it.
        if exclusive { try exec("PRAGMA locking_mode=EXCLUSIVE") }
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=\(durability == .full && !syncsWALItself ? "FULL" : "NORMAL")")
        // No checkpoint inside a commit's COMMIT: the writer runs its own
        // once the COMMIT is done (checkpointIfLarge).
        try exec("PRAGMA wal_autocheckpoint=0")
        sqlite3_wal_hook(db, { context, _, _, pages in
            Unmanaged<SQLiteStore>.fromOpaque(context!).takeUnretainedValue().walPages = pages
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
        // WITHOUT ROWID: a state is one B-tree entry keyed by its name (a
        // rowid table with a text key changes the table and its index:
        // measured 4.45 WAL pages per one-state commit before).
        try exec("""
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS states(name TEXT PRIMARY KEY, value TEXT NOT NULL,
                modified INTEGER NOT NULL, descriptor TEXT NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS log(revision INTEGER PRIMARY KEY, tag TEXT, origin INTEGER,
                changes TEXT NOT NULL, images TEXT, commits INTEGER);
            """)
        // A store made before `images` (its states table was written with
        // every commit) gets the column; its rows have none to replay.
        var hasImages = false, hasCommits = false
        try query("PRAGMA table_info(log)") { (row) throws(TetherError) in
            if row.text(1) == "images" { hasImages = true }
            if row.text(1) == "commits" { hasCommits = true }
        }
        if !hasImages { try exec("ALTER TABLE log ADD COLUMN images TEXT") }
        // A store made before group rows: every row it has is one commit.
        if !hasCommits { try exec("ALTER TABLE log ADD COLUMN commits INTEGER") }
        // SQLite made the WAL file when the schema's statements first read
        // in WAL mode.
        if syncsWALItself { try openWAL() }
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close(db)
        if walFD >= 0 { Glibc.close(walFD) }
    }

    // MARK: The marker (StoreMarker, in DataDirectory.swift)

    /// The newest revision COMMITted (loop thread), for `makeDurable` on
    /// the sync thread: what it syncs covers every commit before it read it.
    private let committedRevision = Atomic<UInt64>(0)
    /// Set once the daemon has chosen its epoch (`keepMarker`): from then
    /// on the marker follows the revisions made durable.
    private var markerEpoch: String?
    private var markerDirectory = ""
    /// Only the thread making groups durable touches these (one at a time:
    /// SplitSyncSink's contract), or the loop when the commit is durable
    /// by itself.
    private var markedRevision: UInt64 = 0
    private var markedAt: UInt64 = 0
    /// Nanoseconds between two updates of the marker while commits are
    /// made (each costs two fsyncs, off the loop when pipelined). 0: after
    /// every group (tests).
    private var markerInterval: UInt64 = 1_000_000_000

    /// Writes the marker (epoch, `revision`) now and keeps it following
    /// the revisions made durable, at most once per `interval` seconds.
    /// A marker that cannot be written (a full disk) is no reason not to
    /// start: the error is returned for the log, and the next update
    /// tries again (the old marker stays whole meanwhile).
    @discardableResult
    public func keepMarker(in directory: String, epoch: String, revision: UInt64, interval: Double = 1) -> TetherError? {
        markerDirectory = directory
        markerEpoch = epoch
        markerInterval = UInt64(max(0, interval) * 1e9)
        committedRevision.store(lastRevision, ordering: .releasing)
        markedAt = SQLiteStore.monotonicNow()
        do {
            try StoreMarker(epoch: epoch, revision: revision).write(in: directory)
            markedRevision = revision
            return nil
        } catch {
            markedAt = 0
            return error
        }
    }

    /// At a clean stop, once every group is durable (the committer closed):
    /// the marker holds the last revision.
    public func updateMarker() throws(TetherError) {
        guard let markerEpoch, lastRevision != markedRevision else { return }
        try StoreMarker(epoch: markerEpoch, revision: lastRevision).write(in: markerDirectory)
        markedRevision = lastRevision
    }

    /// Every commit up to `revision` is durable: the marker says so when
    /// its interval has passed. A marker that cannot be written is said on
    /// stderr, never a reason to fail the group (it only makes the check
    /// at the next start weaker).
    private func madeDurable(through revision: UInt64) {
        guard let markerEpoch, revision > markedRevision else { return }
        let now = SQLiteStore.monotonicNow()
        guard now &- markedAt >= markerInterval else { return }
        markedAt = now
        do {
            try StoreMarker(epoch: markerEpoch, revision: revision).write(in: markerDirectory)
            markedRevision = revision
        } catch {
            fputs("tetherd: cannot update the store's marker: \(error.message)\n", stderr)
        }
    }

    static func monotonicNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    // MARK: Opening

    /// Everything the store holds (the daemon restores from it): the
    /// `states` table, with the images of the log rows after `applied`
    /// replayed onto it.
    public func load(salvaging: Bool = false) throws(TetherError) -> Contents {
        var contents = Contents()
        var appliedText: String?
        /// A table SQLite cannot read (damaged pages) fails the load with
        /// an error naming it; salvaging, what it read before the damage is
        /// kept and the rest listed in `dropped`.
        func reading(_ table: String, _ body: () throws(TetherError) -> Void) throws(TetherError) {
            do {
                try body()
            } catch {
                let why = "table \(table): \(error.message)"
                guard salvaging else { throw TetherError(error.code, "the store \(path) cannot be read: \(why) (tetherd --salvage keeps what is readable, under a new epoch)") }
                contents.dropped.append(why)
            }
        }
        try reading("meta") { () throws(TetherError) in try query("SELECT key, value FROM meta") { (row) throws(TetherError) in
            switch row.text(0) {
            case "epoch": contents.epoch = row.text(1)
            case "revision": contents.revision = UInt64(row.text(1)) ?? 0
            case "applied": appliedText = row.text(1)
            default: break
            }
        } }
        try reading("states") { () throws(TetherError) in try query("SELECT name, value, modified, descriptor FROM states ORDER BY name") { (row) throws(TetherError) in
            let name = row.text(0)
            do throws(TetherError) {
                contents.states.append(StateImage(name: name, value: try SQLiteStore.decodeValue(row.text(1), name: name),
                                                  modified: UInt64(bitPattern: row.int(2)),
                                                  descriptor: try SQLiteStore.decodeDescriptor(row.text(3), name: name)))
            } catch {
                // One bad row never keeps the store from opening.
                contents.quarantined.append((name, "table states, state '\(name)': \(error.message)"))
            }
        } }
        // No `applied`: the states table was never flushed, so every image
        // is newer than it (a store made before images has none to replay).
        let applied = appliedText.flatMap { UInt64($0) } ?? 0
        rowLast.removeAll()
        rowSize.removeAll()
        rowHead = 0
        logRowBytes = 0
        unappliedBytes = 0
        // The commits kept for watches are the newest within the log's
        // bounds (count and bytes), as the daemon's log would keep them:
        // the older ones are released as soon as newer ones pass the
        // bound (a restart over 1,000 commits of 1.5 MB held them all).
        var logHead = 0
        var keptBytes = 0
        func keep(_ commit: Commit) {
            contents.log.append(commit)
            keptBytes += commit.approximateBytes
            while contents.log.count - logHead > 1
                    && (keptBytes > logBytes || contents.log.count - logHead > logCapacity) {
                keptBytes -= contents.log[logHead].approximateBytes
                contents.log[logHead] = Commit(revision: 0, changes: [], tag: nil, origin: nil)  // its values go now
                logHead += 1
            }
            if logHead > 1024 && logHead * 2 > contents.log.count {
                contents.log.removeFirst(logHead)
                logHead = 0
            }
        }
        var replayed: [String: StateImage] = [:]
        var newestReplayed: UInt64 = 0
        func readLogRow(_ row: Statement, _ revision: UInt64) throws(TetherError) {
            if !row.isNull(5) && row.int(5) > 1 {
                // A group row: its commits, untagged and consecutive, end at `revision`.
                // A group whose commits are all in the states table already
                // needs only its changes (for the log): its images, most of
                // a group's bytes, are not parsed (they were ~half of a
                // restart with a full log, callgrind).
                for (commit, images) in try SQLiteStore.decodeGroup(changes: row.text(3), images: revision > applied ? row.text(4) : nil,
                                                                   commits: row.int(5), last: revision) {
                    keep(commit)
                    if commit.revision > applied {
                        for image in images { replayed[image.name] = image }
                        newestReplayed = commit.revision
                    }
                }
                return
            }
            let commit = Commit(revision: revision, changes: try SQLiteStore.decodeChanges(row.text(3), revision: revision),
                                tag: row.isNull(1) ? nil : row.text(1),
                                origin: row.isNull(2) ? nil : UInt64(bitPattern: row.int(2)))
            keep(commit)
            if revision > applied && !row.isNull(4) {
                for image in try SQLiteStore.decodeImages(try Value(json: row.text(4), maxDepth: SQLiteStore.rowDepth), of: commit) {
                    replayed[image.name] = image
                }
                newestReplayed = revision
            }
        }
        try reading("log") { () throws(TetherError) in try query("SELECT revision, tag, origin, changes, images, commits FROM log ORDER BY revision") { (row) throws(TetherError) in
            let revision = UInt64(bitPattern: row.int(0))
            let size = row.byteCount(3) + row.byteCount(4)
            rowLast.append(revision)
            rowSize.append(size)
            logRowBytes += size
            if revision > applied { unappliedBytes += size }
            do throws(TetherError) {
                // Revisions start at 1; a damaged row's 0 or negative one
                // would make the log's arithmetic wrap.
                guard row.int(0) >= 1 else {
                    throw TetherError(.badJSON, "revision \(row.int(0)) is not a commit's")
                }
                try readLogRow(row, revision)
            } catch {
                // The log resumes watches only after it: no gap is ever
                // replayed as if it were whole.
                contents.unreadableLogRows.append((revision, "table log, revision \(revision): \(error.message)"))
                contents.log.removeAll()
                logHead = 0
                keptBytes = 0
            }
        } }
        if logHead > 0 { contents.log.removeFirst(logHead) }
        if !replayed.isEmpty {
            // A newer image replaces a row that could not be read.
            contents.quarantined.removeAll { replayed[$0.name] != nil }
            var byName: [String: Int] = [:]
            byName.reserveCapacity(contents.states.count)  // a million: no rehash on the way
            for (i, s) in contents.states.enumerated() { byName[s.name] = i }
            var added = false
            for image in replayed.values {
                if let i = byName[image.name] {
                    contents.states[i] = image
                } else if image.value != nil {
                    contents.states.append(image)
                    added = true
                }
            }
            contents.states.removeAll { $0.value == nil }
            if added { contents.states.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) } }
        }
        // The newest commit is always in the log; states' modified covers
        // a store whose log was emptied by hand; meta's revision (written
        // by stores before this one, and by restore) the rest.
        try reading("log") { () throws(TetherError) in try query("SELECT MAX(revision) FROM log") { (row) throws(TetherError) in
            if !row.isNull(0) && row.int(0) > 0 { contents.revision = max(contents.revision, UInt64(bitPattern: row.int(0))) }
        } }
        try reading("states") { () throws(TetherError) in try query("SELECT MAX(modified) FROM states") { (row) throws(TetherError) in
            if !row.isNull(0) && row.int(0) > 0 { contents.revision = max(contents.revision, UInt64(bitPattern: row.int(0))) }
        } }
        // The first commit the log holds (a group row's first is its
        // revision less its other commits). A damaged row may say 0 or
        // less, or more than the revision: clamped, never a trap.
        prunedThrough = contents.revision
        try reading("log") { () throws(TetherError) in try query("SELECT MIN(revision - COALESCE(commits, 1) + 1) FROM log") { (row) throws(TetherError) in
            if !row.isNull(0) {
                let first = row.int(0)
                prunedThrough = first <= 0 ? 0 : min(UInt64(first) - 1, contents.revision)
            }
        } }
        lastRevision = contents.revision
        // What was replayed goes to the states table with the next flush.
        self.applied = applied
        unapplied = replayed
        unappliedCommits = replayed.isEmpty ? 0 : Int(clamping: newestReplayed - applied)
        return contents
    }

    /// Records the epoch of a new store (before anything else).
    public func start(epoch: String) throws(TetherError) {
        try begin()
        try run("INSERT OR REPLACE INTO meta(key, value) VALUES('epoch', ?1)") { (s) throws(TetherError) in try s.bind(1, epoch) }
        try commitBegun()
    }

    // MARK: CommitSink

    public func record(_ commit: Commit, states: [StateImage]) throws {
        try begin()
        let start = rowText.count
        try LogRowText.commit(commit.changes, into: &rowText)
        let changesEnd = rowText.count
        try LogRowText.images(states, into: &rowText)
        for image in states { unapplied[image.name] = image }
        try pend(commit, start: start, changesEnd: changesEnd)
    }

    public func record(_ commit: Commit, state: StateImage) throws {
        try begin()
        let start = rowText.count
        try LogRowText.commit(commit.changes, into: &rowText)
        let changesEnd = rowText.count
        if LogRowText.imageFollows(from: commit, state) {
            rowText.append(LogRowText.derivedImages)
        } else {
            try LogRowText.images(of: state, into: &rowText)
        }
        unapplied[state.name] = state
        try pend(commit, start: start, changesEnd: changesEnd)
    }

    /// The commit's row, its text written, waits for its INSERT.
    private func pend(_ commit: Commit, start: Int, changesEnd: Int) throws(TetherError) {
        pendingRows.append(PendingRow(revision: commit.revision, tag: commit.tag, origin: commit.origin,
                                      start: start, changesEnd: changesEnd, end: rowText.count))
        if pendingRows.count == SQLiteStore.rowsPerInsert { try insertPendingRows() }
        unappliedCommits += 1
        // The revision is not written per commit (a page per commit): the
        // log always holds the newest commit (pruning and Compact keep it),
        // and load() takes the highest revision it finds.
        lastRevision = commit.revision
    }

    /// Log rows recorded and not yet inserted, their text in `rowText`.
    /// A group's rows go in with one INSERT per up to `rowsPerInsert`
    /// (`VALUES (…),(…)`): one statement per row cost its setup, cursor
    /// and halt each time (~1.5 k of its ~4.3 k instructions, callgrind).
    /// They are inserted before anything else reads or changes the
    /// database (every other CommitSink method, and the COMMIT).
    private struct PendingRow {
        let revision: UInt64
        let tag: String?
        let origin: UInt64?
        let start: Int, changesEnd: Int, end: Int
    }

    private var pendingRows: [PendingRow] = []
    /// (64: a group of 64 clients' commits, ~40, is one statement.)
    static let rowsPerInsert = 64
    /// `insertStatements[k]`: the INSERT of k rows, prepared once needed;
    /// `untaggedInserts[k]` leaves out `tag` and `origin` (NULL, as bound
    /// NULLs store them), for rows that have none, nearly all: two
    /// parameters fewer to bind and copy per row (~200 instructions).
    private var insertStatements = [OpaquePointer?](repeating: nil, count: rowsPerInsert + 1)
    private var untaggedInserts = [OpaquePointer?](repeating: nil, count: rowsPerInsert + 1)

    private func insertPendingRows() throws(TetherError) {
        if try insertGroupRow() { return }
        var done = 0
        while done < pendingRows.count {
            let k = min(SQLiteStore.rowsPerInsert, pendingRows.count - done)
            var tagged = false
            for i in done..<(done + k) where pendingRows[i].tag != nil || pendingRows[i].origin != nil { tagged = true }
            let s = Statement(raw: try insertStatement(rows: k, tagged: tagged))
            let perRow: Int32 = tagged ? 5 : 3
            for i in 0..<k {
                let row = pendingRows[done + i]
                var column = perRow * Int32(i) + 1
                try s.bind(column, Int64(bitPattern: row.revision))
                if tagged {
                    try s.bind(column + 1, row.tag)
                    try s.bind(column + 2, row.origin.map { Int64(bitPattern: $0) })
                    column += 2
                }
                // Bound without a copy: the step reads them before rowText changes.
                try s.bind(column + 1, static: rowText.bytes(row.start, row.changesEnd))
                try s.bind(column + 2, static: rowText.bytes(row.changesEnd, row.end))
            }
            let rc = sqlite3_step(s.raw)
            // No sqlite3_clear_bindings: every parameter is bound again before the next step.
            sqlite3_reset(s.raw)
            guard rc == SQLITE_DONE else {
                throw TetherError(.loopFailure, "the store \(path): \(String(cString: sqlite3_errmsg(db)))")
            }
            for i in done..<(done + k) { noteRow(pendingRows[i].revision, pendingRows[i].end - pendingRows[i].start) }
            done += k
        }
        pendingRows.removeAll(keepingCapacity: true)
        rowText.removeAll()
    }

    /// The pending rows as one group row, when there are several, all
    /// untagged and of consecutive revisions (a group's commits nearly
    /// always are): `revision` the last one's, `commits` how many,
    /// `changes` and `images` arrays of each commit's (what its own row
    /// would hold), in order. SQLite's cost is per row, ~3.2 k instructions
    /// (the VDBE, the rowid seek, the cell's insert): a row per commit paid
    /// it ~40 times per group at 64 clients (docs/daemon-performance.md).
    /// False, with nothing done, for anything else (inserted a row each).
    private func insertGroupRow() throws(TetherError) -> Bool {
        let k = pendingRows.count
        guard k > 1 else { return false }
        var changesBytes = k + 1, imagesBytes = k + 1
        for i in 0..<k {
            guard pendingRows[i].tag == nil, pendingRows[i].origin == nil,
                  i == 0 || pendingRows[i].revision == pendingRows[i - 1].revision &+ 1 else { return false }
            changesBytes += pendingRows[i].changesEnd - pendingRows[i].start
            imagesBytes += pendingRows[i].end - pendingRows[i].changesEnd
        }
        // A group row never passes what SQLite stores in one value (its
        // length limit, 1e9 bytes by default: a bind past it failed and
        // left NULL, issue 36): the group is split, a row per commit.
        if max(changesBytes, imagesBytes) > Int(sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1)) { return false }
        groupChanges.removeAll()
        groupImages.removeAll()
        groupChanges.append(UInt8(ascii: "["))
        groupImages.append(UInt8(ascii: "["))
        for i in 0..<k {
            if i > 0 {
                groupChanges.append(UInt8(ascii: ","))
                groupImages.append(UInt8(ascii: ","))
            }
            let row = pendingRows[i]
            groupChanges.append(UnsafeRawBufferPointer(rowText.bytes(row.start, row.changesEnd)))
            groupImages.append(UnsafeRawBufferPointer(rowText.bytes(row.changesEnd, row.end)))
        }
        groupChanges.append(UInt8(ascii: "]"))
        groupImages.append(UInt8(ascii: "]"))
        let last = pendingRows[k - 1].revision
        try run(&groupInsert, "INSERT INTO log(revision, changes, images, commits) VALUES (?1, ?2, ?3, ?4)") { (s) throws(TetherError) in
            try s.bind(1, Int64(bitPattern: last))
            // Bound without a copy: the step reads them before they change.
            try s.bind(2, static: groupChanges.bytes(0, groupChanges.count))
            try s.bind(3, static: groupImages.bytes(0, groupImages.count))
            try s.bind(4, Int64(k))
        }
        noteRow(last, groupChanges.count + groupImages.count)
        pendingRows.removeAll(keepingCapacity: true)
        rowText.removeAll()
        return true
    }

    /// A log row went in: counted against `logBytes`.
    private func noteRow(_ revision: UInt64, _ bytes: Int) {
        rowLast.append(revision)
        rowSize.append(bytes)
        logRowBytes += bytes
        unappliedBytes += bytes
    }

    /// The rows through `revision` were deleted.
    private func forgetRows(through revision: UInt64) {
        while rowHead < rowLast.count && rowLast[rowHead] <= revision {
            logRowBytes -= rowSize[rowHead]
            rowHead += 1
        }
        if rowHead > 4096 && rowHead * 2 > rowLast.count {
            rowLast.removeFirst(rowHead)
            rowSize.removeFirst(rowHead)
            rowHead = 0
        }
    }

    /// Test hook: SQLite's length limit (the most bytes one value may
    /// hold; 1e9 by default), to meet it without gigabytes.
    @discardableResult
    func setLengthLimit(_ bytes: Int32) -> Int32 { sqlite3_limit(db, SQLITE_LIMIT_LENGTH, bytes) }

    /// The log's rows as stored, oldest first: each one's revision and how
    /// many commits it holds (for tests of the row format).
    func logRows() throws(TetherError) -> [(revision: UInt64, commits: Int)] {
        try insertPendingRows()
        var rows: [(revision: UInt64, commits: Int)] = []
        try query("SELECT revision, COALESCE(commits, 1) FROM log ORDER BY revision") { (row) throws(TetherError) in
            rows.append((UInt64(bitPattern: row.int(0)), Int(row.int(1))))
        }
        return rows
    }

    /// A group row's text (reused: no allocation per group).
    private var groupChanges = ByteWriter()
    private var groupImages = ByteWriter()
    private var groupInsert: OpaquePointer?

    private func insertStatement(rows k: Int, tagged: Bool) throws(TetherError) -> OpaquePointer {
        if tagged {
            if let s = insertStatements[k] { return s }
            let values = (0..<k).map { i in "(?\(5 * i + 1), ?\(5 * i + 2), ?\(5 * i + 3), ?\(5 * i + 4), ?\(5 * i + 5))" }
            let s = try prepared("INSERT INTO log(revision, tag, origin, changes, images) VALUES " + values.joined(separator: ", "))
            insertStatements[k] = s
            return s
        }
        if let s = untaggedInserts[k] { return s }
        let values = (0..<k).map { i in "(?\(3 * i + 1), ?\(3 * i + 2), ?\(3 * i + 3))" }
        let s = try prepared("INSERT INTO log(revision, changes, images) VALUES " + values.joined(separator: ", "))
        untaggedInserts[k] = s
        return s
    }

    public func describe(_ name: String, _ descriptor: Descriptor) throws {
        try begin()
        try insertPendingRows()
        // The log's images carry the descriptor as each commit left it: the
        // states table takes them first, then the new descriptor.
        try flushStates()
        let text = try descriptor.wireValue.jsonString()
        try run("UPDATE states SET descriptor = ?2 WHERE name = ?1") { (s) throws(TetherError) in
            try s.bind(1, name)
            try s.bind(2, text)
        }
    }

    public func sync() throws {
        try commit()
        try makeDurable()
    }

    /// Ends the group's transaction: with `.full` and `WALSync.inCommit`
    /// it is durable on return, else it is in the WAL file (a crash of the
    /// process loses nothing) and `makeDurable` is what a power cut needs.
    public func commit() throws {
        guard inTransaction else { return }
        try insertPendingRows()
        // Rows after `applied` cannot be pruned: past half the byte bound
        // the states table is brought up to date early, so that the log
        // can stay within it.
        if unappliedCommits >= flushEvery || unappliedBytes > logBytes / 2 { try flushStates() }
        // The log keeps what a Watch may resume from, no more, and never
        // what the states table does not hold yet; deleted in batches (a
        // delete per commit would rewrite the log's first page each time),
        // at once when the rows pass `logBytes` (the newest row stays).
        var oldest = lastRevision > UInt64(logCapacity) ? lastRevision - UInt64(logCapacity) : 0
        let overBytes = logRowBytes > logBytes
        if overBytes {
            var bytes = logRowBytes, i = rowHead
            while bytes > logBytes && i < rowLast.count - 1 {
                bytes -= rowSize[i]
                oldest = max(oldest, rowLast[i])
                i += 1
            }
        }
        oldest = min(oldest, applied)
        if oldest > prunedThrough && (overBytes || oldest >= prunedThrough + UInt64(min(flushEvery, logCapacity))) {
            try run("DELETE FROM log WHERE revision <= ?1") { (s) throws(TetherError) in try s.bind(1, Int64(bitPattern: oldest)) }
            prunedThrough = oldest
            forgetRows(through: oldest)
        }
        try run(&commitStatement, "COMMIT") { _ in }
        inTransaction = false
        if syncsWALItself {
            committedRevision.store(lastRevision, ordering: .releasing)
        } else {
            madeDurable(through: lastRevision)  // as durable as this store makes it
        }
        // The group is committed: nothing after this may fail it (a
        // failed checkpoint is tried again after the next commit).
        do {
            try checkpointIfLarge()
        } catch {
            walReplaced = error
        }
    }

    /// Set when the WAL file was found replaced behind SQLite's back:
    /// `makeDurable` would sync another file, so it fails from then on.
    private var walReplaced: TetherError?

    /// Syncs every frame written to the WAL before the call (fdatasync
    /// covers the file, whichever descriptor names it). Any one thread;
    /// the loop may write and commit meanwhile.
    public func makeDurable() throws {
        guard syncsWALItself else { return }
        if let walReplaced { throw walReplaced }
        let covered = committedRevision.load(ordering: .acquiring)
        while fdatasync(walFD) != 0 {
            guard errno == EINTR else {
                throw TetherError(.loopFailure, "cannot sync \(path)-wal: \(String(cString: strerror(errno)))")
            }
        }
        madeDurable(through: covered)
    }

    private func openWAL() throws(TetherError) {
        walFD = open(path + "-wal", O_RDWR | O_CLOEXEC)
        guard walFD >= 0 else {
            throw TetherError(.loopFailure, "cannot open \(path)-wal to sync it: \(String(cString: strerror(errno)))")
        }
    }

    /// Whether `walFD` still names the file SQLite writes (a WAL replaced
    /// behind its back would make `makeDurable` sync the wrong file).
    private func walIsStillOpen() -> Bool {
        var held = stat(), named = stat()
        return fstat(walFD, &held) == 0 && stat(path + "-wal", &named) == 0
            && held.st_ino == named.st_ino && held.st_dev == named.st_dev
    }

    /// Writes the unapplied images to the states table, and the revision
    /// they bring it to, in the current transaction.
    private func flushStates() throws {
        guard unappliedCommits > 0 || !unapplied.isEmpty else { return }
        for image in unapplied.values {
            if let value = image.value {
                let valueText = try SQLiteStore.encodeValue(value)
                let descriptorText = try image.descriptor.wireValue.jsonString()
                try run("INSERT OR REPLACE INTO states(name, value, modified, descriptor) VALUES(?1, ?2, ?3, ?4)") { (s) throws(TetherError) in
                    try s.bind(1, image.name)
                    try s.bind(2, valueText)
                    try s.bind(3, Int64(bitPattern: image.modified))
                    try s.bind(4, descriptorText)
                }
            } else {
                try run("DELETE FROM states WHERE name = ?1") { (s) throws(TetherError) in try s.bind(1, image.name) }
            }
        }
        try run("INSERT OR REPLACE INTO meta(key, value) VALUES('applied', ?1)") { (s) throws(TetherError) in try s.bind(1, String(lastRevision)) }
        applied = lastRevision
        unapplied.removeAll(keepingCapacity: true)
        unappliedCommits = 0
        unappliedBytes = 0
    }

    /// After a commit: a WAL past the threshold is copied back into the
    /// database, here, on the writer's connection. No other connection may
    /// hold the store (exclusive locking), so this is the only place a
    /// checkpoint can run; with no reader it copies all of the WAL, and the
    /// next commit starts the WAL over at the beginning of the file (a WAL
    /// that only grows makes every commit's fdatasync also commit the
    /// file's new size: 1.5-2x slower on this disk,
    /// docs/daemon-performance.md). It costs the commit path one pass over
    /// the distinct pages of the last `checkpointPages` frames and a sync
    /// of the database file: the background checkpointer this replaces did
    /// the same on the same CPU, and its writer synced the database file
    /// again to copy the frames committed meanwhile.
    private func checkpointIfLarge() throws(TetherError) {
        guard walPages >= checkpointPages else { return }
        // BUSY (a reader, in a non-exclusive store) leaves it to the next commit.
        if sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) == SQLITE_OK {
            walPages = 0
            checkpoints += 1
            // Once per checkpoint (a stat pair every thousand pages).
            if walFD >= 0 && !walIsStillOpen() {
                throw TetherError(.loopFailure, "\(path)-wal was replaced while the store was open")
            }
        }
    }

    public func compact(through revision: UInt64) throws {
        try begin()
        try insertPendingRows()
        try flushStates()  // the rows it deletes may carry the only images
        // Nothing through `revision` may stay: a group row holding it goes
        // whole, with the commits after it (the states table covers them,
        // flushed above; a watch from there gets a resync, never a gap).
        var through = revision
        let last = Statement(raw: try prepared("SELECT MAX(revision) FROM log WHERE revision - COALESCE(commits, 1) + 1 <= ?1"))
        try last.bind(1, Int64(bitPattern: revision))
        let rc = sqlite3_step(last.raw)
        if rc == SQLITE_ROW && !last.isNull(0) { through = max(through, UInt64(bitPattern: last.int(0))) }
        sqlite3_reset(last.raw)
        guard rc == SQLITE_ROW || rc == SQLITE_DONE else {
            throw TetherError(.loopFailure, "the store \(path): table log: \(String(cString: sqlite3_errstr(rc)))")
        }
        try run("DELETE FROM log WHERE revision <= ?1") { (s) throws(TetherError) in try s.bind(1, Int64(bitPattern: through)) }
        prunedThrough = max(prunedThrough, through)
        forgetRows(through: through)
        try sync()
    }

    /// SQLite's online backup of the whole database into `target` (which
    /// must not exist, not even as a dangling symbolic link), after
    /// committing this turn's writes. The copy is written to a new 0600
    /// file beside the target (mkstemp: O_CREAT|O_EXCL, never following a
    /// link), then linked to the target's name: link(2) fails when that
    /// name exists as anything, and never follows it. So a snapshot never
    /// overwrites a file, never creates a symbolic link's target, and is
    /// never readable by another uid; "exists" is not checked before the
    /// file is made (no race between the check and the creation).
    public func snapshot(to target: String) throws -> UInt64 {
        try sync()
        var st = stat()
        if lstat(target, &st) == 0 {
            throw SQLiteStore.snapshotExists(target, st)
        }
        let directory = target.contains("/") ? DaemonAddress(path: target).directory : "."
        var template = Array((directory + "/.tether-snapshot.XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }  // O_CREAT|O_EXCL, 0600
        guard fd >= 0 else {
            throw TetherError(.invalidArgument, "cannot create a snapshot in \(directory): \(String(cString: strerror(errno)))")
        }
        fchmod(fd, 0o600)
        close(fd)
        let temporary = String(cString: template)
        defer {
            for suffix in ["", "-journal", "-wal", "-shm"] { unlink(temporary + suffix) }
        }
        do {
            var copy: OpaquePointer?
            guard sqlite3_open_v2(temporary, &copy, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let copy else {
                let why = copy.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
                sqlite3_close(copy)
                throw TetherError(.invalidArgument, "cannot create \(target): \(why)")
            }
            defer { sqlite3_close(copy) }
            guard let backup = sqlite3_backup_init(copy, "main", db, "main") else {
                throw TetherError(.loopFailure, "cannot copy the store to \(target): \(String(cString: sqlite3_errmsg(copy)))")
            }
            let rc = sqlite3_backup_step(backup, -1)
            sqlite3_backup_finish(backup)
            guard rc == SQLITE_DONE else {
                throw TetherError(.loopFailure, "copying the store to \(target) failed: \(String(cString: sqlite3_errstr(rc)))")
            }
        }
        guard link(temporary, target) == 0 else {
            let code = errno
            if code == EEXIST, lstat(target, &st) == 0 { throw SQLiteStore.snapshotExists(target, st) }
            throw TetherError(.invalidArgument, "cannot create \(target): \(String(cString: strerror(code)))")
        }
        return lstat(target, &st) == 0 ? UInt64(st.st_size) : 0
    }

    private static func snapshotExists(_ target: String, _ st: stat) -> TetherError {
        let what = (st.st_mode & S_IFMT) == S_IFLNK ? "is a symbolic link" : "exists"
        return TetherError(.invalidArgument, "\(target) \(what): a snapshot never overwrites a file nor follows a link")
    }

    /// Makes the store in `directory` a copy of the snapshot at `source`,
    /// under a new epoch (its history is not the one clients may have seen
    /// since: every watch resyncs). The daemon must not be running there.
    public static func restore(from source: String, into directory: String, epoch: String) throws(TetherError) {
        var snapshot: OpaquePointer?
        guard sqlite3_open_v2(source, &snapshot, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let snapshot else {
            sqlite3_close(snapshot)
            throw TetherError(.notFound, "cannot open the snapshot \(source)")
        }
        defer { sqlite3_close(snapshot) }
        var check: OpaquePointer?
        let sql = "SELECT value FROM meta WHERE key = 'epoch'"
        guard sqlite3_prepare_v2(snapshot, sql, -1, &check, nil) == SQLITE_OK, sqlite3_step(check) == SQLITE_ROW else {
            sqlite3_finalize(check)
            throw TetherError(.invalidArgument, "\(source) is not a tetherd snapshot (no epoch in its meta table)")
        }
        sqlite3_finalize(check)
        let target = directory + "/tether.db"
        for suffix in ["", "-wal", "-shm"] { unlink(target + suffix) }
        let store = try SQLiteStore(directory: directory, durability: .full, logCapacity: Int.max)
        guard let backup = sqlite3_backup_init(store.db, "main", snapshot, "main") else {
            throw TetherError(.loopFailure, "cannot restore from \(source): \(String(cString: sqlite3_errmsg(store.db)))")
        }
        let rc = sqlite3_backup_step(backup, -1)
        sqlite3_backup_finish(backup)
        guard rc == SQLITE_DONE else {
            throw TetherError(.loopFailure, "restoring from \(source) failed: \(String(cString: sqlite3_errstr(rc)))")
        }
        try store.start(epoch: epoch)
    }

    // MARK: Values as text

    /// How deeply a row's text may nest: a state's value (at most
    /// `Value.maxNesting`, checked on every write: `Store.checkSize`) plus
    /// the row's own wrapping around it — a states row `{"value": v}` is 1
    /// level, a log row's changes `[{"value": v}]` 2, a group row's images
    /// `[[{"stored": {"value": v}}]]` 4 — with room to spare. A row the
    /// writer accepted must never be refused when the store is opened.
    static let rowDepth = Value.maxNesting + 8

    /// A value as stored: `{"value": ..., "bytes_at": [...]}`, so bytes
    /// come back as bytes (JSON alone would bring them back as strings).
    static func encodeValue(_ value: Value) throws(TetherError) -> String {
        var o = ValueObject()
        o["value"] = value
        let pointers = BytesAt.pointers(in: value)
        if !pointers.isEmpty { o["bytes_at"] = .array(pointers.map(Value.string)) }
        return try Value.object(o).jsonString()
    }

    static func decodeValue(_ text: String, name: String) throws(TetherError) -> Value {
        try decodeStored(try Value(json: text, maxDepth: SQLiteStore.rowDepth), name: name)
    }

    /// A state as a commit left it, in its log row: `{"name", "modified",
    /// "descriptor", "stored": {"value", "bytes_at"}}`, or `{"name",
    /// "removed": true}`.
    static func imageValue(_ image: StateImage) throws(TetherError) -> Value {
        var o = ValueObject()
        o["name"] = .string(image.name)
        if let value = image.value {
            var stored = ValueObject()
            stored["value"] = value
            let pointers = BytesAt.pointers(in: value)
            if !pointers.isEmpty { stored["bytes_at"] = .array(pointers.map(Value.string)) }
            o["stored"] = .object(stored)
            o["modified"] = .int(Int64(bitPattern: image.modified))
            o["descriptor"] = image.descriptor.wireValue
        } else {
            o["removed"] = .bool(true)
        }
        return .object(o)
    }

    /// A group row's commits and, for each, its images (`insertGroupRow`).
    /// `images` nil: not wanted (every commit of the group is applied);
    /// each commit comes with no images.
    static func decodeGroup(changes: String, images: String?, commits: Int64,
                            last: UInt64) throws(TetherError) -> [(Commit, [StateImage])] {
        var imageLists: [Value]?
        if let images {
            guard case .array(let lists) = try Value(json: images, maxDepth: SQLiteStore.rowDepth), lists.count == Int(commits) else {
                throw TetherError(.badJSON, "the store's log entry \(last) is a malformed group of \(commits) commits")
            }
            imageLists = lists
        }
        guard commits >= 1, case .array(let changeLists) = try Value(json: changes, maxDepth: SQLiteStore.rowDepth),
              changeLists.count == Int(commits), UInt64(commits) <= last else {
            throw TetherError(.badJSON, "the store's log entry \(last) is a malformed group of \(commits) commits")
        }
        let first = last - UInt64(commits) + 1
        var out: [(Commit, [StateImage])] = []
        out.reserveCapacity(Int(commits))
        for j in 0..<Int(commits) {
            let revision = first + UInt64(j)
            let commit = Commit(revision: revision, changes: try decodeChanges(changeLists[j], revision: revision),
                                tag: nil, origin: nil)
            out.append((commit, try imageLists.map { (lists) throws(TetherError) in try decodeImages(lists[j], of: commit) } ?? []))
        }
        return out
    }

    /// A commit's images as its row holds them: a list, or `0` when they
    /// follow from its one change (`LogRowText.imageFollows`).
    static func decodeImages(_ list: Value, of commit: Commit) throws(TetherError) -> [StateImage] {
        let revision = commit.revision
        if list == .int(0) {
            guard let value = Commit.wholeSet(commit.changes) else {
                throw TetherError(.badJSON, "the store's log entry \(revision) leaves out an image its changes do not give")
            }
            return [StateImage(name: commit.changes[0].name, value: value, modified: revision, descriptor: Descriptor())]
        }
        guard case .array(let items) = list else {
            throw TetherError(.badJSON, "the store's log entry \(revision) has malformed images")
        }
        var images: [StateImage] = []
        for item in items {
            guard case .object(let o) = item, case .string(let name)? = o["name"] else {
                throw TetherError(.badJSON, "the store's log entry \(revision) has a malformed image")
            }
            if o["removed"] == .bool(true) {
                images.append(StateImage(name: name, value: nil, modified: revision, descriptor: Descriptor()))
                continue
            }
            guard let stored = o["stored"], case .int(let modified)? = o["modified"] else {
                throw TetherError(.badJSON, "the store's log entry \(revision) has a malformed image of '\(name)'")
            }
            let descriptor: Descriptor
            do {
                descriptor = try Descriptor(from: o["descriptor"] ?? .object(ValueObject()))
            } catch {
                throw TetherError(.badJSON, "the store's log entry \(revision) has a malformed descriptor for '\(name)': \(error.detail)")
            }
            images.append(StateImage(name: name, value: try decodeStored(stored, name: name),
                                     modified: UInt64(bitPattern: modified), descriptor: descriptor))
        }
        return images
    }

    static func decodeStored(_ stored: Value, name: String) throws(TetherError) -> Value {
        guard case .object(let o) = stored else {
            throw TetherError(.badJSON, "the store holds a malformed value for '\(name)'")
        }
        var pointers: [String] = []
        if case .array(let list)? = o["bytes_at"] {
            for case .string(let p) in list { pointers.append(p) }
        }
        do {
            return try BytesAt.decode(o["value"] ?? .null, at: pointers, parameter: "bytes_at")
        } catch {
            throw TetherError(.badJSON, "the store holds malformed bytes for '\(name)': \(error.detail)")
        }
    }

    static func decodeDescriptor(_ text: String, name: String) throws(TetherError) -> Descriptor {
        let value = try Value(json: text)
        do {
            return try Descriptor(from: value)
        } catch {
            throw TetherError(.badJSON, "the store holds a malformed descriptor for '\(name)': \(error.detail)")
        }
    }

    static func decodeChanges(_ text: String, revision: UInt64) throws(TetherError) -> [Change] {
        try decodeChanges(try Value(json: text, maxDepth: SQLiteStore.rowDepth), revision: revision)
    }

    static func decodeChanges(_ list: Value, revision: UInt64) throws(TetherError) -> [Change] {
        guard case .array(let items) = list else {
            throw TetherError(.badJSON, "the store's log entry \(revision) is not an array")
        }
        if items.count == 2, case .string(let name) = items[0] {  // LogRowText.commit's short form
            return [Change(name: name, write: .set(items[1]))]
        }
        var changes: [Change] = []
        for item in items {
            do {
                changes.append(try Change(from: item))
            } catch {
                throw TetherError(.badJSON, "the store's log entry \(revision) is malformed: \(error.detail)")
            }
        }
        return changes
    }

    // MARK: A group that could not be committed

    /// Whether a group's transaction is open: after a failed `commit`, the
    /// group did not reach the database (a full disk: SQLITE_FULL).
    public var hasOpenGroup: Bool { inTransaction }

    /// Gives up the open group (docs/robustness.md, "A full disk"): its
    /// transaction is rolled back (SQLite may have done so already), what
    /// was pending for it is dropped, and the store's bookkeeping is read
    /// again from the database, which now holds every group committed
    /// before it and nothing of it. Returns what the store holds (the
    /// daemon resets the states the group touched from it).
    public func abandonGroup() throws(TetherError) -> Contents {
        if sqlite3_get_autocommit(db) == 0 {
            _ = sqlite3_exec(db, "ROLLBACK", nil, nil, nil)  // an automatic rollback already did it: no harm
        }
        inTransaction = false
        pendingRows.removeAll(keepingCapacity: true)
        rowText.removeAll()
        unapplied.removeAll()
        unappliedCommits = 0
        return try load()
    }

    /// Test hook: at most `pages` pages of the database file (SQLite's
    /// `max_page_count`), so that a test meets SQLITE_FULL, the error of
    /// a full disk, without a small file system. 0: back to SQLite's
    /// default. Returns the limit now in force.
    @discardableResult
    public func setMaxPageCount(_ pages: Int) throws(TetherError) -> Int {
        var now = 0
        try query("PRAGMA max_page_count = \(pages > 0 ? pages : 4_294_967_294)") { (row) throws(TetherError) in now = Int(row.int(0)) }
        return now
    }

    /// Pages the database file has now.
    public func pageCount() throws(TetherError) -> Int {
        var n = 0
        try query("PRAGMA page_count") { (row) throws(TetherError) in n = Int(row.int(0)) }
        return n
    }

    // MARK: SQLite

    /// Commits the transaction `begin` opened.
    func commitBegun() throws(TetherError) {
        try run("COMMIT") { _ in }
        inTransaction = false
    }

    func begin() throws(TetherError) {
        guard !inTransaction else { return }
        try run(&beginStatement, "BEGIN IMMEDIATE") { _ in }  // prepared once (sqlite3_exec compiles each time)
        inTransaction = true
    }

    private func exec(_ sql: String) throws(TetherError) {
        var message: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &message) != SQLITE_OK {
            let why = message.map { String(cString: $0) } ?? "unknown"
            sqlite3_free(message)
            throw TetherError(.loopFailure, "the store \(path): \(why)")
        }
    }

    private func prepared(_ sql: String) throws(TetherError) -> OpaquePointer {
        if let s = statements[sql] { return s }
        var s: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &s, nil) == SQLITE_OK, let s else {
            throw TetherError(.loopFailure, "the store \(path): \(String(cString: sqlite3_errmsg(db)))")
        }
        statements[sql] = s
        return s
    }

    func run(_ sql: String, _ bind: (Statement) throws(TetherError) -> Void) throws(TetherError) {
        try step(try prepared(sql), bind)
    }

    /// `run` with the statement kept in `cached` (prepared the first time).
    private func run(_ cached: inout OpaquePointer?, _ sql: String, _ bind: (Statement) throws(TetherError) -> Void) throws(TetherError) {
        if cached == nil { cached = try prepared(sql) }
        try step(cached!, bind)
    }

    private func step(_ s: OpaquePointer, _ bind: (Statement) throws(TetherError) -> Void) throws(TetherError) {
        defer { sqlite3_reset(s); sqlite3_clear_bindings(s) }
        try bind(Statement(raw: s))
        let rc = sqlite3_step(s)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else {
            throw TetherError(.loopFailure, "the store \(path): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    private func query(_ sql: String, _ row: (Statement) throws(TetherError) -> Void) throws(TetherError) {
        let s = try prepared(sql)
        defer { sqlite3_reset(s) }
        while true {
            let rc = sqlite3_step(s)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else {
                throw TetherError(.loopFailure, "the store \(path): \(String(cString: sqlite3_errmsg(db)))")
            }
            try row(Statement(raw: s))
        }
    }

    /// One prepared statement's bindings and columns.
    struct Statement {
        let raw: OpaquePointer
        private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

        /// Every bind's result is checked (issue 36): a text past SQLite's
        /// length limit (1e9 bytes) failed its bind, left the parameter
        /// NULL, and the row went in without it.
        private func check(_ rc: Int32, _ i: Int32, bytes: Int) throws(TetherError) {
            guard rc != SQLITE_OK else { return }
            throw TetherError(.loopFailure, "the store cannot take parameter \(i) of a row (\(bytes) bytes): \(String(cString: sqlite3_errstr(rc)))")
        }

        /// Text longer than SQLite takes, refused before an `Int32` of
        /// its length could trap (2 GiB) or SQLite refuse it.
        static func checkLength(_ count: Int, _ i: Int32) throws(TetherError) {
            if count > Int(Int32.max) {
                throw TetherError(.loopFailure, "the store cannot take parameter \(i) of a row: \(count) bytes is more than SQLite stores in one value")
            }
        }

        /// Bound with its length in bytes: a string may hold NUL (a tag
        /// "a\u0000b"), where a C string would end.
        func bind(_ i: Int32, _ text: String?) throws(TetherError) {
            guard var text else { try check(sqlite3_bind_null(raw, i), i, bytes: 0); return }
            try Statement.checkLength(text.utf8.count, i)
            let rc: Int32 = text.withUTF8 { bytes -> Int32 in
                guard let base = bytes.baseAddress, bytes.count > 0 else {
                    return sqlite3_bind_text(raw, i, "", 0, Statement.transient)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text(raw, i, $0, Int32(bytes.count), Statement.transient)
                }
            }
            try check(rc, i, bytes: text.utf8.count)
        }

        /// UTF-8 text from bytes that SQLite does not copy: they must stay
        /// as they are until the statement is stepped (and not read after).
        func bind(_ i: Int32, static text: UnsafeBufferPointer<UInt8>) throws(TetherError) {
            guard let base = text.baseAddress, text.count > 0 else {
                try check(sqlite3_bind_text(raw, i, "", 0, Statement.transient), i, bytes: 0)
                return
            }
            try Statement.checkLength(text.count, i)
            let rc = base.withMemoryRebound(to: CChar.self, capacity: text.count) {
                sqlite3_bind_text(raw, i, $0, Int32(text.count), nil)  // nil: SQLITE_STATIC
            }
            try check(rc, i, bytes: text.count)
        }

        func bind(_ i: Int32, _ n: Int64?) throws(TetherError) {
            guard let n else { try check(sqlite3_bind_null(raw, i), i, bytes: 0); return }
            try check(sqlite3_bind_int64(raw, i, n), i, bytes: 8)
        }

        func text(_ i: Int32) -> String {
            guard let p = sqlite3_column_text(raw, i) else { return "" }
            return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(raw, i))), as: UTF8.self)
        }

        func int(_ i: Int32) -> Int64 { sqlite3_column_int64(raw, i) }

        /// The column's length in bytes, as text (0 for NULL).
        func byteCount(_ i: Int32) -> Int { Int(sqlite3_column_bytes(raw, i)) }

        func isNull(_ i: Int32) -> Bool { sqlite3_column_type(raw, i) == SQLITE_NULL }
    }
}
