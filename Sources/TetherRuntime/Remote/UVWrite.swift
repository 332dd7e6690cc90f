import CLibUV

/// Writing bytes to a libuv stream, shared by the daemon's connections and
/// the remote-state client: uv_try_write first (most replies fit the
/// socket buffer, so no request is allocated), and what the kernel did not
/// take is copied into one allocation with its uv_write_t and queued.
package enum UVWrite {
    /// Writes `bytes`. Returns how many bytes were queued (0: all written
    /// now) or a negative libuv error (nothing queued). `done` runs on the
    /// loop thread when a queued write finishes, with its byte count and
    /// status (negative: failed or cancelled by a close).
    package static func write(_ bytes: [UInt8], to stream: UnsafeMutablePointer<uv_stream_t>, tryFirst: Bool,
                              done: @escaping (Int, Int32) -> Void) -> Int {
        var offset = 0
        if tryFirst {
            let written = bytes.withUnsafeBufferPointer { raw -> Int32 in
                var buf = uv_buf_init(UnsafeMutableRawPointer(mutating: raw.baseAddress!).assumingMemoryBound(to: CChar.self),
                                      UInt32(raw.count))
                return uv_try_write(stream, &buf, 1)
            }
            if written == Int32(bytes.count) { return 0 }
            if written > 0 {
                offset = Int(written)
            } else if written != Int32(UV_EAGAIN.rawValue) {
                return Int(written)
            }
        }
        let count = bytes.count - offset
        let raw = UnsafeMutableRawPointer.allocate(byteCount: bytesOffset + count, alignment: MemoryLayout<uv_write_t>.alignment)
        bytes.withUnsafeBytes { (raw + bytesOffset).copyMemory(from: $0.baseAddress! + offset, byteCount: count) }
        let request = raw.bindMemory(to: uv_write_t.self, capacity: 1)
        request.pointee.data = Unmanaged.passRetained(Completion(count: count, done: done)).toOpaque()
        var buf = uv_buf_init((raw + bytesOffset).assumingMemoryBound(to: CChar.self), UInt32(count))
        let rc = uv_write(request, stream, &buf, 1) { req, status in
            let completion = Unmanaged<Completion>.fromOpaque(req!.pointee.data).takeRetainedValue()
            UnsafeMutableRawPointer(req!).deallocate()
            completion.done(completion.count, status)
        }
        if rc != 0 {
            Unmanaged<Completion>.fromOpaque(request.pointee.data).release()
            raw.deallocate()
            return Int(rc)
        }
        return count
    }

    private static let bytesOffset = MemoryLayout<uv_write_t>.stride

    private final class Completion {
        let count: Int
        let done: (Int, Int32) -> Void
        init(count: Int, done: @escaping (Int, Int32) -> Void) {
            self.count = count
            self.done = done
        }
    }
}
