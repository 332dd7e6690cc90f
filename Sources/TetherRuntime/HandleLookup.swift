import CTether
import TetherCore

/// From a handle to its live engine, for every operation of the runtime:
/// the C face and the Swift API both name objects by handle, so both get
/// the same checks (stale, wrong kind, wrong thread) and the same errors.
extension Runtimes {
    /// The live engine `id` names, with its lock held (the caller unlocks).
    @inline(__always)
    package static func acquire(_ id: UInt64, _ kind: HandleKind) throws(TetherError) -> Engine {
        guard let engine = RuntimeTable.acquire(id, kind) else { throw staleError(kind, id) }
        return engine
    }

    /// `acquire` for the hot paths: the engine is borrowed (no retain and
    /// release of it; profiled: a refcount round trip per read inside a
    /// compute callback) for `body`, which is entered with the lock held
    /// and must release it.
    @inlinable @inline(__always)
    package static func withAcquired<R>(_ id: UInt64, _ kind: HandleKind,
                                        _ body: (Engine) -> Result<R, TetherError>) throws(TetherError) -> R {
        guard let borrowed = RuntimeTable.locked(id, kind) else { throw staleError(kind, id) }
        // The error leaves through a local: a closure returning a Result to
        // the caller stayed out of line (profiled).
        var failure: TetherError?
        let value: R? = borrowed._withUnsafeGuaranteedRef { engine in
            switch body(engine) {
            case let .success(value): return value
            case let .failure(error):
                failure = error
                return nil
            }
        }
        if let value { return value }
        throw failure!
    }
}

/// The error for a handle that names no live object of its kind. Kept out
/// of line: messages are built only on the failure path.
@inline(never)
@usableFromInline package func staleError(_ kind: HandleKind, _ id: UInt64) -> TetherError {
    if tether_internal_take_wrong_thread() != 0 {
        return TetherError(.wrongThread, "\(kind.noun) handle \(hexHandle(id)) belongs to a single-threaded runtime (TETHER_RUNTIME_SINGLE_THREAD), which only the thread that created it may call")
    }
    return TetherError(.stale, "\(kind.noun) handle \(hexHandle(id)) is stale: it was freed, its runtime was freed, or it never existed")
}

package func hexHandle(_ id: UInt64) -> String { "0x" + String(id, radix: 16) }

extension HandleKind {
    /// How messages name an object of this kind.
    package var noun: String {
        switch self {
        case .runtime: return "runtime"
        case .state: return "state"
        case .observer: return "observer"
        case .computed: return "computed"
        case .effect: return "effect"
        case .tracking: return "tracking"
        case .binding: return "binding"
        case .transaction: return "transaction"
        case .scope: return "scope"
        }
    }
}

/// The runtime's operations on handles, the one API under both the C face
/// and the Swift API. A caseless enum, not static methods of `Engine`: a
/// class's static method takes its metatype, which costs a metadata
/// accessor call per C call (profiled on tether_state_get_int).
@usableFromInline package enum Runtimes {}
