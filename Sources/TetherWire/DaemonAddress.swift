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
///   `XDG_RUNTIME_DIR`, `unix:/tmp/tether-UID/tetherd.sock` (the daemon
///   makes that directory 0700 and refuses one it does not own).
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
            return DaemonAddress(path: runtime + "/tether/tetherd.sock")
        }
        return DaemonAddress(path: "/tmp/tether-\(uid)/tetherd.sock")
    }
}
