import CTether
import TetherCore

/// Records the message for tether_last_error() and returns the code.
/// Kept out of line: messages are built only on the failure path.
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

/// The runtime of a handle is gone or the handle is of another kind.
@inline(never)
func staleHandle(_ what: String, _ id: UInt64) -> Int32 {
    if tether_internal_take_wrong_thread() != 0 {
        return fail(.wrongThread, "\(what) handle 0x\(String(id, radix: 16)) belongs to a TETHER_RUNTIME_SINGLE_THREAD runtime, which only the thread that created it may call")
    }
    return fail(.stale, "\(what) handle 0x\(String(id, radix: 16)) is stale: it was freed, its runtime was freed, or it never existed")
}

func hex(_ id: UInt64) -> String { "0x" + String(id, radix: 16) }
