import CLibUV
import NIOConcurrencyHelpers

/// Work handed from gRPC's threads to the daemon's loop thread: closures
/// queued under a lock and run, in order, in a uv_async callback (as the
/// group commit's sync thread hands back durable groups).
///
/// Bounded by what is in flight: one closure per proposal answered and
/// one per revision the watch delivered; the watch stops reading (gRPC
/// flow control then holds etcd back) while `pending` is over
/// `highWater`, so a loop that falls behind never queues without bound.
final class LoopInbox: @unchecked Sendable {
    private let lock = NIOLock()
    private var queue: [() -> Void] = []
    private var async: UnsafeMutablePointer<uv_async_t>?
    private var closed = false
    /// Closures queued and not yet run.
    private(set) var pending = 0
    static let highWater = 4096

    /// Starts delivering on `loop` (the loop thread calls it).
    func attach(_ loop: UnsafeMutablePointer<uv_loop_t>) -> Int32 {
        let handle = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
        let rc = uv_async_init(loop, handle) { handle in
            Unmanaged<LoopInbox>.fromOpaque(handle!.pointee.data).takeUnretainedValue().drain()
        }
        guard rc == 0 else {
            handle.deallocate()
            return rc
        }
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        lock.withLock { async = handle }
        if lock.withLock({ !queue.isEmpty }) { uv_async_send(handle) }
        return 0
    }

    /// Stops (the loop thread): what is queued is dropped, and nothing
    /// queued later runs.
    func detach() {
        let handle: UnsafeMutablePointer<uv_async_t>? = lock.withLock {
            closed = true
            queue.removeAll()
            pending = 0
            defer { async = nil }
            return async
        }
        guard let handle else { return }
        uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { raw in
            let handle = UnsafeMutableRawPointer(raw!).assumingMemoryBound(to: uv_async_t.self)
            Unmanaged<LoopInbox>.fromOpaque(handle.pointee.data).release()
            handle.deallocate()
        }
    }

    /// Queues `work` for the loop thread (any thread).
    func post(_ work: @escaping () -> Void) {
        let handle: UnsafeMutablePointer<uv_async_t>? = lock.withLock {
            guard !closed else { return nil }
            queue.append(work)
            pending += 1
            return async
        }
        if let handle { uv_async_send(handle) }
    }

    /// Whether the loop is behind (the watch waits before reading more).
    var isBehind: Bool { lock.withLock { pending > LoopInbox.highWater } }

    private func drain() {
        while true {
            let batch: [() -> Void] = lock.withLock {
                defer { queue.removeAll(keepingCapacity: true) }
                return queue
            }
            if batch.isEmpty { return }
            for work in batch { work() }
            lock.withLock { if !closed { pending -= batch.count } }
        }
    }
}
