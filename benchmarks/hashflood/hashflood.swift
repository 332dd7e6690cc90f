// hashflood.swift — what parsing an object costs by the kind of its member
// names (issue 29 §1). Built by hashflood.py with TetherCore's sources into
// one module (internal names visible), once for this tree and once for a
// base revision, so the same driver measures the old hash and the new.
//
//   hashflood time KIND N REPS [FILE]  best of REPS parses of an N-member
//                                      object, in ms (KIND: random, ascii,
//                                      old, file)
//   hashflood names KIND N             the names, hex, one a line
//   hashflood crowd N                  N names whose hash *in this process*
//                                      falls in the first 1/64 of every
//                                      index (run under a known key)
//   hashflood icount-hash LEN N        N hashes of a LEN-byte name
//   hashflood icount-lookup LEN N      N lookups by bytes in a 100-member object
//   hashflood icount-build N           N times: a 100-member object built by
//                                      names "0".."99" given as bytes, each
//                                      read back by its bytes (kairo mux's
//                                      pattern through the C face)
#if canImport(Glibc)
import Glibc
#endif

@main
struct HashFlood {
    static func main() {
        let args = CommandLine.arguments
        guard args.count >= 3 else { fail("usage: see the header of hashflood.swift") }
        switch args[1] {
        case "time":
            let n = Int(args[3])!, reps = Int(args[4])!
            let names = args[2] == "file" ? readNames(args[5]).prefix(n).map { $0 } : makeNames(args[2], n)
            guard names.count == n else { fail("only \(names.count) names") }
            time(names, reps: reps)
        case "names":
            for name in makeNames(args[2], Int(args[3])!) { print(hex(name)) }
        case "crowd":
            for name in crowd(Int(args[2])!) { print(hex(name)) }
        case "icount-hash":
            let bytes = [UInt8]((0..<Int(args[2])!).map { UInt8(0x61 + $0 % 26) })
            var sink = 0
            bytes.withUnsafeBufferPointer { b in
                for _ in 0..<Int(args[3])! { sink &+= MemberKey.mix(of: b) }
            }
            print(sink & 1)
        case "icount-lookup":
            let length = Int(args[2])!
            var table = MemberTable()
            for i in 0..<100 {
                let digits = String(i)
                table[MemberKey(String(repeating: "k", count: max(0, length - digits.count)) + digits)] = .int(Int64(i))
            }
            let name = Array((String(repeating: "k", count: max(0, length - 2)) + "42").utf8)
            var sink = 0
            name.withUnsafeBytes { b in
                for _ in 0..<Int(args[3])! { sink &+= table.position(ofUTF8: b) ?? -1 }
            }
            print(sink & 1)
        case "icount-build":
            let names = (0..<100).map { Array(String($0).utf8) }
            var sink = 0
            for _ in 0..<Int(args[2])! {
                var table = MemberTable()
                for (i, name) in names.enumerated() {
                    name.withUnsafeBytes { b in
                        try? table.setValue(.int(Int64(i)), forUTF8: b) { (_) throws(TetherError) in }
                    }
                }
                for name in names { sink &+= name.withUnsafeBytes { table.position(ofUTF8: $0) } ?? -1 }
            }
            print(sink & 1)
        default:
            fail("unknown mode \(args[1])")
        }
    }

