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
