// Handles.swift — generational ids of states and observers, and the generation counter that feeds every id.

/// Generational ids for graph nodes. The index addresses contiguous storage;
/// the generation changes every time a slot is reused, so an id kept after
/// its node was freed (or made up) is detected instead of aliasing a new node.
/// Generation 0 never names a live node, so zeroed handles are always stale.
public struct StateID: Hashable, Sendable {
    public var index: UInt32
    public var generation: UInt32
    public init(index: UInt32, generation: UInt32) {
        self.index = index
        self.generation = generation
    }
}

public struct ObserverID: Hashable, Sendable {
    public var index: UInt32
    public var generation: UInt32
    public init(index: UInt32, generation: UInt32) {
        self.index = index
        self.generation = generation
    }
}

/// Hands out generations. The C face packs a generation into 26 bits of a
/// handle, so the counter wraps there and skips 0.
public struct GenerationCounter: Sendable {
    public static let bits: UInt32 = 26
    public static let mask: UInt32 = (1 << bits) - 1
    public private(set) var next: UInt32

    public init(startingAt start: UInt32 = 1) {
        next = start & Self.mask == 0 ? 1 : start & Self.mask
    }

    public mutating func take() -> UInt32 {
        let g = next
        next = (next + 1) & Self.mask
        if next == 0 { next = 1 }
        return g
    }
}

/// The sentinel index meaning "no node" in intrusive lists.
@usableFromInline let noIndex: UInt32 = .max
