// IndexQueue.swift — storage of the delivery queues: a UInt32 list that empties in O(1) and sorts by a key.

/// A growable list of UInt32 queue entries that empties in O(1). The
/// delivery queues are filled and emptied once per write; Array's
/// removeAll(keepingCapacity:) cost ~80 instructions each time (a generic
/// replaceSubrange call; profiled), this costs a store.
public final class IndexQueue {
    private var storage: UnsafeMutablePointer<UInt32>
    private var capacity: Int
    public private(set) var count = 0

    /// Scratch for `sort`, kept between sorts (no allocation per batch).
    private var pairs: UnsafeMutablePointer<(key: UInt64, entry: UInt32)>?
    private var pairCapacity = 0

    public init(capacity: Int = 16) {
        self.capacity = max(capacity, 1)
        storage = .allocate(capacity: self.capacity)
    }

    deinit {
        storage.deallocate()
        pairs?.deallocate()
    }

    @inlinable @inline(__always) public var isEmpty: Bool { count == 0 }

    @inline(__always) public subscript(i: Int) -> UInt32 {
        precondition(i >= 0 && i < count, "IndexQueue index out of range")
        return storage[i]
    }

    @inline(__always) public func append(_ entry: UInt32) {
        if count == capacity { grow() }
        storage[count] = entry
        count += 1
    }

    @inline(__always) public func removeAll() { count = 0 }

    /// Trades entries (and storage) with `other`: how a batch is taken out
    /// of a delivery queue without copying and without either allocating.
    /// Queues are held as `let`s and traded this way, because calling a
    /// method on a class reference in a `var` retained it (profiled: a
    /// retain and release per queued effect).
    public func swapContents(with other: IndexQueue) {
        swap(&storage, &other.storage)
        swap(&capacity, &other.capacity)
        swap(&count, &other.count)
    }

    /// Sorts the entries by a key (stable order is not needed: keys are unique).
    /// Queues are nearly always in order already, or exactly reversed (the
    /// push phase pops subscribers last-first): both take one pass. Otherwise
    /// each key is computed once and (key, entry) pairs are sorted; sorting
    /// the entries with a key closure computed two keys per comparison
    /// (profiled: 30% of a write that queues 50 effects).
    public func sort(by key: (UInt32) -> UInt64) {
        guard count > 1 else { return }
        var ascending = true
        var descending = true
        var previous = key(storage[0])
        for i in 1..<count {
            let k = key(storage[i])
            if k < previous { ascending = false } else { descending = false }
            if !ascending && !descending { break }
            previous = k
        }
        if ascending { return }
        var entries = UnsafeMutableBufferPointer(start: storage, count: count)
        if descending {
            entries.reverse()
            return
        }
        if pairCapacity < count {
            pairs?.deallocate()
            pairCapacity = Swift.max(count, 2 * pairCapacity)
            pairs = .allocate(capacity: pairCapacity)
        }
        var sorted = UnsafeMutableBufferPointer(start: pairs, count: count)
        for i in 0..<count { sorted[i] = (key(storage[i]), storage[i]) }
        sorted.sort { $0.key < $1.key }
        for i in 0..<count { storage[i] = sorted[i].entry }
    }

    private func grow() {
        let bigger = UnsafeMutablePointer<UInt32>.allocate(capacity: capacity * 2)
        bigger.update(from: storage, count: count)
        storage.deallocate()
        storage = bigger
        capacity *= 2
    }
}
