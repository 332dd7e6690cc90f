import CTether
import TetherCore

/// The 64 bits of a C handle:
///
///     63      54 53  50 49             26 25          0
///     | runtime | kind |      index      | generation |
///
/// The runtime slot finds the runtime without a global lock; the kind makes a
/// state id passed as an observer id (through a cast) fail cleanly; index and
/// generation come from the graph. Generation 0 is never issued, so {0} is
/// always stale.
@usableFromInline package enum HandleKind: UInt64 {
    case runtime = 0, state = 1, observer = 2, computed = 3, effect = 4, tracking = 5
    case binding = 6, transaction = 7, scope = 8
}

@usableFromInline package struct DecodedHandle {
    @usableFromInline package var slot: Int
    @usableFromInline package var kind: UInt64
    @usableFromInline package var index: UInt32
    @usableFromInline package var generation: UInt32

    @inlinable
    init(slot: Int, kind: UInt64, index: UInt32, generation: UInt32) {
        self.slot = slot
        self.kind = kind
        self.index = index
        self.generation = generation
    }
}

@usableFromInline package enum HandleCodec {
    package static let slotBits: UInt64 = 10
    @usableFromInline package static let maxRuntimes = Int(TETHER_INTERNAL_MAX_RUNTIMES)  // 1 << slotBits
    package static let indexBits: UInt64 = 24
    package static let generationBits = UInt64(GenerationCounter.bits)

    @inline(__always)
    @inlinable package static func encode(slot: Int, kind: HandleKind, index: UInt32, generation: UInt32) -> UInt64 {
        UInt64(slot) << 54 | kind.rawValue << 50 | UInt64(index) << 26 | UInt64(generation)
    }

    @inline(__always)
    @inlinable package static func decode(_ id: UInt64) -> DecodedHandle {
        DecodedHandle(slot: Int(id >> 54), kind: (id >> 50) & 0xF,
                      index: UInt32((id >> 26) & 0xFF_FFFF), generation: UInt32(id & 0x3FF_FFFF))
    }

    @inlinable package static func state(_ slot: Int, _ id: StateID) -> UInt64 {
        encode(slot: slot, kind: .state, index: id.index, generation: id.generation)
    }

    @inlinable package static func observer(_ slot: Int, _ id: ObserverID) -> UInt64 {
        encode(slot: slot, kind: .observer, index: id.index, generation: id.generation)
    }

    @inlinable package static func derived(_ slot: Int, _ kind: HandleKind, _ id: DerivedID) -> UInt64 {
        encode(slot: slot, kind: kind, index: id.index, generation: id.generation)
    }

    @inlinable package static func derivedID(_ id: UInt64) -> DerivedID {
        let h = decode(id)
        return DerivedID(index: h.index, generation: h.generation)
    }
}
