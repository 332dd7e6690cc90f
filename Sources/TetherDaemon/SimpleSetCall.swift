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
        guard maxDepth >= 2, let base = bytes.baseAddress else { return nil }
        if let call = canonical(bytes, maxDepth: maxDepth) { return call }
        var scan = Scanner(base: base.assumingMemoryBound(to: UInt8.self), end: bytes.count)
        var sawMethod = false
        var call: SimpleSetCall?
        guard scan.take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let key = scan.plainString() else { return nil }
            guard scan.take(UInt8(ascii: ":")) else { return nil }
            if equal(key, "method") && !sawMethod {
                guard let method = scan.plainString(), equal(method, "io.tether.Set") else { return nil }
                sawMethod = true
            } else if equal(key, "parameters") && call == nil {
                guard let parameters = parameters(&scan, maxDepth: maxDepth - 2) else { return nil }
                call = parameters
            } else {
                return nil
            }
        } while scan.take(UInt8(ascii: ","))
        guard scan.take(UInt8(ascii: "}")), scan.atEnd, sawMethod else { return nil }
        return call
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
        var scan = Scanner(base: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), end: bytes.count, pos: n)
        guard let raw = scan.plainString(), scan.take(UInt8(ascii: ",")),
              let key = scan.plainString(), equal(key, "value"), scan.take(UInt8(ascii: ":")),
              let parsed = value(&scan, maxDepth: maxDepth - 2),
              scan.take(UInt8(ascii: "}")), scan.take(UInt8(ascii: "}")), scan.atEnd else { return nil }
        return SimpleSetCall(name: String(decoding: raw, as: UTF8.self), value: parsed)
    }

    /// The JSON value that starts here: a plain int read here, anything
    /// else by the JSON parser.
    private static func value(_ scan: inout Scanner, maxDepth: Int) -> Value? {
        guard let raw = scan.valueExtent() else { return nil }
        if let n = plainInt(raw) { return .int(n) }
        return try? Value(json: UnsafeRawBufferPointer(raw), maxDepth: maxDepth)
    }

    /// `{"name":"…","value":…}`, both required, nothing else.
    private static func parameters(_ scan: inout Scanner, maxDepth: Int) -> SimpleSetCall? {
        var name: String?
        var value: Value?
        guard scan.take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let key = scan.plainString(), scan.take(UInt8(ascii: ":")) else { return nil }
            if equal(key, "name") && name == nil {
                guard let raw = scan.plainString() else { return nil }
                name = String(decoding: raw, as: UTF8.self)
            } else if equal(key, "value") && value == nil {
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

    /// Byte by byte: the keys are a few bytes long (memcmp's call cost more).
    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount, let base = bytes.baseAddress else { return false }
        let expected = text.utf8Start
        for i in 0..<bytes.count where base[i] != expected[i] { return false }
        return true
    }

    /// Token-level reading of JSON bytes; every method skips the
    /// whitespace before what it reads.
    struct Scanner {
        let base: UnsafePointer<UInt8>
        let end: Int
        var pos = 0

        var atEnd: Bool {
            mutating get {
                skipWhitespace()
                return pos == end
            }
        }

        mutating func skipWhitespace() {
            while pos < end {
                switch base[pos] {
                case 0x20, 0x09, 0x0A, 0x0D: pos += 1
                default: return
                }
            }
        }

        /// Consumes `byte` if it comes next.
        mutating func take(_ byte: UInt8) -> Bool {
            skipWhitespace()
            guard pos < end, base[pos] == byte else { return false }
            pos += 1
            return true
        }

        /// A string of printable ASCII without escapes (its bytes between
        /// the quotes); nil for any other string, so that the bytes are the
        /// string's text and valid UTF-8 without decoding anything.
        mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = pos
            while pos < end {
                let b = base[pos]
                if b == UInt8(ascii: "\"") {
                    pos += 1
                    return UnsafeBufferPointer(start: base + start, count: pos - 1 - start)
                }
                guard b >= 0x20, b < 0x7F, b != UInt8(ascii: "\\") else { return nil }
                pos += 1
            }
            return nil
        }

        /// The bytes of the JSON value that starts here, found by matching
        /// brackets outside strings (a string's `\"` does not end it). Not
        /// a validation: the caller parses what this returns, and a wrong
        /// guess only fails that parse or the scan of what follows.
        mutating func valueExtent() -> UnsafeBufferPointer<UInt8>? {
            skipWhitespace()
            let start = pos
            var depth = 0
            var inString = false
            while pos < end {
                let b = base[pos]
                if inString {
                    if b == UInt8(ascii: "\\") {
                        pos += 1  // the escaped byte cannot end the string
                    } else if b == UInt8(ascii: "\"") {
                        inString = false
                        if depth == 0 { pos += 1; break }
                    }
                } else {
                    switch b {
                    case UInt8(ascii: "\""): inString = true
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        if depth == 0 { return pos > start ? UnsafeBufferPointer(start: base + start, count: pos - start) : nil }
                        depth -= 1
                        if depth == 0 { pos += 1; return UnsafeBufferPointer(start: base + start, count: pos - start) }
                    case UInt8(ascii: ","), 0x20, 0x09, 0x0A, 0x0D:
                        if depth == 0 { return pos > start ? UnsafeBufferPointer(start: base + start, count: pos - start) : nil }
                    default: break
                    }
                }
                pos += 1
            }
            guard !inString, depth == 0, pos > start, pos <= end else { return nil }
            return UnsafeBufferPointer(start: base + start, count: pos - start)
        }
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
