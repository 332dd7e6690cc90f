import Testing
@testable import TetherCore

/// Issue 29: names built to collide must cost what random names cost. The
/// names here collide (all 64 bits) under the unseeded mix `MemberKey`
/// had before, as a peer could build them; under it a table of them is one
/// probe run as long as the table, so every check below failed on it.
/// No timings: the index's longest probe is what degrades, so that is what
/// is bounded.
@Suite struct HashFloodTests {
    /// Linear probing by a random hash, the index at most half full:
    /// a run of k slots has probability about (α e^(1-α))^k ≈ 0.82^k at
    /// α = 1/2, so one of 200 among 2^18 slots about 10^-11. Flooded, the
    /// run is as long as the table.
    static let probeBound = 200

    @Test func theCollidingNamesCollideUnderTheOldMix() {
        let names = OldMix.collidingNames(64, seed: 1)
        #expect(Set(names.map(OldMix.mix)).count == 1, "the generator's own check")
        #expect(Set(names).count == 64)
        // Under today's hash they are as different as any names.
        #expect(Set(names.map { MemberKey($0).bytesHash }).count == 64)
        for name in names.prefix(8) { #expect(MemberKey(name).bytesHash != OldMix.mix(name)) }
        // Nor is any short name's hash the old unseeded one.
        for name in ["", "a", "0", "99", "value", "12345678", "123456789"] {
            #expect(MemberKey(name).bytesHash != OldMix.mix(name), "\(name)")
        }
    }

    @Test func aTableOfCollidingNamesKeepsShortProbes() {
        let names = OldMix.collidingNames(40_000, seed: 2)
        #expect(Set(names.map { MemberKey($0).bytesHash }).count == names.count, "distinct 64-bit hashes")
        var table = MemberTable()
        for (i, name) in names.enumerated() {
            table[MemberKey(name)] = .int(Int64(i))
            // Checked as it grows, so a flooded table fails at 1,024
            // names instead of spending minutes on 40,000.
            if i % 1024 == 1023 || i == names.count - 1 {
                let longest = table.longestProbe
                if longest > Self.probeBound {
                    Issue.record("longest probe \(longest) at \(i + 1) names")
                    return
                }
            }
        }
        #expect(table.count == names.count)
        // Found by key and by the bytes a C caller gives, at the same place.
        for i in stride(from: 0, to: names.count, by: 97) {
            let byKey = table.position(of: MemberKey(names[i]))
            let byBytes = Array(names[i].utf8).withUnsafeBytes { table.position(ofUTF8: $0) }
            #expect(byKey == i && byBytes == i, "\(i)")
        }
        // A name of the same collision set that is not there is not found.
        let absent = OldMix.collidingNames(16, seed: 3)
        for name in absent { #expect(table[MemberKey(name)] == nil) }
    }

    @Test func parsingAnObjectOfCollidingNamesKeepsShortProbes() throws {
        // What tetherd does with a client's Set, and a client with a
        // daemon's snapshot: the same parser, the same table.
        let names = OldMix.collidingNames(8192, seed: 4)
        var text = "{"
        for (i, name) in names.enumerated() {
            if i > 0 { text += "," }
            text += OldMix.jsonString(name) + ":" + String(i)
        }
        text += "}"
        guard case let .object(object) = try Value(json: text) else {
            Issue.record("not an object")
            return
        }
        #expect(object.count == names.count)
        #expect(object.members.longestProbe <= Self.probeBound, "longest probe \(object.members.longestProbe)")
        #expect(object[names[5000]] == .int(5000))
    }

    @Test func setValueByBytesAgreesWithKeys() throws {
        // setValue(forUTF8:) hashes the bytes once and keeps that hash in
        // the new key: it must be the hash a String key of them gets.
        var table = MemberTable()
        let names = OldMix.collidingNames(64, seed: 5)
        for (i, name) in names.enumerated() {
            try Array(name.utf8).withUnsafeBytes { bytes in
                try table.setValue(.int(Int64(i)), forUTF8: bytes) { (_) throws(TetherError) in }
            }
        }
        for (i, key) in table.keys.enumerated() {
            #expect(key.bytesHash == MemberKey(names[i]).bytesHash)
            #expect(table[MemberKey(names[i])] == .int(Int64(i)))
        }
        #expect(table.longestProbe <= Self.probeBound)
    }
}

/// The mix `MemberKey` used before issue 29 (an unseeded multiply-xorshift
/// with murmur3's finalizer), and names that all collide under it, built
/// as an attacker would: every step is a bijection, so for 16-byte names
/// the second word that takes any first word to one chosen state is
/// solved for, and kept when its bytes are ASCII (1 in ~270).
enum OldMix {
    static let m: UInt64 = 0xFF51_AFD7_ED55_8CCD
    static let golden: UInt64 = 0x9E37_79B9_7F4A_7C15

    static func mix(_ name: String) -> Int {
        let bytes = Array(name.utf8)
        let n = bytes.count
        var h = UInt64(n) &* golden
        var i = 0
        func word(_ at: Int, _ count: Int) -> UInt64 {
            var w: UInt64 = 0
            for j in 0..<count { w |= UInt64(bytes[at + j]) << (8 * UInt64(j)) }
            return w
        }
        while i + 8 <= n {
            h = (h ^ word(i, 8)) &* m
            h ^= h >> 29
            i += 8
        }
        if i < n {
            let k = n - i
            let tail = k >= 4
                ? word(i, 4) | word(i + k - 4, 4) << 32
                : UInt64(bytes[i]) | UInt64(bytes[i + k >> 1]) << 8 | UInt64(bytes[i + k - 1]) << 16
            h = (h ^ tail) &* m
        }
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        h = h &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return Int(truncatingIfNeeded: h)
    }

    /// The inverse of `m` modulo 2^64 (Newton's iteration doubles the
    /// correct low bits each step).
    static let mInverse: UInt64 = {
        var x = m
        for _ in 0..<6 { x = x &* (2 &- m &* x) }
        return x
    }()

    /// The inverse of `h ^= h >> 29`.
    static func unshift29(_ y: UInt64) -> UInt64 { y ^ (y >> 29) ^ (y >> 58) }

    /// `count` distinct 16-byte ASCII names (bytes 0x01-0x7F) whose old
    /// mix is one value: the state after both words is fixed, so the
    /// finalizer's output is too.
    static func collidingNames(_ count: Int, seed: UInt64) -> [String] {
        precondition(mInverse &* m == 1)
        let target: UInt64 = 0x0123_4567_89AB_CDEF
        let beforeSecondWord = mInverse &* unshift29(target)  // = state ^ second word
        var names: [String] = []
        names.reserveCapacity(count)
        var counter = seed << 40
        while names.count < count {
            counter &+= 1
            // A first word of ASCII letters and digits, from the counter.
            var first: UInt64 = 0
            var c = counter
            for j in 0..<8 {
                first |= UInt64(0x30 + c % 75) << (8 * UInt64(j))
                c /= 75
            }
            var h = (16 &* golden ^ first) &* m
            h ^= h >> 29
            let second = h ^ beforeSecondWord
            guard second & 0x8080_8080_8080_8080 == 0 else { continue }
            var bytes = [UInt8]()
            for j in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: first >> (8 * UInt64(j)))) }
            for j in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: second >> (8 * UInt64(j)))) }
            guard !bytes.contains(0) else { continue }
            names.append(String(decoding: bytes, as: UTF8.self))
        }
        return names
    }

    /// `name` as a JSON string: control characters, `"` and `\` escaped.
    static func jsonString(_ name: String) -> String {
        var out = "\""
        for b in name.utf8 {
            if b < 0x20 || b == 0x22 || b == 0x5C {
                let hex = String(b, radix: 16)
                out += "\\u00" + (hex.count == 1 ? "0" + hex : hex)
            } else {
                out += String(UnicodeScalar(b))
            }
        }
        return out + "\""
    }
}
