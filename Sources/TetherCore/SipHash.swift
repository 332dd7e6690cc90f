// SipHash.swift — SipHash-1-3 over a name's bytes, keyed per process: the hash of member names.

/// SipHash (Aumasson and Bernstein, 2012): a keyed pseudo-random function,
/// so that without the key nobody can build names that collide (issue 29:
/// under the unseeded multiply-xorshift this replaced, 100,000 colliding
/// 16-byte names took 5 s to compute, and an object of 40,000 of them 4.8 s
/// to build). Seeding a multiply-xorshift hash is not enough: MurmurHash2/3
/// and CityHash have multicollisions that hold for every seed. SipHash-1-3
/// is what Swift's `Hasher`, Rust's `HashMap` and Python 3.11+ use.
///
/// Why written out rather than `Hasher.combine(bytes:)`, which computes the
/// same function (`sipHash13` equals it under SWIFT_DETERMINISTIC_HASHING,
/// where `Hasher`'s key is zero): `Hasher` buffers its input through a
/// tail word for any mix of `combine` calls, and cost 200 to 340
/// instructions a 1- to 32-byte name against 120 to 226 here, where the
/// bytes are loaded eight at a time and the last 1-7 in at most three
/// loads (callgrind, with the harness; the old mix: 53 to 97). Member
/// names are hashed on every lookup by name from C and every key made.
/// Tested against SipHash-2-4's published vectors and a reference
/// implementation's SipHash-1-3 values (SipHashTests).
enum SipHash {
    /// This process's 128-bit key, secret: two outputs of `Hasher`, whose
    /// own key the Swift runtime draws at start-up from the system's random
    /// source (getrandom). So the key is new in every process, and fixed
    /// (hence public) only under SWIFT_DETERMINISTIC_HASHING=1, which the
    /// instruction counts set (benchmarks/icount) and a daemon must not.
    /// A hash of a name therefore means nothing outside this process: it
    /// is never stored, sent or printed, and member order never follows it.
    static let key: (UInt64, UInt64) = (
        keyHalf(0x7465_7468_6572_6B30),  // "tetherk0", "tetherk1": any two distinct words
        keyHalf(0x7465_7468_6572_6B31)
    )

    private static func keyHalf(_ word: UInt64) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(word)
        return UInt64(truncatingIfNeeded: hasher.finalize())
    }

    /// SipHash-1-3 of `bytes` under this process's key.
    ///
    /// `releasenone`: the key's one-time initializer (`swift_once`) is
    /// opaque to the optimizer, which then assumed any call here could
    /// release objects, and had callers retain what they held across it:
    /// three retain/release pairs per `tether_computed_get_path_int` on an
    /// object (callgrind, kairo mux). Nothing here releases an object (the
    /// initializer uses `Hasher`, a value).
    @_effects(releasenone)
    static func sipHash13(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let key = SipHash.key
        return hash(bytes, key: key, compressionRounds: 1, finalizationRounds: 3)
    }

    /// SipHash-c-d of `bytes` under `key` (k0 the key's first eight bytes,
    /// little-endian). Inlined into each caller, where the rounds are
    /// constants and the loops unroll.
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>, key: (UInt64, UInt64),
                     compressionRounds: Int, finalizationRounds: Int) -> UInt64 {
        var state = State(key)
        let n = bytes.count
        var last = UInt64(truncatingIfNeeded: n) << 56
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            var i = 0
            while i + 8 <= n {
                state.compress(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)),
                               rounds: compressionRounds)
                i += 8
            }
            // The last 1-7 bytes, each at its place in the final word, in
            // at most three loads, none past the end: 4-7 as two 4-byte
            // loads that overlap (the bytes both hold land on the same
            // bits), 1-3 as the first, middle and last byte.
            let k = n - i
            let tail = raw + i
            if k >= 4 {
                last |= UInt64(UInt32(littleEndian: tail.loadUnaligned(as: UInt32.self)))
                    | UInt64(UInt32(littleEndian: tail.loadUnaligned(fromByteOffset: k - 4, as: UInt32.self))) << (UInt64(k - 4) &* 8)
            } else if k > 0 {
                last |= UInt64(tail.load(as: UInt8.self))
                    | UInt64(tail.load(fromByteOffset: k >> 1, as: UInt8.self)) << (UInt64(k >> 1) &* 8)
                    | UInt64(tail.load(fromByteOffset: k - 1, as: UInt8.self)) << (UInt64(k - 1) &* 8)
            }
        }
        state.compress(last, rounds: compressionRounds)
        state.v2 ^= 0xFF
        for _ in 0..<finalizationRounds { state.round() }
        return state.v0 ^ state.v1 ^ state.v2 ^ state.v3
    }

    struct State {
        var v0, v1, v2, v3: UInt64

        @inline(__always)
        init(_ key: (UInt64, UInt64)) {
            v0 = key.0 ^ 0x736F_6D65_7073_6575  // "somepseudorandomlygeneratedbytes"
            v1 = key.1 ^ 0x646F_7261_6E64_6F6D
            v2 = key.0 ^ 0x6C79_6765_6E65_7261
            v3 = key.1 ^ 0x7465_6462_7974_6573
        }

        @inline(__always)
        mutating func compress(_ m: UInt64, rounds: Int) {
            v3 ^= m
            for _ in 0..<rounds { round() }
            v0 ^= m
        }

        @inline(__always)
        mutating func round() {
            v0 = v0 &+ v1; v1 = rotate(v1, 13); v1 ^= v0; v0 = rotate(v0, 32)
            v2 = v2 &+ v3; v3 = rotate(v3, 16); v3 ^= v2
            v0 = v0 &+ v3; v3 = rotate(v3, 21); v3 ^= v0
            v2 = v2 &+ v1; v1 = rotate(v1, 17); v1 ^= v2; v2 = rotate(v2, 32)
        }

        @inline(__always)
        private func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { x << k | x >> (64 - k) }
    }
}
