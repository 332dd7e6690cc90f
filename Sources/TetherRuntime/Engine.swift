import CLibUV
import CTether
import Glibc
import TetherCore

/// A runtime: one graph, one libuv loop, and the machinery that delivers the
/// graph's queued observer calls (see RuntimeDelivery.swift) and tears it all
/// down (RuntimeLifecycle.swift).
///
/// Locking: `lock` (the slot's) guards the graph and every mutable field
/// here. `deliveryLock` is held by whichever thread is running callbacks, so
/// callbacks never run concurrently; it is taken and let go only while
/// holding `lock` (a waiter lets go of `lock` while it sleeps), and held
/// without it while the callbacks run.
@usableFromInline package final class Engine {
    enum Mode { case thread, host, external }

    let slot: RuntimeSlot
    @usableFromInline let slotIndex: Int
    @usableFromInline let generation: UInt32
    let mode: Mode
    @usableFromInline let graph: RuntimeGraph
    /// The graph lock: the slot's (slots and their locks are never freed),
    /// or a single-threaded runtime's own disabled one. A LockRef, not a
    /// class reference: no refcounting per lock operation (profiled).
    @usableFromInline let lock: LockRef
    /// TETHER_RUNTIME_SINGLE_THREAD: the thread that owns the runtime (its
    /// only caller); 0 for a thread-safe runtime.
    let owner: UInt
    /// A single-threaded runtime's own (disabled) lock; `lock` points at it.
    private let ownLock: Lock?
    /// The runtime's handle id (stored: it keys every DeliveryContext lookup).
    @usableFromInline let id: UInt64

    /// Where failed effect runs are reported (under `lock`); nil: the
    /// default, one line on stderr. Its release runs when it is replaced
    /// or the runtime is freed.
    var effectErrorHandler: ((UInt64, TetherError) -> Void)?
    var effectErrorHandlerRelease: (() -> Void)?
    /// The release of the trace handler's user data (EngineTrace.swift).
    var traceHandlerRelease: (() -> Void)?

    /// Set once by tether_runtime_free; every call checks it under `lock`.
    @usableFromInline var dead = false

    // Delivery.
    @usableFromInline let deliveryLock: DeliveryLock
    private let deliveryLockOwner: Lock
    let idleCondition = Condition()
    var loopDraining = false
    var drainsStarted: UInt64 = 0
    var drainsCompleted: UInt64 = 0
    @usableFromInline var feedbackCuts: UInt64 = 0
    let batch = IndexQueue()          // owned by the deliveryLock holder
    /// The drain's observer call, filled in place call after call; owned
    /// by the deliveryLock holder like `batch` (drains never nest). One
    /// per runtime, not a local per drain: building and destroying a
    /// `Delivery` (outlined, with a release per reference field) cost ~60
    /// instructions per SYNC write (profiled).
    let drainDelivery: UnsafeMutablePointer<Delivery> = {
        let p = UnsafeMutablePointer<Delivery>.allocate(capacity: 1)
        p.initialize(to: Delivery())
        return p
    }()
    /// The thread that took the delivery lock to write a validated state
    /// (0 when none): it may run validators (Graph.callbacksReady).
    var deliveryOwner: UInt = 0

    // The loop.
    let loop: UnsafeMutablePointer<uv_loop_t>
    let ownsLoop: Bool
    @usableFromInline let async: UnsafeMutablePointer<uv_async_t>
    var thread = uv_thread_t()        // TETHER_LOOP_THREAD: the loop thread
    var loopThread: uv_thread_t       // the thread that runs the loop
    @usableFromInline var asyncClosing = false
    var insideRun = false             // TETHER_LOOP_HOST: inside tether_runtime_run
    // Teardown requested from inside a callback, finished when it returns.
    var teardownPending = false
    var teardownOwner = uv_thread_t()
    var loopThreadFinishes = false    // THREAD mode freed from its own loop thread
    var loopClosed = false

    // Objects of the C face that are not graph nodes (all under `lock`).
    /// Open transactions and entered scopes, per thread (ThreadContexts.swift).
    @usableFromInline var contexts: [UInt: ThreadContext] = [:]
    var bindings = HandleTable<BindingRecord>()
    /// Connections to tetherd made on this runtime (tether_remote_connect).
    var remoteLinks: [RemoteLink] = []
    var scopes = HandleTable<ScopeRecord>()

    /// `ownLock`: a single-threaded runtime's own disabled lock (the graph
    /// already uses it), nil for a thread-safe runtime (the slot's lock).
    init(slot: RuntimeSlot, slotIndex: Int, generation: UInt32, mode: Mode, graph: RuntimeGraph,
         loop: UnsafeMutablePointer<uv_loop_t>, ownsLoop: Bool, ownLock: Lock?) {
        self.slot = slot
        self.ownLock = ownLock
        lock = LockRef(ownLock ?? slot.lock)
        owner = ownLock != nil ? Engine.currentThread : 0
        deliveryLockOwner = Lock(disabled: ownLock != nil)
        deliveryLock = DeliveryLock(deliveryLockOwner)
        self.slotIndex = slotIndex
        self.generation = generation
        id = HandleCodec.encode(slot: slotIndex, kind: .runtime, index: 0, generation: generation)
        self.mode = mode
        self.graph = graph
        self.loop = loop
        self.ownsLoop = ownsLoop
        self.async = .allocate(capacity: 1)
        self.loopThread = uv_thread_self()
    }

    deinit {
        drainDelivery.deinitialize(count: 1)
        drainDelivery.deallocate()
    }

    var onLoopThread: Bool {
        var me = uv_thread_self()
        return uv_thread_equal(&me, &loopThread) != 0
    }

    /// Called with `lock` held after a graph change: wakes the loop once per
    /// turn. Under the lock so it can never race the handle's close.
    @inlinable @inline(__always)
    func wakeLoopIfNeeded() {
        if graph.takeLoopWakeRequest() && !asyncClosing {
            uv_async_send(async)
        }
    }

    /// Wakes the loop unconditionally (lock held), e.g. when a batch ends.
    func wakeLoop() {
        if !asyncClosing { uv_async_send(async) }
    }

    /// Runs `body` holding a reference to this runtime. For callers that
    /// borrowed it (RuntimeTable.withAcquired) and are about to run
    /// callbacks or take the delivery lock: a callback may free the runtime
    /// (its teardown finishes when the callback returns, on this thread), and
    /// another thread's tether_runtime_free waits for the delivery lock, then
    /// drops the runtime while this thread may still be leaving.
    @inlinable @inline(__always)
    func pinned<R>(_ body: () -> R) -> R {
        let kept = Unmanaged.passUnretained(self).retain()
        defer { kept.release() }
        return body()
    }

    /// The round a write from the current thread gets in this runtime.
    @inlinable @inline(__always)
    var currentRound: UInt32 { DeliveryContext.round(for: id) }
}
