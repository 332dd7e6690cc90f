// GraphNodes.swift — layouts of derived nodes and links, and the in-place field accessors of the hot paths.

// Every node and link is a struct in a `NodeBuffer` (contiguous storage,
// addressed by index; NodeBuffer.swift), linked to others by UInt32
// indexes with `noIndex` for none. The layouts of states and observers
// (`Graph.StateNode`, `Graph.StateBase`, `Graph.ObserverRecord`) are in
// Graph.swift, with the class they belong to, and should stay there: a
// release build optimizes the module whole but emits one object file per
// source file, and with StateNode declared in another file than
// `createState`, reusing a freed slot destroyed the old node through the
// type's value witness table instead of a direct call (seen in the
// disassembly; docs/performance.md, "Moving code"). Sizes matter: GraphTests
// holds a state node to at most 56 bytes and a derived node to 112, for
// cache behaviour on graphs of a million states (docs/performance.md).

/// A computed, effect or tracking (`kind`). 112 bytes: a computed's cached
/// error lives in `Graph.derivedErrors` behind `DerivedFlags.failed`, and
/// an effect's cause in `Graph.derivedCauses`, side tables rather than
/// fields every node would carry.
@usableFromInline
struct DerivedNode {
    @usableFromInline var generation: UInt32
    @usableFromInline var kind: DerivedKind
    @usableFromInline var flags: DerivedFlags
    @usableFromInline var value: Value
    @usableFromInline var version: UInt64
    var body: DerivedBody?
    var firstDep: UInt32
    @usableFromInline var lastDep: UInt32
    var firstSub: UInt32
    var lastSub: UInt32
    @usableFromInline var cursor: UInt32  // next dependency link to reuse while evaluating
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
@usableFromInline
struct Link {
    @usableFromInline var dep: UInt32
    var sub: UInt32
    @usableFromInline var version: UInt64
    var prevDep: UInt32
    @usableFromInline var nextDep: UInt32
    var prevSub: UInt32
    var nextSub: UInt32
}

/// A source is a state, a derived node, or a part of a state read by path
/// (a `PathNode`, GraphPaths.swift); the top two bits tell which. Indexes
/// are below 2^24 (`Graph.maxNodes`), so both bits are free.
@usableFromInline
enum NodeRef {
    static let derivedBit: UInt32 = 1 << 31
    static let pathBit: UInt32 = 1 << 30
    @inlinable @inline(__always) static func state(_ i: Int) -> UInt32 { UInt32(i) }
    @inlinable @inline(__always) static func derived(_ i: Int) -> UInt32 { UInt32(i) | (1 << 31) }  // derivedBit
    @inline(__always) static func path(_ p: Int) -> UInt32 { UInt32(p) | pathBit }
    @inline(__always) static func isDerived(_ r: UInt32) -> Bool { r & derivedBit != 0 }
    @inline(__always) static func isPath(_ r: UInt32) -> Bool { r & pathBit != 0 }
    /// A state (neither bit set): one compare.
    @inline(__always) static func isState(_ r: UInt32) -> Bool { r < pathBit }
    @inline(__always) static func index(_ r: UInt32) -> Int { Int(r & ~(derivedBit | pathBit)) }
}

extension Graph {
    /// State `i`'s epoch base (`StateBase`, for `bumpVersion`), made the
    /// first time it is needed: most states are never written while they
    /// have readers, so the base is not a field of every state node.
    @inline(__always)
    func epochBase(of i: Int) -> Int {
        var b = Int(states[i].base)
        if states[i].base == noIndex {
            let base = StateBase(epoch: .max, version: 0, value: .null, nextFree: noIndex)
            if firstFreeBase != noIndex {
                b = Int(firstFreeBase)
                firstFreeBase = bases[b].nextFree
                bases[b] = base
            } else {
                b = bases.count
                bases.append(base)
            }
            states[i].base = UInt32(b)
        }
        return b
    }

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
