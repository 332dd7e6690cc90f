/// The store's records by name: an open-addressed table of record
/// references, each found by its own `name`.
///
/// Why not `[String: StateRecord]`: a dictionary bucket holds the key
/// beside the value, 24 bytes, and at most 3/4 of the buckets are used, so
/// a million states cost it 50 MB (2^21 buckets); a bucket here is the
/// reference alone, 8 bytes (17 MB), and the name is the record's, which
/// the lookup reads anyway (`benchmarks/scale`, docs/benchmarks.d/30-scale.md).
///
/// The same semantics as the dictionary it replaces: names are compared
/// with `String`'s `==` and hashed with its `Hashable` (canonical
/// equivalence, and the per-process random seed, so that nobody can choose
/// names that collide). Linear probing, at most 3/4 full; a removal shifts
/// the entries after it back (no tombstones), so a lookup's probe ends at
/// the first empty bucket.
struct RecordTable {
    private var buckets: [StateRecord?] = []
    private(set) var count = 0

    init() {}

    var isEmpty: Bool { count == 0 }

    /// Room for `n` records without growing.
    mutating func reserveCapacity(_ n: Int) {
        let needed = RecordTable.bucketCount(for: n)
        if needed > buckets.count { resize(to: needed) }
    }

    /// The fewest buckets, a power of two, that hold `n` at most 3/4 full.
    private static func bucketCount(for n: Int) -> Int {
        var size = 8
        while size / 4 * 3 < n { size *= 2 }
        return size
    }

    @inline(__always)
    private func home(_ name: String) -> Int {
        name.hashValue & (buckets.count - 1)
    }

    /// The bucket that holds `name`, or nil.
    private func find(_ name: String) -> Int? {
        guard count > 0 else { return nil }
        let mask = buckets.count - 1
        var b = home(name)
        while let r = buckets[b] {
            if r.name == name { return b }
            b = (b + 1) & mask
        }
        return nil
    }

    subscript(name: String) -> StateRecord? {
        find(name).map { buckets[$0]! }
    }

    /// Adds the record under its own name, or replaces the one of that name.
    mutating func insert(_ record: StateRecord) {
        if let b = find(record.name) {
            buckets[b] = record
            return
        }
        if (count + 1) > buckets.count / 4 * 3 { resize(to: RecordTable.bucketCount(for: count + 1)) }
        place(record)
        count += 1
    }

    /// Puts a record whose name is not in the table in the first free
    /// bucket from its home.
    private mutating func place(_ record: StateRecord) {
        let mask = buckets.count - 1
        var b = home(record.name)
        while buckets[b] != nil { b = (b + 1) & mask }
        buckets[b] = record
    }

    @discardableResult
    mutating func removeValue(forKey name: String) -> StateRecord? {
        guard let found = find(name) else { return nil }
        let removed = buckets[found]
        buckets[found] = nil
        count -= 1
        // Backward shift: each later entry of the run moves into the hole
        // unless the hole lies before its home (it would then be missed).
        let mask = buckets.count - 1
        var hole = found
        var b = (found + 1) & mask
        while let r = buckets[b] {
            let h = home(r.name)
            // Moves when its home is not in (hole, b], cyclically.
            let distanceToB = (b &- h) & mask
            let distanceToHole = (b &- hole) & mask
            if distanceToB >= distanceToHole {
                buckets[hole] = r
                buckets[b] = nil
                hole = b
            }
            b = (b + 1) & mask
        }
        return removed
    }

    mutating func removeAll() {
        buckets = []
        count = 0
    }

    private mutating func resize(to size: Int) {
        let old = buckets
        buckets = [StateRecord?](repeating: nil, count: size)
        for case let r? in old { place(r) }
    }

    /// Every record, in no particular order.
    var values: some Sequence<StateRecord> { buckets.lazy.compactMap { $0 } }

    /// Every name, in no particular order.
    var keys: some Sequence<String> { values.lazy.map(\.name) }

    /// The most buckets a lookup of a present name visits: a diagnostic
    /// for tests, O(buckets).
    var longestProbe: Int {
        guard !buckets.isEmpty else { return 0 }
        let mask = buckets.count - 1
        var longest = 0
        for b in buckets.indices {
            guard let r = buckets[b] else { continue }
            longest = max(longest, (b &- home(r.name)) & mask + 1)
        }
        return longest
    }
}
