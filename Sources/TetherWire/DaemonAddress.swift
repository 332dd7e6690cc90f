// DaemonAddress.swift — where tetherd listens, as every client finds it.

/// A Varlink address of tetherd: `unix:/path/to/socket` (Varlink's own
/// notation; systemd's `varlinkctl` and PyPI's `varlink` take the same).
/// A bare absolute path is accepted too.
///
/// The default follows the XDG base directory conventions for a user daemon
/// and `/run` for the system one:
/// - `$TETHER_ADDRESS` when it is set (any client, any uid);
/// - root: `unix:/run/tether/tetherd.sock` (the system daemon);
/// - anyone else: `unix:$XDG_RUNTIME_DIR/tether/tetherd.sock`, or, without
///   `XDG_RUNTIME_DIR`, `unix:${TMPDIR:-/tmp}/tether-UID/tetherd.sock` (as
///   ssh-agent and tmux do). These two are the per-user *private*
///   directories: the daemon makes them 0700 and refuses one that is not a
///   directory of its own uid; clients refuse one that is a symbolic link,
///   belongs to another uid or lets group or others in (SocketTrust).
public struct DaemonAddress: Sendable, Equatable, CustomStringConvertible {
    /// The socket's path in the file system.
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// Parses `unix:/path` or `/path`. Abstract sockets (`unix:@name`) and
    /// other transports are refused: tetherd's access control relies on
    /// the socket directory's permissions as well as on peer credentials.
    public init(parsing text: String) throws(VarlinkError) {
        var rest = Substring(text)
        if rest.hasPrefix("unix:") { rest = rest.dropFirst(5) }
        // Varlink lets parameters follow a ';' (unix:/path;mode=0600).
        if let semicolon = rest.firstIndex(of: ";") { rest = rest[..<semicolon] }
        guard rest.hasPrefix("/") else {
            throw .invalidParameter("address", "'\(text)' is not a Unix socket address: use unix:/absolute/path")
        }
        guard rest.utf8.count < 108 else {  // sun_path holds 108 bytes with its NUL
            throw .invalidParameter("address", "the socket path has \(rest.utf8.count) bytes; a Unix socket path has at most 107")
        }
        path = String(rest)
    }

    public var description: String { "unix:\(path)" }

    /// The directory that holds the socket.
    public var directory: String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The default address for a process of `uid` with `environment`.
    public static func standard(uid: UInt32, environment: [String: String]) throws(VarlinkError) -> DaemonAddress {
        if let explicit = environment["TETHER_ADDRESS"], !explicit.isEmpty {
            return try DaemonAddress(parsing: explicit)
        }
        if uid == 0 { return DaemonAddress(path: "/run/tether/tetherd.sock") }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return DaemonAddress(path: SocketTrust.normalized(runtime) + "/tether/tetherd.sock")
        }
        return DaemonAddress(path: fallbackDirectory(uid: uid, environment: environment) + "/tetherd.sock")
    }

    /// The directory used without `XDG_RUNTIME_DIR`: `${TMPDIR:-/tmp}/tether-UID`.
    public static func fallbackDirectory(uid: UInt32, environment: [String: String]) -> String {
        var base = "/tmp"
        if let tmp = environment["TMPDIR"], tmp.hasPrefix("/") { base = SocketTrust.normalized(tmp) }
        return (base == "/" ? "" : base) + "/tether-\(uid)"
    }

    /// The per-user private socket directories of `uid`: the ones
    /// `standard` may pick (`$XDG_RUNTIME_DIR/tether`, when that is set, and
    /// the fallback), whoever asks for them, and whether the address was
    /// chosen by default or given.
    public static func privateDirectories(uid: UInt32, environment: [String: String]) -> [String] {
        var all: [String] = []
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            all.append(SocketTrust.normalized(SocketTrust.normalized(runtime) + "/tether"))
        }
        all.append(fallbackDirectory(uid: uid, environment: environment))
        return all
    }
}
