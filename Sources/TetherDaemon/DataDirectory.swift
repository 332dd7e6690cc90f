import Glibc
import TetherCore
import TetherWire

/// The store's directory: made 0700 when missing, made 0700 when it is
/// ours and group or others had access (systemd's StateDirectory= makes it
/// 0755 unless StateDirectoryMode= says otherwise), refused when it is not
/// ours; and held by one daemon at a time (an flock on `tetherd.lock`,
/// released when the process ends, however it ends), since two daemons on
/// one store would fork its history.
public enum DataDirectory {
    public static func prepare(_ path: String) throws(TetherError) {
        try Daemon.makeDirectory(path, mode: 0o700)
        try makePrivate(path)
        let lockPath = path + "/tetherd.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw TetherError(.invalidArgument, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        fchmod(fd, 0o600)  // one made before, 0644
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw TetherError(.busy, "another tetherd uses the data directory \(path) (its lock \(lockPath) is held)")
        }
        // The descriptor stays open for the life of the process: the lock.
    }

    /// The data directory must be the daemon's and 0700: the store holds
    /// every state, whatever the grants say. (A symbolic link to it is
    /// followed: systemd's DynamicUser= makes /var/lib/NAME one.)
    static func makePrivate(_ path: String) throws(TetherError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TetherError(.invalidArgument, "cannot open the data directory \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw TetherError(.invalidArgument, "cannot check the data directory \(path): \(String(cString: strerror(errno)))")
        }
        guard st.st_uid == geteuid() else {
            throw TetherError(.invalidArgument, "the data directory \(path) belongs to \(SocketTrust.describe(uid: st.st_uid)) (mode \(SocketTrust.octal(st.st_mode & 0o7777))), not to this daemon's \(SocketTrust.describe(uid: geteuid())): refusing it (the store must be the daemon's alone)")
        }
        if st.st_mode & 0o077 != 0 && fchmod(fd, 0o700) != 0 {
            throw TetherError(.invalidArgument, "the data directory \(path) has mode \(SocketTrust.octal(st.st_mode & 0o7777)) and cannot be made 0700: \(String(cString: strerror(errno)))")
        }
    }

    /// Makes an existing store file (tether.db, its -wal, -shm or
    /// -journal) 0600; a symbolic link there is left alone (and not
    /// followed). Files SQLite makes later take the database's mode.
    static func restrict(_ file: String) {
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return }
        fchmod(fd, 0o600)
        close(fd)
    }
}

/// `tether.db.marker`, beside the store, outside the database: says that a
/// store was here, of which epoch, and the last revision the daemon knows
/// to have been made durable in it (docs/daemon.md, "The store"). One line
/// of JSON, `{"epoch":"…","revision":N}`, 0600, replaced whole (written to
/// `tether.db.marker.tmp`, fsynced, renamed over the marker, the directory
/// fsynced), so it is the old marker or the new one, never half of either.
///
/// What it catches, at start: a store that is gone or empty (no epoch in
/// it: a 0-byte or deleted `tether.db`, a WAL deleted before the first
/// checkpoint) while the marker says one was there — refused, never
/// replaced silently by an empty store; and a store of the marker's epoch
/// whose revision is lower than the marker's (lost commits: a deleted or
/// damaged WAL, a dropped log table) — started under a new epoch, so that
/// no revision number a client saw is reused. What it cannot catch: a loss
/// of commits made durable after its last update (it is written at start,
/// at a clean stop, and at most once per `--marker-interval` while commits
/// are made, never per commit: two fsyncs); damage that leaves the revision
/// where it was (a bit flip inside a value: SQLite's checksums and the
/// row readers catch some, see `SQLiteStore.load`); a store and marker
/// replaced together.
public struct StoreMarker: Equatable, Sendable {
    public var epoch: String
    public var revision: UInt64

    public init(epoch: String, revision: UInt64) {
        self.epoch = epoch
        self.revision = revision
    }

    public static func path(in directory: String) -> String { directory + "/tether.db.marker" }

    /// What the directory's marker says: nil when there is none; `marker`
    /// nil with a reason when it exists and cannot be read (a store was
    /// there all the same).
    public static func read(in directory: String) -> (marker: StoreMarker?, problem: String?)? {
        let path = path(in: directory)
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            return errno == ENOENT ? nil : (nil, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let n = Glibc.read(fd, &bytes, bytes.count)
        guard n > 0 else { return (nil, "\(path) is empty") }
        let text = String(decoding: bytes[..<n], as: UTF8.self)
        guard let value = try? Value(json: text), case .object(let o) = value,
              case .string(let epoch)? = o["epoch"], case .int(let revision)? = o["revision"], revision >= 0 else {
            return (nil, "\(path) is not a marker: \(text.prefix(80).debugDescription)")
        }
        return (StoreMarker(epoch: epoch, revision: UInt64(revision)), nil)
    }

    /// Replaces the directory's marker (see the type).
    public func write(in directory: String) throws(TetherError) {
        let path = StoreMarker.path(in: directory)
        let temporary = path + ".tmp"
        func failed(_ what: String) -> TetherError {
            TetherError(.loopFailure, "cannot \(what) \(path): \(String(cString: strerror(errno)))")
        }
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failed("write") }
        var o = ValueObject()
        o["epoch"] = .string(epoch)
        o["revision"] = .int(Int64(clamping: revision))
        let text = Array(((try? Value.object(o).jsonString()) ?? "{}").utf8) + [0x0A]
        let written = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == text.count, fsync(fd) == 0 else {
            let error = failed("write")
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = failed("replace")
            unlink(temporary)
            throw error
        }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)
            close(dir)
        }
    }
}
