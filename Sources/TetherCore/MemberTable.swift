// MemberTable.swift — an object's members in insertion order, found through an open-addressing index.

/// An object's members: names and values in insertion order, found by name
/// through an open-addressing index of positions.
///
/// Why not swift-collections' `OrderedDictionary` (which this replaced):
/// profiled on kairo mux, its lookup cost ~275 instructions and an insert
/// ~420 for a 100-member object: its hash table packs bucket values into a
/// bit stream that every probe decodes, and it cannot be searched without a
/// `MemberKey`, so a read at a pointer from C had to make a `String` per
/// token first. Here a probe is one `Int32` load and a compare of cached
/// hashes, and `position(ofUTF8:)` searches by the name's bytes as given.
///
/// Small objects (up to `linearLimit` members, most of them) have no index:
/// a scan of the cached hashes is faster than hashing into a table.
/// Positions shift when a member is removed, so `remove(at:)` rebuilds the
/// index: O(count), as keeping the order requires anyway.
///
/// Names come from peers (a client's JSON in tetherd, a daemon's in a
/// client), and linear probing by a hash a peer could make collide costs
/// O(n) a lookup and O(n²) an object. The hash is keyed per process
/// (`MemberKey`, `SipHash`), so names a peer chooses spread like random
/// ones; `longestProbe` lets tests check that they do.
public struct MemberTable: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var keys: [MemberKey] = []
    public private(set) var values: [Value] = []
    /// Position + 1 of the member whose hash starts its probe here; 0 is
    /// free. Its count is a power of two, at least twice `count` (linear
    /// probing stays short below half full). Empty while count <= linearLimit.
    private var slots: [Int32] = []

    static let linearLimit = 8

    public init() {}

    /// An empty table with room for `capacity` members (no index yet: it
    /// is built when the members pass `linearLimit`).
    public init(reservingCapacity capacity: Int) {
        keys.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
    }

    public init(dictionaryLiteral elements: (MemberKey, Value)...) {
        for (key, value) in elements { updateValue(value, forKey: key) }
    }

    public var count: Int { keys.count }
    public var isEmpty: Bool { keys.isEmpty }

    // MARK: Finding

    /// Where the member named `key` is, or nil.
    @inline(__always)
    public func position(of key: MemberKey) -> Int? {
        find(hash: key.bytesHash) { MemberKey.sameBytes($0.string, key.string) }
    }

    /// `position(of:)` for a name given as UTF-8 bytes: no `String` made.
    public func position(ofUTF8 name: UnsafeRawBufferPointer) -> Int? {
        let bytes = name.bindMemory(to: UInt8.self)
        return find(hash: MemberKey.mix(of: bytes)) { MemberKey.sameBytes($0.string, bytes) }
    }

    @inline(__always)
    private func find(hash: Int, _ same: (MemberKey) -> Bool) -> Int? {
        if slots.isEmpty {
            for p in keys.indices where keys[p].bytesHash == hash && same(keys[p]) { return p }
            return nil
        }
        let mask = slots.count - 1
        var b = hash & mask
        while true {
            let entry = slots[b]
            if entry == 0 { return nil }
            let p = Int(entry) - 1
            if keys[p].bytesHash == hash && same(keys[p]) { return p }
            b = (b + 1) & mask
        }
    }

    public subscript(key: MemberKey) -> Value? {
        get { position(of: key).map { values[$0] } }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else if let p = position(of: key) {
                remove(at: p)
            }
        }
    }

    // MARK: Changing

    /// Sets the member's value, keeping its position; a new name is
    /// appended. Returns the value it replaced.
    @discardableResult
    public mutating func updateValue(_ value: Value, forKey key: MemberKey) -> Value? {
        if let p = position(of: key) {
            return swapValue(value, at: p)
        }
        append(value, forNewKey: key)
        return nil
    }

    /// Sets the member named by the bytes `name` (a C caller's): found by
    /// the bytes, it is replaced in place, with no `String` made (a match
    /// is valid UTF-8: the stored name is); else the bytes, validated
    /// (TETHER_EINVAL naming the first ill-formed sequence), become a new
    /// member's name, hashed once. `vet` checks the value first (after the
    /// name). Nothing changes when either throws.
    package mutating func setValue(_ value: Value, forUTF8 name: UnsafeRawBufferPointer,
                                   vet: (Value) throws(TetherError) -> Void) throws(TetherError) {
        let bytes = name.bindMemory(to: UInt8.self)
        let hash = MemberKey.mix(of: bytes)
        if let p = find(hash: hash, { MemberKey.sameBytes($0.string, bytes) }) {
            try vet(value)
            swapValue(value, at: p)
            return
        }
        let key = MemberKey(try String(validatingUTF8: name), bytesHash: hash)
        try vet(value)
        append(value, forNewKey: key)
    }

    /// Appends a member whose name is not in the table (the caller looked).
    private mutating func append(_ value: Value, forNewKey key: MemberKey) {
        precondition(keys.count < Int(Int32.max), "an object holds at most \(Int32.max - 1) members")
        keys.append(key)
        values.append(value)
        if !slots.isEmpty && keys.count * 2 <= slots.count {
            insertSlot(for: keys.count - 1, hash: key.bytesHash)
        } else if keys.count > MemberTable.linearLimit {
            rebuildSlots()
        }
    }

    /// Replaces the value at `position` (which must exist) and returns the
    /// one it held, moved out.
    @discardableResult
    public mutating func swapValue(_ value: Value, at position: Int) -> Value {
        var value = value
        swap(&value, &values[position])
        return value
    }

    /// Removes the member at `position` (which must exist); later members
    /// move down one place.
    @discardableResult
    public mutating func remove(at position: Int) -> (key: MemberKey, value: Value) {
        let removed = (key: keys.remove(at: position), value: values.remove(at: position))
        if keys.count > MemberTable.linearLimit {
            rebuildSlots()
        } else {
            slots = []
        }
        return removed
    }

    private mutating func insertSlot(for position: Int, hash: Int) {
        let mask = slots.count - 1
        var b = hash & mask
        while slots[b] != 0 { b = (b + 1) & mask }
        slots[b] = Int32(position + 1)
    }

    /// An index at most a quarter full, so that appends double it rarely.
    private mutating func rebuildSlots() {
        var size = 16
        while size < keys.count * 4 { size *= 2 }
        slots = [Int32](repeating: 0, count: size)
        for p in keys.indices { insertSlot(for: p, hash: keys[p].bytesHash) }
    }

    /// The most slots a lookup of a present name visits (1 when every
    /// name is in its home slot; 0 while the table has no index): a
    /// diagnostic for tests, O(count), nothing on the lookup path.
    var longestProbe: Int {
        guard !slots.isEmpty else { return 0 }
        let mask = slots.count - 1
        var longest = 0
        for b in slots.indices where slots[b] != 0 {
            let home = keys[Int(slots[b]) - 1].bytesHash & mask
            longest = Swift.max(longest, (b &- home) & mask + 1)
        }
        return longest
    }

    // MARK: Reading in order

    public struct Iterator: IteratorProtocol {
        let table: MemberTable
        var position = 0

        public mutating func next() -> (key: MemberKey, value: Value)? {
            guard position < table.keys.count else { return nil }
            defer { position += 1 }
            return (table.keys[position], table.values[position])
        }
    }

    public func makeIterator() -> Iterator { Iterator(table: self) }

    public var underestimatedCount: Int { count }
}