    static func fail(_ message: String) -> Never {
        fputs("hashflood: \(message)\n", stderr)
        exit(2)
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Parses the object `{"name0":0,...}` REPS times (fewer once the parses
    /// took over two seconds) and prints the best time in ms.
    static func time(_ names: [[UInt8]], reps: Int) {
        let began = now()
        var text = "{"
        for (i, name) in names.enumerated() {
            if i > 0 { text += "," }
            text += jsonString(name) + ":" + String(i)
        }
        text += "}"
        var best = Double.infinity
        for _ in 0..<reps {
            let start = now()
            guard case let .object(object)? = try? Value(json: text), object.count == names.count else {
                fail("the object did not parse to \(names.count) members")
            }
            best = min(best, now() - start)
            if now() - began > 2 { break }
        }
        print(String(Int((best * 1e5).rounded())).withDecimals(2))
    }

    // MARK: Names

    static func makeNames(_ kind: String, _ n: Int) -> [[UInt8]] {
        switch kind {
        case "random": return randomNames(n)
        case "ascii": return asciiNames(n)
        case "old": return oldCollisions(n)
        default: fail("unknown kind \(kind)")
        }
    }

    /// SplitMix64, so every run parses the same names.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// 16 random letters and digits each.
    static func randomNames(_ n: Int) -> [[UInt8]] {
        var g = Generator(state: 29)
        return (0..<n).map { _ in (0..<16).map { _ in alphabet.randomElement(using: &g)! } }
    }

    /// 16 random bytes 0x01-0x7F each: what `oldCollisions` makes, but
    /// random (as many JSON escapes, which cost the parser more).
    static func asciiNames(_ n: Int) -> [[UInt8]] {
        var g = Generator(state: 127)
        return (0..<n).map { _ in (0..<16).map { _ in UInt8.random(in: 1...0x7F, using: &g) } }
    }

    /// 16-byte ASCII names with one 64-bit hash under the mix MemberKey had
    /// before issue 29 (an unseeded multiply-xorshift with murmur3's
    /// finalizer): for each first word, the second word that takes the
    /// state to one chosen value, kept when its bytes are 0x01-0x7F.
    static func oldCollisions(_ n: Int) -> [[UInt8]] {
        let m: UInt64 = 0xFF51_AFD7_ED55_8CCD
        var mInverse = m
        for _ in 0..<6 { mInverse = mInverse &* (2 &- m &* mInverse) }
        let target: UInt64 = 0x0123_4567_89AB_CDEF
        let y = target ^ (target >> 29) ^ (target >> 58)  // undoes h ^= h >> 29
        let beforeSecond = mInverse &* y
        var names: [[UInt8]] = []
        var counter: UInt64 = 0
        while names.count < n {
            counter &+= 1
            var first: UInt64 = 0
            var c = counter
            for j in 0..<8 {
                first |= UInt64(alphabet[Int(c % 36)]) << (8 * UInt64(j))
                c /= 36
            }
            var h = ((16 &* 0x9E37_79B9_7F4A_7C15) ^ first) &* m
            h ^= h >> 29
            let second = h ^ beforeSecond
            guard second & 0x8080_8080_8080_8080 == 0 else { continue }
            let bytes = (0..<8).map { UInt8(truncatingIfNeeded: first >> (8 * UInt64($0))) }
                + (0..<8).map { UInt8(truncatingIfNeeded: second >> (8 * UInt64($0))) }
            if !bytes.contains(0) { names.append(bytes) }
        }
        return names
    }

    /// Names whose hash in this process has bits 12-17 zero: in every index
    /// of up to 2^18 slots (an object of up to 65,536 members) they all
    /// start their probes in the first 4,096 slots. One in 64 names does.
    static func crowd(_ n: Int) -> [[UInt8]] {
        var g = Generator(state: 64)
        var names: [[UInt8]] = []
        while names.count < n {
            let name = (0..<16).map { _ in alphabet.randomElement(using: &g)! }
            let hash = name.withUnsafeBufferPointer { MemberKey.mix(of: $0) }
            if (hash >> 12) & 63 == 0 { names.append(name) }
        }
        return names
    }

    static func jsonString(_ name: [UInt8]) -> String {
        var out = "\""
        for b in name {
            if b < 0x20 || b == 0x22 || b == 0x5C {
                out += "\\u00" + (b < 0x10 ? "0" : "") + String(b, radix: 16)
            } else {
                out += String(UnicodeScalar(b))
            }
        }
        return out + "\""
    }

    static func hex(_ name: [UInt8]) -> String {
        name.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    static func readNames(_ path: String) -> [[UInt8]] {
        guard let file = fopen(path, "r") else { fail("cannot open \(path)") }
        defer { fclose(file) }
        var names: [[UInt8]] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0 {
            let text = Array(String(cString: line!).utf8.filter { $0 != 10 })
            names.append(stride(from: 0, to: text.count, by: 2).map {
                UInt8(String(decoding: text[$0..<$0 + 2], as: UTF8.self), radix: 16)!
            })
        }
        free(line)
        return names
    }
}

extension String {
    /// "123456" with 2 decimals: "1234.56" (no Foundation here).
    func withDecimals(_ places: Int) -> String {
        let padded = String(repeating: "0", count: max(0, places + 1 - count)) + self
        return padded.dropLast(places) + "." + padded.suffix(places)
    }
}
