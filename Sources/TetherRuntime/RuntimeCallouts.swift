import CTether
import TetherCore

extension Engine {
    /// Runs a user callback on behalf of a C call (a custom binding's set, a
    /// transform at bind time): without `lock`, holding the delivery lock
    /// (so never concurrently with other callbacks), marked as a callback of
    /// this runtime caused by `cause`. Writes it makes apply at once; their
    /// SYNC observers run after it returns, before this does.
    /// Entered with `lock` held; returns with it released. Nil when the
    /// runtime died meanwhile or the thread has no room to nest.
    func callOut<R>(_ cause: Cause, _ body: () -> R) -> R? {
        let round = currentRound
        guard let owns = enterEvaluation() else { return nil }
        lock.unlock()
        let entry = DeliveryContext.enter(id, round: round, cause)
        var result: R?
        if !entry.refused { result = body() }
        DeliveryContext.leave(entry)
        lock.lock()
        leaveEvaluation(ownsDelivery: owns)
        return result
    }

    /// Puts a new object into the scope this thread entered in this runtime,
    /// if any. `lock` held.
    @inlinable @inline(__always)
    func adopt(_ handle: UInt64) {
        // Nothing entered on this thread and no evaluation running: owned by no one.
        if tether_internal_get_contexts() == 0 && !graph.isEvaluating { return }
        adoptSlow(handle)
    }
}
