import CLibUV
import Glibc

/// The two systemd protocols tetherd speaks, without libsystemd: both are
/// stable, documented and a few lines (sd_notify(3), sd_listen_fds(3)).
public enum Systemd {
    /// Sends `state` ("READY=1", "STOPPING=1", ...) to `$NOTIFY_SOCKET`, a
    /// datagram socket (a path, or `@name` for an abstract one). No-op
    /// when the variable is unset.
    public static func notify(_ state: String) {
        guard let target = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !target.isEmpty else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var addr = unixAddress(target)
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        if target.hasPrefix("@") {
            // Abstract: a leading NUL, and the length counts only the name.
            withUnsafeMutableBytes(of: &addr.sun_path) { $0[0] = 0 }
            length = socklen_t(MemoryLayout<sa_family_t>.size + target.utf8.count)
        }
        let bytes = Array(state.utf8)
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sa, length) }
            }
        }
    }

    /// The first socket systemd passed (fd 3), when `LISTEN_PID` is this
    /// process and `LISTEN_FDS` is at least 1; the variables are then
    /// removed so that children do not take them as theirs.
    public static func listenFD() -> Int32? {
        guard let pid = getenv("LISTEN_PID").flatMap({ Int32(String(cString: $0)) }), pid == getpid(),
              let count = getenv("LISTEN_FDS").flatMap({ Int(String(cString: $0)) }), count >= 1 else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        let fd: Int32 = 3  // SD_LISTEN_FDS_START
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    static func unixAddress(_ path: String) -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return addr
    }
}
