import Glibc
import TetherCore
import TetherWire

/// Who is at the other end of a connection (SO_PEERCRED).
public struct Peer: Sendable, Equatable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// The peer process's supplementary groups when it connected
    /// (SO_PEERGROUPS); nil where the kernel cannot tell (before Linux
    /// 4.13), and group grants then read the user database.
    public var groups: [UInt32]?

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32]? = nil) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// The credentials of the process at the other end of `fd`.
    static func of(socket fd: Int32) -> Peer? {
        // struct ucred (Linux), which Glibc's module leaves out without _GNU_SOURCE.
        struct Credentials { var pid: Int32 = 0; var uid: UInt32 = 0; var gid: UInt32 = 0 }
        var cred = Credentials()
        var length = socklen_t(MemoryLayout<Credentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0 else { return nil }
        return Peer(pid: cred.pid, uid: cred.uid, gid: cred.gid, groups: peerGroups(fd))
    }

    /// SO_PEERGROUPS: the groups the peer process had when it connected,
    /// which is what it may act as (a user database lookup would grant a
    /// process that dropped a group, or miss one given by newgrp/sg).
    static func peerGroups(_ fd: Int32) -> [UInt32]? {
        let soPeerGroups: Int32 = 59  // <asm-generic/socket.h>; not in Glibc's module
        var list = [gid_t](repeating: 0, count: 64)
        var length = socklen_t(list.count * MemoryLayout<gid_t>.size)
        if getsockopt(fd, SOL_SOCKET, soPeerGroups, &list, &length) != 0 {
            // ERANGE: the kernel put the size it needs in `length`.
            guard errno == ERANGE, length > 0, Int(length) <= 65536 * MemoryLayout<gid_t>.size else { return nil }
            list = [gid_t](repeating: 0, count: Int(length) / MemoryLayout<gid_t>.size)
            guard getsockopt(fd, SOL_SOCKET, soPeerGroups, &list, &length) == 0 else { return nil }
        }
        return Array(list.prefix(Int(length) / MemoryLayout<gid_t>.size))
    }

    public var description: String { "pid=\(pid) uid=\(uid) gid=\(gid)" }
}

/// What one connection may do: everything (the daemon's own uid and root),
/// or read and maybe write the states under some name prefixes.
public struct Grant: Sendable, Equatable {
    public struct Rule: Sendable, Equatable {
        public var prefix: String
        public var write: Bool
    }

    public var everything: Bool
    public var rules: [Rule]

    public static let all = Grant(everything: true, rules: [])

    public func mayRead(_ name: String) -> Bool {
        everything || rules.contains { StateName.has(name, prefix: $0.prefix) }
    }

    public func mayWrite(_ name: String) -> Bool {
        everything || rules.contains { $0.write && StateName.has(name, prefix: $0.prefix) }
    }

    /// Whether every name with `prefix` may be read (a prefix Watch).
    public func mayReadAll(withPrefix prefix: String) -> Bool {
        everything || rules.contains { StateName.has(prefix, prefix: $0.prefix) }
    }
}

/// The access configuration: by default only the daemon's own uid and
/// root may connect; the configuration file grants other uids or groups
/// read or read-write access to name prefixes:
///
///     {"grants": [
///       {"user": "alice", "access": "read-write", "prefixes": ["app.alice."]},
///       {"uid": 1001, "access": "read", "prefixes": ["settings."]},
///       {"group": "staff", "access": "read", "prefixes": [""]}
///     ]}
///
/// A grant names one of `uid`, `user`, `gid` or `group`; a group grant
/// applies to a peer whose primary or supplementary groups include it.
public struct AccessPolicy: Sendable {
    public enum Subject: Sendable, Equatable {
        case uid(UInt32)
        case gid(UInt32)
    }

    public struct Entry: Sendable, Equatable {
        public var subject: Subject
        public var write: Bool
        public var prefixes: [String]

