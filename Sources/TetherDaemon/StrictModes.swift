// StrictModes.swift — the access configuration is trusted only when nobody but the daemon's uid or root could have written it (sshd's StrictModes).

import Glibc
import TetherCore
import TetherWire

extension AccessPolicy {
    /// Refuses the access configuration at `path` (open as `descriptor`)
    /// unless it is a regular file owned by `daemonUID` or root and not
    /// writable by group or others, in a directory owned by `daemonUID` or
    /// root and not writable by group or others unless sticky (/tmp). The
    /// message names the file, its owner and its mode.
    public static func checkStrictModes(_ path: String, descriptor fd: Int32, daemonUID: UInt32) throws(TetherError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw TetherError(.invalidArgument, "cannot check the access configuration \(path): \(String(cString: strerror(errno)))")
        }
        let trusted = daemonUID == 0 ? "root" : "\(SocketTrust.describe(uid: daemonUID)) (the daemon's) or root"
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw TetherError(.invalidArgument, "refusing the access configuration \(path): it is not a regular file")
        }
        guard st.st_uid == daemonUID || st.st_uid == 0 else {
            throw TetherError(.invalidArgument, "refusing the access configuration \(path): it belongs to \(SocketTrust.describe(uid: st.st_uid)) (mode \(SocketTrust.octal(st.st_mode & 0o7777))), not to \(trusted): whoever owns it decides who reads and writes every state")
        }
        guard st.st_mode & 0o022 == 0 else {
            throw TetherError(.invalidArgument, "refusing the access configuration \(path): its mode \(SocketTrust.octal(st.st_mode & 0o7777)) (owner \(SocketTrust.describe(uid: st.st_uid))) lets group or others write it (chmod go-w \(path))")
        }
        let directory = path.contains("/") ? DaemonAddress(path: path).directory : "."
        var dir = stat()
        guard stat(directory, &dir) == 0 else { return }
        guard dir.st_uid == daemonUID || dir.st_uid == 0 else {
            throw TetherError(.invalidArgument, "refusing the access configuration \(path): its directory \(directory) belongs to \(SocketTrust.describe(uid: dir.st_uid)), not to \(trusted) (its owner could replace the file)")
        }
        if dir.st_mode & 0o022 != 0 && dir.st_mode & S_ISVTX == 0 {
            throw TetherError(.invalidArgument, "refusing the access configuration \(path): its directory \(directory) has mode \(SocketTrust.octal(dir.st_mode & 0o7777)) (owner \(SocketTrust.describe(uid: dir.st_uid))): group or others could replace the file")
        }
    }
}
