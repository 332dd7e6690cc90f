import CTether
import TetherCore

// The transaction functions of include/tether.h. A transaction belongs to
// the thread that began it; its writes are staged in that thread's
// ThreadContext and applied by Graph.commit (TetherCore/GraphCommit.swift).

@_cdecl("tether_transaction_begin")
public func tether_transaction_begin(_ rt: tether_runtime_t, _ info: UnsafePointer<tether_transaction_info_t>?,
                                     _ out: UnsafeMutablePointer<tether_transaction_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_transaction_begin: out is NULL") }
    if let tag = info?.pointee.tag {
        do { _ = try stringValue(tag, -1, "info->tag") } catch {
            return fail(TetherError(error.code, "tether_transaction_begin: \(error.message)"))
        }
    }
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    defer { runtime.lock.unlock() }
    if DeliveryContext.isDelivering(runtime.id) && (runtime.graph.isEvaluatingComputed || runtime.graph.validatingDepth > 0) {
        return fail(.busy, "tether_transaction_begin: called from a compute callback or validator, which must not write")
    }
    let id = HandleCodec.encode(slot: runtime.slotIndex, kind: .transaction, index: 0,
                                generation: runtime.graph.takeGeneration())
    let context = runtime.makeThreadContext()
    context.transactions.append(.init(id: id, meta: TransactionMeta(info?.pointee), savepoint: context.writes))
    ContextCounter.increment()
    out.pointee = tether_transaction_t(id: id)
    return 0
}

/// Finds txn as this thread's innermost open transaction and pops it.
/// Entered with `lock` held; on failure releases it and returns the error.
private func popTransaction(_ runtime: Runtime, _ txn: tether_transaction_t, _ fn: String, _ code: inout Int32)
    -> (ThreadContext, ThreadContext.OpenTransaction)? {
    guard let context = runtime.threadContext(),
          let position = context.transactions.lastIndex(where: { $0.id == txn.id }) else {
        let elsewhere = runtime.contexts.values.contains { $0.transactions.contains { $0.id == txn.id } }
        runtime.lock.unlock()
        if elsewhere {
            code = fail(.wrongThread, "\(fn)(\(hex(txn.id))): the transaction belongs to the thread that began it")
        } else {
            code = staleHandle("transaction", txn.id)
        }
        return nil
    }
    guard position == context.transactions.count - 1 else {
        runtime.lock.unlock()
        code = fail(.invalidArgument, "\(fn)(\(hex(txn.id))): a transaction nested in it is still open; commit or abort that one first")
        return nil
    }
    let frame = context.transactions.removeLast()
    ContextCounter.decrement()
    return (context, frame)
}

@_cdecl("tether_transaction_commit")
public func tether_transaction_commit(_ txn: tether_transaction_t, _ revision: UnsafeMutablePointer<UInt64>?) -> Int32 {
    let fn = "tether_transaction_commit"
    guard let runtime = RuntimeTable.acquire(txn.id, .transaction) else { return staleHandle("transaction", txn.id) }
    var code: Int32 = 0
    guard let (context, frame) = popTransaction(runtime, txn, fn, &code) else { return code }
    if !context.transactions.isEmpty {
        // A savepoint: its writes (and any failure) stay with the outer one.
        runtime.lock.unlock()
        revision?.pointee = 0
        return 0
    }
    var writes = context.writes
    context.writes = WriteSet()
    runtime.dropIfEmpty(context)
    if let failure = writes.failure {
        runtime.lock.unlock()
        return fail(TetherError(failure.code, "\(fn)(\(hex(txn.id))): \(failure.message)"))
    }
    if writes.isEmpty {
        revision?.pointee = runtime.graph.revision
        runtime.lock.unlock()
        return 0
    }
    guard let owns = runtime.enterEvaluation() else { return staleHandle("transaction", txn.id) }
    runtime.graph.cause = Cause(meta: frame.meta, wave: DeliveryContext.cause(for: runtime.id).wave)
    let committed: UInt64?
    do {
        committed = try runtime.graph.commit(&writes, round: runtime.currentRound)
    } catch {
        runtime.graph.cause = Cause()
        if error.code == .feedbackLoop { runtime.feedbackCuts &+= 1 }
        runtime.leaveEvaluation(ownsDelivery: owns)
        return fail(TetherError(error.code, "\(fn)(\(hex(txn.id))): \(error.message)"))
    }
    runtime.graph.cause = Cause()
    revision?.pointee = committed ?? runtime.graph.revision
    runtime.leaveEvaluation(ownsDelivery: owns)
    return 0
}

@_cdecl("tether_transaction_abort")
public func tether_transaction_abort(_ txn: tether_transaction_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(txn.id, .transaction) else { return staleHandle("transaction", txn.id) }
    var code: Int32 = 0
    guard let (context, frame) = popTransaction(runtime, txn, "tether_transaction_abort", &code) else { return code }
    context.writes = frame.savepoint
    runtime.dropIfEmpty(context)
    runtime.lock.unlock()
    return 0
}

@_cdecl("tether_transaction_current")
public func tether_transaction_current(_ rt: tether_runtime_t, _ out: UnsafeMutablePointer<tether_transaction_info_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_transaction_current: out is NULL") }
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    defer { runtime.lock.unlock() }
    if let context = runtime.openTransaction(), let innermost = context.transactions.last {
        out.pointee = innermost.meta.info.pointee
        return 0
    }
    if let info = TransactionMeta.info(of: DeliveryContext.cause(for: runtime.id)) {
        out.pointee = info.pointee
        return 0
    }
    return fail(.notFound, "tether_transaction_current: no transaction applies here (none is open on this thread, and this is not a callback caused by one)")
}