        public init(subject: Subject, write: Bool, prefixes: [String]) {
            self.subject = subject
            self.write = write
            self.prefixes = prefixes
        }
    }

    public let owner: UInt32
    public var entries: [Entry]

    public init(owner: UInt32, entries: [Entry] = []) {
        self.owner = owner
        self.entries = entries
    }

    /// Parses the configuration file's text (JSON); errors name the entry.
    public init(owner: UInt32, json text: String) throws(TetherError) {
        self.init(owner: owner)
        let root = try Value(json: text)
        guard case .object(let top) = root else {
            throw TetherError(.invalidArgument, "the access configuration must be a JSON object with \"grants\"")
        }
        guard let grants = top["grants"] else { return }
        guard case .array(let list) = grants else {
            throw TetherError(.invalidArgument, "\"grants\" must be an array")
        }
        for (i, item) in list.enumerated() {
            guard case .object(let g) = item else { throw TetherError(.invalidArgument, "grants[\(i)] must be an object") }
            let subject: Subject
            if case .int(let uid)? = g["uid"], let u = UInt32(exactly: uid) {
                subject = .uid(u)
            } else if case .int(let gid)? = g["gid"], let v = UInt32(exactly: gid) {
                subject = .gid(v)
            } else if case .string(let user)? = g["user"] {
                guard let pw = getpwnam(user) else { throw TetherError(.notFound, "grants[\(i)]: no user named '\(user)'") }
                subject = .uid(pw.pointee.pw_uid)
            } else if case .string(let group)? = g["group"] {
                guard let gr = getgrnam(group) else { throw TetherError(.notFound, "grants[\(i)]: no group named '\(group)'") }
                subject = .gid(gr.pointee.gr_gid)
            } else {
                throw TetherError(.invalidArgument, "grants[\(i)] must name a uid, user, gid or group")
            }
            let write: Bool
            switch g["access"] {
            case .string("read")?: write = false
            case .string("read-write")?: write = true
            default: throw TetherError(.invalidArgument, "grants[\(i)].access must be \"read\" or \"read-write\"")
            }
            guard case .array(let prefixValues)? = g["prefixes"] else {
                throw TetherError(.invalidArgument, "grants[\(i)].prefixes must be an array of name prefixes (\"\" for every name)")
            }
            var prefixes: [String] = []
            for (j, p) in prefixValues.enumerated() {
                guard case .string(let prefix) = p else { throw TetherError(.invalidArgument, "grants[\(i)].prefixes[\(j)] must be a string") }
                prefixes.append(prefix)
            }
            entries.append(Entry(subject: subject, write: write, prefixes: prefixes))
        }
    }

    /// Whether any uid besides the owner and root has a grant (the socket's
    /// directory must then let others reach the socket).
    public var grantsOthers: Bool { !entries.isEmpty }

    /// What `peer` may do; nil: it may not connect at all.
    public func grant(for peer: Peer) -> Grant? {
        if peer.uid == owner || peer.uid == 0 { return .all }
        let groups = AccessPolicy.groups(of: peer)
        var rules: [Grant.Rule] = []
        for entry in entries {
            let applies: Bool
            switch entry.subject {
            case .uid(let uid): applies = uid == peer.uid
            case .gid(let gid): applies = groups.contains(gid)
            }
            if applies { rules += entry.prefixes.map { Grant.Rule(prefix: $0, write: entry.write) } }
        }
        return rules.isEmpty ? nil : Grant(everything: false, rules: rules)
    }

    /// The peer's primary group and its process's supplementary groups
    /// (SO_PEERGROUPS), or, where the kernel cannot tell, its user's.
    private static func groups(of peer: Peer) -> [UInt32] {
        var result = [peer.gid]
        if let groups = peer.groups { return result + groups }
        guard let pw = getpwuid(peer.uid), let name = pw.pointee.pw_name else { return result }
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, peer.gid, &list, &count) < 0 {
            list = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(name, peer.gid, &list, &count)
        }
        result += list.prefix(Int(max(0, count)))
        return result
    }
}
