import Glibc

/// A pthread mutex at a stable address (Swift may move a stored struct, and a
/// pthread_mutex_t must not move). Paired with `Condition` for flush waits,
/// which Synchronization.Mutex cannot do.
final class Lock {
    let raw: UnsafeMutablePointer<pthread_mutex_t>
    /// A single-threaded runtime's locks: every operation is a no-op.
    let disabled: Bool

    init(disabled: Bool = false) {
        self.disabled = disabled
        raw = .allocate(capacity: 1)
        pthread_mutex_init(raw, nil)
    }

    deinit {
        pthread_mutex_destroy(raw)
        raw.deallocate()
    }

    @inline(__always) func lock() { if !disabled { pthread_mutex_lock(raw) } }
    @inline(__always) func unlock() { if !disabled { pthread_mutex_unlock(raw) } }
    @inline(__always) func tryLock() -> Bool { disabled || pthread_mutex_trylock(raw) == 0 }
}

/// A borrowed view of a `Lock` for hot paths: a plain value, so using it
/// costs no retain/release (calling a method on a class reference held
/// `unowned(unsafe)` made a +1 copy each time; profiled at three pairs per
/// delivered call). Valid while its `Lock` lives: the runtime keeps the one
/// it wraps alive (slots are never freed; its own locks are stored too).
struct LockRef {
    let raw: UnsafeMutablePointer<pthread_mutex_t>
    let disabled: Bool

    init(_ lock: Lock) {
        raw = lock.raw
        disabled = lock.disabled
    }

    @inline(__always) func lock() { if !disabled { pthread_mutex_lock(raw) } }
    @inline(__always) func unlock() { if !disabled { pthread_mutex_unlock(raw) } }
    @inline(__always) func tryLock() -> Bool { disabled || pthread_mutex_trylock(raw) == 0 }
}

final class Condition {
    let raw: UnsafeMutablePointer<pthread_cond_t>

    init() {
        raw = .allocate(capacity: 1)
        pthread_cond_init(raw, nil)
    }

    deinit {
        pthread_cond_destroy(raw)
        raw.deallocate()
    }

    func wait(_ lock: LockRef) { pthread_cond_wait(raw, lock.raw) }
    func broadcast() { pthread_cond_broadcast(raw) }
}
