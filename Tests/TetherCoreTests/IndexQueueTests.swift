import Testing
@testable import TetherCore

/// The delivery queue's sort: the two one-pass cases (already in order,
/// exactly reversed) and the general one must all give key order.
@Suite struct IndexQueueTests {
    private func sorted(_ entries: [UInt32], key: (UInt32) -> UInt64) -> [UInt32] {
        let q = IndexQueue(capacity: 2)  // small: appending grows it
        for e in entries { q.append(e) }
        q.sort(by: key)
        return (0..<q.count).map { q[$0] }
    }

    @Test func keepsEntriesAlreadyInOrder() {
        #expect(sorted([1, 2, 3, 4, 5], key: { UInt64($0) }) == [1, 2, 3, 4, 5])
    }

    @Test func reversesEntriesInExactlyReverseOrder() {
        #expect(sorted([9, 7, 5, 3, 1], key: { UInt64($0) }) == [1, 3, 5, 7, 9])
    }

    @Test func sortsMixedOrdersByKeyNotByEntry() {
        // Keys are the negated entries: descending entries are ascending keys.
        #expect(sorted([3, 10, 1, 7], key: { UInt64(100 - $0) }) == [10, 7, 3, 1])
        var rng = SystemRandomNumberGenerator()
        let entries = (0..<500).map { _ in UInt32.random(in: 0..<1_000_000, using: &rng) }
        let unique = Array(Set(entries))
        #expect(sorted(unique, key: { UInt64($0) &* 3 }) == unique.sorted())
    }

    @Test func singleAndEmptyQueuesAreLeftAlone() {
        #expect(sorted([], key: { UInt64($0) }) == [])
        #expect(sorted([42], key: { UInt64($0) }) == [42])
    }
}
