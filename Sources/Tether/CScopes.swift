import CTether
import TetherCore

// Scopes (include/tether.h): what a thread creates while it has a scope
// entered belongs to that scope, and freeing the scope frees it all.

/// The handles a scope owns, in creation order (child scopes included).
final class ScopeRecord {
    var members: [UInt64] = []
}

extension Runtime {
    /// `adopt` for a thread that has something entered somewhere. `lock` held.
    func adoptSlow(_ handle: UInt64) {
        guard let context = contexts[Runtime.currentThread], let scope = context.scopes.last else { return }
        let h = HandleCodec.decode(scope)
        guard let record = scopes.get(h.index, h.generation) else { return }  // freed while entered
        if record.members.count >= 64 && record.members.count & (record.members.count - 1) == 0 {
            record.members.removeAll { !isLive($0) }  // churn: drop what was freed by hand
        }
        record.members.append(handle)
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

@_cdecl("tether_scope_new")
public func tether_scope_new(_ rt: tether_runtime_t, _ out: UnsafeMutablePointer<tether_scope_t>?) -> Int32 {
    guard let out else { return fail(.invalidArgument, "tether_scope_new: out is NULL") }
    guard let runtime = RuntimeTable.acquire(rt.id, .runtime) else { return staleHandle("runtime", rt.id) }
    defer { runtime.lock.unlock() }
    let generation = runtime.graph.takeGeneration()
    guard let index = runtime.scopes.insert(ScopeRecord(), generation: generation) else {
        return fail(.noMemory, "tether_scope_new: too many live scopes (limit \(Graph.maxNodes))")
    }
    out.pointee = tether_scope_t(id: HandleCodec.encode(slot: runtime.slotIndex, kind: .scope, index: index,
                                                        generation: generation))
    runtime.adopt(out.pointee.id)  // a child of the scope this thread is in
    return 0
}

@_cdecl("tether_scope_enter")
public func tether_scope_enter(_ scope: tether_scope_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(scope.id, .scope) else { return staleHandle("scope", scope.id) }
    defer { runtime.lock.unlock() }
    let h = HandleCodec.decode(scope.id)
    guard runtime.scopes.get(h.index, h.generation) != nil else { return staleHandle("scope", scope.id) }
    let context = runtime.makeThreadContext()
    guard context.scopes.count < Int(TETHER_INTERNAL_MAX_NESTING) else {
        runtime.dropIfEmpty(context)
        return fail(.noMemory, "tether_scope_enter(scope \(hex(scope.id))): scopes nested more than \(TETHER_INTERNAL_MAX_NESTING) deep on this thread")
    }
    context.scopes.append(scope.id)
    ContextCounter.increment()
    return 0
}

@_cdecl("tether_scope_leave")
public func tether_scope_leave(_ scope: tether_scope_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(scope.id, .scope) else { return staleHandle("scope", scope.id) }
    defer { runtime.lock.unlock() }
    guard let context = runtime.threadContext(), context.scopes.contains(scope.id) else {
        let h = HandleCodec.decode(scope.id)
        if runtime.scopes.get(h.index, h.generation) == nil { return staleHandle("scope", scope.id) }
        return fail(.invalidArgument, "tether_scope_leave(scope \(hex(scope.id))): this thread has not entered it")
    }
    guard context.scopes.last == scope.id else {
        return fail(.invalidArgument, "tether_scope_leave(scope \(hex(scope.id))): a scope entered after it is still entered; leave that one first")
    }
    context.scopes.removeLast()
    ContextCounter.decrement()
    runtime.dropIfEmpty(context)
    return 0
}

@_cdecl("tether_scope_free")
public func tether_scope_free(_ scope: tether_scope_t) -> Int32 {
    guard let runtime = RuntimeTable.acquire(scope.id, .scope) else { return staleHandle("scope", scope.id) }
    let h = HandleCodec.decode(scope.id)
    guard let record = runtime.scopes.remove(h.index, h.generation) else {
        runtime.lock.unlock()
        return staleHandle("scope", scope.id)
    }
    // Objects freed by hand are skipped here, so their free functions are
    // not called on stale handles (which would overwrite tether_last_error).
    let live = record.members.filter { runtime.isLive($0) || HandleCodec.decode($0).kind == HandleKind.scope.rawValue }
    runtime.lock.unlock()
    // Child scopes first (they free their own objects), then the rest,
    // newest first: observers before the states they watch, bindings before
    // the states they name.
    let members = live.reversed()
    for handle in members where HandleCodec.decode(handle).kind == HandleKind.scope.rawValue {
        freeChildScope(handle)
    }
    for handle in members { freeMember(handle) }
    return 0
}

/// A child scope, unless it was freed by hand already.
private func freeChildScope(_ handle: UInt64) {
    guard let runtime = RuntimeTable.acquire(handle, .scope) else { return }
    let h = HandleCodec.decode(handle)
    let live = runtime.scopes.get(h.index, h.generation) != nil
    runtime.lock.unlock()
    if live { _ = tether_scope_free(tether_scope_t(id: handle)) }
}

/// Frees one object of a scope through its own free function; one freed by
/// hand already is skipped (its free function reports a stale handle).
private func freeMember(_ handle: UInt64) {
    // Checked right before, under the lock: an earlier member's free (or a
    // destroy function it ran) may have freed this one already.
    guard let kind = HandleKind(rawValue: HandleCodec.decode(handle).kind),
          let runtime = RuntimeTable.acquire(handle, kind) else { return }
    let live = runtime.isLive(handle)
    runtime.lock.unlock()
    guard live else { return }
    switch HandleKind(rawValue: HandleCodec.decode(handle).kind) {
    case .state?: _ = tether_state_free(tether_state_t(id: handle))
    case .observer?: _ = tether_observer_remove(tether_observer_t(id: handle))
    case .computed?: _ = tether_computed_free(tether_computed_t(id: handle))
    case .effect?: _ = tether_effect_free(tether_effect_t(id: handle))
    case .tracking?: _ = tether_tracking_cancel(tether_tracking_t(id: handle))
    case .binding?: _ = tether_binding_free(tether_binding_t(id: handle))
    default: break
    }
}
