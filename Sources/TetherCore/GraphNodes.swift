// GraphNodes.swift — storage layouts of nodes and links, and the in-place field accessors of the hot paths.

// Every node and link is a struct in a `NodeBuffer` (contiguous storage,
// addressed by index; NodeBuffer.swift), linked to others by UInt32
// indexes with `noIndex` for none. Sizes matter: GraphTests holds a state
// node to at most 56 bytes and a derived node to 112, for cache behaviour on
// graphs of a million states (docs/performance.md).

extension Graph {
    /// 56 bytes: fields ordered so the 17-byte value is followed by the
    /// one-byte flags and the four-byte fields pack behind it; the rarely
    /// needed epoch base lives in `bases`; the subscriber list has no tail
    /// and the free list reuses its head (benchmark target: at most 64
    /// bytes per state, including the storage's growth slack).
    struct StateNode {
        var value: Value
        var typeLocked: Bool
        /// DescriptorFlags; details in `descriptors` (packs into padding).
        var described: DescriptorFlags = []
        var generation: UInt32       // 0 while the slot is free
        var revision: UInt64
        /// Changes when the value changes, and goes back to an earlier version
        /// when the value goes back to what it was at the start of the current
        /// delivery epoch (42 -> 0 -> 42 in one batch is no change to readers).
        var version: UInt64 = 0
        var firstObserver: UInt32    // intrusive list, registration order
        var lastObserver: UInt32
        /// Readers (computeds, effects, trackings): a Link list, newest
        /// first (no tail index: 4 bytes per state; the order readers are
        /// marked in does not matter, calls are sorted by registration).
        /// While the slot is free (generation 0) it links the free slots.
        var firstSub: UInt32 = noIndex
        /// Index into `bases`, or noIndex: made the first time a state with
        /// readers is written.
        var base: UInt32 = noIndex

        init(value: Value, typeLocked: Bool, generation: UInt32, revision: UInt64) {
            self.value = value
            self.typeLocked = typeLocked
            self.generation = generation
            self.revision = revision
            firstObserver = noIndex
            lastObserver = noIndex
        }

        /// The next free slot, while this one is free.
        var nextFree: UInt32 {
            get { firstSub }
            set { firstSub = newValue }
        }
    }

    /// What a state was at the start of the current epoch, for the version
    /// revert above.
    struct StateBase {
        var epoch: UInt64
        var version: UInt64
        var value: Value
        var nextFree: UInt32
    }

    struct ObserverRecord {
        var generation: UInt32
        var target: UInt32           // NodeRef: a state or a computed
        var prev: UInt32
        var next: UInt32
        var nextFree: UInt32
        var options: ObserverOptions
        var path: JSONPointer?       // nil observes the whole value
        var sequence: UInt64         // registration order, the delivery order
        var sink: ObserverSink?
        // Pending delivery (coalesced): first old value, latest revision.
        var pending: Bool
        var pendingInitial: Bool
        var pendingOld: Value?
        var pendingRevision: UInt64
        var pendingRound: UInt32
        // Calls in flight; a removal during a call defers the release to its end.
        var running: UInt32
        var removed: Bool
        /// The cause of the latest pending write (see `Cause`).
        var pendingMeta: AnyObject? = nil
        var pendingWave: UInt64 = 0
    }
}

/// A computed, effect or tracking (`kind`). 112 bytes: a computed's cached
/// error lives in `Graph.derivedErrors` behind `DerivedFlags.failed`, and
/// an effect's cause in `Graph.derivedCauses`, side tables rather than
/// fields every node would carry.
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

extension Graph {
    // The fields of a derived node that the pull moves in and out of the
    // node in place: copying them out went through value witnesses or a
    // retain and release (profiled).

    /// The body of derived node `d`, read without a retain (the caller must
    /// keep the node from releasing it while in use).
    @inline(__always)
    func borrowedBody(_ d: Int) -> Unmanaged<DerivedBody>? {
        derived.unretained(d, at: MemoryLayout<DerivedNode>.offset(of: \DerivedNode.body).unsafelyUnwrapped,
                           as: DerivedBody.self)
    }

    /// Where node `d` keeps its cached value: `recompute` moves a changed
    /// result in through this address instead of swapping it into the node
    /// and destroying the old value through the outlined destroy (profiled).
    @inline(__always)
    func cachedValueSlot(_ d: Int) -> UnsafeMutablePointer<Value> {
        derived.address(d, at: MemoryLayout<DerivedNode>.offset(of: \DerivedNode.value).unsafelyUnwrapped, as: Value.self)
    }

    /// Whether `d`'s cached value equals `new`. Scalars are compared where
    /// they lie: `derived[d].value != new` copied the cached value out and
    /// destroyed the copy (two value-witness calls per recompute, profiled).
    @inline(__always)
    func cachedValue(of d: Int, equals new: Value) -> Bool {
        let old = derived[d].value.scalar
        if case .other = old { return derived[d].value == new }
        return old.sameValue(as: new.scalar)
    }
}
