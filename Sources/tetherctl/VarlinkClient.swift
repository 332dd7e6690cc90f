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

    /// Connects to `address`, after checking its directory, and checks
    /// who listens there (SO_PEERCRED) before anything is sent.
    init(address: DaemonAddress, trust: SocketTrust, limits: Limits = .defaults) throws(ClientError) {
        self.address = address
        self.limits = limits
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
                // A daemon that refuses a peer at accept sends its error and
                // closes before reading anything: the call meets a closed
                // socket, and the reason waits in the receive buffer.
                if code == EPIPE || code == ECONNRESET, let reply = try? receive(), let error = VarlinkError(reply: reply) {
                    throw .remote(error)
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
        try send(Call(method: method, parameters: parameters))
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
