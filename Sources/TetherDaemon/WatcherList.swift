import Glibc
import TetherCore
import TetherWire

// io.tether.Watchers (`tetherctl graph`): which processes watch which
// states. Owner and root only (Session): it shows every uid's processes and
// what they look at.

extension Service {
    /// At most this many watchers in one reply.
    static let maxListedWatchers = 1000

    /// The watching connections whose watch concerns `prefix` (nil: all),
    /// in the order they started. The names listed stop at a quarter of
    /// the reply limit (a watch may list 1,024 names of 256 bytes each);
    /// `truncated` then says so.
    func watcherList(prefix: String?) -> WatchersReply {
        var listed: [WatcherInfo] = []
        var bytes = 0
        let budget = store.limits.maxReply / 4
        var truncated = false
        for w in watcherSessions() {
            let p = w.parameters
            var names = p.names
            if let prefix {
                names = names.filter { $0.hasPrefix(prefix) }
                let overlaps = p.prefix.map { $0.hasPrefix(prefix) || prefix.hasPrefix($0) } ?? false
                guard !names.isEmpty || overlaps else { continue }
            }
            let size = 64 + names.reduce(0) { $0 + $1.utf8.count + 4 } + (p.prefix?.utf8.count ?? 0)
            guard listed.count < Service.maxListedWatchers, bytes + size <= budget else {
                truncated = true
                break
            }
            bytes += size
            let peer = w.session.peer
            listed.append(WatcherInfo(pid: Int64(peer.pid), uid: Int64(peer.uid), command: Service.command(of: peer.pid),
                                      names: names, prefix: p.prefix, path: p.path.isRoot ? nil : p.path.description))
        }
        return WatchersReply(watchers: listed, truncated: truncated)
    }

    /// /proc/PID/comm (at most 16 bytes), "" when the process is gone or
    /// hides it. Read now: a pid reused since the connection was made
    /// names another program (the pid and uid are the connection's own).
    static func command(of pid: Int32) -> String {
        guard pid > 0 else { return "" }
        let fd = Glibc.open("/proc/\(pid)/comm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { Glibc.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = Glibc.read(fd, &buffer, buffer.count)
        guard n > 0 else { return "" }
        var text = String(decoding: buffer[..<n], as: UTF8.self)
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
