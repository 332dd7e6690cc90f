// SocketTrust.swift — whether a socket may be tetherd: its directory, and the uid of the process listening on it.
//
// The one implementation of the checks every client (tetherctl, libtether's
// remote link, the Swift API's remote states) makes before it sends
// anything, and of the check tetherd makes on its own socket directory
// (docs/security-local.md). tmux and ssh-agent are the models.

import Glibc

/// A socket refused by the trust checks: `message` names the path, its
/// owner and what was wrong.
public struct UntrustedSocket: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Who a client trusts to be tetherd, and where private socket directories are.
///
/// - The directory check. A *private* socket directory — one of the per-user
///   directories `DaemonAddress.standard` picks, `$XDG_RUNTIME_DIR/tether`
///   or the fallback `${TMPDIR:-/tmp}/tether-UID` — must be a real directory
///   (lstat: not a symbolic link), owned by the client's uid, with no
///   group or other access (mode & 077 == 0). Any other socket directory
///   (`/run/tether` of the system daemon, an explicit `--address`) must be a
///   real directory owned by the client's uid, root or the trusted daemon
///   uid, and not writable by group or others unless it is sticky (`/tmp`).
/// - The peer check, on every connection, before the first byte is sent:
///   the SO_PEERCRED uid of the listening process must be the client's own
///   (real or effective) uid, root, or the trusted daemon uid.
///
/// The trusted daemon uid comes from `TETHER_DAEMON_UID` (a number or a user
/// name): set it to reach a daemon that runs as another user (a system
/// service user, or a user's daemon that grants you access).
public struct SocketTrust: Sendable, Equatable {
    /// The client's real and effective uids.
    public var uids: [UInt32]
    /// A daemon uid trusted besides the client's own and root.
    public var daemonUID: UInt32?
    /// The per-user private socket directories of this client.
    public var privateDirectories: [String]

    public init(uids: [UInt32], daemonUID: UInt32?, privateDirectories: [String]) {
        self.uids = uids
        self.daemonUID = daemonUID
        self.privateDirectories = privateDirectories
    }

    /// The trust of the calling process: its uids, `TETHER_DAEMON_UID`, and
    /// the private directories `environment` implies.
    public static func current(environment: [String: String]) throws(UntrustedSocket) -> SocketTrust {
        let uid = getuid()
        var daemonUID: UInt32?
        if let text = environment["TETHER_DAEMON_UID"], !text.isEmpty {
            guard let parsed = SocketTrust.uid(named: text) else {
                throw UntrustedSocket("TETHER_DAEMON_UID='\(text)' is neither a uid nor a user name of this machine")
            }
            daemonUID = parsed
        }
        var uids = [uid]
        if geteuid() != uid { uids.append(geteuid()) }
        return SocketTrust(uids: uids, daemonUID: daemonUID,
                           privateDirectories: DaemonAddress.privateDirectories(uid: uid, environment: environment))
    }

    /// Every uid whose process may be tetherd.
    public var trustedUIDs: [UInt32] {
        var all = uids
        if !all.contains(0) { all.append(0) }
        if let daemonUID, !all.contains(daemonUID) { all.append(daemonUID) }
        return all
    }

    /// Whether `directory` is one of the per-user private socket directories.
    public func isPrivate(_ directory: String) -> Bool {
        privateDirectories.contains(SocketTrust.normalized(directory))
    }

    /// Checks the directory of `address` (see the type's documentation).
    public func checkDirectory(of address: DaemonAddress) throws(UntrustedSocket) {
        let directory = address.directory
        if isPrivate(directory) {
            try SocketTrust.checkPrivateDirectory(directory, owner: uids[0])
            return
        }
        var st = stat()
        guard lstat(directory, &st) == 0 else {
            throw UntrustedSocket("cannot check the socket directory \(directory): \(String(cString: strerror(errno)))")
        }
        if (st.st_mode & S_IFMT) == S_IFLNK {
            throw UntrustedSocket("the socket directory \(directory) is a symbolic link (owned by \(SocketTrust.describe(uid: st.st_uid))): refusing to follow it to the daemon")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw UntrustedSocket("the socket directory \(directory) is not a directory")
        }
        guard trustedUIDs.contains(st.st_uid) else {
            throw UntrustedSocket("the socket directory \(directory) belongs to \(SocketTrust.describe(uid: st.st_uid)), not to \(trustedText): another user may have made it to catch your calls (set TETHER_DAEMON_UID to trust a daemon of that uid)")
        }
        if st.st_mode & 0o022 != 0 && st.st_mode & S_ISVTX == 0 {
            throw UntrustedSocket("the socket directory \(directory) (owned by \(SocketTrust.describe(uid: st.st_uid))) has mode \(SocketTrust.octal(st.st_mode & 0o7777)): group or others may replace the socket in it")
        }
    }

