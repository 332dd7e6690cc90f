import CLibUV
import Glibc
import TetherCore

/// `tetherd --metrics ADDRESS:PORT`: GET /metrics over HTTP/1.x, on the
/// daemon's loop (Prometheus scrapes it). Read-only: it answers one
/// request per connection with `Metrics.text` and closes.
///
/// Every peer is hostile, as on the Varlink socket, so everything is
/// bounded: at most `maxPeers` connections at once (one more is closed at
/// accept), a request head of at most `maxRequestBytes` (431 past it), and
/// `timeoutMs` for the whole exchange (a peer that sends nothing, or reads
/// nothing, is closed then). Nothing a peer sends is kept past its
/// connection; a body is never read.
final class MetricsServer {
    static let maxPeers = 8
    static let maxRequestBytes = 8 << 10
    static let timeoutMs: UInt64 = 5000

    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let server = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
    /// Answers a scrape (the daemon's metrics text).
    private let text: () -> String
    private let log: EventLog
    private var peers: [ObjectIdentifier: MetricsPeer] = [:]
    private var closed = false
    /// Peers closed at accept because `maxPeers` were open.
    private(set) var turnedAway = 0
    /// Where it listens (the port the system chose for port 0).
    private(set) var boundAddress = ""

    /// Listens at `address` ("127.0.0.1:9464", "[::1]:9464"; port 0: any).
    init(loop: UnsafeMutablePointer<uv_loop_t>, address: String, log: EventLog, text: @escaping () -> String) throws(TetherError) {
        self.loop = loop
        self.text = text
        self.log = log
        var storage = sockaddr_storage()
        try MetricsServer.parse(address, into: &storage)
        uv_tcp_init(loop, server)
        server.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        var rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(server, $0, 0) }
        }
        if rc == 0 {
            rc = uv_listen(UnsafeMutableRawPointer(server).assumingMemoryBound(to: uv_stream_t.self), 64) { stream, status in
                Unmanaged<MetricsServer>.fromOpaque(stream!.pointee.data).takeUnretainedValue().accept(status)
            }
        }
        guard rc == 0 else {
            closed = true
            uv_close(UnsafeMutableRawPointer(server).assumingMemoryBound(to: uv_handle_t.self)) { $0?.deallocate() }
            throw TetherError(.invalidArgument, "--metrics \(address): cannot listen: \(String(cString: uv_strerror(rc)))")
        }
        boundAddress = MetricsServer.describe(server)
    }

    /// "HOST:PORT" (IPv4) or "[HOST]:PORT" (IPv6).
    static func parse(_ address: String, into storage: inout sockaddr_storage) throws(TetherError) {
        let bad = TetherError(.invalidArgument, "--metrics \(address): expected HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464")
        guard let colon = address.lastIndex(of: ":"), let port = Int32(address[address.index(after: colon)...]),
              (0...65535).contains(port) else { throw bad }
        var host = String(address[..<colon])
        let v6 = host.hasPrefix("[") && host.hasSuffix("]")
        if v6 { host = String(host.dropFirst().dropLast()) }
        let rc = withUnsafeMutablePointer(to: &storage) { p -> Int32 in
            if v6 {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { uv_ip6_addr(host, port, $0) }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { uv_ip4_addr(host, port, $0) }
        }
        guard rc == 0 else { throw bad }
    }

    private static func describe(_ tcp: UnsafeMutablePointer<uv_tcp_t>) -> String {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        var name = [CChar](repeating: 0, count: 64)
        return withUnsafeMutablePointer(to: &storage) { p -> String in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(tcp, $0, &length) }
            if Int32(p.pointee.ss_family) == AF_INET6 {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    uv_ip6_name(a, &name, name.count)
                    return "[\(String(cString: name))]:\(UInt16(bigEndian: a.pointee.sin6_port))"
                }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                uv_ip4_name(a, &name, name.count)
                return "\(String(cString: name)):\(UInt16(bigEndian: a.pointee.sin_port))"
            }
        }
    }

    /// Stops listening and closes every peer (the daemon stops).
    func close() {
        guard !closed else { return }
        closed = true
        uv_close(UnsafeMutableRawPointer(server).assumingMemoryBound(to: uv_handle_t.self)) { $0?.deallocate() }
        for peer in peers.values { peer.close() }
    }

    private func accept(_ status: Int32) {
        guard status == 0, !closed else { return }
        let peer = MetricsPeer(server: self, loop: loop)
        guard uv_accept(UnsafeMutableRawPointer(server).assumingMemoryBound(to: uv_stream_t.self), peer.stream) == 0 else {
            peer.close()
            return
        }
        if peers.count >= MetricsServer.maxPeers {
            turnedAway += 1
            if turnedAway & (turnedAway - 1) == 0 {  // 1, 2, 4, ...: a flood is not a flood of lines
                log.event("metrics-peer-refused", "open" => "\(peers.count)", "refused" => "\(turnedAway)")
            }
            peer.close()
            return
        }
        peers[ObjectIdentifier(peer)] = peer
        peer.start()
    }

    fileprivate func peerClosed(_ peer: MetricsPeer) {
        peers.removeValue(forKey: ObjectIdentifier(peer))
    }

    /// The reply to a complete request head: 200 with the metrics for
    /// GET (or HEAD) /metrics, 404 for another path, 405 for another method,
    /// 400 for what is not a request line.
    fileprivate func reply(to head: ArraySlice<UInt8>) -> [UInt8] {
        let line = head.prefix { $0 != 13 && $0 != 10 }
        let parts = line.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].starts(with: Array("HTTP/1.".utf8)) else {
            return MetricsServer.response("400 Bad Request", "not an HTTP/1.x request line\n")
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = parts[1].prefix { $0 != UInt8(ascii: "?") }
        guard method == "GET" || method == "HEAD" else {
            return MetricsServer.response("405 Method Not Allowed", "only GET /metrics\n", extra: "Allow: GET, HEAD\r\n")
        }
        guard Array(target) == Array("/metrics".utf8) else {
            return MetricsServer.response("404 Not Found", "only /metrics is served here\n")
        }
        return MetricsServer.response("200 OK", text(), type: "text/plain; version=0.0.4; charset=utf-8",
                                      headOnly: method == "HEAD")
    }

    static func response(_ status: String, _ body: String, type: String = "text/plain; charset=utf-8",
                         extra: String = "", headOnly: Bool = false) -> [UInt8] {
        let bytes = Array(body.utf8)
        var out = Array("HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(bytes.count)\r\n\(extra)Connection: close\r\n\r\n".utf8)
        if !headOnly { out += bytes }
        return out
    }
}

