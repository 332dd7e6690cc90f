import CTether

/// A lock at a stable address (a futex word: CTether.h says why not a
/// pthread mutex). Paired with `Condition` for flush waits, which
/// Synchronization.Mutex cannot do.
@usableFromInline final class Lock {
    @usableFromInline let raw: UnsafeMutablePointer<tether_internal_lock_t>
    /// A single-threaded runtime's locks: every operation is a no-op.
    @usableFromInline let disabled: Bool

    init(disabled: Bool = false) {
        self.disabled = disabled
        raw = .allocate(capacity: 1)
        raw.initialize(to: 0)
    }

    deinit {
        raw.deallocate()
    }

    @inlinable @inline(__always) func lock() { if !disabled { tether_internal_lock(raw) } }
    @inlinable @inline(__always) func unlock() { if !disabled { tether_internal_unlock(raw) } }
    @inlinable @inline(__always) func tryLock() -> Bool { disabled || tether_internal_trylock(raw) != 0 }
}

/// A borrowed view of a `Lock` for hot paths: a plain value, so using it
/// costs no retain/release (calling a method on a class reference held
/// `unowned(unsafe)` made a +1 copy each time; profiled at three pairs per
/// delivered call). Valid while its `Lock` lives: the runtime keeps the one
/// it wraps alive (slots are never freed; its own locks are stored too).
@usableFromInline struct LockRef {
    @usableFromInline let raw: UnsafeMutablePointer<tether_internal_lock_t>
    @usableFromInline let disabled: Bool

    init(_ lock: Lock) {
        raw = lock.raw
        disabled = lock.disabled
    }

    @inlinable @inline(__always) func lock() { if !disabled { tether_internal_lock(raw) } }
    @inlinable @inline(__always) func unlock() { if !disabled { tether_internal_unlock(raw) } }
    @inlinable @inline(__always) func tryLock() -> Bool { disabled || tether_internal_trylock(raw) != 0 }
}

/// The delivery lock (`Engine.deliveryLock`): held by the thread running a
/// runtime's callbacks, taken and let go only while holding the graph lock,
/// its guard (CTether.h, "A guarded lock"), which makes both a plain load
/// and store. A borrowed view like `LockRef`; the runtime keeps its `Lock`.
@usableFromInline struct DeliveryLock {
    @usableFromInline let raw: UnsafeMutablePointer<tether_internal_lock_t>
    @usableFromInline let disabled: Bool

    init(_ lock: Lock) {
        raw = lock.raw
        disabled = lock.disabled
    }

    /// Takes it if free. The guard is held.
    @inlinable @inline(__always) func tryTake() -> Bool { disabled || tether_internal_guarded_trylock(raw) != 0 }

    /// Takes it, waiting (with `guardLock` let go meanwhile) while another
    /// thread delivers. Entered and left holding `guardLock`.
    func take(guard guardLock: LockRef) {
        if !disabled { tether_internal_guarded_lock(raw, guardLock.raw) }
    }

    /// Lets go of it, the guard held: true when a waiter must be woken
    /// (`wake`), best after the guard is let go.
    @inlinable @inline(__always) func release() -> Bool { !disabled && tether_internal_guarded_release(raw) != 0 }

    func wake() { tether_internal_lock_wake(raw) }
}

/// Waits for a broadcast while holding a `Lock` (see tether_internal_cond_wait).
final class Condition {
    let raw: UnsafeMutablePointer<tether_internal_cond_t>

    init() {
        raw = .allocate(capacity: 1)
        raw.initialize(to: 0)
    }

    deinit {
        raw.deallocate()
    }

    func wait(_ lock: LockRef) { tether_internal_cond_wait(raw, lock.raw) }
    func wait(_ lock: LockRef, milliseconds: UInt32) { tether_internal_cond_timedwait(raw, lock.raw, milliseconds) }
    func broadcast() { tether_internal_cond_broadcast(raw) }
}
