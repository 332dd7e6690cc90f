import Glibc
import TetherCore

/// The store's directory: made 0700 when missing, and held by one daemon
/// at a time (an flock on `tetherd.lock`, released when the process ends,
/// however it ends), since two daemons on one store would fork its history.
public enum DataDirectory {
    public static func prepare(_ path: String) throws(TetherError) {
        try Daemon.makeDirectory(path, mode: 0o700)
        let lockPath = path + "/tetherd.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw TetherError(.invalidArgument, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw TetherError(.busy, "another tetherd uses the data directory \(path) (its lock \(lockPath) is held)")
        }
        // The descriptor stays open for the life of the process: the lock.
    }
}
