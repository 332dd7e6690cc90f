import CTether
import TetherCore

// Scopes (include/tether.h): what a thread creates while it has a scope
// entered belongs to that scope, and freeing the scope frees it all.

/// The handles a scope owns, in creation order (child scopes included).
final class ScopeRecord {
    var members: [UInt64] = []
}

extension Engine {
    /// `adopt` for a thread that has something entered somewhere. `lock` held.
    @usableFromInline
    func adoptSlow(_ handle: UInt64) {
        let context = tether_internal_get_contexts() == 0 ? nil : contexts[Engine.currentThread]
        // Made by a running effect, on a thread with no scope entered (an
        // entered scope owns what is made in it): owned by that run, freed
        // before the effect's next run.
        if context?.scopes.isEmpty ?? true {
            if DeliveryContext.isDelivering(id), let body = graph.runningEffectBody { adoptIntoEffect(body, handle) }
            return
        }
        guard let context, let scope = context.scopes.last else { return }
        let h = HandleCodec.decode(scope)
        guard let record = scopes.get(h.index, h.generation) else { return }  // freed while entered
        if record.members.count >= 64 && record.members.count & (record.members.count - 1) == 0 {
            record.members.removeAll { !isLive($0) }  // churn: drop what was freed by hand
        }
        record.members.append(handle)
    }

    /// Puts `handle` into the scope of the effect's current run, made on
    /// first use. `lock` held.
    private func adoptIntoEffect(_ body: DerivedBody, _ handle: UInt64) {
        if body.ownedScope == 0 {
            let generation = graph.takeGeneration()
            guard let index = scopes.insert(ScopeRecord(), generation: generation) else { return }
            body.ownedScope = HandleCodec.encode(slot: slotIndex, kind: .scope, index: index, generation: generation)
        }
        let h = HandleCodec.decode(body.ownedScope)
        scopes.get(h.index, h.generation)?.members.append(handle)
    }

    /// Whether a handle of this runtime still names a live object. `lock` held.
    func isLive(_ handle: UInt64) -> Bool {
        let h = HandleCodec.decode(handle)
        switch HandleKind(rawValue: h.kind) {
        case .state?: return graph.isLive(StateID(index: h.index, generation: h.generation))
        case .observer?: return graph.isLive(ObserverID(index: h.index, generation: h.generation))
        case .computed?, .effect?, .tracking?: return graph.isLive(DerivedID(index: h.index, generation: h.generation))
        case .binding?: return bindings.get(h.index, h.generation) != nil
        case .scope?: return scopes.get(h.index, h.generation) != nil
        default: return false
        }
    }
}

extension Runtimes {
    package static func newScope(in rt: UInt64) throws(TetherError) -> UInt64 {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        let generation = engine.graph.takeGeneration()
        guard let index = engine.scopes.insert(ScopeRecord(), generation: generation) else {
            throw TetherError(.noMemory, "too many live scopes (limit \(Graph.maxNodes))")
        }
        let handle = HandleCodec.encode(slot: engine.slotIndex, kind: .scope, index: index, generation: generation)
        engine.adopt(handle)  // a child of the scope this thread is in
        return handle
    }

    /// What this thread creates in the runtime from now on belongs to `scope`.
    package static func enterScope(_ scope: UInt64) throws(TetherError) {
        let engine = try acquire(scope, .scope)
        defer { engine.lock.unlock() }
        let h = HandleCodec.decode(scope)
        guard engine.scopes.get(h.index, h.generation) != nil else { throw staleError(.scope, scope) }
        let context = engine.makeThreadContext()
        guard context.scopes.count < Int(TETHER_INTERNAL_MAX_NESTING) else {
            engine.dropIfEmpty(context)
            throw TetherError(.noMemory, "scopes nested more than \(TETHER_INTERNAL_MAX_NESTING) deep on this thread")
        }
        context.scopes.append(scope)
        ContextCounter.increment()
    }

    package static func leaveScope(_ scope: UInt64) throws(TetherError) {
        let engine = try acquire(scope, .scope)
        defer { engine.lock.unlock() }
        guard let context = engine.threadContext(), context.scopes.contains(scope) else {
            let h = HandleCodec.decode(scope)
            if engine.scopes.get(h.index, h.generation) == nil { throw staleError(.scope, scope) }
            throw TetherError(.invalidArgument, "this thread has not entered it")
        }
        guard context.scopes.last == scope else {
            throw TetherError(.invalidArgument, "a scope entered after it is still entered; leave that one first")
        }
        context.scopes.removeLast()
        ContextCounter.decrement()
        engine.dropIfEmpty(context)
    }

    /// Frees the scope and everything made in it: child scopes first (they
    /// free their own objects), then the rest, newest first (observers
    /// before the states they watch, bindings before the states they name).
    package static func freeScope(_ scope: UInt64) throws(TetherError) {
        let engine = try acquire(scope, .scope)
        let h = HandleCodec.decode(scope)
        guard let record = engine.scopes.remove(h.index, h.generation) else {
            engine.lock.unlock()
            throw staleError(.scope, scope)
        }
        // Objects freed by hand are skipped here, so their free functions are
        // not called on stale handles (which would overwrite tether_last_error).
        let live = record.members.filter { engine.isLive($0) || HandleCodec.decode($0).kind == HandleKind.scope.rawValue }
        engine.lock.unlock()
        let members = live.reversed()
        for handle in members where HandleCodec.decode(handle).kind == HandleKind.scope.rawValue {
            freeChildScope(handle)
        }
        for handle in members { freeMember(handle) }
    }

    /// A child scope, unless it was freed by hand already.
    private static func freeChildScope(_ handle: UInt64) {
        guard let engine = RuntimeTable.acquire(handle, .scope) else { return }
        let h = HandleCodec.decode(handle)
        let live = engine.scopes.get(h.index, h.generation) != nil
        engine.lock.unlock()
        if live { try? freeScope(handle) }
    }

    /// Frees one object of a scope through its own free function; one freed
    /// by hand already is skipped.
    private static func freeMember(_ handle: UInt64) {
        // Checked right before, under the lock: an earlier member's free (or a
        // destroy function it ran) may have freed this one already.
        guard let kind = HandleKind(rawValue: HandleCodec.decode(handle).kind),
              let engine = RuntimeTable.acquire(handle, kind) else { return }
        let live = engine.isLive(handle)
        engine.lock.unlock()
        guard live else { return }
        switch kind {
        case .state: try? freeState(handle)
        case .observer: try? removeObserver(handle)
        case .computed, .effect, .tracking: try? freeDerived(handle, kind)
        case .binding: try? freeBinding(handle)
        default: break
        }
    }
}
