import CTether

extension Runtime {
    /// Runs `body` as a transaction (`withTransaction`): its writes, from
    /// this thread, are staged and applied together under one revision when
    /// it returns, or not at all when it throws or any write is refused
    /// (then the refusal is thrown). Observers are called once per
    /// transaction and see `tag` and `origin` in `Change.transaction`.
    /// Reads inside see the transaction's own writes. Nested transactions
    /// are savepoints: a nested one that throws drops only its own writes.
    /// Returns what `body` returned and the revision of the commit (that of
    /// the runtime when nothing was written, 0 for a nested one).
    @discardableResult
    public func transaction<R>(tag: String? = nil, origin: UInt64 = 0,
                               _ body: () throws -> R) throws -> (result: R, revision: UInt64) {
        var info = tether_transaction_info_t()
        info.origin = origin
        let meta: TransactionMeta = tag.map { tag in
            tag.withCString { text in
                info.tag = text
                return TransactionMeta(info)  // copies the tag
            }
        } ?? TransactionMeta(info)
        let txn = try Runtimes.beginTransaction(in: handle, meta: meta)
        let result: R
        do {
            result = try body()
        } catch {
            try? Runtimes.abortTransaction(txn)
            throw error
        }
        let revision = try Runtimes.commitTransaction(txn)
        return (result, revision)
    }

    /// The transaction that applies on this thread now: the innermost one
    /// it has open, or the one that caused the callback it is running.
    public var currentTransaction: TransactionInfo? {
        guard let meta = try? Runtimes.currentTransaction(in: handle) else { return nil }
        return TransactionInfo(Cause(meta: meta))
    }
}

/// A scope: everything this thread makes in the runtime while inside
/// `Runtime.scope(_:)` belongs to it, and freeing the scope frees it all
/// (a view's state going away with the view).
public final class Scope: @unchecked Sendable {
    /// The `id` of the C `tether_scope_t` naming it.
    public let handle: UInt64

    init(handle: UInt64) {
        self.handle = handle
    }

    deinit { free() }

    /// Runs `body` with this scope entered on this thread.
    public func enter<R>(_ body: () throws -> R) throws -> R {
        try Runtimes.enterScope(handle)
        defer { try? Runtimes.leaveScope(handle) }
        return try body()
    }

    /// Frees everything made in the scope (newest first) and the scope.
    /// Idempotent.
    public func free() {
        try? Runtimes.freeScope(handle)
    }
}

extension Runtime {
    /// A new scope (a child of the one this thread is inside, if any).
    public func makeScope() throws(TetherError) -> Scope {
        Scope(handle: try Runtimes.newScope(in: handle))
    }
}
