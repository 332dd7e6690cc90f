import CLibUV
import TetherCore
import TetherWire

/// One client connection to tetherd on a runtime's loop: connect, write
/// calls, read replies. Loop thread only. `onReply` gets each reply in
/// order; `onClose` runs once, with why, when the connection is gone (a
/// failed connect, the peer closing, a read or write error, a reply that
/// is not Varlink, or `close()`).
final class VarlinkPipe {
    private let pipe = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
    private var decoder = MessageDecoder(maxMessage: Limits.defaults.maxReply)
    private(set) var connected = false
    private var closed = false
    /// Set when the socket failed the trust checks (SocketTrust): the
    /// connection was closed before anything was sent.
    private(set) var untrusted = false
    private let address: DaemonAddress
    private let trust: SocketTrust
    /// Set when the pipe closed because the daemon sent a message this
    /// client cannot read (not a dropped connection): reconnecting would
    /// only read the same message again.
    private(set) var unreadableReply = false
    private let onConnect: () -> Void
    private let onReply: (Reply) -> Void
    private let onClose: (String) -> Void

    private var stream: UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_stream_t.self)
    }

    /// Where reads land: one buffer for all the pipes of a link (one
    /// loop thread, and a read's bytes are consumed before the next read),
    /// not 64 KiB per remote state.
    private let readBuffer: ReadBuffer

    init(loop: UnsafeMutablePointer<uv_loop_t>, address: DaemonAddress, trust: SocketTrust, readBuffer: ReadBuffer,
         onConnect: @escaping () -> Void, onReply: @escaping (Reply) -> Void, onClose: @escaping (String) -> Void) {
        self.address = address
        self.trust = trust
        self.readBuffer = readBuffer
        self.onConnect = onConnect
        self.onReply = onReply
        self.onClose = onClose
        uv_pipe_init(loop, pipe, 0)
        // The handle holds this object until its close callback.
        pipe.pointee.data = Unmanaged.passRetained(self).toOpaque()
        let request = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        request.pointee.data = Unmanaged.passRetained(self).toOpaque()
        uv_pipe_connect(request, pipe, address.path) { request, status in
            let me = Unmanaged<VarlinkPipe>.fromOpaque(request!.pointee.data).takeRetainedValue()
            request!.deallocate()
            me.didConnect(status)
        }
    }

    private func didConnect(_ status: Int32) {
        guard !closed else { return }
        guard status == 0 else {
            close(because: String(cString: uv_strerror(status)))
            return
        }
        // Before anything is sent: the socket's directory, and who listens.
        do throws(UntrustedSocket) {
            try trust.checkDirectory(of: address)
            var fd: uv_os_fd_t = -1
            uv_fileno(UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_handle_t.self), &fd)
            try trust.checkPeer(socket: fd, address: address)
        } catch {
            untrusted = true
            close(because: error.message)
            return
        }
        connected = true
        uv_read_start(stream, { handle, suggested, buf in
            let me = Unmanaged<VarlinkPipe>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
            let bytes = me.readBuffer.bytes
            buf!.pointee = uv_buf_init(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
        }, { stream, nread, buf in
            let me = Unmanaged<VarlinkPipe>.fromOpaque(stream!.pointee.data).takeUnretainedValue()
            me.didRead(nread)
        })
        onConnect()
    }

    private func didRead(_ nread: Int) {
        if nread < 0 {
            close(because: nread == Int(UV_EOF.rawValue) ? "tetherd closed the connection" : String(cString: uv_strerror(Int32(nread))))
            return
        }
        decoder.append(UnsafeRawBufferPointer(rebasing: readBuffer.bytes[..<nread]))
        while !closed {
            let reply: Reply
            do {
                guard let message = try decoder.next() else { return }
                reply = try Reply(parsing: message)
            } catch {
                unreadableReply = true
                close(because: "tetherd sent what is not a Varlink reply: \(error.detail)")
                return
            }
            onReply(reply)
        }
    }

    /// Writes one call.
    func send(_ call: Call) {
        guard !closed else { return }
        var bytes: [UInt8] = []
        do {
            try MessageEncoder.append(call, to: &bytes)
        } catch {
            close(because: "a call could not be written: \(error.detail)")
            return
        }
        let rc = UVWrite.write(bytes, to: stream, tryFirst: true) { [weak self] _, status in
            if status < 0 && status != Int32(UV_ECANCELED.rawValue) && !VarlinkPipe.peerClosed(status) {
                self?.close(because: String(cString: uv_strerror(status)))
            }
        }
        if rc < 0 && !VarlinkPipe.peerClosed(Int32(rc)) { close(because: String(cString: uv_strerror(Int32(rc)))) }
    }

    /// A write that met a socket the daemon closed (EPIPE, ECONNRESET)
    /// does not close the pipe: the read side still holds what the daemon
    /// sent before it closed (a refusal at accept comes that way), then
    /// reads the end of the stream and closes with that.
    static func peerClosed(_ status: Int32) -> Bool {
        status == Int32(UV_EPIPE.rawValue) || status == Int32(UV_ECONNRESET.rawValue)
    }

    func close(because reason: String = "closed") {
        guard !closed else { return }
        closed = true
        connected = false
        uv_close(UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            let me = Unmanaged<VarlinkPipe>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            me.pipe.deallocate()
        }
        onClose(reason)
    }
}

/// The read buffer the pipes of one link share.
final class ReadBuffer {
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    deinit { bytes.deallocate() }
}
