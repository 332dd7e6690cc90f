import CTether
import TetherCore
import TetherRuntime

// tether_binding_bind: GLib's GBinding for states (the logic: TetherRuntime's
// EngineTransformBindings.swift).

@_cdecl("tether_binding_bind")
public func tether_binding_bind(_ source: tether_state_t, _ sourcePointer: UnsafePointer<CChar>?,
                                _ target: tether_state_t, _ targetPointer: UnsafePointer<CChar>?, _ flags: UInt32,
                                _ transformTo: tether_transform_fn?, _ transformFrom: tether_transform_fn?,
                                _ userData: UnsafeMutableRawPointer?, _ destroy: tether_destroy_fn?,
                                _ out: UnsafeMutablePointer<tether_binding_t>?) -> Int32 {
    let fn: StaticString = "tether_binding_bind"
    guard let out else { return nullOut(fn) }
    let known = UInt32(TETHER_BIND_BIDIRECTIONAL | TETHER_BIND_SYNC_CREATE | TETHER_BIND_INVERT_BOOLEAN)
    guard flags & ~known == 0 else {
        return fail(.invalidArgument, "\(fn): unknown flags 0x\(String(flags, radix: 16))")
    }
    let invert = flags & UInt32(TETHER_BIND_INVERT_BOOLEAN) != 0
    if invert && (transformTo != nil || transformFrom != nil) {
        return fail(.invalidArgument, "\(fn): TETHER_BIND_INVERT_BOOLEAN replaces the transforms; pass NULL for both")
    }
    let sourcePath: JSONPointer, targetPath: JSONPointer
    do {
        sourcePath = try pointer(sourcePointer, nullIsRoot: true)
        targetPath = try pointer(targetPointer, nullIsRoot: true)
    } catch {
        return fail(fn, error)
    }
    return call(fn) { () throws(TetherError) in
        out.pointee = tether_binding_t(id: try Runtimes.bind(
            source: source, sourcePath: sourcePath, target: target, targetPath: targetPath,
            transformTo: transformTo, transformFrom: transformFrom, invert: invert,
            bidirectional: flags & UInt32(TETHER_BIND_BIDIRECTIONAL) != 0,
            syncCreate: flags & UInt32(TETHER_BIND_SYNC_CREATE) != 0, userData: userData, destroy: destroy))
    }
}
