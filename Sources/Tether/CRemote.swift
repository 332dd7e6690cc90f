import CTether
import TetherCore
import TetherRuntime

// The remote-state functions of include/tether.h (tetherd).

@_cdecl("tether_remote_connect")
public func tether_remote_connect(_ rt: tether_runtime_t, _ address: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<tether_remote_t>?) -> Int32 {
    guard let out else { return nullOut("tether_remote_connect") }
    return call("tether_remote_connect", .runtime, rt.id) { () throws(TetherError) in
        out.pointee = tether_remote_t(id: try Runtimes.connectRemote(rt.id, address: address.map { String(cString: $0) }))
    }
}

@_cdecl("tether_remote_connect_timeout")
public func tether_remote_connect_timeout(_ rt: tether_runtime_t, _ address: UnsafePointer<CChar>?, _ timeoutMs: UInt32,
                                          _ out: UnsafeMutablePointer<tether_remote_t>?) -> Int32 {
    guard let out else { return nullOut("tether_remote_connect_timeout") }
    return call("tether_remote_connect_timeout", .runtime, rt.id) { () throws(TetherError) in
        out.pointee = tether_remote_t(id: try Runtimes.connectRemote(rt.id, address: address.map { String(cString: $0) },
                                                                     timeoutMilliseconds: timeoutMs))
    }
}

@_cdecl("tether_remote_set_timeout")
public func tether_remote_set_timeout(_ remote: tether_remote_t, _ timeoutMs: UInt32) -> Int32 {
    call("tether_remote_set_timeout") { () throws(TetherError) in try Runtimes.setRemoteTimeout(remote.id, milliseconds: timeoutMs) }
}

@_cdecl("tether_remote_free")
public func tether_remote_free(_ remote: tether_remote_t) -> Int32 {
    call("tether_remote_free") { () throws(TetherError) in try Runtimes.freeRemote(remote.id) }
}

@_cdecl("tether_remote_state")
public func tether_remote_state(_ remote: tether_remote_t, _ name: UnsafePointer<CChar>?,
                                _ out: UnsafeMutablePointer<tether_state_t>?) -> Int32 {
    guard let out else { return nullOut("tether_remote_state") }
    guard let name else { return nullOut("tether_remote_state", "name") }
    return call("tether_remote_state") { () throws(TetherError) in
        out.pointee = tether_state_t(id: try Runtimes.remoteState(remote.id, name: String(cString: name)))
    }
}

@_cdecl("tether_remote_connected")
public func tether_remote_connected(_ remote: tether_remote_t, _ out: UnsafeMutablePointer<Bool>?) -> Int32 {
    guard let out else { return nullOut("tether_remote_connected") }
    return call("tether_remote_connected") { () throws(TetherError) in
        out.pointee = try Runtimes.remoteConnected(remote.id)
    }
}

@_cdecl("tether_remote_revision")
public func tether_remote_revision(_ s: tether_state_t, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let out else { return nullOut("tether_remote_revision") }
    return call("tether_remote_revision", .state, s.id) { () throws(TetherError) in
        out.pointee = try Runtimes.remoteRevision(s.id)
    }
}

@_cdecl("tether_remote_expect")
public func tether_remote_expect(_ s: tether_state_t, _ revision: UInt64) -> Int32 {
    call("tether_remote_expect", .state, s.id) { () throws(TetherError) in
        try Runtimes.expectRemote(s.id, revision: revision)
    }
}

@_cdecl("tether_remote_sync")
public func tether_remote_sync(_ remote: tether_remote_t) -> Int32 {
    call("tether_remote_sync") { () throws(TetherError) in try Runtimes.syncRemote(remote.id) }
}

@_cdecl("tether_remote_wait")
public func tether_remote_wait(_ remote: tether_remote_t, _ timeoutMs: UInt32) -> Int32 {
    call("tether_remote_wait") { () throws(TetherError) in try Runtimes.waitRemote(remote.id, milliseconds: timeoutMs) }
}
