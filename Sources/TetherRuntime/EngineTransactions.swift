import TetherCore

// Transactions. One belongs to the thread that began it; its writes are
// staged in that thread's ThreadContext and applied by Graph.commit
// (TetherCore/GraphCommit.swift) under one revision, or not at all.

extension Runtimes {
    /// Begins a transaction (nested ones are savepoints of the outermost).
    package static func beginTransaction(in rt: UInt64, meta: TransactionMeta) throws(TetherError) -> UInt64 {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        if DeliveryContext.isDelivering(engine.id) && (engine.graph.isEvaluatingComputed || engine.graph.validatingDepth > 0) {
            throw TetherError(.busy, "called from a compute callback or validator, which must not write")
        }
        let id = HandleCodec.encode(slot: engine.slotIndex, kind: .transaction, index: 0,
                                    generation: engine.graph.takeGeneration())
        let context = engine.makeThreadContext()
        context.transactions.append(.init(id: id, meta: meta, savepoint: context.writes,
                                          remoteSavepoint: (context.remoteOps.count, context.remotePreconditions.count)))
        ContextCounter.increment()
        return id
    }

    /// Commits: the outermost applies every staged write under one revision
    /// (returned) or nothing; a nested one hands its writes to the outer one
    /// (returns 0).
    package static func commitTransaction(_ txn: UInt64) throws(TetherError) -> UInt64 {
        let engine = try acquire(txn, .transaction)
        let (context, frame) = try engine.popTransaction(txn)
        if !context.transactions.isEmpty {
            engine.lock.unlock()
            return 0  // a savepoint: its writes (and any failure) stay with the outer one
        }
        var writes = context.writes
        context.writes = WriteSet()
        let remoteOps = context.remoteOps
        let preconditions = context.remotePreconditions
        context.remoteOps = []
        context.remotePreconditions = []
        engine.dropIfEmpty(context)
        if !remoteOps.isEmpty || !preconditions.isEmpty {
            return try engine.commitRemote(remoteOps, preconditions, local: writes, meta: frame.meta)
        }
        if let failure = writes.failure {
            engine.lock.unlock()
            throw failure
        }
        if writes.isEmpty {
            defer { engine.lock.unlock() }
            return engine.graph.revision
        }
        guard let owns = engine.enterEvaluation() else { throw staleError(.transaction, txn) }
        engine.graph.cause = Cause(meta: frame.meta, wave: DeliveryContext.cause(for: engine.id).wave)
        let committed: UInt64?
        do {
            committed = try engine.graph.commit(&writes, round: engine.currentRound)
        } catch {
            engine.graph.cause = Cause()
            if error.code == .feedbackLoop { engine.feedbackCuts &+= 1 }
            engine.leaveEvaluation(ownsDelivery: owns)
            throw error
        }
        engine.graph.cause = Cause()
        let revision = committed ?? engine.graph.revision
        engine.leaveEvaluation(ownsDelivery: owns)
        return revision
    }

    /// Drops the transaction's writes (back to its savepoint).
    package static func abortTransaction(_ txn: UInt64) throws(TetherError) {
        let engine = try acquire(txn, .transaction)
        let (context, frame) = try engine.popTransaction(txn)
        context.writes = frame.savepoint
        context.remoteOps.removeLast(context.remoteOps.count - frame.remoteSavepoint.ops)
        context.remotePreconditions.removeLast(context.remotePreconditions.count - frame.remoteSavepoint.preconditions)
        engine.dropIfEmpty(context)
        engine.lock.unlock()
    }

    /// The metadata that applies on this thread now: its innermost open
    /// transaction's, or else that of the transaction that caused the
    /// callback it is running; nil when neither.
    package static func currentTransaction(in rt: UInt64) throws(TetherError) -> TransactionMeta? {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        if let context = engine.openTransaction(), let innermost = context.transactions.last {
            return innermost.meta
        }
        return DeliveryContext.cause(for: engine.id).meta.map { unsafeDowncast($0, to: TransactionMeta.self) }
    }
}

extension Engine {
    /// Finds `txn` as this thread's innermost open transaction and pops it.
    /// Entered with `lock` held; on failure releases it.
    fileprivate func popTransaction(_ txn: UInt64) throws(TetherError) -> (ThreadContext, ThreadContext.OpenTransaction) {
        guard let context = threadContext(),
              let position = context.transactions.lastIndex(where: { $0.id == txn }) else {
            let elsewhere = contexts.values.contains { $0.transactions.contains { $0.id == txn } }
            lock.unlock()
            if elsewhere { throw TetherError(.wrongThread, "the transaction belongs to the thread that began it") }
            throw staleError(.transaction, txn)
        }
        guard position == context.transactions.count - 1 else {
            lock.unlock()
            throw TetherError(.invalidArgument, "a transaction nested in it is still open; commit or abort that one first")
        }
        let frame = context.transactions.removeLast()
        ContextCounter.decrement()
        return (context, frame)
    }
}
