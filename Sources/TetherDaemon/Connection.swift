import CLibUV
import Glibc
import TetherCore
import TetherRuntime

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
    /// Reading stopped while the peer's output is backed up (its calls
    /// wait in the decoder until it reads).
    private var readingStopped = false
    /// In the daemon's list of connections to resume next turn.
    var awaitingResume = false

    /// Past this many unwritten bytes a peer that does not read is cut off
    /// (memory stays bounded; a watch resumes from its revision).
    static let maxQueuedBytes = 64 << 20

    init(daemon: Daemon, pipe: UnsafeMutablePointer<uv_pipe_t>) {
        self.daemon = daemon
        self.pipe = pipe
    }

    deinit {
        // The session may outlive its connection (the service holds it
        // until its calls are answered): it must not name a freed one.
        if let session, session.connection === self { session.connection = nil }
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
            session.receive(UnsafeRawBufferPointer(start: buf.base, count: nread), sliced: true)
            afterInput()
        } else if nread < 0 {
            if nread != Int(UV_EOF.rawValue) {
                daemon.log.event("read-error", "peer" => session.peer.description,
                                 "error" => String(cString: uv_strerror(Int32(nread))))
            }
            session.receivedEnd()
            close()
        }
    }

    /// After a slice of calls: calls that still wait are handled on the
    /// next loop turn, or, while the peer's output is backed up, once it
    /// reads; meanwhile nothing more is read from it.
    func afterInput() {
        guard !closing, session.inputWaits else { return }
        // Nothing more is read while calls wait: what a peer sends faster
        // than its slices are answered stays in its socket, not in the
        // decoder's buffer (which would grow without bound, and count
        // against its uid's cap on unfinished input).
        if !readingStopped {
            uv_read_stop(stream)
            readingStopped = true
        }
        if !session.isBackedUp { daemon.resumeLater(self) }
    }

    /// The next slice of waiting calls (the daemon's idle turn, or output
    /// that drained), and reading again once none waits.
    func resume() {
        // A snapshot that yielded after a slice goes on (Service.streamSnapshot),
        // or, backed up, waits for its output to drain (the write callback).
        if !closing && session.watcher?.yielded == true { daemon.service.resumeWatch(session) }
        guard !closing, !session.isBackedUp else { return }
        if session.inputWaits { session.drainInput() }
        if session.inputWaits {
            afterInput()
            return
        }
        if readingStopped {
            readingStopped = false
            if startReading() != 0 { close() }
        }
    }

    /// Writes the session's output released for writing (its group
    /// commit is durable); closes when the session asked and nothing of it
    /// waits any more.
    func flush() {
        guard !closing else { return }
        if session.hasReady {
            session.writeReady { write($0) }
            // A watch that fell behind catches up as its peer reads, which
            // the write callback says; a write the kernel took whole
            // (uv_try_write) has no callback, and such a watch waited for
            // a write that never came (found on this branch; main had it
            // too: a watch behind after one turn of 100 KB changes never
            // caught up). What it is sent goes out at the end of the turn.
            if queuedBytes < Session.lowWater && session.watcher?.behind == true { daemon.service.catchUp(session) }
        }
        // Calls held back go on next turn (not in this one: the turn's
        // end would keep handling slices as long as they made output).
        if (readingStopped || session.inputWaits) && !session.isBackedUp { daemon.resumeLater(self) }
        if queuedBytes > Connection.maxQueuedBytes {
            daemon.log.event("slow-peer", "peer" => session.peer.description, "unwritten" => "\(queuedBytes)")
            daemon.service.metrics.cutOffPeers &+= 1
            close()
            return
        }
        if let reason = session.closeReason, !session.isHolding {
            daemon.log.event("close", "peer" => session.peer.description, "reason" => reason)
            shutdownThenClose()
        }
    }

    private func write(_ bytes: [UInt8]) {
        defer { session.unwritten = queuedBytes }
        var offset = 0
        if queuedBytes == 0 {
            // Most output fits the socket buffer: written here, without the
            // completion closure UVWrite.write is given (made per call).
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
        let rest = offset == 0 ? bytes : Array(bytes[offset...])
        let queued = UVWrite.write(rest, to: stream, tryFirst: false) { [self] count, status in
            queuedBytes -= count
            session.unwritten = queuedBytes
            if status < 0 { close(); return }
            // A watch that fell behind catches up as its peer reads, and
            // calls held back while its output was backed up go on.
            if queuedBytes < Session.lowWater && session.watcher?.behind == true { daemon.service.catchUp(session) }
            if readingStopped { resume() }
        }
        if queued < 0 { close() } else { queuedBytes += queued }
    }

    /// A connection refused at accept: its one reply goes to the kernel
    /// now (it is small: the socket's buffer takes it whole), and the
    /// descriptor is closed in the same call, so a flood of refused peers
    /// holds no descriptor past its accept.
    func refuseNow() {
        let bytes = session.takeOutput()
        if !bytes.isEmpty { write(bytes) }
        close()
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

