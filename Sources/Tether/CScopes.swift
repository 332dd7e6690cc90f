import CTether
import TetherCore
import TetherRuntime

// Scopes (include/tether.h): what a thread creates while it has a scope
// entered belongs to that scope, and freeing the scope frees it all
// (TetherRuntime's EngineScopes.swift).

@_cdecl("tether_scope_new")
public func tether_scope_new(_ rt: tether_runtime_t, _ out: UnsafeMutablePointer<tether_scope_t>?) -> Int32 {
    guard let out else { return nullOut("tether_scope_new") }
    return call("tether_scope_new") { () throws(TetherError) in out.pointee = tether_scope_t(id: try Runtimes.newScope(in: rt.id)) }
}

@_cdecl("tether_scope_enter")
public func tether_scope_enter(_ scope: tether_scope_t) -> Int32 {
    call("tether_scope_enter", .scope, scope.id) { () throws(TetherError) in try Runtimes.enterScope(scope.id) }
}

@_cdecl("tether_scope_leave")
public func tether_scope_leave(_ scope: tether_scope_t) -> Int32 {
    call("tether_scope_leave", .scope, scope.id) { () throws(TetherError) in try Runtimes.leaveScope(scope.id) }
}

@_cdecl("tether_scope_free")
public func tether_scope_free(_ scope: tether_scope_t) -> Int32 {
    call("tether_scope_free", .scope, scope.id) { () throws(TetherError) in try Runtimes.freeScope(scope.id) }
}