/// One HTTP connection to the metrics server: a request head read into a
/// bounded buffer, one reply, then closed (or closed at its deadline).
private final class MetricsPeer {
    unowned let server: MetricsServer
    let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
    let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    var request: [UInt8] = []
    var answered = false
    var closing = false
    /// Handles still to close (tcp, timer): the last close callback frees.
    var handlesOpen = 2
    var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_stream_t.self) }

    /// One buffer for every metrics read (one loop thread; a read is
    /// consumed before the next).
    static let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)

    init(server: MetricsServer, loop: UnsafeMutablePointer<uv_loop_t>) {
        self.server = server
        uv_tcp_init(loop, tcp)
        uv_timer_init(loop, timer)
        // Both handles hold the peer until their close callbacks.
        let me = Unmanaged.passRetained(self).toOpaque()
        tcp.pointee.data = me
        timer.pointee.data = me
    }

    func start() {
        uv_timer_start(timer, { timer in
            Unmanaged<MetricsPeer>.fromOpaque(timer!.pointee.data).takeUnretainedValue().close()
        }, MetricsServer.timeoutMs, 0)
        let rc = uv_read_start(stream, { _, _, buf in
            buf!.pointee = uv_buf_init(MetricsPeer.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self),
                                       UInt32(MetricsPeer.readBuffer.count))
        }, { stream, nread, buf in
            let peer = Unmanaged<MetricsPeer>.fromOpaque(stream!.pointee.data).takeUnretainedValue()
            if nread < 0 { return peer.close() }
            if nread > 0, let base = buf?.pointee.base {
                peer.received(UnsafeRawBufferPointer(start: base, count: nread))
            }
        })
        if rc != 0 { close() }
    }

    func received(_ bytes: UnsafeRawBufferPointer) {
        guard !answered else { return }  // a body, or a second request: not read
        let room = MetricsServer.maxRequestBytes - request.count
        request += bytes.prefix(room)
        if let end = MetricsPeer.endOfHead(request) {
            respond(server.reply(to: request[..<end]))
        } else if request.count >= MetricsServer.maxRequestBytes {
            respond(MetricsServer.response("431 Request Header Fields Too Large",
                                           "a request head is at most \(MetricsServer.maxRequestBytes) bytes\n"))
        }
    }

    /// Where the head ends ("\r\n\r\n", or "\n\n" from a lax client).
    static func endOfHead(_ b: [UInt8]) -> Int? {
        var i = 0
        while i + 1 < b.count {
            if b[i] == 10 && b[i + 1] == 10 { return i }
            if i + 3 < b.count && b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    func respond(_ bytes: [UInt8]) {
        answered = true
        request = []
        uv_read_stop(stream)
        let req = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        let data = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        bytes.withUnsafeBytes { data.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        var buf = uv_buf_init(data.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
        req.pointee.data = data
        let rc = uv_write(req, stream, &buf, 1) { req, _ in
            req!.pointee.data.deallocate()
            let peer = Unmanaged<MetricsPeer>.fromOpaque(req!.pointee.handle.pointee.data).takeUnretainedValue()
            req!.deallocate()
            peer.close()
        }
        if rc != 0 {
            data.deallocate()
            req.deallocate()
            close()
        }
    }

    /// Closes both handles (pending writes are cancelled: their callbacks
    /// run first, with an error, and free their buffers).
    func close() {
        guard !closing else { return }
        closing = true
        server.peerClosed(self)
        for handle in [UnsafeMutableRawPointer(tcp), UnsafeMutableRawPointer(timer)] {
            uv_close(handle.assumingMemoryBound(to: uv_handle_t.self)) { handle in
                let held = Unmanaged<MetricsPeer>.fromOpaque(handle!.pointee.data)
                let peer = held.takeUnretainedValue()
                peer.handlesOpen -= 1
                if peer.handlesOpen == 0 {
                    peer.tcp.deallocate()  // `handle` is one of these two
                    peer.timer.deallocate()
                    held.release()
                }
            }
        }
    }
}