    /// Checks the process listening at the other end of the connected
    /// socket `fd`: its SO_PEERCRED uid must be trusted.
    public func checkPeer(socket fd: Int32, address: DaemonAddress) throws(UntrustedSocket) {
        guard let peer = SocketTrust.peerUID(of: fd) else {
            throw UntrustedSocket("cannot learn who listens on \(address.path) (SO_PEERCRED: \(String(cString: strerror(errno))))")
        }
        guard trustedUIDs.contains(peer) else {
            throw UntrustedSocket("the process listening on \(address.path) runs as \(SocketTrust.describe(uid: peer)), not as \(trustedText): refusing to send it anything (set TETHER_DAEMON_UID to trust a daemon of that uid)")
        }
    }

    private var trustedText: String {
        var names = uids.map { SocketTrust.describe(uid: $0) }
        if !uids.contains(0) { names.append("root") }
        if let daemonUID, !uids.contains(daemonUID), daemonUID != 0 {
            names.append("\(SocketTrust.describe(uid: daemonUID)) (TETHER_DAEMON_UID)")
        }
        return names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    // MARK: Shared with the daemon

    /// The private-directory check (tmux's and ssh-agent's): `path` must be
    /// a directory, not a symbolic link, owned by `owner`, with mode & 077 == 0.
    public static func checkPrivateDirectory(_ path: String, owner: UInt32) throws(UntrustedSocket) {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            throw UntrustedSocket("cannot check the private socket directory \(path): \(String(cString: strerror(errno)))")
        }
        try checkPrivate(path, st, owner: owner)
    }

    /// The same check on an `lstat` result already made.
    public static func checkPrivate(_ path: String, _ st: stat, owner: UInt32, modeToo: Bool = true) throws(UntrustedSocket) {
        if (st.st_mode & S_IFMT) == S_IFLNK {
            throw UntrustedSocket("the private socket directory \(path) is a symbolic link (owned by \(describe(uid: st.st_uid))), not a directory: refusing it")
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            throw UntrustedSocket("the private socket directory \(path) is not a directory (owned by \(describe(uid: st.st_uid)))")
        }
        guard st.st_uid == owner else {
            throw UntrustedSocket("the private socket directory \(path) belongs to \(describe(uid: st.st_uid)), not to \(describe(uid: owner)): another user may have made it to catch your calls; refusing it (remove it, or set XDG_RUNTIME_DIR)")
        }
        if modeToo && st.st_mode & 0o077 != 0 {
            throw UntrustedSocket("the private socket directory \(path) (owned by \(describe(uid: st.st_uid))) has mode \(octal(st.st_mode & 0o7777)), not 0700: group or others have access to it; refusing it (chmod 700 \(path))")
        }
    }

    /// The uid of the process at the other end of a Unix socket (SO_PEERCRED).
    public static func peerUID(of fd: Int32) -> UInt32? {
        // struct ucred (Linux), which Glibc's module leaves out without _GNU_SOURCE.
        struct Credentials { var pid: Int32 = 0; var uid: UInt32 = 0; var gid: UInt32 = 0 }
        var cred = Credentials()
        var length = socklen_t(MemoryLayout<Credentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0 else { return nil }
        return cred.uid
    }

    /// "uid 65534 (nobody)", or "uid 4242" for a uid without a name.
    public static func describe(uid: UInt32) -> String {
        if let name = userName(uid) { return "uid \(uid) (\(name))" }
        return "uid \(uid)"
    }

    public static func userName(_ uid: UInt32) -> String? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil, let name = pwd.pw_name else { return nil }
        return String(cString: name)
    }

    /// A uid from a number or a user name.
    public static func uid(named text: String) -> UInt32? {
        if let n = UInt32(text) { return n }
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(text, &pwd, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return pwd.pw_uid
    }

    public static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    static func normalized(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        return String(p)
    }
}
