import CTether
import TetherCore
import TetherRuntime

// Swift errors to C: a TETHER_E* code returned, and the message kept for
// tether_last_error() on this thread. Kept out of line: messages are built
// only on the failure path.

@inline(never)
func fail(_ error: TetherError) -> Int32 {
    var message = error.message
    message.withUTF8 { buf in
        buf.withMemoryRebound(to: CChar.self) { tether_internal_set_message($0.baseAddress, $0.count) }
    }
    return error.code.rawValue
}

@inline(never)
func fail(_ code: ErrorCode, _ message: String) -> Int32 {
    fail(TetherError(code, message))
}

/// `error`, said by the C function `fn`.
@inline(never)
func fail(_ fn: StaticString, _ error: TetherError) -> Int32 {
    fail(TetherError(error.code, "\(fn): \(error.message)"))
}

/// `error`, said by the C function `fn` about the object `id` of `kind`.
/// A message that names the handle already ("state handle 0x… is stale")
/// is not prefixed with it a second time.
@inline(never)
func fail(_ fn: StaticString, _ kind: HandleKind, _ id: UInt64, _ error: TetherError) -> Int32 {
    if error.message.hasPrefix("\(kind.noun) handle \(hexHandle(id)) ") { return fail(fn, error) }
    return fail(TetherError(error.code, "\(fn)(\(kind.noun) \(hexHandle(id))): \(error.message)"))
}

/// Runs one call of the runtime for the C function `fn`: 0, or the error's
/// code with its message (naming `fn` and the object) kept.
@inline(__always)
func call(_ fn: StaticString, _ kind: HandleKind, _ id: UInt64, _ body: () throws(TetherError) -> Void) -> Int32 {
    do { try body() } catch { return fail(fn, kind, id, error) }
    return 0
}

/// `call` for functions whose subject is not one object (constructors).
@inline(__always)
func call(_ fn: StaticString, _ body: () throws(TetherError) -> Void) -> Int32 {
    do { try body() } catch { return fail(fn, error) }
    return 0
}

/// The out-parameter check every function makes first.
@inline(never)
func nullOut(_ fn: StaticString, _ what: String = "out") -> Int32 {
    fail(.invalidArgument, "\(fn): \(what) is NULL")
}
