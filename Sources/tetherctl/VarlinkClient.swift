// VarlinkClient.swift — a small blocking Varlink client: one Unix stream socket, TetherWire's framing and messages.

import Glibc
import TetherCore
import TetherWire

/// Why a call did not get an answer it could use.
enum ClientError: Error {
    /// The daemon could not be reached: the address tried and why.
    case cannotConnect(address: String, reason: String)
    /// The connection broke (or the daemon closed it) before the reply.
    case connectionLost(address: String, reason: String)
    /// The daemon answered with an error.
    case remote(VarlinkError)
    /// The daemon sent something that is not a reply tetherctl can read.
    case badReply(String)
    /// A signal interrupted a read and `interrupted` said to stop.
    case interrupted
    /// The socket failed the trust checks (SocketTrust): nothing was sent.
    case untrusted(address: String, reason: String)
    /// No answer within `--timeout` seconds; `write` when the call was a
    /// write (its outcome is then unknown).
    case timedOut(address: String, seconds: Double, write: Bool)
}

/// One connection to tetherd. Calls block until their reply has arrived;
/// a call with `more` is followed by `receive()` until a reply without
/// `continues`. Not thread-safe: one caller at a time.
final class VarlinkConnection {
    let address: DaemonAddress
    private var fd: Int32
    private var decoder: MessageDecoder
    private let limits: Limits
    /// Called when `read` is interrupted by a signal: returning true
    /// abandons the read (it throws `interrupted`); false reads on.
    var interrupted: () -> Bool = { false }
    /// `--timeout`: how long connecting, and waiting for a reply, may take
    /// (seconds; 0: without limit).
    let timeout: Double
    /// When `receive` gives up (CLOCK_MONOTONIC ms; nil: never).
    var deadline: Int64?
    /// Whether the call waited for is a write (for the timeout's message).
    private var waitingForWrite = false

    static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000)
    }

    /// Starts the clock of one call: `receive` throws `timedOut` once
    /// `timeout` has passed without the reply (no limit when 0).
    func startClock(write: Bool = false) {
        waitingForWrite = write
        deadline = timeout > 0 ? VarlinkConnection.monotonicMilliseconds() + Int64((timeout * 1000).rounded(.up)) : nil
    }

    /// Connects to `address`, after checking its directory, and checks
    /// who listens there (SO_PEERCRED) before anything is sent.
    init(address: DaemonAddress, trust: SocketTrust, limits: Limits = .defaults, timeout: Double = 0) throws(ClientError) {
        self.address = address
        self.limits = limits
        self.timeout = timeout
        decoder = MessageDecoder(maxMessage: limits.maxReply)
        do {
            try trust.checkDirectory(of: address)
        } catch {
            fd = -1
            throw .untrusted(address: address.description, reason: error.message)
        }
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw .cannotConnect(address: address.description, reason: "socket: \(VarlinkConnection.errorText(errno))")
        }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(address.path.utf8)
        let fits = withUnsafeMutableBytes(of: &addr.sun_path) { raw -> Bool in
            guard pathBytes.count < raw.count else { return false }
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
            return true
        }
        guard fits else {
            Glibc.close(fd)
            throw .cannotConnect(address: address.description, reason: "the socket path is too long")
        }
        if timeout > 0 {
            // Bounds a connect that waits for room in a full backlog (a
            // daemon that accepts nothing), and every send.
            var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
            if limit.tv_sec == 0 && limit.tv_usec == 0 { limit.tv_usec = 1 }
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        var rc: Int32
        repeat {
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        } while rc != 0 && errno == EINTR
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            if code == EAGAIN && timeout > 0 { throw .timedOut(address: address.description, seconds: timeout, write: false) }
            throw .cannotConnect(address: address.description, reason: VarlinkConnection.connectReason(code))
        }
        do {
            try trust.checkPeer(socket: fd, address: address)
        } catch {
            Glibc.close(fd)
            fd = -1
            throw .untrusted(address: address.description, reason: error.message)
        }
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// Sends one call.
    func send(_ call: Call) throws(ClientError) {
        var out: [UInt8] = []
        do {
            try MessageEncoder.append(call, to: &out)
        } catch {
            throw .badReply("cannot write the call: \(error)")
        }
        var sent = 0
        while sent < out.count {
            let n = out.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                if (code == EAGAIN || code == EWOULDBLOCK) && timeout > 0 {
                    throw .timedOut(address: address.description, seconds: timeout, write: waitingForWrite)
                }
                throw .connectionLost(address: address.description, reason: VarlinkConnection.errorText(code))
            }
            sent += n
        }
    }

    /// The next reply on the connection, error replies included.
    func receive() throws(ClientError) -> Reply {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let message: [UInt8]?
            do {
                message = try decoder.next()
            } catch {
                throw .badReply("a reply longer than \(limits.maxReply) bytes")
            }
            if let message {
                do {
                    return try Reply(parsing: message, limits: limits)
                } catch {
                    throw .badReply("not a Varlink reply: \(error)")
                }
            }
            if let deadline {
                // Wait for something to read, at most until the deadline.
                let left = deadline - VarlinkConnection.monotonicMilliseconds()
                if left <= 0 { throw .timedOut(address: address.description, seconds: timeout, write: waitingForWrite) }
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pfd, 1, Int32(min(left, Int64(Int32.max))))
                if ready < 0 && errno == EINTR {
                    if interrupted() { throw .interrupted }
                    continue
                }
                if ready == 0 { continue }  // the deadline, checked above
            }
            let n = chunk.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress!, raw.count) }
            if n < 0 {
                if errno == EINTR {
                    if interrupted() { throw .interrupted }
                    continue
                }
                throw .connectionLost(address: address.description, reason: VarlinkConnection.errorText(errno))
            }
            if n == 0 {
                let pending = decoder.pendingCount
                throw .connectionLost(address: address.description,
                                      reason: pending > 0 ? "tetherd closed the connection inside a reply"
                                                          : "tetherd closed the connection")
            }
            decoder.append(chunk[..<n])
        }
    }

    /// One call and its single reply: the reply's parameters, or the
    /// daemon's error as `ClientError.remote`.
    func call(_ method: String, _ parameters: ValueObject = ValueObject()) throws(ClientError) -> ValueObject {
        startClock(write: ["io.tether.Set", "io.tether.Remove", "io.tether.Transaction"].contains(method))
        defer { deadline = nil }
        do {
            try send(Call(method: method, parameters: parameters))
        } catch {
            // A daemon that refuses a peer at accept sends its error and
            // closes: a send after that fails (EPIPE), and the refusal
            // still waits to be read. Report it rather than the broken pipe.
            if case .connectionLost = error, let reply = try? receive(), let refusal = VarlinkError(reply: reply) {
                throw .remote(refusal)
            }
            throw error
        }
        let reply = try receive()
        if let error = VarlinkError(reply: reply) { throw .remote(error) }
        if reply.continues {
            throw .badReply("\(method) answered with \"continues\", though the call did not ask for more")
        }
        return reply.parameters
    }

    static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    static func connectReason(_ code: Int32) -> String {
        let text = errorText(code)
        switch code {
        case ENOENT: return "\(text): no socket there (is tetherd running?)"
        case ECONNREFUSED: return "\(text): nothing listens on the socket (is tetherd running?)"
        case EACCES, EPERM: return "\(text): no permission to use the socket"
        case ENOTDIR: return "\(text): a part of the path is not a directory"
        case ENOTSOCK: return "\(text): the path is not a socket"
        default: return text
        }
    }
}
