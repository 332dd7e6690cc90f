import CTether
import TetherCore

/// Which runtimes the current thread is running callbacks for, the round a
/// write from inside each gets, and what caused each callback. Lets a write
/// from a callback (a) skip delivering itself — the outer delivery loop
/// will, after the callback returns — (b) carry its depth, so feedback loops
/// are cut, and (c) carry its cause (transaction metadata and wave), so a
/// chain of reactions keeps the transaction that started it.
enum DeliveryContext {
    /// The round a write from this thread gets for `runtime`: 0 outside its callbacks.
    @inline(__always)
    static func round(for runtime: UInt64) -> UInt32 {
        guard let d = entry(of: runtime) else { return 0 }
        let tls = tether_internal_tls()!
        return withUnsafeBytes(of: &tls.pointee.round) { $0.load(fromByteOffset: d * 4, as: UInt32.self) }
    }

    /// The innermost callback entry of `runtime` on this thread.
    @inline(__always)
    static func entry(of runtime: UInt64) -> Int? {
        var i = Int(tether_internal_get_depth())
        if i == 0 { return nil }
        let tls = tether_internal_tls()!
        return withUnsafeBytes(of: &tls.pointee.runtime) { ids in
            while i > 0 {
                i -= 1
                if ids.load(fromByteOffset: i * 8, as: UInt64.self) == runtime { return i }
            }
            return nil
        }
    }

    static func isDelivering(_ runtime: UInt64) -> Bool { entry(of: runtime) != nil }

    /// What caused the callback of `runtime` this thread is running (empty
    /// outside its callbacks).
    static func cause(for runtime: UInt64) -> Cause {
        guard let d = entry(of: runtime) else { return Cause() }
        let tls = tether_internal_tls()!
        let meta = withUnsafeBytes(of: &tls.pointee.meta) { $0.load(fromByteOffset: d * 8, as: UnsafeRawPointer?.self) }
        let wave = withUnsafeBytes(of: &tls.pointee.wave) { $0.load(fromByteOffset: d * 8, as: UInt64.self) }
        return Cause(meta: meta.map { Unmanaged<AnyObject>.fromOpaque($0).takeUnretainedValue() }, wave: wave)
    }

    /// False when nesting is too deep (a chain of 16 runtimes' callbacks).
    static func push(_ runtime: UInt64, round: UInt32, _ cause: Cause) -> Bool {
        let tls = tether_internal_tls()!
        let d = Int(tether_internal_get_depth())
        guard d < Int(TETHER_INTERNAL_MAX_NESTING) else { return false }
        withUnsafeMutableBytes(of: &tls.pointee.runtime) { $0.storeBytes(of: runtime, toByteOffset: d * 8, as: UInt64.self) }
        withUnsafeMutableBytes(of: &tls.pointee.round) { $0.storeBytes(of: round, toByteOffset: d * 4, as: UInt32.self) }
        store(cause, at: d, tls)
        tether_internal_set_depth(UInt32(d + 1))
        return true
    }

    @inline(__always)
    private static func store(_ cause: Cause, at d: Int, _ tls: UnsafeMutablePointer<tether_internal_tls_t>) {
        let meta = cause.meta.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
        withUnsafeMutableBytes(of: &tls.pointee.meta) { $0.storeBytes(of: meta, toByteOffset: d * 8, as: UnsafeRawPointer?.self) }
        withUnsafeMutableBytes(of: &tls.pointee.wave) { $0.storeBytes(of: cause.wave, toByteOffset: d * 8, as: UInt64.self) }
    }

    static func pop() {
        tether_internal_set_depth(tether_internal_get_depth() - 1)
    }

    /// How a callback was entered, to undo exactly that on leaving.
    enum Entry {
        case pushed
        case replaced(round: UInt32, meta: UnsafeRawPointer?, wave: UInt64)
        case refused
    }

    /// Enters a callback of `runtime` at `round`, caused by `cause` (whose
    /// metadata object the caller keeps alive until `leave`). Nested
    /// callbacks of the same runtime (a compute reading a computed that must
    /// be computed, fifty deep on a fresh chain) reuse the innermost entry,
    /// so nesting depth is limited by the stack, not by the 16 entries.
    @inline(__always)
    static func enter(_ runtime: UInt64, round: UInt32, _ cause: Cause = Cause()) -> Entry {
        let d = Int(tether_internal_get_depth())
        if d > 0 {
            let tls = tether_internal_tls()!
            let top = withUnsafeBytes(of: &tls.pointee.runtime) { $0.load(fromByteOffset: (d - 1) * 8, as: UInt64.self) }
            if top == runtime {
                let old = withUnsafeBytes(of: &tls.pointee.round) { $0.load(fromByteOffset: (d - 1) * 4, as: UInt32.self) }
                let oldMeta = withUnsafeBytes(of: &tls.pointee.meta) { $0.load(fromByteOffset: (d - 1) * 8, as: UnsafeRawPointer?.self) }
                let oldWave = withUnsafeBytes(of: &tls.pointee.wave) { $0.load(fromByteOffset: (d - 1) * 8, as: UInt64.self) }
                withUnsafeMutableBytes(of: &tls.pointee.round) { $0.storeBytes(of: round, toByteOffset: (d - 1) * 4, as: UInt32.self) }
                store(cause, at: d - 1, tls)
                return .replaced(round: old, meta: oldMeta, wave: oldWave)
            }
        }
        return push(runtime, round: round, cause) ? .pushed : .refused
    }

    @inline(__always)
    static func leave(_ entry: Entry) {
        switch entry {
        case .pushed:
            pop()
        case let .replaced(old, meta, wave):
            let tls = tether_internal_tls()!
            let d = Int(tether_internal_get_depth()) - 1
            withUnsafeMutableBytes(of: &tls.pointee.round) { $0.storeBytes(of: old, toByteOffset: d * 4, as: UInt32.self) }
            withUnsafeMutableBytes(of: &tls.pointee.meta) { $0.storeBytes(of: meta, toByteOffset: d * 8, as: UnsafeRawPointer?.self) }
            withUnsafeMutableBytes(of: &tls.pointee.wave) { $0.storeBytes(of: wave, toByteOffset: d * 8, as: UInt64.self) }
        case .refused:
            break
        }
    }
}
