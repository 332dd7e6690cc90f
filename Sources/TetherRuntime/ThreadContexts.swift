import CTether
import Glibc
import TetherCore
import TetherWire

/// What one thread has open in one runtime: its transactions (innermost
/// last, sharing one write set; each keeps the write set as it was when it
/// began, its savepoint) and the scopes it entered (innermost last).
@usableFromInline final class ThreadContext {
    @usableFromInline struct OpenTransaction {
        let id: UInt64
        let meta: TransactionMeta
        let savepoint: WriteSet
        /// How many remote ops and preconditions were staged when it began.
        var remoteSavepoint = (ops: 0, preconditions: 0)
    }
    @usableFromInline var transactions: [OpenTransaction] = []
    var writes = WriteSet()
    /// Writes to remote states, sent to their daemon as one Transaction at
    /// the outermost commit, with the preconditions (tether_remote_expect).
    var remoteOps: [(mirror: RemoteMirror, op: Op)] = []
    var remotePreconditions: [(mirror: RemoteMirror, revision: UInt64)] = []
    var scopes: [UInt64] = []

    var isEmpty: Bool { transactions.isEmpty && scopes.isEmpty }
}

/// A transaction's info as C reads it: a stable tether_transaction_info_t
/// with its own copy of the tag, freed when the last write or callback
/// that carries it is done (the graph holds it in pending calls).
@usableFromInline package final class TransactionMeta {
    @usableFromInline package let info: UnsafeMutablePointer<tether_transaction_info_t>

    package init(_ given: tether_transaction_info_t?) {
        info = .allocate(capacity: 1)
        info.initialize(to: tether_transaction_info_t())
        if let given {
            info.pointee.tag = given.tag.map { UnsafePointer(strdup($0)!) }
            info.pointee.origin = given.origin
            info.pointee.user_data = given.user_data
        }
    }

    deinit {
        if let tag = info.pointee.tag { free(UnsafeMutableRawPointer(mutating: tag)) }
        info.deallocate()
    }

    /// The C view of a cause's metadata (nil for writes outside transactions).
    @inlinable package static func info(of cause: Cause) -> UnsafePointer<tether_transaction_info_t>? {
        guard let meta = cause.meta else { return nil }
        return UnsafePointer(unsafeDowncast(meta, to: TransactionMeta.self).info)
    }
}

extension Engine {
    /// This thread's identity: the address of its own callback context,
    /// unique among live threads like a pthread_t, but two inline
    /// instructions where pthread_self() is a call through the PLT (and a
    /// call on the typed getters' plain path made them keep a frame).
    @inlinable static var currentThread: UInt { UInt(tether_internal_thread_id()) }

    /// This thread's context in this runtime, if it has one. `lock` held.
    /// Nearly free when the thread has nothing open anywhere.
    @inlinable @inline(__always)
    func threadContext() -> ThreadContext? {
        if tether_internal_get_contexts() == 0 { return nil }
        return contexts[Engine.currentThread]
    }

    /// This thread's context, made if missing. `lock` held.
    func makeThreadContext() -> ThreadContext {
        if let context = contexts[Engine.currentThread] { return context }
        let context = ThreadContext()
        contexts[Engine.currentThread] = context
        return context
    }

    /// Forgets an empty context. `lock` held.
    func dropIfEmpty(_ context: ThreadContext) {
        if context.isEmpty { contexts[Engine.currentThread] = nil }
    }

    /// This thread's innermost open transaction, if any. `lock` held.
    @inlinable @inline(__always)
    func openTransaction() -> ThreadContext? {
        guard let context = threadContext(), !context.transactions.isEmpty else { return nil }
        return context
    }

    /// The cause a write from this thread carries now: the outermost open
    /// transaction's metadata (only the outermost commit applies anything),
    /// or else the metadata of the callback this thread is running; the wave
    /// is always the callback's. `lock` held.
    func writeCause(_ context: ThreadContext?) -> Cause {
        var cause = DeliveryContext.cause(for: id)
        if let context, let outer = context.transactions.first { cause.meta = outer.meta }
        return cause
    }
}

/// The counter behind Engine.threadContext's fast path.
enum ContextCounter {
    static func increment() { tether_internal_set_contexts(tether_internal_get_contexts() + 1) }
    static func decrement() {
        let n = tether_internal_get_contexts()
        if n > 0 { tether_internal_set_contexts(n - 1) }
    }
}
