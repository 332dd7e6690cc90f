// DerivedBody.swift — the callbacks behind computeds, effects and trackings (DerivedBody), and their ids.

/// A C compute function: fills the value behind its first argument,
/// returns 0 or an error code (`tether_compute_fn`).
public typealias ComputeFunction = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32

/// The callbacks behind a derived node. `release` runs exactly once.
///
/// The graph calls them through the overridable methods (`runBody`,
/// `runCleanup`, `runRelease`), so the C face subclasses this for C
/// callbacks: one object per node holding the function pointers, instead of
/// this object plus a closure context per callback (profiled: four mallocs
/// per effect, and a retain of each closure context per run).
open class DerivedBody {
    /// What only some bodies have, kept apart so that a C body (one per C
    /// computed and effect) neither initializes nor destroys it: the Swift
    /// API's closures, a custom equality, cleanups added during a run, a
    /// fallible effect's failure. Profiled on S.js createComputations: as
    /// stored fields these made a C effect's body 241 bytes, initialized
    /// and released five optional closures, an error and an array, ~90
    /// instructions of each making and freeing (issue 16, eighth round).
    final class Extras {
        var compute: ((inout Value) -> TetherError?)?
        var run: ((UInt64) -> Void)?
        var cleanup: (() -> Void)?
        var release: (() -> Void)?
        var equals: ((Value, Value) -> Bool)?
        var addedCleanups: [() -> Void] = []
        var failure: TetherError?
        var runFailure: TetherError?

        init(compute: ((inout Value) -> TetherError?)?, run: ((UInt64) -> Void)?,
             cleanup: (() -> Void)?, release: (() -> Void)?) {
            self.compute = compute
            self.run = run
            self.cleanup = cleanup
            self.release = release
        }
    }

    // The stored fields: the words first, then the flags side by side, so
    // a C effect's body (this plus CEffectBody's five fields) stays within
    // glibc's fast bins (at most 120 bytes asked): 97 bytes.

    /// Nil for a body that has none of `Extras`.
    private final var extras: Extras?
    /// Computed, from C: called directly by the owner's `callCompute`, with
    /// no closure in between (a closure call retained its context).
    public let computeFunction: ComputeFunction?
    public let userData: UnsafeMutableRawPointer?
    /// Effect: the owner's handle of the scope holding what its current run
    /// created (0: it created nothing), freed before its next run and
    /// before it is freed itself.
    public final var ownedScope: UInt64 = 0
    /// The owner's handle of this node, for reports (set once it exists).
    public final var ownerHandle: UInt64 = 0
    /// `equals != nil`, stored: asked on every recompute, where loading the
    /// closure itself cost a retain and release of its context (profiled:
    /// kairo broad +2%).
    public final private(set) var hasCustomEquals = false
    /// A custom binding's get rather than a computed's compute (messages).
    public let isBindingGet: Bool
    /// An effect that ran owes one cleanup before it runs again or ends.
    public internal(set) var cleanupOwed = false
    /// Effect: whether it has a cleanup to call before each re-run. Stored,
    /// not overridden: it is asked on every effect run.
    public final let hasCleanup: Bool
    /// Its recomputes or runs are reported first (GraphTrace.swift): set
    /// only while tracing is on for it, tested by the owner's `callCompute`
    /// and `callBody` (a byte beside the flags above: the body stays 98
    /// bytes, and the graph's own hot paths are untouched).
    public final internal(set) var traced = false
    /// A fallible effect: a failing first SYNC run fails its creation.
    /// Set before the body is shared: it makes `extras` then, so a run on
    /// another thread never has to (`runFailure`).
    public final var reportsToCreator = false {
        didSet { if reportsToCreator { _ = writableExtras } }
    }
    /// A fallible SYNC effect being created: its first run's failure goes
    /// back to the creator (as the creation's error), not to the handler.
    public final var creatorWaitsForFirstRun = false
    /// Set when a creation failed after the node existed: the caller keeps
    /// what it gave, so `finish` runs no release.
    public final var releaseAbandoned = false
    /// `!addedCleanups.isEmpty`, stored: asked on every effect run.
    public final private(set) var hasAddedCleanups = false

    /// `extras`, made on first use.
    private final var writableExtras: Extras {
        if let extras { return extras }
        let made = Extras(compute: nil, run: nil, cleanup: nil, release: nil)
        extras = made
        return made
    }

