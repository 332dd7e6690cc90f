import Glibc
import TetherCore
import TetherWire

/// A Set call in the one shape nearly every client sends:
/// `{"method":"io.tether.Set","parameters":{"name":"…","value":…}}`
/// (either key order, JSON whitespace between tokens), recognised from its
/// bytes without a `Value` tree for the envelope.
///
/// Why a hand-written scanner: parsing the envelope into generic trees,
/// `Call(from:)`, the method lookups and `SetParameters` were ~20 k of a
/// Set's ~50 k instructions (docs/daemon-performance.md); only the value
/// needs the JSON parser. The scanner is strict and small on purpose: it
/// accepts a message only if the whole message is valid JSON that the slow
/// path would read as exactly this call, and otherwise says nil, and the
/// call goes the slow way (which has every error message). So anything
/// else (other methods, `oneway`/`more`/`upgrade`, `path`, `tag`,
/// `origin`, `bytes_at`, escapes or non-ASCII in a key, the method or the
/// name, a duplicate key, bad JSON, a value the parser refuses) is nil
/// here. `SimpleSetCallTests` and the fuzzer hold both paths' replies
/// equal.
struct SimpleSetCall {
    var name: String
    var value: Value

    /// `maxDepth`: the call's nesting limit (`Limits.maxDepth`); the value
    /// sits two objects deep, so it gets two levels fewer.
    static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) -> SimpleSetCall? {
        guard maxDepth >= 2, let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        if let call = canonical(bytes, maxDepth: maxDepth) { return call }
        return PlainJSONScanner.envelope(base, bytes.count, method: "io.tether.Set") { scan in
            parameters(&scan, maxDepth: maxDepth - 2)
        }
    }

    /// What nearly every client sends, byte for byte up to the name:
    /// `{"method":"io.tether.Set","parameters":{"name":` (the keys in this
    /// order, no whitespace). Compared at once, instead of scanned a byte
    /// at a time (~450 of the scanner's ~1 k instructions a Set); the rest
    /// is read as `parse` reads it. Anything else, or a message that fails
    /// after the prefix, goes through `parse`'s general scan (which gives
    /// the same answer for these bytes: the prefix is the tokens it would
    /// read).
    private static func canonical(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) -> SimpleSetCall? {
        let prefix: StaticString = #"{"method":"io.tether.Set","parameters":{"name":"#
        let n = prefix.utf8CodeUnitCount
        guard bytes.count > n, memcmp(bytes.baseAddress!, prefix.utf8Start, n) == 0 else { return nil }
        var scan = PlainJSONScanner(base: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), end: bytes.count, pos: n)
        guard let raw = scan.plainString(), scan.take(UInt8(ascii: ",")),
              let key = scan.plainString(), PlainJSONScanner.equal(key, "value"), scan.take(UInt8(ascii: ":")),
              let parsed = value(&scan, maxDepth: maxDepth - 2),
              scan.take(UInt8(ascii: "}")), scan.take(UInt8(ascii: "}")), scan.atEnd else { return nil }
        return SimpleSetCall(name: String(decoding: raw, as: UTF8.self), value: parsed)
    }

    /// The JSON value that starts here: a plain int read here, anything
    /// else by the JSON parser.
    private static func value(_ scan: inout PlainJSONScanner, maxDepth: Int) -> Value? {
        guard let raw = scan.valueExtent() else { return nil }
        if let n = plainInt(raw) { return .int(n) }
        return try? Value(json: UnsafeRawBufferPointer(raw), maxDepth: maxDepth)
    }

    /// `{"name":"…","value":…}`, both required, nothing else.
    private static func parameters(_ scan: inout PlainJSONScanner, maxDepth: Int) -> SimpleSetCall? {
        var name: String?
        var value: Value?
        guard scan.take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let key = scan.plainString(), scan.take(UInt8(ascii: ":")) else { return nil }
            if PlainJSONScanner.equal(key, "name") && name == nil {
                guard let raw = scan.plainString() else { return nil }
                name = String(decoding: raw, as: UTF8.self)
            } else if PlainJSONScanner.equal(key, "value") && value == nil {
                guard let parsed = self.value(&scan, maxDepth: maxDepth) else { return nil }
                value = parsed
            } else {
                return nil
            }
        } while scan.take(UInt8(ascii: ","))
        guard scan.take(UInt8(ascii: "}")), let name, let value else { return nil }
        return SimpleSetCall(name: name, value: value)
    }

    /// An int of at most 18 digits (`-?(0|[1-9][0-9]*)`), which the JSON
    /// parser reads as `.int` of the same value ("-0" too: `.int(0)`);
    /// nil for anything else, which goes to the parser (the commonest
    /// value, read here without it: ~300 instructions).
    static func plainInt(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard let base = bytes.baseAddress else { return nil }
        let negative = base[0] == UInt8(ascii: "-")
        let first = negative ? 1 : 0
        let digits = bytes.count - first
        guard digits >= 1, digits <= 18 else { return nil }
        if base[first] == UInt8(ascii: "0") && digits > 1 { return nil }  // a leading zero: the parser's error
        var n: Int64 = 0
        for i in first..<bytes.count {
            let d = base[i] &- UInt8(ascii: "0")
            guard d <= 9 else { return nil }
            n = n * 10 + Int64(d)
        }
        return negative ? -n : n
    }

}

/// Writes a Set's, Remove's or Transaction's reply as `Reply.writeJSON`
/// does (`{"parameters":{"revision":N,"changed":B}}` and the NUL), without
/// the `Value` tree (a test holds the bytes equal).
enum WriteReplyBytes {
    /// Made whole on the stack and appended at once (three appends to the
    /// array were ~350 instructions of a Set).
    static func append(_ reply: WriteReply, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 80) { buffer in
            let p = buffer.baseAddress!
            var n = copy(head, to: p)
            // A revision past Int64 is written as Int64.max, as wireInt does.
            n += JSONBytes.writeInt(Int64(exactly: reply.revision) ?? .max, at: p + n)
            n += copy(reply.changed ? changedTrue : changedFalse, to: p + n)
            p[n] = 0
            out.append(contentsOf: UnsafeBufferPointer(start: p, count: n + 1))
        }
    }

    private static func copy(_ text: StaticString, to p: UnsafeMutablePointer<UInt8>) -> Int {
        p.initialize(from: text.utf8Start, count: text.utf8CodeUnitCount)
        return text.utf8CodeUnitCount
    }

    private static var head: StaticString { #"{"parameters":{"revision":"# }
    private static var changedTrue: StaticString { #","changed":true}}"# }
    private static var changedFalse: StaticString { #","changed":false}}"# }
}
