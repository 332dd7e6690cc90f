/// Computed values, effects and one-shot trackings: the nodes that read.
///
/// Dependencies are intrusive `Link`s, one per edge, on both the reader's
/// dependency list and the source's subscriber list (the shape of
/// alien-signals and Preact signals). A re-evaluation that reads the same
/// sources in the same order reuses its links in place, so the steady state
/// allocates nothing.
public enum DerivedKind: UInt8, Sendable {
    case computed, effect, tracking
}

struct DerivedFlags: OptionSet {
    let rawValue: UInt8
    /// A source changed since the last evaluation: check before trusting the value.
    static let stale = DerivedFlags(rawValue: 1)
    /// Being evaluated now; reading it again is a cycle.
    static let computing = DerivedFlags(rawValue: 2)
    /// In a delivery queue (effects and trackings).
    static let queued = DerivedFlags(rawValue: 4)
    /// Never evaluated: the first read or run always evaluates.
    static let fresh = DerivedFlags(rawValue: 8)
    /// Freed while its callback ran; finished when that call returns.
    static let disposed = DerivedFlags(rawValue: 16)
    /// Effects and trackings delivered at the end of the writer's write.
    static let sync = DerivedFlags(rawValue: 32)
    /// An effect whose cleanup is owed before its next run.
    static let ranOnce = DerivedFlags(rawValue: 64)
    /// A computed whose last evaluation failed: its error is in
    /// `Graph.derivedErrors` (a side table: 24 bytes per node otherwise).
    static let failed = DerivedFlags(rawValue: 128)
}

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
    /// Computed: fill the result, or return the error to cache.
    public let compute: ((inout Value) -> TetherError?)?
    /// Computed, from C: called directly by the owner's `callCompute`, with
    /// no closure in between (a closure call retained its context).
    public let computeFunction: ComputeFunction?
    public let userData: UnsafeMutableRawPointer?
    /// A custom binding's get rather than a computed's compute (messages).
    public let isBindingGet: Bool
    /// Effect: its body. Tracking: on_change, given the revision.
    public let run: ((UInt64) -> Void)?
    /// Effect: before each re-run and on disposal.
    public let cleanup: (() -> Void)?
    private var release: (() -> Void)?
    /// An effect that ran owes one cleanup before it runs again or ends.
    public internal(set) var cleanupOwed = false
    /// Effect: whether it has a cleanup to call before each re-run. Stored,
    /// not overridden: it is asked on every effect run.
    public final let hasCleanup: Bool

    public init(compute: ((inout Value) -> TetherError?)? = nil, run: ((UInt64) -> Void)? = nil,
                cleanup: (() -> Void)? = nil, release: (() -> Void)? = nil) {
        self.compute = compute
        computeFunction = nil
        userData = nil
        isBindingGet = false
        self.run = run
        self.cleanup = cleanup
        hasCleanup = cleanup != nil
        self.release = release
    }

    /// A computed (or custom binding get) computed by a C function, or (no
    /// function) an effect whose subclass overrides `runBody` and, when
    /// `hasCleanup`, `runCleanup`. A subclass may leave `release` nil and
    /// override `runRelease`.
    public init(computeFunction: ComputeFunction?, userData: UnsafeMutableRawPointer?,
                isBindingGet: Bool, hasCleanup: Bool = false, release: (() -> Void)?) {
        compute = nil
        self.computeFunction = computeFunction
        self.userData = userData
        self.isBindingGet = isBindingGet
        run = nil
        cleanup = nil
        self.hasCleanup = hasCleanup
        self.release = release
    }

    /// Effect: runs its body. Tracking: calls on_change with the revision.
    open func runBody(_ revision: UInt64) { run?(revision) }

    open func runCleanup() { cleanup?() }

    /// The node's destroy: called once, by `finish`.
    open func runRelease() {
        let r = release
        release = nil
        r?()
    }

    /// Ends the node's callbacks: the owed cleanup, then the release.
    /// Idempotent. Call without the graph lock (both are user callbacks).
    public final func finish() {
        if cleanupOwed {
            cleanupOwed = false
            runCleanup()
        }
        runRelease()
    }
}

public struct DerivedID: Hashable, Sendable {
    public var index: UInt32
    public var generation: UInt32
    public init(index: UInt32, generation: UInt32) {
        self.index = index
        self.generation = generation
    }
}

struct DerivedNode {
    var generation: UInt32
    var kind: DerivedKind
    var flags: DerivedFlags
    var value: Value
    var version: UInt64
    var body: DerivedBody?
    var firstDep: UInt32
    var lastDep: UInt32
    var firstSub: UInt32
    var lastSub: UInt32
    var cursor: UInt32            // next dependency link to reuse while evaluating
    var firstObserver: UInt32     // observers of a computed
    var lastObserver: UInt32
    var sequence: UInt64          // delivery order among effects and observers
    var pendingRound: UInt32
    var pendingRevision: UInt64
    var running: UInt32
    var nextFree: UInt32
}

/// One dependency edge: `sub` (a derived node) read `dep` (a NodeRef) when
/// `dep` had `version`.
struct Link {
    var dep: UInt32
    var sub: UInt32
    var version: UInt64
    var prevDep: UInt32
    var nextDep: UInt32
    var prevSub: UInt32
    var nextSub: UInt32
}

/// A source is a state or a derived node; the top bit tells which.
enum NodeRef {
    static let derivedBit: UInt32 = 1 << 31
    @inline(__always) static func state(_ i: Int) -> UInt32 { UInt32(i) }
    @inline(__always) static func derived(_ i: Int) -> UInt32 { UInt32(i) | derivedBit }
    @inline(__always) static func isDerived(_ r: UInt32) -> Bool { r & derivedBit != 0 }
    @inline(__always) static func index(_ r: UInt32) -> Int { Int(r & ~derivedBit) }
}
