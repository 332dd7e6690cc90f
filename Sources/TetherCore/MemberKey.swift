// MemberKey.swift — object member names: byte-exact keys with a cached hash mix.

/// The name of an object member: a string compared byte for byte (as JSON
/// compares member names, and as `Value` compares strings), hashed cheaply.
///
/// Why not `String` keys: `String` hashes with SipHash over its normalized
/// form (a `Hasher` set up, fed and finalized per lookup), which was ~45% of
/// building a 100-member object from C and of reading one member back
/// (profiled on kairo mux). And `String ==` is canonical equivalence, so
/// "é" and "e\u{301}" were one member name while `.string("é")` and
/// `.string("e\u{301}")` were different values. Names are short, so a
/// multiply-and-mix hash over their UTF-8 is a few instructions a byte.
///
/// Not resistant to deliberately colliding names the way SipHash is
/// (`MemberTable` probes by this mix alone). Member names come from the
/// program that owns the runtime, not from a network peer.
public struct MemberKey: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let string: String
    /// The bytes' mix, computed once: a lookup hashes its key and compares
    /// it with the keys in its bucket, and a different mix rejects at once.
    @usableFromInline let bytesHash: Int

    @inlinable
    public init(_ string: String) {
        self.string = string
        bytesHash = MemberKey.mix(of: string)
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// A key whose bytes' mix the caller has already computed over the
    /// same bytes as `string`'s (`MemberTable.setValue(_:forUTF8:vet:)`).
    init(_ string: String, bytesHash: Int) {
        self.string = string
        self.bytesHash = bytesHash
    }

    /// A key with a chosen hash, so tests can make names collide.
    init(_ string: String, forcingHash hash: Int) {
        self.string = string
        bytesHash = hash
    }

    public var description: String { string }

    /// Inline up to the cached mixes: a probe of a hash table mostly meets
    /// other names (~3 per lookup in a table three-quarters full), and
    /// those differ there.
    @inlinable @inline(__always)
    public static func == (lhs: MemberKey, rhs: MemberKey) -> Bool {
        lhs.bytesHash == rhs.bytesHash && sameBytes(lhs.string, rhs.string)
    }

    /// Byte-for-byte equality of two strings (not `==`, which is canonical
    /// equivalence).
    @usableFromInline @inline(never)
    static func sameBytes(_ x: String, _ y: String) -> Bool {
        // The same representation (one storage object, or the same bytes
        // held inline in a small string) is the same bytes: a name compared
        // with a copy of itself, as the equality of two objects built alike
        // mostly does, needs no walk over the bytes.
        if MemoryLayout<String>.size == 16,  // 64-bit platforms: a constant
           unsafeBitCast(x, to: (UInt64, UInt64).self) == unsafeBitCast(y, to: (UInt64, UInt64).self) {
            return true
        }
        let a = x.utf8, b = y.utf8
        guard a.count == b.count else { return false }  // O(1) for native strings
        let compared = a.withContiguousStorageIfAvailable { pa in
            b.withContiguousStorageIfAvailable { pb in MemberKey.same(pa, pb) }
        }
        if let compared, let equal = compared { return equal }
        return a.elementsEqual(b)
    }

    /// `sameBytes` against a name given as bytes (a C string's).
    @usableFromInline @inline(never)
    static func sameBytes(_ x: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let a = x.utf8
        guard a.count == bytes.count else { return false }
        if let equal = a.withContiguousStorageIfAvailable({ MemberKey.same($0, bytes) }) { return equal }
        return a.elementsEqual(bytes)
    }

    private static func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        while i < a.count {
            if a[i] != b[i] { return false }
            i += 1
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytesHash)
    }

    /// murmur3's 64-bit finalizer: every input bit reaches the low bits,
    /// which pick the bucket.
    @usableFromInline
    static func finalize(_ x: UInt64) -> Int {
        var h = x
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        h = h &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return Int(truncatingIfNeeded: h)
    }

    /// 64-bit multiply-xorshift over the bytes, eight at a time, with
    /// murmur3's finalizer so the low bits (the bucket) depend on every byte.
    @usableFromInline
    static func mix(of string: String) -> Int {
        string.utf8.withContiguousStorageIfAvailable { mix(of: $0) }
            ?? Array(string.utf8).withUnsafeBufferPointer { mix(of: $0) }
    }

    static func mix(of bytes: UnsafeBufferPointer<UInt8>) -> Int {
        let n = bytes.count
        var h = UInt64(n) &* 0x9E37_79B9_7F4A_7C15
        var i = 0
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i + 8 <= n {
                h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
                h ^= h >> 29
                i += 8
            }
        }
        if i < n, let base = bytes.baseAddress {
            // The last 1-7 bytes in at most two loads, none past the end
            // (a byte loop here was ~30 of the ~60 instructions mixing a
            // one- or two-byte name, kairo mux's "0".."99"): 4-7 bytes as
            // two 4-byte loads that overlap, 1-3 as the first, middle and
            // last byte. Either way every byte is in, so names of one
            // length that differ mix differently before the finalizer.
            let raw = UnsafeRawPointer(base) + i
            let k = n - i
            let tail: UInt64
            if k >= 4 {
                tail = UInt64(raw.loadUnaligned(as: UInt32.self))
                    | UInt64(raw.loadUnaligned(fromByteOffset: k - 4, as: UInt32.self)) << 32
            } else {
                tail = UInt64(raw.load(as: UInt8.self))
                    | UInt64(raw.load(fromByteOffset: k >> 1, as: UInt8.self)) << 8
                    | UInt64(raw.load(fromByteOffset: k - 1, as: UInt8.self)) << 16
            }
            h = (h ^ tail) &* 0xFF51_AFD7_ED55_8CCD
        }
        return finalize(h)
    }
}
