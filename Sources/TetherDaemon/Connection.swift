import CLibUV
import Glibc
import TetherCore

/// The socket under a Session: a uv_pipe_t on the daemon's loop. Reads
/// go to the session; its replies are written once per loop turn (every
/// reply of a pipelined batch in one write), first with uv_try_write and,
/// for what the kernel did not take, with uv_write.
final class Connection {
    unowned let daemon: Daemon
    let pipe: UnsafeMutablePointer<uv_pipe_t>
    var session: Session!
    /// Bytes handed to uv_write whose callbacks have not run yet.
    private(set) var queuedBytes = 0
    private var closing = false

    /// Past this many unwritten bytes a peer that does not read is cut off
    /// (memory stays bounded; a watch resumes from its revision).
    static let maxQueuedBytes = 64 << 20

    init(daemon: Daemon, pipe: UnsafeMutablePointer<uv_pipe_t>) {
        self.daemon = daemon
        self.pipe = pipe
    }

    private var stream: UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_stream_t.self)
    }

    private var handle: UnsafeMutablePointer<uv_handle_t> {
        UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_handle_t.self)
    }

    func startReading() -> Int32 {
        uv_read_start(stream, { _, suggested, buf in
            // One buffer for every read: the loop is single-threaded and a
            // read's bytes are consumed before the next read.
            buf!.pointee = uv_buf_init(Daemon.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self),
                                       UInt32(Daemon.readBuffer.count))
        }, { stream, nread, buf in
            let connection = Unmanaged<Connection>.fromOpaque(stream!.pointee.data).takeUnretainedValue()
            connection.didRead(nread, buf!.pointee)
        })
    }

    private func didRead(_ nread: Int, _ buf: uv_buf_t) {
        if nread > 0 {
            session.receive(UnsafeRawBufferPointer(start: buf.base, count: nread))
        } else if nread < 0 {
            if nread != Int(UV_EOF.rawValue) {
                daemon.log.event("read-error", "peer" => session.peer.description,
                                 "error" => String(cString: uv_strerror(Int32(nread))))
            }
            session.receivedEnd()
            close()
        }
    }

    /// Writes the session's pending output; closes when the session asked.
    func flush() {
        guard !closing else { return }
        let bytes = session.takeOutput()
        if !bytes.isEmpty { write(bytes) }
        if queuedBytes > Connection.maxQueuedBytes {
            daemon.log.event("slow-peer", "peer" => session.peer.description, "unwritten" => "\(queuedBytes)")
            close()
            return
        }
        if let reason = session.closeReason {
            daemon.log.event("close", "peer" => session.peer.description, "reason" => reason)
            shutdownThenClose()
        }
    }

    private func write(_ bytes: [UInt8]) {
        var offset = 0
        if queuedBytes == 0 {
            // Most replies fit the socket buffer: write them now, no request.
            let written = bytes.withUnsafeBufferPointer { raw -> Int32 in
                var buf = uv_buf_init(UnsafeMutableRawPointer(mutating: raw.baseAddress!).assumingMemoryBound(to: CChar.self),
                                      UInt32(raw.count))
                return uv_try_write(stream, &buf, 1)
            }
            if written == Int32(bytes.count) { return }
            if written > 0 {
                offset = Int(written)
            } else if written != Int32(UV_EAGAIN.rawValue) {
                close()
                return
            }
        }
        let request = WriteRequest.make(bytes[offset...])
        let count = WriteRequest.count(request)
        queuedBytes += count
        request.pointee.data = Unmanaged.passRetained(self).toOpaque()
        var buf = WriteRequest.buffer(request)
        let rc = uv_write(request, stream, &buf, 1) { req, status in
            let connection = Unmanaged<Connection>.fromOpaque(req!.pointee.data).takeRetainedValue()
            connection.queuedBytes -= WriteRequest.count(req!)
            WriteRequest.free(req!)
            if status < 0 { connection.close() }
        }
        if rc != 0 {
            Unmanaged<Connection>.fromOpaque(request.pointee.data).release()
            queuedBytes -= count
            WriteRequest.free(request)
            close()
        }
    }

    /// Waits for queued writes (uv_shutdown), then closes.
    private func shutdownThenClose() {
        guard !closing else { return }
        closing = true
        let req = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        req.pointee.data = Unmanaged.passRetained(self).toOpaque()
        let rc = uv_shutdown(req, stream) { req, _ in
            let connection = Unmanaged<Connection>.fromOpaque(req!.pointee.data).takeRetainedValue()
            req!.deallocate()
            connection.closeHandle()
        }
        if rc != 0 {
            Unmanaged<Connection>.fromOpaque(req.pointee.data).release()
            req.deallocate()
            closeHandle()
        }
    }

    /// Closes now (pending writes are cancelled).
    func close() {
        guard !closing else { return }
        closing = true
        closeHandle()
    }

    private func closeHandle() {
        if uv_is_closing(handle) != 0 { return }
        uv_close(handle) { handle in
            let connection = Unmanaged<Connection>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            connection.daemon.connectionClosed(connection)
            connection.pipe.deallocate()
        }
    }
}

/// One allocation per queued write: the uv_write_t, the byte count, then
/// a copy of the bytes; freed by the write's callback.
private enum WriteRequest {
    private static let countOffset = MemoryLayout<uv_write_t>.stride
    private static let bytesOffset = countOffset + MemoryLayout<Int>.stride

    static func make(_ bytes: ArraySlice<UInt8>) -> UnsafeMutablePointer<uv_write_t> {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: bytesOffset + bytes.count,
                                                   alignment: MemoryLayout<uv_write_t>.alignment)
        raw.storeBytes(of: bytes.count, toByteOffset: countOffset, as: Int.self)
        bytes.withUnsafeBytes { (raw + bytesOffset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return raw.bindMemory(to: uv_write_t.self, capacity: 1)
    }

    static func count(_ request: UnsafeMutablePointer<uv_write_t>) -> Int {
        UnsafeMutableRawPointer(request).load(fromByteOffset: countOffset, as: Int.self)
    }

    static func buffer(_ request: UnsafeMutablePointer<uv_write_t>) -> uv_buf_t {
        uv_buf_init((UnsafeMutableRawPointer(request) + bytesOffset).assumingMemoryBound(to: CChar.self),
                    UInt32(count(request)))
    }

    static func free(_ request: UnsafeMutablePointer<uv_write_t>) {
        UnsafeMutableRawPointer(request).deallocate()
    }
}
