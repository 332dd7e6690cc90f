import TetherCore

/// Generational slots for the C face's own objects (bindings, scopes): an
/// index into an array plus a generation that changes on every reuse, so a
/// stale handle is detected instead of aliasing a newer object. Generations
/// come from the graph's sequence (Graph.takeGeneration), so handles of
/// different kinds and successive runtimes in one slot never collide.
struct HandleTable<T> {
    private struct Slot {
        var generation: UInt32
        var value: T?
        var nextFree: UInt32
    }
    private var slots: [Slot] = []
    private var firstFree: UInt32 = .max

    /// The index of the new entry, or nil when the 24-bit index space is full.
    mutating func insert(_ value: T, generation: UInt32) -> UInt32? {
        if firstFree != .max {
            let i = firstFree
            firstFree = slots[Int(i)].nextFree
            slots[Int(i)] = Slot(generation: generation, value: value, nextFree: .max)
            return i
        }
        guard slots.count < Graph.maxNodes else { return nil }
        slots.append(Slot(generation: generation, value: value, nextFree: .max))
        return UInt32(slots.count - 1)
    }

    func get(_ index: UInt32, _ generation: UInt32) -> T? {
        let i = Int(index)
        guard i < slots.count, generation != 0, slots[i].generation == generation else { return nil }
        return slots[i].value
    }

    mutating func remove(_ index: UInt32, _ generation: UInt32) -> T? {
        let i = Int(index)
        guard i < slots.count, generation != 0, slots[i].generation == generation,
              let value = slots[i].value else { return nil }
        slots[i].value = nil
        slots[i].generation = 0
        slots[i].nextFree = firstFree
        firstFree = UInt32(i)
        return value
    }

    /// Calls `body` with the index, generation and value of every entry.
    func forEach(_ body: (UInt32, UInt32, T) -> Void) {
        for i in slots.indices {
            if let value = slots[i].value { body(UInt32(i), slots[i].generation, value) }
        }
    }

    /// Empties the table, returning what it held.
    mutating func removeAll() -> [T] {
        let values = slots.compactMap(\.value)
        slots = []
        firstFree = .max
        return values
    }
}
