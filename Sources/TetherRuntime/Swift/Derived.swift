/// A computed value: a cached, lazy, glitch-free function of what it reads
/// (a computed property read in a view's `body`). It is evaluated on first
/// read and again only after something it read changed; an equal result
/// wakes nothing downstream. A thrown error is cached until a dependency
/// changes and thrown to every reader.
///
///     let greeting = rt.computed { "Hello, \(name.wrappedValue)" }
public final class Computed<T: Codable>: @unchecked Sendable {
    /// The `id` of the C `tether_computed_t` naming it.
    public let handle: UInt64

    init(handle: UInt64) {
        self.handle = handle
    }

    deinit { try? Runtimes.freeDerived(handle, .computed) }

    /// The current result; an error from the compute closure traps with
    /// its message (use `get()` to handle it).
    public var value: T {
        do { return try get() } catch { fatalError("tether: reading a computed: \(error.message)") }
    }

    public func get() throws(TetherError) -> T {
        if Coding.isScalar(T.self),
           let scalar = try Coding.decodeScalar(T.self, { () throws(TetherError) in try Runtimes.readComputedScalar(handle) }) {
            return scalar
        }
        return try Coding.decode(T.self, from: Runtimes.readComputed(handle))
    }

    /// Calls `handler` when the result changes (evaluating it first).
    public func observe(_ options: ObserveOptions = [], _ handler: @escaping @Sendable (ValueChange<T>) -> Void) -> Observer {
        do {
            return Observer(handle: try Runtimes.observe(computed: handle, path: .root,
                                                         options: ObserverOptions(rawValue: options.rawValue)) { _ in
                ClosureSink<T>(handler)
            })
        } catch {
            fatalError("tether: observing a computed: \(error.message)")
        }
    }
}

/// An effect: a closure re-run whenever something it read last time
/// changed (a view's `body`). It is stopped when this object goes away or
/// by `cancel()`.
public final class Effect: @unchecked Sendable {
    /// The `id` of the C `tether_effect_t` naming it.
    public let handle: UInt64

    init(handle: UInt64) {
        self.handle = handle
    }

    deinit { cancel() }

    /// The error its last run threw (a `fallibleEffect`), nil after a run
    /// that succeeded.
    public var lastError: TetherError? {
        (try? Runtimes.effectFailure(handle)) ?? nil
    }

    /// Stops the effect: its cleanup runs (as a callback), then its
    /// closures are released. Idempotent; safe from inside any callback.
    public func cancel() {
        try? Runtimes.freeDerived(handle, .effect)
    }
}

extension Runtime {
    /// A computed value of `compute`, which may read states, bindings and
    /// other computeds (they become its dependencies) but must not write.
    public func computed<T: Codable>(_ compute: @escaping @Sendable () throws -> T) -> Computed<T> {
        computed(equals: nil, compute)
    }

    /// A computed whose cutoff is `equals` (the TC39 proposal's option):
    /// when it returns true for the old and the new result, the computed
    /// keeps its old value and wakes nothing downstream. It runs as a
    /// callback (it must not write) and only when there is an old result.
    public func computed<T: Codable>(equals: (@Sendable (T, T) -> Bool)?,
                                     _ compute: @escaping @Sendable () throws -> T) -> Computed<T> {
        let body = DerivedBody(compute: { result in
            do {
                result = try Coding.encode(try compute())
                return nil
            } catch {
                return TetherError.from(error)
            }
        })
        if let equals {
            body.equals = { old, new in
                // A result that does not decode counts as changed.
                guard let a = try? Coding.decode(T.self, from: old), let b = try? Coding.decode(T.self, from: new) else {
                    return false
                }
                return equals(a, b)
            }
        }
        do { return Computed(handle: try Runtimes.newComputed(in: handle, body: body)) } catch {
            fatalError("tether: making a computed: \(error.message)")
        }
    }

    /// An effect running `body` now (`.sync`: before this returns; else on
    /// the loop thread) and again after anything it read changes.
    /// `cleanup` runs before each re-run and when the effect stops.
    public func effect(sync: Bool = false, cleanup: (@Sendable () -> Void)? = nil,
                       _ body: @escaping @Sendable () -> Void) -> Effect {
        let derived = DerivedBody(run: { _ in body() }, cleanup: cleanup)
        do {
            return Effect(handle: try Runtimes.newEffect(in: handle, sync: sync, body: derived, created: { _ in }))
        } catch {
            fatalError("tether: making an effect: \(error.message)")
        }
    }

    /// An effect whose body can fail. `sync`, outside callbacks and
    /// batches: a first run that throws fails this call (the effect
    /// subscribes to nothing: Preact's rule). Any later failure goes to
    /// `onEffectError` (default: a line on stderr) and `Effect.lastError`;
    /// the effect stays subscribed to what it read before failing.
    public func fallibleEffect(sync: Bool = false, cleanup: (@Sendable () -> Void)? = nil,
                               _ body: @escaping @Sendable () throws -> Void) throws(TetherError) -> Effect {
        let fallible = FallibleEffectBody(body, cleanup: cleanup)
        return Effect(handle: try Runtimes.newEffect(in: handle, sync: sync, body: fallible, created: { _ in }))
    }

    /// Where failed effect runs of this runtime are reported (C and Swift
    /// effects alike), with the effect's handle; nil restores the default.
    public func onEffectError(_ handler: (@Sendable (UInt64, TetherError) -> Void)?) throws(TetherError) {
        try Runtimes.setEffectErrorHandler(handle, handler, release: nil)
    }

    /// Registers a cleanup for the current run of the effect running on
    /// this thread (Solid's `onCleanup`): a run's cleanups are called newest
    /// first, then the effect's own, before its next run and when it stops.
    /// Throws `.busy` outside an effect's run.
    public func onCleanup(_ cleanup: @escaping @Sendable () -> Void) throws(TetherError) {
        try Runtimes.addCleanup(inRuntime: handle, cleanup)
    }

    /// `withObservationTracking`: runs `apply` now, recording what it
    /// reads, and calls `onChange` once, the first time any of that
    /// changes (on the loop thread, or inside the write with `sync`).
    /// Returns what `apply` returned.
    @discardableResult
    public func withObservationTracking<R>(sync: Bool = false, _ apply: () throws -> R,
                                           onChange: @escaping @Sendable () -> Void) throws -> R {
        var result: Result<R, any Error>?
        let body = DerivedBody(run: { _ in onChange() })
        try withoutActuallyEscaping(apply) { apply in
            _ = try Runtimes.track(in: handle, sync: sync, body: body, created: { _ in }, apply: {
                result = Result { try apply() }
            })
        }
        return try result!.get()
    }
}

/// A Swift effect whose body can throw: each run records its failure.
final class FallibleEffectBody: DerivedBody {
    private let body: @Sendable () throws -> Void

    init(_ body: @escaping @Sendable () throws -> Void, cleanup: (@Sendable () -> Void)?) {
        self.body = body
        super.init(run: nil, cleanup: cleanup)
        reportsToCreator = true
    }

    override func runBody(_ revision: UInt64) {
        do {
            try body()
            runFailure = nil
        } catch {
            runFailure = TetherError.from(error)
        }
    }
}
