// SocketFile.swift — the daemon's socket file and its directory: made safely, removed only while still ours.

import CLibUV
import Glibc
import TetherCore
import TetherWire

/// The socket file a daemon bound: its path and the inode `bind` made.
/// `remove()` unlinks the path only while it still names that inode: a
/// daemon whose socket file was deleted (and whose path a second daemon
/// then took) leaves the second one's socket alone when it stops.
struct SocketFile {
    let path: String
    let device: UInt64
    let inode: UInt64

    /// Remembers the inode now at `path` (just bound).
    init?(boundAt path: String) {
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFSOCK else { return nil }
        self.path = path
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }

    /// Whether `path` still names the socket this daemon bound.
    var isStillOurs: Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK
            && UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }

    /// Unlinks the socket file if it is still ours; says whether it did.
    /// (Between the lstat and the unlink another daemon could still swap
    /// the file in: only a daemon of the same uid, or root, can write in
    /// the directory, and it would have to race a stopping daemon.)
    @discardableResult
    func remove() -> Bool {
        guard isStillOurs else { return false }
        return unlink(path) == 0
    }

    /// A new Unix stream socket bound to `path` (not yet listening).
    static func bind(_ path: String) throws(TetherError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TetherError(.loopFailure, "socket: \(String(cString: strerror(errno)))") }
        var addr = Systemd.unixAddress(path)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let code = errno
            close(fd)
            throw TetherError(code == EADDRINUSE ? .busy : .loopFailure, "cannot bind \(path): \(String(cString: strerror(code)))")
        }
        return fd
    }

    // MARK: The directory

    /// The daemon's private socket directories (`$XDG_RUNTIME_DIR/tether`,
    /// `${TMPDIR:-/tmp}/tether-UID`), from this process's environment.
    static func isPrivateDirectory(_ directory: String) -> Bool {
        var environment: [String: String] = [:]
        for key in ["XDG_RUNTIME_DIR", "TMPDIR"] {
            if let v = getenv(key) { environment[key] = String(cString: v) }
        }
        let trust = SocketTrust(uids: [getuid()], daemonUID: nil,
                                privateDirectories: DaemonAddress.privateDirectories(uid: getuid(), environment: environment))
        return trust.isPrivate(directory)
    }

    /// Makes (or checks) a private socket directory as tmux and ssh-agent
    /// do: created 0700; an existing one must be a directory, not a
    /// symbolic link, owned by this uid (else refused), and is made 0700
    /// when group or others had access.
    static func makePrivateDirectory(_ path: String) throws(TetherError) {
        var st = stat()
        if lstat(path, &st) != 0 {
            let parent = DaemonAddress(path: path).directory
            if parent != path && parent != "/" { try Daemon.makeDirectory(parent, mode: 0o755) }
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw TetherError(.invalidArgument, "cannot make \(path): \(String(cString: strerror(errno)))")
            }
        }
        // Opened without following a link, the checks and the chmod are
        // made on the directory itself, not on what its name says later.
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let why = errno == ELOOP || errno == ENOTDIR ? "it is a symbolic link or not a directory" : String(cString: strerror(errno))
            var link = stat()
            let owner = lstat(path, &link) == 0 ? " (owned by \(SocketTrust.describe(uid: link.st_uid)))" : ""
            throw TetherError(.invalidArgument, "refusing the private socket directory \(path)\(owner): \(why)")
        }
        defer { close(fd) }
        guard fstat(fd, &st) == 0 else {
            throw TetherError(.invalidArgument, "cannot check \(path): \(String(cString: strerror(errno)))")
        }
        do {
            try SocketTrust.checkPrivate(path, st, owner: getuid(), modeToo: false)
        } catch {
            throw TetherError(.invalidArgument, error.message)
        }
        if st.st_mode & 0o077 != 0 && fchmod(fd, 0o700) != 0 {
            throw TetherError(.invalidArgument, "\(path) has mode \(SocketTrust.octal(st.st_mode & 0o7777)) and cannot be made 0700: \(String(cString: strerror(errno)))")
        }
    }

    /// Removes what a daemon that died left at `path`: a socket nobody
    /// listens on. Anything else there (a file, a link) is refused.
    static func clearStale(_ path: String, address: DaemonAddress) throws(TetherError) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else {
            throw TetherError(.invalidArgument, "\(path) exists and is not a socket (owned by \(SocketTrust.describe(uid: st.st_uid))): refusing to replace it")
        }
        if Daemon.someoneListens(at: path) {
            throw TetherError(.busy, "another tetherd already listens on \(address) (stop it, or pass --address)")
        }
        unlink(path)  // left by a daemon that died
    }
}
