import CTether
import TetherCore

/// The one write path behind every C setter (states, bindings, transform
/// bindings): refuses writes from compute callbacks and validators, stages
/// writes inside a transaction, runs validators (callbacks) under the
/// delivery lock, and delivers SYNC observers before returning.
@usableFromInline enum WriteOutcome {
    case done(revision: UInt64)   // applied (revision: the state's, if asked)
    case staged                   // held by this thread's open transaction
    case failed(TetherError)
}

extension Engine {
    /// Entered with `lock` held (RuntimeTable.acquire); returns with it
    /// released. `check` runs first on the state's value as this thread
    /// sees it (index projections refuse to append with it).
    @inlinable @inline(__always)
    func write(_ s: StateID, _ op: WriteOp, wantRevision: Bool = false,
               check: ((Value) throws(TetherError) -> Void)? = nil) -> WriteOutcome {
        let depth = tether_internal_get_depth()
        let delivering = depth != 0 && DeliveryContext.isDelivering(id)
        if delivering && (graph.isEvaluatingComputed || graph.validatingDepth > 0) {
            lock.unlock()
            return .failed(TetherError(.busy, graph.validatingDepth > 0
                ? "a validator must not write states (it may only accept or reject the proposed value)"
                : "a compute callback must not write states (computeds are derived values without side effects; use an effect)"))
        }
        if let context = openTransaction() { return stage(s, op, context, check) }
        if depth != 0 { graph.cause = DeliveryContext.cause(for: id) }
        // Outside callbacks the write may leave its SYNC calls to us instead
        // of queuing them (GraphDirect.swift): then it made no other
        // direct call pending (the graph allows one at a time).
        let direct = !delivering && !graph.hasDirectCall
        let revision: UInt64
        do {
            revision = try apply(s, op, wantRevision, check, directCalls: direct)
        } catch {
            if depth != 0 { graph.cause = Cause() }
            if error.code == .busy && error.message == Graph.validatorNeedsOwner.message {
                // The state has a validator: write again, ready to run it.
                return writeValidated(s, op, wantRevision, check)
            }
            if error.code == .readOnly && error.message == Graph.remoteWrite.message {
                // A remote state's mirror: the write goes to its daemon.
                return writeRemote(s, op, wantRevision: wantRevision)
            }
            if error.code == .feedbackLoop { feedbackCuts &+= 1 }
            lock.unlock()
            return .failed(error)
        }
        if depth != 0 { graph.cause = Cause() }
        finishWrite(delivering: delivering, direct: direct)
        return .done(revision: revision)
    }

    /// After the graph applied a write, `lock` held: wakes the loop if the
    /// write queued loop work, and makes the SYNC calls owed (the direct
    /// call it left, or the queue) unless the writer is itself delivering
    /// or a batch is open. Returns with `lock` released.
    @usableFromInline
    func finishWrite(delivering: Bool, direct: Bool) {
        wakeLoopIfNeeded()
        if direct && graph.hasDirectCall {
            deliverDirectWrite()
        } else if graph.hasSyncWork && graph.batchDepth == 0 && !delivering {
            deliverSyncLocked()
        } else {
            lock.unlock()
        }
    }

    /// Inside a transaction: stage. A refused write dooms the transaction.
    @usableFromInline
    func stage(_ s: StateID, _ op: WriteOp, _ context: ThreadContext,
                       _ check: ((Value) throws(TetherError) -> Void)?) -> WriteOutcome {
        do throws(TetherError) {
            if let check {
                if let staged = context.writes.staged(s) { try check(staged) } else { try check(graph.read(s)) }
            }
            try graph.stage(op, to: s, in: &context.writes, round: currentRound)
        } catch {
            if error.code == .readOnly && error.message == Graph.remoteWrite.message {
                return stageRemote(s, op, context)
            }
            if context.writes.failure == nil {
                context.writes.failure = TetherError(error.code, "a write in the transaction was refused, so the transaction applies nothing: \(error.message)")
            }
            lock.unlock()
            return .failed(error)
        }
        lock.unlock()
        return .staged
    }