    /// Computed: fill the result, or return the error to cache.
    public final var compute: ((inout Value) -> TetherError?)? { extras?.compute }
    /// Effect: its body. Tracking: on_change, given the revision.
    public final var run: ((UInt64) -> Void)? { extras?.run }
    /// Effect: before each re-run and on disposal.
    public final var cleanup: (() -> Void)? { extras?.cleanup }

    /// Computed: decides whether a new result counts as unchanged for the
    /// cutoff (the TC39 proposal's `equals`); nil for structural equality.
    /// Called as a callback with the old and the new result, only when an
    /// earlier evaluation succeeded. Set before the node is created.
    public final var equals: ((Value, Value) -> Bool)? {
        get { extras?.equals }
        set {
            if newValue == nil && extras == nil { return }
            writableExtras.equals = newValue
            hasCustomEquals = newValue != nil
        }
    }

    /// Effect: the error its last run failed with, nil when it succeeded.
    /// Read and written under the owner's graph lock only (any thread may
    /// ask for it: tether_effect_last_error): the owner publishes each run's
    /// `runFailure` here once it holds the lock again after the run.
    public final var failure: TetherError? {
        get { extras?.failure }
        set {
            if newValue == nil && extras == nil { return }
            writableExtras.failure = newValue
        }
    }

    /// A fallible effect: what the run being made failed with, set by the
    /// body's `runBody` on the thread running it (without the graph lock)
    /// and taken by the owner on that same thread, so no other thread ever
    /// touches it. `reportsToCreator` made `extras` before the body was
    /// shared; a body without it records nothing.
    public final var runFailure: TetherError? {
        get { extras?.runFailure }
        set { extras?.runFailure = newValue }
    }

    /// Effect: cleanups registered during the current run (Solid's
    /// `onCleanup`), run in reverse order before the effect's own cleanup,
    /// before the next run and on free. Touched only by the thread running
    /// the effect's callbacks (they never run concurrently).
    public final var addedCleanups: [() -> Void] {
        get { extras?.addedCleanups ?? [] }
        set {
            if newValue.isEmpty && extras == nil { return }
            writableExtras.addedCleanups = newValue
            hasAddedCleanups = !newValue.isEmpty
        }
    }

    public init(compute: ((inout Value) -> TetherError?)? = nil, run: ((UInt64) -> Void)? = nil,
                cleanup: (() -> Void)? = nil, release: (() -> Void)? = nil) {
        if compute != nil || run != nil || cleanup != nil || release != nil {
            extras = Extras(compute: compute, run: run, cleanup: cleanup, release: release)
        }
        computeFunction = nil
        userData = nil
        isBindingGet = false
        hasCleanup = cleanup != nil
    }

    /// A computed (or custom binding get) computed by a C function, or (no
    /// function) an effect whose subclass overrides `runBody` and, when
    /// `hasCleanup`, `runCleanup`. A subclass may leave `release` nil and
    /// override `runRelease`.
    public init(computeFunction: ComputeFunction?, userData: UnsafeMutableRawPointer?,
                isBindingGet: Bool, hasCleanup: Bool = false, release: (() -> Void)?) {
        if release != nil { extras = Extras(compute: nil, run: nil, cleanup: nil, release: release) }
        self.computeFunction = computeFunction
        self.userData = userData
        self.isBindingGet = isBindingGet
        self.hasCleanup = hasCleanup
    }

    /// Effect: runs its body. Tracking: calls on_change with the revision.
    open func runBody(_ revision: UInt64) { run?(revision) }

    open func runCleanup() { cleanup?() }

    /// Whether a run owes any cleanup call.
    @inline(__always)
    public final var hasAnyCleanup: Bool { hasCleanup || hasAddedCleanups }

    /// The registered cleanups, newest first, then the effect's own.
    public final func runCleanups() {
        if hasAddedCleanups {
            let added = addedCleanups
            addedCleanups = []
            for cleanup in added.reversed() { cleanup() }
        }
        if hasCleanup { runCleanup() }
    }

    /// The node's destroy: called once, by `finish`.
    open func runRelease() {
        guard let extras, let r = extras.release else { return }
        extras.release = nil
        r()
    }

    /// Ends the node's callbacks: the owed cleanup, then the release.
    /// Idempotent. Call without the graph lock (both are user callbacks).
    public final func finish() {
        if cleanupOwed {
            cleanupOwed = false
            runCleanups()
        }
        if !releaseAbandoned { runRelease() }
    }
}

/// A computed, effect or tracking handle (generational, as `StateID`).
public struct DerivedID: Hashable, Sendable {
    public var index: UInt32
    public var generation: UInt32
    public init(index: UInt32, generation: UInt32) {
        self.index = index
        self.generation = generation
    }
}
