import Testing
@testable import TetherCore

/// Object member names: byte-exact equality, a hash consistent with it, and
/// objects that behave as before for every name length.
@Suite struct MemberKeyTests {
    @Test func namesCompareByteForByteAsStringValuesDo() throws {
        let composed = "\u{E9}", decomposed = "e\u{301}"   // canonically equivalent
        #expect(composed == decomposed)                     // Swift's String says one
        #expect(MemberKey(composed) != MemberKey(decomposed))
        #expect(Value.string(composed) != Value.string(decomposed))
        // So an object may have both, as JSON text may.
        let doc = try Value(json: "{\"\u{E9}\": 1, \"e\u{301}\": 2}")
        guard case let .object(object) = doc else { Issue.record("not an object"); return }
        #expect(object.count == 2)
        #expect(object[composed] == .int(1) && object[decomposed] == .int(2))
        let kelvin = "\u{212A}"                             // normalizes to "K"
        #expect(MemberKey(kelvin) != MemberKey("K"))
    }

    @Test func equalNamesHashEquallyForEveryLength() {
        // Lengths around the 8-byte steps of SipHash, and non-ASCII bytes.
        let names = ["", "a", "0", "99", "1234567", "12345678", "123456789", "abcdefghijklmnop",
                     "abcdefghijklmnopq", String(repeating: "z", count: 100), "\u{E9}t\u{E9}", "\u{1F600}"]
        for name in names {
            let a = MemberKey(name)
            let b = MemberKey(String(decoding: Array(name.utf8), as: UTF8.self))  // another storage
            #expect(a == b)
            #expect(a.bytesHash == b.bytesHash)
            #expect(a.hashValue == b.hashValue)
            let byBytes = Array(name.utf8).withUnsafeBufferPointer { MemberKey.mix(of: $0) }
            #expect(byBytes == a.bytesHash, "the mix of the bytes a C caller gives")
        }
        // Different names differ, including ones that share a prefix or
        // only differ past the first eight bytes.
        for (i, x) in names.enumerated() {
            for y in names[(i + 1)...] { #expect(MemberKey(x) != MemberKey(y)) }
        }
        #expect(MemberKey("12345678a") != MemberKey("12345678b"))
        // Every name of up to 2 bytes over a small alphabet, and 3 to 15
        // bytes differing in one place: the tail is read in at most three
        // loads that overlap, which must still take every byte in.
        let alphabet: [UInt8] = [0, 0x30, 0x31, 0x41, 0x61, 0x7F, 0xC3, 0xFF]
        var short = Set<[UInt8]>()
        for a in alphabet {
            short.insert([a])
            for b in alphabet { short.insert([a, b]) }
        }
        let mixes = Set(short.map { name in name.withUnsafeBufferPointer { MemberKey.mix(of: $0) } })
        #expect(mixes.count == short.count)
        for length in 3...15 {
            let base = [UInt8](repeating: 0x61, count: length)
            var seen = Set([base.withUnsafeBufferPointer { MemberKey.mix(of: $0) }])
            for place in 0..<length {
                var other = base
                other[place] = 0x62
                seen.insert(other.withUnsafeBufferPointer { MemberKey.mix(of: $0) })
            }
            #expect(seen.count == length + 1, "length \(length)")
        }
    }

    @Test func lowBitsSpreadOverBuckets() {
        // MemberTable picks a slot from the mix's low bits: 10,000 short
        // decimal names (kairo mux uses "0".."99") must spread over 1,024
        // buckets with no bucket far above the mean of ~10.
        var buckets = [Int](repeating: 0, count: 1024)
        for i in 0..<10_000 { buckets[MemberKey(String(i)).bytesHash & 1023] += 1 }
        #expect(buckets.max()! < 40)
        #expect(buckets.filter { $0 == 0 }.count < 20)
    }

    @Test func largeObjectsKeepOrderAndFindEveryMember() {
        var object = ValueObject()
        for i in 0..<1000 { object["k\(i)"] = .int(Int64(i)) }
        #expect(object.count == 1000)
        for i in stride(from: 0, to: 1000, by: 7) { #expect(object["k\(i)"] == .int(Int64(i))) }
        #expect(object["k1000"] == nil)
        #expect(object.members.keys.prefix(3).map(\.string) == ["k0", "k1", "k2"])
        object["k5"] = nil
        #expect(object.count == 999 && object["k5"] == nil && object["k6"] == .int(6))
        var reversed = MemberTable()
        for i in (0..<1000).reversed() where i != 5 { reversed[MemberKey("k\(i)")] = .int(Int64(i)) }
        #expect(ValueObject(reversed) == object)  // equality ignores order
    }
}
