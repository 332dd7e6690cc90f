// MemberKey.swift — object member names: byte-exact keys with a cached keyed hash.

/// The name of an object member: a string compared byte for byte (as JSON
/// compares member names, and as `Value` compares strings), hashed cheaply.
///
/// Why not `String` keys: `String` hashes with SipHash over its normalized
/// form (a `Hasher` set up, fed and finalized per lookup), which was ~45% of
/// building a 100-member object from C and of reading one member back
/// (profiled on kairo mux). And `String ==` is canonical equivalence, so
/// "é" and "e\u{301}" were one member name while `.string("é")` and
/// `.string("e\u{301}")` were different values. The hash here is
/// SipHash-1-3 too, but over the UTF-8 as it is (no normalization), its
/// loop written for whole words (`SipHash`), under a key secret to this
/// process, and computed once per key.
///
/// Member names do come from peers: tetherd parses every client's JSON,
/// and a libtether client parses what a daemon sends. `MemberTable`
/// probes by this hash alone, so it must be one a peer cannot make names
/// collide under (issue 29: an object of 40,000 names built to collide
/// under the unseeded mix this replaced took 4.8 s to build, against 15 ms
/// for random names). Because the key is per process, a hash is never
/// stored or sent.
public struct MemberKey: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let string: String
    /// The bytes' hash (`mix(of:)`), computed once: a lookup hashes its key
    /// and compares it with the keys in its bucket, and a different hash
    /// rejects at once.
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

    /// The hash of a name: SipHash-1-3 of its UTF-8 under this process's
    /// key. Every key made from a `String` and every lookup by bytes from
    /// C goes through here, so both agree.
    @usableFromInline
    static func mix(of string: String) -> Int {
        string.utf8.withContiguousStorageIfAvailable { mix(of: $0) }
            ?? Array(string.utf8).withUnsafeBufferPointer { mix(of: $0) }
    }

    static func mix(of bytes: UnsafeBufferPointer<UInt8>) -> Int {
        Int(truncatingIfNeeded: SipHash.sipHash13(bytes))
    }
}
