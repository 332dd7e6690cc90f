import CTether
import TetherCore

/// The graph of a runtime: it calls user callbacks without the graph lock,
/// marked as inside a callback of the runtime (DeliveryContext).
///
/// A subclass rather than closures installed on the graph: calling a stored
/// closure retained and released its context on every call, and the compute
/// closure wrapped the C function in a second one (profiled: two refcount
/// round trips and ~60 instructions per recompute). Here the C compute
/// function is called directly.
@usableFromInline final class RuntimeGraph: Graph {
    /// The runtime's graph lock (a borrowed view; the runtime keeps it alive).
    let lock: LockRef
    /// The runtime's handle id, the key of its DeliveryContext entries.
    let runtimeID: UInt64

    init(lock: LockRef, runtimeID: UInt64, maxRounds: UInt32, firstGeneration: UInt32) {
        self.lock = lock
        self.runtimeID = runtimeID
        super.init(maxRounds: maxRounds, firstGeneration: firstGeneration, ownerID: runtimeID)
        asymmetricFences = tether_internal_asymmetric_fences() != 0
    }

    /// The thread making the direct call's calls (set before it lets go of
    /// the lock for them; `Engine.currentThread`).
    var directOwner: UInt = 0

    /// A removal from a thread other than the one making the calls makes
    /// that thread execute a full fence (membarrier); a removal from a
    /// callback of the calls themselves is ordered by its own thread.
    override func fenceAgainstDirectCaller() {
        if asymmetricFences && directOwner != Engine.currentThread { tether_internal_heavy_fence() }
    }

    override func callOut(_ round: UInt32, _ cause: Cause, _ body: () -> Void) -> Bool {
        asCallback(round, cause, body)
    }

    override func callBody(_ body: DerivedBody, _ revision: UInt64, _ round: UInt32, _ cause: Cause) -> Bool {
        // Tracing (GraphTrace.swift): a freed effect is not run.
        if body.traced && !traceEvaluation(.effectRun, cause: cause) { return true }
        // Only fallible effects fail: one check for the rest.
        let fallible = body.reportsToCreator
        let ran = asCallback(round, cause) {
            body.runBody(revision)
            if fallible { reportRun(of: body) }
        }
        if ran && fallible { publishRun(of: body) }
        return ran
    }

    /// After a fallible effect's run: a failed run reaches the host's
    /// handler, still as part of this callback (never concurrently with
    /// others), unless its creator is waiting for this first run's outcome.
    @inline(never)
    private func reportRun(of body: DerivedBody) {
        if body.creatorWaitsForFirstRun {
            body.creatorWaitsForFirstRun = false
        } else if let failure = body.runFailure, let report = reportEffectFailure {
            report(body.ownerHandle, failure)
        }
    }

    /// The run's outcome becomes the effect's last error under the graph
    /// lock, where tether_effect_last_error reads it from any thread (set
    /// during the run, without the lock, it raced with those reads).
    @inline(never)
    private func publishRun(of body: DerivedBody) {
        body.failure = body.runFailure
        body.runFailure = nil
    }

    /// Effects own what their runs create (nested effects, computeds, scopes,
    /// states, observers): the engine keeps the running effects, `adopt` puts
    /// what they create into each run's scope, and the scope is freed before
    /// the next run (children before the parent's cleanup) and before the
    /// effect itself is freed (Runtimes.freeDerived).

    override func effectWillRerun(_ body: DerivedBody, round: UInt32) {
        let scope = body.ownedScope
        body.ownedScope = 0
        _ = callOut(round &+ 1, Cause()) { try? Runtimes.freeScope(scope) }
    }

    /// The engine this graph belongs to (it owns the graph, so the graph
    /// never outlives it).
    unowned(unsafe) var owner: Engine?

    /// Set by the engine: hands a failed effect run to the runtime's
    /// effect-error handler.
    var reportEffectFailure: ((UInt64, TetherError) -> Void)?

    /// Runs `body` as a callback of the runtime: without the graph lock,
    /// inside a DeliveryContext entry. Refused (false) when the thread's
    /// stack is low or the context refuses the round.
    @inline(__always)
    private func asCallback(_ round: UInt32, _ cause: Cause, _ body: () -> Void) -> Bool {
        if tether_internal_stack_is_low() != 0 { return false }
        lock.unlock()
        let entry = DeliveryContext.enter(runtimeID, round: round, cause)
        var ran = false
        if !entry.refused {
            body()
            ran = true
        }
        DeliveryContext.leave(entry)
        lock.lock()
        return ran
    }

    override func callCompute(_ body: DerivedBody, _ result: inout Value, _ failure: inout TetherError?) -> Bool {
        // Tracing (GraphTrace.swift): a freed computed is not computed.
        if body.traced && !traceEvaluation(.recompute, cause: Cause()) { return true }
        if let fn = body.computeFunction {
            return asCallback(maxRounds, Cause()) {
                let failuresBefore = tether_internal_error_count()
                let code = withUnsafeMutablePointer(to: &result) { fn(OpaquePointer($0), body.userData) }
                if code != 0 {
                    failure = computeFailure(code, failuresBefore: failuresBefore, isBindingGet: body.isBindingGet)
                }
            }
        }
        guard let compute = body.compute else { return true }
        return asCallback(maxRounds, Cause()) { failure = compute(&result) }
    }
}

/// The error cached for readers when a C compute (or custom binding get)
/// callback returns `code`: with the message of the failing call inside the
/// callback when there was one.
func computeFailure(_ code: Int32, failuresBefore: UInt32, isBindingGet: Bool) -> TetherError {
    callbackFailure(code, failuresBefore: failuresBefore, what: isBindingGet ? "its get callback" : "its compute callback")
}

/// The error a C callback's negative return stands for, quoting the
/// message of a failing call inside it when there was one.
package func callbackFailure(_ code: Int32, failuresBefore: UInt32, what: String) -> TetherError {
    let known = ErrorCode(rawValue: code) ?? .invalidArgument
    // Quote the message only if a call inside the callback failed:
    // an older one would describe something else.
    let why = tether_internal_error_count() != failuresBefore
        ? String(cString: tether_last_error()) : String(cString: tether_strerror(code))
    return TetherError(known, "\(what) returned \(code): \(elidedMiddle(why))")
}

/// A quoted message, its middle left out when long: each computed of a
/// chain that fails quotes the failure of the one it read, so a deep chain
/// nests thousands of quotes, and the thread's message buffer kept only the
/// outermost ones; the innermost, which says what went wrong, is at the end.
func elidedMiddle(_ message: String) -> String {
    guard message.utf8.count > 480 else { return message }
    return String(message.prefix(160)) + " [...] " + String(message.suffix(300))
}