    /// A state with a validator: the validator is a callback, so this thread
    /// takes the delivery lock first (callbacks never run concurrently).
    /// Pinned, as `deliverSyncLocked` is: a callback may free the runtime.
    @usableFromInline
    func writeValidated(_ s: StateID, _ op: WriteOp, _ wantRevision: Bool,
                                _ check: ((Value) throws(TetherError) -> Void)?) -> WriteOutcome {
        pinned { writeValidatedPinned(s, op, wantRevision, check) }
    }

    private func writeValidatedPinned(_ s: StateID, _ op: WriteOp, _ wantRevision: Bool,
                                      _ check: ((Value) throws(TetherError) -> Void)?) -> WriteOutcome {
        guard let owns = enterEvaluation() else {
            return .failed(TetherError(.stale, "the runtime was freed during the write"))
        }
        graph.cause = writeCause(nil)
        if owns { deliveryOwner = Engine.currentThread }
        let revision: UInt64
        do {
            revision = try apply(s, op, wantRevision, check)
        } catch {
            deliveryOwner = 0
            graph.cause = Cause()
            if error.code == .feedbackLoop { feedbackCuts &+= 1 }
            leaveEvaluation(ownsDelivery: owns)
            return .failed(error)
        }
        graph.cause = Cause()
        deliveryOwner = 0
        leaveEvaluation(ownsDelivery: owns)
        return .done(revision: revision)
    }

    /// Checks and applies one write. `lock` held. Returns the state's
    /// revision when asked (0 otherwise).
    @inlinable @inline(__always)
    func apply(_ s: StateID, _ op: WriteOp, _ wantRevision: Bool,
                       _ check: ((Value) throws(TetherError) -> Void)?,
                       directCalls: Bool = false) throws(TetherError) -> UInt64 {
        if let check { try check(graph.read(s)) }
        try graph.write(op, to: s, round: currentRound, directCalls: directCalls)
        return wantRevision ? try graph.stateRevision(s) : 0
    }

    /// A state's value as this thread sees it: its own staged value inside a
    /// transaction (read-your-writes), else the committed one. `lock` held.
    @usableFromInline
    func visibleValue(_ s: StateID, tracked: Bool) throws(TetherError) -> Value {
        if !tracked, let context = openTransaction(), let staged = context.writes.staged(s) {
            _ = try graph.read(s)  // still report a freed state
            return staged
        }
        return try graph.read(s, tracked: tracked)
    }

    /// `visibleValue` of the part at `path`; a tracked read depends on that
    /// part only.
    @usableFromInline
    func visibleValue(_ s: StateID, at path: PointerText, tracked: Bool) throws(TetherError) -> Value {
        if !tracked, let context = openTransaction(), let staged = context.writes.staged(s) {
            _ = try graph.read(s)  // still report a freed state
            return try staged.value(at: path)
        }
        return try graph.read(s, at: path, tracked: tracked)
    }

    @usableFromInline
    func visibleValue(_ s: StateID, at path: JSONPointer, tracked: Bool) throws(TetherError) -> Value {
        if !tracked, let context = openTransaction(), let staged = context.writes.staged(s) {
            _ = try graph.read(s)  // still report a freed state
            return try staged.value(at: path)
        }
        return try graph.read(s, at: path, tracked: tracked)
    }

    /// The whole value as `visibleValue` gives it, for a reader that uses
    /// only the part at `path` (a projection binding): a tracked read
    /// depends on that part only.
    func visibleValue(_ s: StateID, dependingOn path: JSONPointer, tracked: Bool) throws(TetherError) -> Value {
        if !tracked, let context = openTransaction(), let staged = context.writes.staged(s) {
            _ = try graph.read(s)  // still report a freed state
            return staged
        }
        return try graph.read(s, dependingOn: path, tracked: tracked)
    }
}
