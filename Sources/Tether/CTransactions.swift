import CTether
import TetherCore
import TetherRuntime

// The transaction functions of include/tether.h (the logic: TetherRuntime's
// EngineTransactions.swift).

@_cdecl("tether_transaction_begin")
public func tether_transaction_begin(_ rt: tether_runtime_t, _ info: UnsafePointer<tether_transaction_info_t>?,
                                     _ out: UnsafeMutablePointer<tether_transaction_t>?) -> Int32 {
    guard let out else { return nullOut("tether_transaction_begin") }
    if let tag = info?.pointee.tag {
        do { _ = try stringValue(tag, -1, "info->tag") } catch { return fail("tether_transaction_begin", error) }
    }
    return call("tether_transaction_begin") { () throws(TetherError) in
        out.pointee = tether_transaction_t(id: try Runtimes.beginTransaction(in: rt.id, meta: TransactionMeta(info?.pointee)))
    }
}

@_cdecl("tether_transaction_commit")
public func tether_transaction_commit(_ txn: tether_transaction_t, _ revision: UnsafeMutablePointer<UInt64>?) -> Int32 {
    call("tether_transaction_commit", .transaction, txn.id) { () throws(TetherError) in
        let committed = try Runtimes.commitTransaction(txn.id)
        revision?.pointee = committed
    }
}

@_cdecl("tether_transaction_abort")
public func tether_transaction_abort(_ txn: tether_transaction_t) -> Int32 {
    call("tether_transaction_abort", .transaction, txn.id) { () throws(TetherError) in try Runtimes.abortTransaction(txn.id) }
}

@_cdecl("tether_transaction_current")
public func tether_transaction_current(_ rt: tether_runtime_t, _ out: UnsafeMutablePointer<tether_transaction_info_t>?) -> Int32 {
    guard let out else { return nullOut("tether_transaction_current") }
    return call("tether_transaction_current", .runtime, rt.id) { () throws(TetherError) in
        guard let meta = try Runtimes.currentTransaction(in: rt.id) else {
            throw TetherError(.notFound, "no transaction applies here (none is open on this thread, and this is not a callback caused by one)")
        }
        out.pointee = meta.info.pointee
    }
}
